// MPI_COMM_WORLD helpers of the driver (see world.hpp) and agree_or_throw (comm.hpp).
#include "scalefit/bench/world.hpp"

#include "scalefit/bench/check.hpp"
#include "scalefit/bench/comm.hpp"
#include "scalefit/core/error.hpp"

#include <mpi.h>

#include <array>
#include <cstring>

extern char **environ;

namespace scalefit::bench {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

std::string bcast_string(std::string s, int root) {
  long long n = static_cast<long long>(s.size());
  SCALEFIT_MPI_CHECK(MPI_Bcast(&n, 1, MPI_LONG_LONG, root, MPI_COMM_WORLD));
  s.resize(static_cast<std::size_t>(n));
  if (n > 0)
    SCALEFIT_MPI_CHECK(MPI_Bcast(s.data(), static_cast<int>(n), MPI_CHAR, root, MPI_COMM_WORLD));
  return s;
}

std::vector<std::string> allgather_strings(const std::string &mine) {
  constexpr int kWidth = 256;
  std::array<char, kWidth> buf{};
  std::strncpy(buf.data(), mine.c_str(), kWidth - 1);
  std::vector<char> all(static_cast<std::size_t>(kWidth * world_size()));
  SCALEFIT_MPI_CHECK(
      MPI_Allgather(buf.data(), kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, MPI_COMM_WORLD));
  std::vector<std::string> out;
  for (int r = 0; r < world_size(); ++r)
    out.emplace_back(all.data() + r * kWidth);
  return out;
}

std::string host_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  return std::string(name, static_cast<std::size_t>(len));
}

NodeLayout detect_layout(int emulate_nodes, int &local_rank_out, int &local_size_out) {
  const int rank = world_rank(), n = world_size();
  // The real local rank picks the GPU even when nodes are emulated.
  MPI_Comm local = MPI_COMM_NULL;
  SCALEFIT_MPI_CHECK(
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local));
  int key = rank;
  SCALEFIT_MPI_CHECK(MPI_Allreduce(&rank, &key, 1, MPI_INT, MPI_MIN, local));
  SCALEFIT_MPI_CHECK(MPI_Comm_rank(local, &local_rank_out));
  SCALEFIT_MPI_CHECK(MPI_Comm_size(local, &local_size_out));
  MPI_Comm_free(&local);
  if (emulate_nodes > 0)
    return emulated_layout(n, emulate_nodes);
  std::vector<int> keys(static_cast<std::size_t>(n));
  SCALEFIT_MPI_CHECK(MPI_Allgather(&key, 1, MPI_INT, keys.data(), 1, MPI_INT, MPI_COMM_WORLD));
  return layout_from_keys(keys);
}

std::map<std::string, std::string> captured_env() {
  std::map<std::string, std::string> env;
  for (char **e = environ; e && *e; ++e) {
    const std::string kv(*e);
    if (kv.rfind("NCCL_", 0) == 0 || kv.rfind("OMPI_", 0) == 0 || kv.rfind("UCX_", 0) == 0) {
      const auto eq = kv.find('=');
      if (eq != std::string::npos)
        env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  return env;
}

void agree_or_throw(const std::string &error, const std::string &field) {
  const int rank = world_rank(), n = world_size();
  int mine = error.empty() ? n : rank, first = n;
  SCALEFIT_MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (first == n)
    return;
  throw InputError(bcast_string(error, first), "", 0, field);
}

} // namespace scalefit::bench

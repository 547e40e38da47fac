// The mpi backend: host buffers and MPI collectives (in-place via MPI_IN_PLACE where MPI defines
// it).
#include "scalefit/bench/backend.hpp"
#include "scalefit/bench/check.hpp"
#include "scalefit/bench/sysinfo.hpp"

#include <algorithm>
#include <thread>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <unistd.h>

namespace scalefit::bench {

MPI_Datatype mpi_datatype(DType t) {
  switch (t) {
  case DType::int8:
    return MPI_INT8_T;
  case DType::uint8:
    return MPI_UINT8_T;
  case DType::int32:
    return MPI_INT32_T;
  case DType::uint32:
    return MPI_UINT32_T;
  case DType::int64:
    return MPI_INT64_T;
  case DType::uint64:
    return MPI_UINT64_T;
  case DType::float32:
    return MPI_FLOAT;
  case DType::float64:
    return MPI_DOUBLE;
  case DType::half:
  case DType::bfloat16:
    return MPI_DATATYPE_NULL;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(RedOp r) {
  switch (r) {
  case RedOp::sum:
    return MPI_SUM;
  case RedOp::prod:
    return MPI_PROD;
  case RedOp::max:
    return MPI_MAX;
  case RedOp::min:
    return MPI_MIN;
  case RedOp::avg:
    return MPI_OP_NULL;
  }
  return MPI_OP_NULL;
}

namespace {

int as_int(std::size_t count) {
  if (count > static_cast<std::size_t>(INT_MAX))
    throw RuntimeError("count " + std::to_string(count) + " exceeds MPI's int counts");
  return static_cast<int>(count);
}

const char *at(const void *p, std::size_t elements, DType t) {
  return static_cast<const char *>(p) + elements * dtype_size(t);
}

#ifdef SCALEFIT_TEST_HOOKS
/// Test builds only (SCALEFIT_TEST_HOOKS, on with SCALEFIT_BUILD_TESTS): the world ranks listed
/// in SCALEFIT_TEST_SLOW_RANKS (a comma list) sleep SCALEFIT_TEST_SLOW_US microseconds after
/// every timed operation, so that tests can prove a slow node is found and named. 0 otherwise.
int test_delay_us() {
  const char *ranks = std::getenv("SCALEFIT_TEST_SLOW_RANKS");
  const char *us = std::getenv("SCALEFIT_TEST_SLOW_US");
  if (!ranks || !us)
    return 0;
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  std::string list = std::string(",") + ranks + ",";
  if (list.find("," + std::to_string(me) + ",") == std::string::npos)
    return 0;
  return std::max(0, std::atoi(us));
}
#endif

class MpiComm final : public Comm {
public:
  MpiComm(MPI_Comm comm, bool sync_barrier) : m_comm(comm), m_sync_barrier(sync_barrier) {
    SCALEFIT_MPI_CHECK(MPI_Comm_rank(comm, &m_rank));
    SCALEFIT_MPI_CHECK(MPI_Comm_size(comm, &m_size));
  }
  int rank() const override { return m_rank; }
  int size() const override { return m_size; }
  MPI_Comm mpi_comm() const override { return m_comm; }

  void allreduce(const void *s, void *r, std::size_t n, DType t, RedOp o) override {
    SCALEFIT_MPI_CHECK(
        MPI_Allreduce(s == r ? MPI_IN_PLACE : s, r, as_int(n), mpi_datatype(t), mpi_op(o), m_comm));
  }
  void allgather(const void *s, void *r, std::size_t n, DType t) override {
    const bool in_place = s == at(r, n * static_cast<std::size_t>(m_rank), t);
    SCALEFIT_MPI_CHECK(MPI_Allgather(in_place ? MPI_IN_PLACE : s, in_place ? 0 : as_int(n),
                                     in_place ? MPI_DATATYPE_NULL : mpi_datatype(t), r, as_int(n),
                                     mpi_datatype(t), m_comm));
  }
  void reducescatter(const void *s, void *r, std::size_t n, DType t, RedOp o) override {
    // In place (recv = send + rank * n, nccl-tests' layout): MPI reduces the whole buffer and
    // leaves the result at its start (Backend::inplace_reducescatter_at_start).
    if (r == at(s, n * static_cast<std::size_t>(m_rank), t))
      SCALEFIT_MPI_CHECK(MPI_Reduce_scatter_block(MPI_IN_PLACE, const_cast<void *>(s), as_int(n),
                                                  mpi_datatype(t), mpi_op(o), m_comm));
    else
      SCALEFIT_MPI_CHECK(
          MPI_Reduce_scatter_block(s, r, as_int(n), mpi_datatype(t), mpi_op(o), m_comm));
  }
  void reduce(const void *s, void *r, std::size_t n, DType t, RedOp o, int root) override {
    const void *send = (s == r && m_rank == root) ? MPI_IN_PLACE : s;
    SCALEFIT_MPI_CHECK(MPI_Reduce(send, r, as_int(n), mpi_datatype(t), mpi_op(o), root, m_comm));
  }
  void broadcast(const void *s, void *r, std::size_t n, DType t, int root) override {
    // The root broadcasts from its send buffer, the others receive into recv: MPI_Bcast alone
    // is timed, as OSU and IMB time it (no copy into the root's recv; see
    // Backend::outofplace_broadcast_root_result_in_send).
    void *buf = m_rank == root ? const_cast<void *>(s) : r;
    SCALEFIT_MPI_CHECK(MPI_Bcast(buf, as_int(n), mpi_datatype(t), root, m_comm));
  }
  void alltoall(const void *s, void *r, std::size_t n, DType t) override {
    const bool in_place = s == r;
    SCALEFIT_MPI_CHECK(MPI_Alltoall(in_place ? MPI_IN_PLACE : s, in_place ? 0 : as_int(n),
                                    in_place ? MPI_DATATYPE_NULL : mpi_datatype(t), r, as_int(n),
                                    mpi_datatype(t), m_comm));
  }
  void alltoallv(const void *s, void *r, const AlltoallvLayout &l, DType t) override {
    // MPI_Alltoallv takes int counts and displacements: converted per call into scratch vectors
    // (size() entries, negligible next to the exchange); as_int refuses what does not fit.
    m_ints.resize(4 * static_cast<std::size_t>(m_size));
    int *sc = m_ints.data(), *sd = sc + m_size, *rc = sd + m_size, *rd = rc + m_size;
    for (std::size_t p = 0; p < static_cast<std::size_t>(m_size); ++p) {
      sc[p] = as_int(l.send_counts[p]);
      sd[p] = as_int(l.send_displs[p]);
      rc[p] = as_int(l.recv_counts[p]);
      rd[p] = as_int(l.recv_displs[p]);
    }
    SCALEFIT_MPI_CHECK(MPI_Alltoallv(s, sc, sd, mpi_datatype(t), r, rc, rd, mpi_datatype(t),
                                     m_comm));
  }
  void sendrecv(const void *s, void *r, std::size_t n, DType t, int to, int from) override {
    if (s == r)
      SCALEFIT_MPI_CHECK(MPI_Sendrecv_replace(r, as_int(n), mpi_datatype(t), to, 0, from, 0, m_comm,
                                              MPI_STATUS_IGNORE));
    else
      SCALEFIT_MPI_CHECK(MPI_Sendrecv(s, as_int(n), mpi_datatype(t), to, 0, r, as_int(n),
                                      mpi_datatype(t), from, 0, m_comm, MPI_STATUS_IGNORE));
  }
  double time_batch_us(int batch, const std::function<void()> &op, std::uint64_t) override {
    if (m_sync_barrier) {
      // OSU's and IMB's definition: each operation timed alone, a barrier after it, untimed.
      double sum = 0;
      for (int i = 0; i < batch; ++i) {
        const double t0 = MPI_Wtime();
        op();
        sum += MPI_Wtime() - t0;
        SCALEFIT_MPI_CHECK(MPI_Barrier(m_comm));
      }
      return sum * 1e6;
    }
    const double t0 = MPI_Wtime();
    for (int i = 0; i < batch; ++i) {
      op();
#ifdef SCALEFIT_TEST_HOOKS
      if (m_test_delay_us > 0) // a slow node, for the tests of --groups pairs
        std::this_thread::sleep_for(std::chrono::microseconds(m_test_delay_us));
#endif
    }
    return (MPI_Wtime() - t0) * 1e6;
  }
  void synchronize() override {}
  void copy_in(void *d, const void *s, std::size_t b) override { std::memcpy(d, s, b); }
  void copy_out(void *d, const void *s, std::size_t b) override { std::memcpy(d, s, b); }

private:
  MPI_Comm m_comm;
  bool m_sync_barrier = false; ///< --sync barrier: per-operation timing with a barrier after each
  int m_rank = 0, m_size = 1;
  std::vector<int> m_ints; // alltoallv counts and displacements as MPI takes them
#ifdef SCALEFIT_TEST_HOOKS
  int m_test_delay_us = test_delay_us();
#endif
};

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        return v;
      }
    }
  return "unknown CPU";
}

} // namespace

void touch_pages(void *p, std::size_t bytes) {
  const long page = sysconf(_SC_PAGESIZE);
  const std::size_t step = page > 0 ? static_cast<std::size_t>(page) : 4096;
  auto *c = static_cast<volatile unsigned char *>(p);
  for (std::size_t i = 0; i < bytes; i += step)
    c[i] = 0;
  if (bytes > 0)
    c[bytes - 1] = 0;
}

namespace {

class MpiBackend final : public Backend {
public:
  explicit MpiBackend(bool sync_barrier) : m_sync_barrier(sync_barrier) {}
  std::string_view name() const override { return "mpi"; }
  bool supports(DType t) const override { return mpi_datatype(t) != MPI_DATATYPE_NULL; }
  bool supports(RedOp r) const override { return mpi_op(r) != MPI_OP_NULL; }
  std::unique_ptr<Comm> make_comm(MPI_Comm group, int color, int) override {
    if (color < 0 || group == MPI_COMM_NULL)
      return nullptr;
    return std::make_unique<MpiComm>(group, m_sync_barrier);
  }
  void *alloc(std::size_t bytes) override {
    const std::size_t n = bytes > 0 ? bytes : 1;
    void *p = std::calloc(n, 1);
    if (!p)
      throw RuntimeError("out of host memory allocating " + std::to_string(bytes) + " B");
    // calloc maps fresh pages lazily (the zero page): the first pass of a rotated sweep would
    // time page faults (2.5-7x the warm time at 64 KiB). Fault every page in now, writing one
    // byte per page through a volatile pointer (a memset after calloc may be folded away).
    touch_pages(p, n);
    return p;
  }
  void release(void *p) override { std::free(p); }
  std::string device_name() const override { return cpu_model(); }
  std::map<std::string, std::string> versions() const override {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0, major = 0, minor = 0;
    MPI_Get_library_version(lib, &len);
    MPI_Get_version(&major, &minor);
    // Open MPI's length counts the terminating NUL: clean_version_text cuts at it.
    const std::string text =
        clean_version_text(std::string(lib, static_cast<std::size_t>(std::max(0, len))));
    return {{"mpi", text}, {"mpi_standard", std::to_string(major) + "." + std::to_string(minor)}};
  }
  bool inplace_reducescatter_at_start() const override { return true; }
  bool outofplace_broadcast_root_result_in_send() const override { return true; }
  bool host_accessible() const override { return true; }
  std::uint64_t cache_bytes(std::string *source) const override {
    return host_cache_bytes(source);
  }
  std::uint64_t available_memory_bytes() const override { return mem_available_bytes(); }
  std::string alltoall_impl() const override { return "MPI_Alltoall"; }
  std::string timer_name() const override { return "host"; }

private:
  bool m_sync_barrier = false;
};

} // namespace

void *Backend::alloc_host(std::size_t bytes) {
  void *p = std::malloc(bytes > 0 ? bytes : 1);
  if (!p)
    throw RuntimeError("out of host memory allocating " + std::to_string(bytes) + " B");
  return p;
}

void Backend::release_host(void *p) {
  std::free(p);
}

std::string nccl_alloc_name(const NcclSettings &s) {
  return s.nccl_mem_alloc ? "ncclMemAlloc" : "cudaMalloc";
}

std::string nccl_registration_name(int registration) {
  switch (registration) {
  case 1:
    return "local (ncclCommRegister)";
  case 2:
    return "symmetric (ncclCommWindowRegister)";
  default:
    return "none";
  }
}

std::unique_ptr<Backend> make_mpi_backend(bool sync_barrier) {
  return std::make_unique<MpiBackend>(sync_barrier);
}

} // namespace scalefit::bench

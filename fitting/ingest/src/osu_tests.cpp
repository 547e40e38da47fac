// Which OSU test a table is: from its title, the binary a command line names, or its column
// header (see osu_detail.hpp). Letters and digits of titles are compared; no regex.
#include "osu_detail.hpp"

#include "text.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>

namespace scalefit::ingest::detail {

std::optional<OsuTest> test_from_title(const std::string &title) {
  std::string t;
  for (char c : to_lower(title))
    if (std::isalnum(static_cast<unsigned char>(c)))
      t += c;
  for (const char *drop : {"persistent", "blocking"}) {
    const auto p = t.find(drop);
    if (p != std::string::npos && t.rfind("nonblocking", p) == std::string::npos)
      t.erase(p, std::string(drop).size());
  }
  OsuTest test;
  // OMB's non-blocking collectives (osu_iallreduce, ...: "Non-blocking Allgather Latency"): the
  // blocking test's op, timed by their "Pure Comm.(us)" column (the collective alone).
  if (t.rfind("nonblocking", 0) == 0 && t.size() > 11) {
    auto blocking = test_from_title(t.substr(11));
    if (!blocking || blocking->pt2pt)
      return std::nullopt;
    blocking->nonblocking = true;
    blocking->name = "osu_i" + blocking->name.substr(4);
    return blocking;
  }
  if (t == "latency") {
    test.pt2pt = true;
    test.name = "osu_latency";
    return test;
  }
  if (t == "bandwidth") {
    test.pt2pt = true;
    test.kind = OsuKind::bandwidth;
    test.name = "osu_bw";
    return test;
  }
  if (t == "bidirectionalbandwidth") {
    test.pt2pt = true;
    test.kind = OsuKind::bibandwidth;
    test.name = "osu_bibw";
    return test;
  }
  static const std::vector<std::tuple<std::string, Op, std::string>> colls{
      {"allreducelatency", Op::allreduce, "osu_allreduce"},
      {"reducelatency", Op::reduce, "osu_reduce"},
      {"bcastlatency", Op::broadcast, "osu_bcast"},
      {"broadcastlatency", Op::broadcast, "osu_bcast"},
      {"reducescatterlatency", Op::reducescatter, "osu_reduce_scatter"},
      {"reducescatterblocklatency", Op::reducescatter, "osu_reduce_scatter_block"},
      {"allgatherlatency", Op::allgather, "osu_allgather"},
      {"alltoalllatency", Op::alltoall, "osu_alltoall"},
      {"alltoallpersonalizedexchangelatency", Op::alltoall, "osu_alltoall"},
      // osu_alltoallv sends `size` bytes to every peer (sendcounts[i] = size: uniform counts)
      {"alltoallvlatency", Op::alltoallv, "osu_alltoallv"},
      {"alltoallvpersonalizedexchangelatency", Op::alltoallv, "osu_alltoallv"}};
  for (const auto &[key, op, name] : colls)
    if (t == key) {
      test.op = op;
      test.bytes_times_n = op == Op::allgather || op == Op::alltoall || op == Op::alltoallv;
      test.name = name;
      return test;
    }
  return std::nullopt;
}

std::optional<std::pair<std::string, std::string>> parse_title(const std::vector<std::string> &t) {
  if (t.size() < 4 || t[0] != "OSU")
    return std::nullopt;
  const auto digit_at = [&](std::size_t i, std::size_t c) {
    return i < t.size() && t[i].size() > c && t[i][c] >= '0' && t[i][c] <= '9';
  };
  std::size_t test = t.size();
  std::string version;
  for (std::size_t i = 2; i < t.size(); ++i) {
    if (t[i] != "Test")
      continue;
    if (i + 1 == t.size()) {
      test = i;
    } else if (t[i + 1].size() > 1 && t[i + 1][0] == 'v') { // v7.4
      test = i;
      version = t[i + 1].substr(1);
      while (!version.empty() && (version.back() == '.' || version.back() == ','))
        version.pop_back(); // the title in prose: "OSU MPI Bandwidth Test v5.4.3."
    } else if ((t[i + 1] == "(Version" || t[i + 1] == "Version") && digit_at(i + 2, 0)) {
      test = i; // (Version 2.0)
      version = t[i + 2];
      while (!version.empty() && version.back() == ')')
        version.pop_back();
    }
    if (test != t.size())
      break;
  }
  if (test == t.size() || test <= 2)
    return std::nullopt;
  std::string title;
  for (std::size_t i = 2; i < test; ++i)
    title += (i > 2 ? " " : "") + t[i];
  return std::make_pair(title, version);
}

std::optional<DType> dtype_from_mpi(std::string name) {
  while (!name.empty() && (name.back() == '.' || name.back() == ','))
    name.pop_back();
  static const std::map<std::string, DType> map{{"MPI_CHAR", DType::int8},
                                                {"MPI_SIGNED_CHAR", DType::int8},
                                                {"MPI_BYTE", DType::uint8},
                                                {"MPI_UNSIGNED_CHAR", DType::uint8},
                                                {"MPI_INT", DType::int32},
                                                {"MPI_UNSIGNED", DType::uint32},
                                                {"MPI_LONG", DType::int64},
                                                {"MPI_LONG_LONG", DType::int64},
                                                {"MPI_UNSIGNED_LONG", DType::uint64},
                                                {"MPI_FLOAT", DType::float32},
                                                {"MPI_DOUBLE", DType::float64}};
  const auto it = map.find(name);
  if (it == map.end())
    return std::nullopt;
  return it->second;
}

std::vector<std::string> header_columns(const std::string &body) {
  std::vector<std::string> cols;
  std::string cur;
  for (const auto &tok : split_ws(body)) {
    const std::string low = to_lower(tok);
    const bool single = low == "size" || low == "iterations" || low == "validation" ||
                        low == "messages/s" || low == "#";
    if (single && cur.empty()) {
      if (low != "#")
        cols.push_back(low);
      continue;
    }
    cur += low;
    if (low.back() == ')') {
      cols.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty())
    cols.push_back(cur);
  return cols;
}
std::optional<OsuTest> test_from_binary(const std::string &token) {
  std::string b = base_name(token);
  while (!b.empty() && (b.back() == ';' || b.back() == '"' || b.back() == '\''))
    b.pop_back();
  if (b.rfind("osu_", 0) != 0)
    return std::nullopt;
  b = b.substr(4);
  // A site's build suffix after the OMB name ("osu_latency-openmpi-1.2.7", "osu_bw.x"): OMB's
  // own names use only letters and underscores.
  b = b.substr(0, b.find_first_of("-."));
  for (const char *suffix : {"_persistent", "_mpi"})
    if (b.size() > std::string(suffix).size() &&
        b.compare(b.size() - std::string(suffix).size(), std::string::npos, suffix) == 0)
      b.resize(b.size() - std::string(suffix).size());
  static const std::map<std::string, std::string> titles{
      {"latency", "Latency"},
      {"bw", "Bandwidth"},
      {"bibw", "Bi-Directional Bandwidth"},
      {"allreduce", "Allreduce Latency"},
      {"reduce", "Reduce Latency"},
      {"bcast", "Bcast Latency"},
      {"reduce_scatter", "Reduce_scatter Latency"},
      {"reduce_scatter_block", "Reduce_scatter_block Latency"},
      {"allgather", "Allgather Latency"},
      {"alltoall", "Alltoall Latency"},
      {"alltoallv", "Alltoallv Latency"},
      {"iallreduce", "Non-blocking Allreduce Latency"},
      {"ireduce", "Non-blocking Reduce Latency"},
      {"ibcast", "Non-blocking Bcast Latency"},
      {"ireduce_scatter", "Non-blocking Reduce_scatter Latency"},
      {"iallgather", "Non-blocking Allgather Latency"},
      {"ialltoall", "Non-blocking Alltoall Latency"},
      {"ialltoallv", "Non-blocking Alltoallv Latency"}};
  const auto it = titles.find(b);
  if (it == titles.end())
    return std::nullopt;
  return test_from_title(it->second);
}

bool header_fits_test(const std::vector<std::string> &columns, const OsuTest &test) {
  const auto has = [&](const char *c) {
    return std::find(columns.begin(), columns.end(), c) != columns.end();
  };
  if (test.nonblocking)
    return has("purecomm.(us)");
  if (test.kind == OsuKind::latency)
    return has("latency(us)") || has("avglatency(us)");
  // OMB 3.x osu_bibw heads its column "Bi-Bandwidth (MB/s)"
  return has("bandwidth(mb/s)") || (test.kind == OsuKind::bibandwidth && has("bi-bandwidth(mb/s)"));
}

std::optional<OsuTest> test_from_header(const std::vector<std::string> &columns,
                                        const std::optional<OsuTest> &binary_hint) {
  const auto has = [&](const char *c) {
    return std::find(columns.begin(), columns.end(), c) != columns.end();
  };
  if (binary_hint && header_fits_test(columns, *binary_hint) &&
      (binary_hint->pt2pt || binary_hint->nonblocking || has("avglatency(us)")))
    return binary_hint;
  if (has("bi-bandwidth(mb/s)")) // OMB 3.x osu_bibw: the header alone names the test
    return test_from_title("Bi-Directional Bandwidth");
  if (has("bandwidth(mb/s)"))
    return test_from_title("Bandwidth");
  if (has("latency(us)"))
    return test_from_title("Latency");
  return std::nullopt; // "Avg Latency(us)": a collective, which only its title or binary names
}

} // namespace scalefit::ingest::detail

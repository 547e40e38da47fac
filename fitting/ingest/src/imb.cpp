// Reader of Intel MPI Benchmarks output (IMB-MPI1 2018-2021.x, also IMB-MPI1-GPU, which prints
// the same tables; and IMB 3.x's one-table-per-file layout with a `#Benchmarking #procs` header).
// Every table `# Benchmarking <name>` / `# #processes = P` / `#bytes #repetitions ...` becomes
// records of P ranks; `-npmin` runs print one table per process count and all are read.
//
// Mapping of IMB semantics to scalefit/nccl-tests' records (`bytes` = nccl-tests' "size", the
// whole array; P = the table's #processes). From IMB's sources (src_c/IMB_*.c: what `size` means
// in each benchmark's MPI call) and nccl-tests doc/PERFORMANCE.md:
//   IMB benchmark        op             bytes       time
//   PingPong             sendrecv       size        t[usec]: half the round trip (IMB's
//                                                   definition), 2 ranks, method imb_pingpong
//   PingPing             sendrecv       size        t[usec], 2 ranks, method imb_pingping
//   Sendrecv             sendrecv       size        each rank sends size to its right neighbour
//                                                   and receives size from its left in a periodic
//                                                   chain, nccl-tests' sendrecv pattern; method
//                                                   imb_sendrecv
//   Allreduce            allreduce      size        the whole vector is reduced
//   Reduce               reduce         size        IMB rotates the root every iteration
//   Reduce_scatter(_block) reducescatter size       size is the whole vector; each rank gets size/P
//   Allgather            allgather      size * P    size is what each rank contributes
//   Alltoall             alltoall       size * P    size is the block sent to each peer
//   Bcast                broadcast      size        IMB rotates the root every iteration
//   I<coll> (IMB-NBC)    <coll>'s op    <coll>'s    t_pure[usec], the collective without the
//                                                   overlapped compute; method nonblocking;
//                                                   t_ovrl, t_CPU and overlap[%] in extra
// Time: IMB prints t_min, t_max and t_avg over the processes of each process's mean time per
// call. The record's time is t_avg by default (IngestOptions::imb_time), because nccl-tests'
// printed time is also the mean over ranks of each rank's mean (its `-a 1` default); t_max is
// what IMB's own Mbytes/sec uses. All three go to `extra` (t_min_us, t_max_us, t_avg_us), with
// #repetitions as iters_per_sample. A row IMB cut short (`1048576 time-out.; Time limit ... is
// over`) is named in a warning: that size has no result. Tables of benchmarks with no scalefit
// op (Exchange, Barrier, Gather(v), Scatter(v), Allgatherv, Alltoallv, Reduce_local, Uniband,
// Biband, ...) are skipped with a note. Size-0 rows are skipped with a note.
// Ranks and nodes: IMB prints P per table but never hosts. The job's shape comes from a launcher
// command line in the file (`mpirun -n 144 -N 36 ... IMB-MPI1`), its batch allocation or
// --nnodes; a table of P < the job's ranks (-npmin) runs on the job's first P ranks, which a
// by-slot placement puts on ceil(P / ranks per node) nodes (noted). Without any of these the node
// count is 1, noted. Launcher prefixes are stripped and the leading '#' is optional, as in the
// OSU reader; an excerpt may name a table by a line "Sendrecv:" (or a full-width colon) instead
// of "# Benchmarking Sendrecv", and a note pasted after a row is ignored (noted). No regex
// touches the log text.
#include "scalefit/ingest/ingest.hpp"

#include "lines.hpp"
#include "text.hpp"

#include "scalefit/core/units.hpp"

#include <algorithm>
#include <set>

namespace scalefit::ingest {
namespace {

using detail::Diagnostics;
using detail::split_ws;
using detail::to_double;
using detail::to_lower;
using detail::to_u64;
using detail::trim;
using nlohmann::json;

struct ImbBench {
  Op op = Op::allreduce;
  bool pt2pt = false;        ///< PingPong / PingPing: always 2 ranks
  bool bytes_times_p = false; ///< allgather/alltoall: bytes = size * P
  bool reduction = false;    ///< uses IMB's "MPI_Datatype for reductions"
  std::string method;        ///< separate curve name (the sendrecv-like patterns)
  bool nonblocking = false;  ///< IMB-NBC's I<coll>: timed by t_pure[usec]
};

/// IMB benchmark name (any case) -> its scalefit op; nullopt when it has none.
std::optional<ImbBench> bench_from_name(const std::string &name) {
  const std::string n = to_lower(name);
  // IMB-NBC (Iallreduce, Ibcast, Ireduce, Ireduce_scatter, Iallgather, Ialltoall): the blocking
  // benchmark's op and bytes, timed by t_pure (the collective without the overlapped compute).
  if (n.size() > 1 && n[0] == 'i') {
    for (const char *coll :
         {"allreduce", "reduce", "reduce_scatter", "allgather", "alltoall", "bcast"})
      if (n.compare(1, std::string::npos, coll) == 0) {
        auto b = bench_from_name(n.substr(1));
        b->nonblocking = true;
        b->method = "nonblocking";
        return b;
      }
    return std::nullopt;
  }
  ImbBench b;
  if (n == "pingpong" || n == "pingping") {
    b.op = Op::sendrecv;
    b.pt2pt = true;
    b.method = "imb_" + n;
    return b;
  }
  if (n == "sendrecv") {
    b.op = Op::sendrecv;
    b.method = "imb_sendrecv";
    return b;
  }
  if (n == "allreduce" || n == "reduce") {
    b.op = n == "allreduce" ? Op::allreduce : Op::reduce;
    b.reduction = true;
    return b;
  }
  if (n == "reduce_scatter" || n == "reduce_scatter_block") {
    b.op = Op::reducescatter;
    b.reduction = true;
    return b;
  }
  if (n == "allgather" || n == "alltoall") {
    b.op = n == "allgather" ? Op::allgather : Op::alltoall;
    b.bytes_times_p = true;
    return b;
  }
  if (n == "bcast") {
    b.op = Op::broadcast;
    return b;
  }
  return std::nullopt;
}

/// Whether `name` (any case) is one of IMB-MPI1's and IMB-NBC's benchmarks, with or without a
/// scalefit op.
bool imb_benchmark_name(const std::string &name) {
  if (bench_from_name(name))
    return true;
  static const std::set<std::string> others{
      "exchange",    "reduce_local", "allgatherv", "gather",   "gatherv",   "scatter",
      "scatterv",    "alltoallv",    "barrier",    "uniband",  "biband",    "ibarrier",
      "iallgatherv", "igather",      "igatherv",   "iscatter", "iscatterv", "ialltoallv"};
  return others.count(to_lower(name)) > 0;
}

/// IMB's MPI_Datatype names (MPI_BYTE for data movement, MPI_FLOAT for reductions by default).
std::optional<DType> dtype_from_imb(const std::string &name) {
  if (name == "MPI_BYTE" || name == "MPI_CHAR" || name == "MPI_UNSIGNED_CHAR")
    return DType::uint8;
  if (name == "MPI_FLOAT")
    return DType::float32;
  if (name == "MPI_DOUBLE")
    return DType::float64;
  if (name == "MPI_INT")
    return DType::int32;
  return std::nullopt;
}

/// A header's columns with their `#` removed, lower case: "#bytes #repetitions t_min[usec]"
/// -> {"bytes", "repetitions", "t_min[usec]"}.
std::vector<std::string> columns_of(const std::vector<std::string> &toks) {
  std::vector<std::string> cols;
  for (const auto &t : toks) {
    std::string c = to_lower(t);
    while (!c.empty() && c.front() == '#')
      c.erase(c.begin());
    if (!c.empty())
      cols.push_back(c);
  }
  return cols;
}

struct Table {
  long header_line = 0;
  std::string name;                ///< as printed ("Allreduce")
  std::optional<ImbBench> bench;   ///< nullopt: skipped (noted once)
  int nprocs = 0;                  ///< from `# #processes = P` (0: not yet known)
  std::vector<std::string> columns;
  bool named_rows = false;         ///< IMB 3.x: rows start with the name and #procs
  bool listed = false;             ///< already in the context's `tables`
};

const char *time_column(ImbTime t) {
  switch (t) {
  case ImbTime::min: return "t_min[usec]";
  case ImbTime::max: return "t_max[usec]";
  case ImbTime::avg: break;
  }
  return "t_avg[usec]";
}

} // namespace

IngestResult read_imb(const std::string &path, const IngestOptions &opt) {
  detail::check_options(opt);
  const auto lines = detail::read_lines(path);
  Diagnostics diag(path, opt.strict);
  IngestResult res;
  ContextRecord &ctx = res.context;
  ctx.backend = "imb";

  // The job's shape: a launcher line naming an IMB-* binary, else the allocation / job map.
  detail::LaunchShape shape, alloc;
  std::set<std::string> map_hosts;
  detail::CommandJoiner joiner;
  std::string calling_sequence;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view text = detail::strip_prefixes(lines[i]).text;
    const bool comment = !text.empty() && text.front() == '#';
    const auto line_toks = split_ws(text);
    detail::fill_missing(alloc, detail::allocation_shape(line_toks));
    if (const auto h = detail::job_map_host(line_toks))
      map_hosts.insert(*h);
    const std::vector<std::string> &toks = joiner.feed(line_toks);
    for (std::size_t k = 0; k < toks.size(); ++k) {
      if (detail::base_name(toks[k]).rfind("IMB-", 0) != 0)
        continue;
      std::size_t from = k;
      for (std::size_t j = 0; j < k; ++j)
        if (detail::is_launcher(toks[j])) {
          from = j;
          break;
        }
      if (from == k) { // IMB's own "# Calling sequence was:" echo, not a launch
        if (calling_sequence.empty())
          for (std::size_t j = k; j < toks.size(); ++j)
            calling_sequence += (j == k ? "" : " ") + toks[j];
        break;
      }
      if (comment || !ctx.command_line.empty())
        break;
      for (std::size_t j = from; j < toks.size(); ++j)
        ctx.command_line += (j == from ? "" : " ") + toks[j];
      shape = detail::launch_shape(toks, k);
      break;
    }
  }
  std::optional<int> world = opt.nranks;
  std::string nranks_from = opt.nranks ? "--nranks" : "";
  if (!world && shape.nranks) {
    world = shape.nranks;
    nranks_from = "launcher command line";
  } else if (!world && alloc.nranks) {
    world = alloc.nranks;
    nranks_from = "batch allocation (salloc/sbatch/#SBATCH/#PBS)";
  }

  std::string version, first_comment;
  std::optional<DType> dt_move, dt_reduce;
  std::optional<Table> cur;
  std::string pending_name;
  int pending_procs = 0;
  json tables = json::array();
  std::set<std::string> skipped_benchmarks;

  int headers = 0; // table headers seen, read or skipped
  const auto start_table = [&](long ln, std::vector<std::string> cols, bool named_rows) {
    ++headers;
    Table t;
    t.header_line = ln;
    t.name = pending_name;
    t.nprocs = pending_procs;
    t.columns = std::move(cols);
    t.named_rows = named_rows;
    if (!named_rows) {
      if (t.name.empty())
        diag.fail(ln, "benchmark", "IMB table header before any '# Benchmarking <name>' line");
      t.bench = bench_from_name(t.name);
      if (!t.bench && skipped_benchmarks.insert(to_lower(t.name)).second)
        diag.note(ln, "IMB benchmark '" + t.name +
                          "' has no scalefit operation; its tables are skipped");
    }
    cur = std::move(t);
  };

  for (std::size_t i = 0; i < lines.size(); ++i) {
    const long ln = static_cast<long>(i) + 1;
    const std::string_view t = detail::strip_prefixes(lines[i]).text;
    if (t.empty())
      continue;
    const bool comment = t.front() == '#';
    const std::string body(comment ? trim(t.substr(1)) : t);
    const auto toks = split_ws(body);
    if (toks.empty())
      continue;
    if (comment && first_comment.empty() && body.find_first_not_of("-") != std::string::npos)
      first_comment = std::string(t);
    // "Intel(R) MPI Benchmarks 2021.6, MPI-1 part" / "Intel (R) MPI Benchmarks 2018, MPI-1 part"
    for (std::size_t k = 0; k + 1 < toks.size() && version.empty(); ++k)
      if (toks[k] == "Benchmarks" && k >= 2 && toks[k - 1] == "MPI" &&
          toks[k + 1].find_first_of("0123456789") == 0) {
        version = toks[k + 1];
        while (!version.empty() && version.back() == ',')
          version.pop_back();
      }
    if (toks[0] == "MPI_Datatype" && toks.size() >= 3) {
      // "MPI_Datatype : MPI_BYTE" or "MPI_Datatype for reductions : MPI_FLOAT"
      const bool red = toks.size() >= 5 && toks[1] == "for" && toks[2] == "reductions";
      const std::string &name = toks.back();
      const auto d = dtype_from_imb(name);
      if (!d)
        diag.warn(ln, "MPI_Datatype", "unknown IMB datatype '" + name + "'; bytes are kept, " +
                                          "counts use 1-byte elements");
      (red ? dt_reduce : dt_move) = d.value_or(DType::uint8);
      continue;
    }
    if (toks[0] == "Benchmarking" && toks.size() == 2) {
      pending_name = toks[1];
      pending_procs = 0;
      cur.reset();
      continue;
    }
    // An excerpt that names its table by a line of the benchmark's name and a colon ("Sendrecv:",
    // or the full-width "Sendrecv：" of a CJK input method: intel/mpi-benchmarks issue 37) in
    // place of IMB's "# Benchmarking Sendrecv"
    if (!comment && toks.size() == 1) {
      std::string name = toks[0];
      for (const std::string_view colon : {std::string_view(":"), std::string_view("\xEF\xBC\x9A")})
        if (name.size() > colon.size() &&
            name.compare(name.size() - colon.size(), colon.size(), colon) == 0) {
          name.resize(name.size() - colon.size());
          break;
        }
      if (name != toks[0] && imb_benchmark_name(name)) {
        pending_name = name;
        pending_procs = 0;
        cur.reset();
        continue;
      }
    }
    if (toks[0] == "#processes" && toks.size() >= 3 && toks[1] == "=") {
      const auto p = to_u64(toks[2]);
      if (!p || *p < 1 || *p > (1u << 24))
        diag.fail(ln, "#processes", "expected a process count in 1..16777216, got '" + toks[2] +
                                        "'");
      pending_procs = static_cast<int>(*p);
      continue;
    }
    // Headers: "#bytes #repetitions ..." (IMB 2018+) or "#Benchmarking #procs #bytes ..." (3.x)
    const auto cols = columns_of(toks);
    // (Barrier's table has no #bytes column: it starts at #repetitions)
    if (!cols.empty() && (cols[0] == "bytes" || cols[0] == "repetitions") && cols.size() >= 3) {
      start_table(ln, cols, false);
      continue;
    }
    if (cols.size() >= 4 && cols[0] == "benchmarking" && cols[1] == "procs" && cols[2] == "bytes") {
      start_table(ln, cols, true);
      continue;
    }
    // IMB's own report of a failed run or check, "1: Error Ireduce_scatter_pure,size = 4" (rank
    // 1's message; its "1: " is stripped as a rank label): said, the rows after it are whatever
    // the run left
    if (!comment && toks.size() >= 2 && to_lower(toks[0]) == "error") {
      diag.warn(ln, "error", "IMB reports an error: " + body);
      continue;
    }
    if (comment || !cur)
      continue;
    Table &tb = *cur;
    std::vector<std::string> row = toks;
    std::optional<ImbBench> bench = tb.bench;
    int nprocs = tb.nprocs;
    std::vector<std::string> cols_used = tb.columns;
    if (tb.named_rows) { // "Allreduce  96  1024  1000  1.2  1.5  1.3"
      const auto p = row.size() >= 2 ? to_u64(row[1]) : std::nullopt;
      if (!p || *p < 1 || *p > (1u << 24))
        continue;
      bench = bench_from_name(row[0]);
      if (!bench) {
        if (skipped_benchmarks.insert(to_lower(row[0])).second)
          diag.note(ln, "IMB benchmark '" + row[0] +
                            "' has no scalefit operation; its rows are skipped");
        continue;
      }
      nprocs = static_cast<int>(*p);
      row.erase(row.begin(), row.begin() + 2);
      cols_used.erase(cols_used.begin(), cols_used.begin() + 2);
      if (tb.name.empty())
        tb.name = toks[0];
    }
    const auto size = to_u64(row[0]);
    if (!size && bench && detail::is_bad_size_token(row[0]) && row.size() == cols_used.size()) {
      diag.warn(ln, "size", "expected a byte count, got '" + row[0] + "'; row skipped");
      continue; // a broken row: -1, nan, inf
    }
    if (!size)
      continue; // shell, module or launcher noise
    if (!bench)
      continue; // a skipped benchmark's table (noted at its header)
    if (detail::is_annotated_row(row, cols_used.size())) {
      diag.note(ln, "text after the row's " + std::to_string(cols_used.size()) +
                        " fields ignored ('" + row[cols_used.size()] + " ...')");
      row.resize(cols_used.size());
    }
    if (row.size() != cols_used.size()) {
      const std::string low = to_lower(body);
      if (low.find("time-out") != std::string::npos)
        diag.warn(ln, "time",
                  "IMB stopped " + tb.name + " at " + row[0] +
                      " B (time-out: its -time limit per size); sizes from here on have no result");
      else
        diag.warn(ln, "",
                  "cannot read row: expected " + std::to_string(cols_used.size()) + " fields, got " +
                      std::to_string(row.size()));
      continue;
    }
    if (nprocs < 1) {
      // no '#processes' line (an excerpt): IMB runs each benchmark on the whole job unless
      // -npmin says otherwise, so the job's ranks (--nranks, the launcher line, the allocation)
      if (!world)
        diag.fail(tb.header_line, "#processes",
                  "IMB table without a '# #processes = P' line, and no launcher line or "
                  "allocation in the file gives the job's ranks: pass --nranks P");
      if (tb.nprocs < 1 && !opt.nranks)
        diag.note(tb.header_line, "no '# #processes = P' line: the job's " +
                                      std::to_string(*world) + " ranks (" + nranks_from + ")");
      nprocs = *world;
      tb.nprocs = nprocs;
    }
    const int nr = bench->pt2pt ? 2 : nprocs;
    if (*size == 0) {
      diag.note(ln, "size 0 row skipped");
      continue;
    }
    MeasurementRecord m;
    m.op = bench->op;
    m.method = bench->method;
    m.dtype = bench->reduction ? dt_reduce.value_or(DType::float32) : dt_move.value_or(DType::uint8);
    if (opt.dtype && !(bench->reduction ? dt_reduce : dt_move))
      m.dtype = *opt.dtype;
    m.redop = RedOp::sum;
    m.root = op_has_root(m.op) ? 0 : -1;
    m.placement = Placement::out_of_place;
    m.bytes = bench->bytes_times_p ? *size * static_cast<std::uint64_t>(nr) : *size;
    m.count = count_per_rank(m.op, m.bytes, dtype_size(m.dtype), nr);
    m.extra = json::object();
    m.extra["source_line"] = ln;
    m.extra["imb_benchmark"] = tb.name;
    m.extra["imb_bytes"] = *size;
    if (op_has_root(m.op))
      m.extra["root"] = "rotating (IMB)";
    bool ok = true;
    std::optional<double> t_single;
    std::optional<double> t_sel;
    for (std::size_t c = 1; c < cols_used.size() && ok; ++c) {
      const std::string &col = cols_used[c];
      const auto v = to_double(row[c]);
      if (!v || *v < 0) {
        diag.warn(ln, col, "expected a non-negative number, got '" + row[c] + "'; row skipped");
        ok = false;
        break;
      }
      if (col == "repetitions") {
        m.iters_per_sample = static_cast<int>(std::min(*v, 2e9));
      } else if (col == "t[usec]") {
        t_single = *v;
      } else if (col == "t_min[usec]") {
        m.extra["t_min_us"] = *v;
      } else if (col == "t_max[usec]") {
        m.extra["t_max_us"] = *v;
      } else if (col == "t_avg[usec]") {
        m.extra["t_avg_us"] = *v;
      } else if (col == "mbytes/sec") {
        m.extra["mbytes_per_s"] = *v; // IMB: 1e6 B/s, from t_max (x2 for Sendrecv's two ways)
      } else if (col == "t_pure[usec]" && bench->nonblocking) {
        t_single = *v; // IMB-NBC: the collective alone
        m.extra["t_pure_us"] = *v;
      } else if (col == "t_ovrl[usec]" || col == "t_cpu[usec]") {
        m.extra[col.substr(0, col.size() - 6) + "_us"] = *v; // t_ovrl_us, t_cpu_us
      } else if (col == "overlap[%]") {
        m.extra["overlap_pct"] = *v;
      } else if (col == "defects") {
        m.wrong = *v > 0 ? 1 : 0;
        m.extra["defects"] = *v;
      } else {
        m.extra[col] = *v;
      }
      if (col == time_column(opt.imb_time))
        t_sel = *v;
    }
    if (!ok)
      continue;
    const std::optional<double> time_us = t_single ? t_single : t_sel;
    if (!time_us || !detail::plausible_time_us(*time_us)) {
      diag.warn(ln, "time",
                time_us ? "time out of range (" + std::to_string(*time_us) + " us); row skipped"
                        : std::string("no ") + time_column(opt.imb_time) +
                              " column in the table; row skipped");
      continue;
    }
    m.extra["imb_time"] = bench->nonblocking && t_single ? "t_pure[usec]"
                          : t_single                     ? "t[usec]"
                                                         : time_column(opt.imb_time);
    m.time_us = *time_us;
    m.algbw_gbps = gbps(static_cast<double>(m.bytes), m.time_us);
    m.busbw_gbps = m.algbw_gbps * busbw_factor(m.op, nr);
    if (!detail::plausible_bandwidth_gbps(m.algbw_gbps) ||
        !detail::plausible_bandwidth_gbps(m.busbw_gbps)) {
      diag.warn(ln, "time", "bandwidth beyond 1 PB/s (size / time); row skipped");
      continue;
    }
    m.group = GroupShape{"world", nr, 1, nr};
    if (!tb.listed) {
      tables.push_back({{"header_line", tb.header_line},
                        {"benchmark", tb.name},
                        {"op", op_name(m.op)},
                        {"processes", nr}});
      tb.listed = !tb.named_rows;
    }
    res.measurements.push_back(std::move(m));
  }
  if (headers == 0)
    diag.fail(0, "", "no IMB result table found (expected '# Benchmarking <name>' and a "
                     "'#bytes #repetitions ...' header)");

  // Ranks and nodes: the job's ranks (launcher, allocation, --nranks), else the largest table.
  int max_p = 0;
  for (const auto &m : res.measurements)
    max_p = std::max(max_p, m.group.nranks);
  const int job = std::max(world.value_or(0), max_p);
  if (world && max_p > *world)
    diag.warn(0, "nranks",
              "a table has " + std::to_string(max_p) + " processes, more than the job's " +
                  std::to_string(*world) + " (" + nranks_from + ")");
  if (nranks_from.empty())
    nranks_from = "largest '# #processes' table";
  std::optional<int> job_nodes = opt.nnodes;
  std::string nnodes_from = opt.nnodes ? "--nnodes" : "default";
  if (!job_nodes)
    if (const auto launched = detail::nodes_from_launch(shape, map_hosts.size(), alloc, job)) {
      job_nodes = launched->first;
      nnodes_from = launched->second;
    }
  int per_node = 0;
  if (shape.per_node)
    per_node = *shape.per_node;
  else if (job_nodes && *job_nodes > 0)
    per_node = (job + *job_nodes - 1) / *job_nodes;
  bool noted_subset = false;
  for (auto &m : res.measurements) {
    const int p = m.group.nranks;
    int nodes = 1;
    if (per_node > 0)
      nodes = std::clamp((p + per_node - 1) / per_node, 1, p);
    if (job_nodes && p == job)
      nodes = std::clamp(*job_nodes, 1, p);
    if (per_node > 0 && p < job && !noted_subset) {
      diag.note(0, "tables of fewer processes than the job's " + std::to_string(job) +
                       " run on its first ranks: placed " + std::to_string(per_node) +
                       " per node, by slot (Open MPI's and Hydra's default)");
      noted_subset = true;
    }
    m.group.nnodes = nodes;
    m.group.ranks_per_node = std::max(1, p / nodes);
  }
  ctx.nranks = std::max(1, job);
  ctx.nnodes = std::clamp(job_nodes.value_or(1), 1, ctx.nranks);
  if (!job_nodes)
    diag.note(0, "IMB does not print hosts and no launcher line says; assuming 1 node (pass "
                 "--nnodes)");
  ctx.ranks_per_node = std::max(1, ctx.nranks / ctx.nnodes);
  detail::begin_source(res, diag, path, opt, "imb", version, first_comment);
  if (!calling_sequence.empty())
    ctx.source["calling_sequence"] = calling_sequence;
  ctx.source["time_statistic"] = time_column(opt.imb_time);
  ctx.source["tables"] = tables;
  ctx.source["nranks_from"] = nranks_from;
  ctx.source["nnodes_from"] = nnodes_from;
  detail::end_source(res, diag);
  return res;
}

} // namespace scalefit::ingest

// Reader of OSU Micro-Benchmarks output (osu_latency, osu_bw, osu_bibw and the blocking
// collective latency tests of OMB 5.x-7.x). Columns are read by the header's names, which OMB
// separates by two or more spaces ("# Size       Avg Latency(us)   Min Latency(us) ...").
//
// Mapping of OSU semantics to scalefit/nccl-tests' records (`bytes` = nccl-tests' "size", the
// whole array; n = nranks, from --nranks, default 2):
//   test (header title)        op             bytes          time_us
//   Allreduce Latency          allreduce      size           Avg Latency (the whole buffer is
//                                                            reduced, as nccl-tests' size)
//   Reduce Latency             reduce         size           Avg Latency, root 0
//   Bcast Latency              broadcast      size           Avg Latency, root 0
//   Reduce_scatter Latency     reducescatter  size           Avg Latency (OSU's size is the
//                                                            send buffer; each rank gets size/n)
//   Allgather Latency          allgather      size * n       Avg Latency (OSU's size is what
//                                                            each rank sends)
//   Alltoall Latency           alltoall       size * n       Avg Latency (OSU's size is the
//                                                            block sent to each peer)
//   Alltoallv Latency          alltoallv      size * n       Avg Latency (every count = size:
//                                                            method "uniform")
//   Non-blocking <X> Latency   X's op         X's bytes      Pure Comm. (the collective without
//   (osu_i<x>)                                               the overlapped compute); method
//                                                            "nonblocking"; Overall, Compute
//                                                            and Overlap(%) in extra
//   Latency (osu_latency)      sendrecv       size           the one-way latency OSU prints
//                                                            (half the ping-pong round trip),
//                                                            nranks 2
//   Bandwidth (osu_bw)         sendrecv       size           bytes / bandwidth: OSU's MB/s is
//                                                            1e6 B/s over a window of messages
//                                                            in one direction, nranks 2
//   Bi-Directional Bandwidth   sendrecv       size           2 * bytes / bandwidth: osu_bibw
//   (osu_bibw)                                               counts both directions, while a
//                                                            sendrecv of `size` moves size each
//                                                            way, so algbw = bibw / 2; nranks 2
// "Persistent" variants map like their blocking test. Min/Max Latency (-f) and Iterations go to
// `extra` (min_us, max_us, iterations, OMB 7.5's -z tail latencies as p50_us, p90_us, p99_us;
// iters_per_sample = iterations, since OSU times all
// iterations as one sample); Validation (-c) Pass/Fail becomes wrong = 0 / 1. algbw = bytes /
// time, busbw = algbw * busbw_factor(op, n) (nccl-tests PERFORMANCE.md).
// Datatype: "# Datatype: MPI_CHAR." (OMB 7); absent in older versions, which use MPI_CHAR.
// nranks: OMB prints no process count. It comes from --nranks, else from a launcher command line
// in the file (`mpirun -np 144 ./osu_alltoall`, `srun -N2` alone: one task per node), else its
// batch allocation; a collective table without any is refused (exit 2, naming --nranks) rather
// than read with a guessed count. A paste of several runs whose commands alternate with their
// tables (a scaling sweep) gives each table the ranks of the command before it. Launcher prefixes are stripped, the leading '#' is optional
// (logs pasted without it), HTML paragraphs and Markdown table rows are unwrapped (html.hpp), and
// header columns are read token by token (a header whose runs of spaces were collapsed reads the
// same). A title that no OSU table follows is warned about, not dropped silently. A table without a
// title line is told by its header and the nearest command's binary (osu_detail.hpp); its test
// is recorded in source.tables[].test_from. No regex touches the log text.
#include "scalefit/ingest/ingest.hpp"

#include "html.hpp"
#include "lines.hpp"
#include "osu_detail.hpp"
#include "text.hpp"

#include "scalefit/core/units.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <string_view>

namespace scalefit::ingest {
namespace {

using detail::Diagnostics;
using detail::dtype_from_mpi;
using detail::header_columns;
using detail::Launch;
using detail::LaunchCommand;
using detail::OsuKind;
using detail::OsuTest;
using detail::parse_title;
using detail::scan_launch;
using detail::sizeless_test;
using detail::split_ws;
using detail::test_from_title;
using detail::to_double;
using detail::to_lower;
using detail::to_u64;
using detail::trim;
using nlohmann::json;

struct Table {
  long header_line = 0;
  OsuTest test;
  std::vector<std::string> columns;
  std::optional<DType> dtype;
  std::string datatype_text;
  /// No '# Datatype:' line before the header: the default is noted at the first row unless a
  /// Datatype line follows the header first (OMB 7.x prints it after).
  bool dtype_assumed = false;
  /// Which table of its test this is, counting those with rows (0 until its first row): a test
  /// printed again in one file (a second run, other buffers, another pair of nodes) is its own
  /// curve, method `<test>_run<k>` from k = 2.
  int run = 0;
  int nranks = 2;            ///< ranks of a collective's rows (pt2pt tests: always 2)
  std::optional<int> nnodes; ///< their nodes; nullopt: unknown (1 assumed, warned)
};

/// Indices of the lines that head an OSU table ("# Size  Avg Latency(us) ...").
std::vector<std::size_t> header_indices(const std::vector<detail::SourceLine> &lines) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view t = detail::strip_prefixes(lines[i].text).text;
    if (!t.empty() && t.front() == '#')
      t.remove_prefix(1);
    const auto toks = split_ws(t);
    if (toks.size() >= 2 && to_lower(toks[0]) == "size")
      out.push_back(i);
  }
  return out;
}

/// The ranks a command starts (its -np/-n, else srun -N's one per node), or nullopt.
std::optional<int> command_ranks(const LaunchCommand &c) {
  return c.shape.nranks ? c.shape.nranks : c.shape.default_nranks;
}

} // namespace

IngestResult read_osu(const std::string &path, const IngestOptions &opt) {
  detail::check_options(opt);
  // Mail archives and wikis render a log as `<p>...<br>` lines with escaped characters.
  // Wikis, READMEs and vendor docs render its table in Markdown (`| 2 | 6.18 |`).
  const auto lines = detail::unwrap_markdown_tables(detail::unwrap_html(detail::read_lines(path)));
  Diagnostics diag(path, opt.strict);
  IngestResult res;
  ContextRecord &ctx = res.context;
  ctx.backend = "osu";

  std::string first_comment, version, title_line, datatype_text;
  std::optional<OsuTest> pending_test;
  std::optional<DType> pending_dtype;
  std::optional<Table> cur;
  // tables with rows so far, by test and group (a sweep's tables at other rank counts are
  // other curves already, not repeats)
  std::map<std::string, int> runs_of;
  json tests = json::array();

  const Launch launch = scan_launch(lines);
  ctx.command_line = launch.command_line;
  const detail::LaunchShape &shape = launch.shape, &alloc = launch.alloc;
  std::optional<int> n_known = opt.nranks;
  std::string nranks_from = opt.nranks ? "--nranks" : "";
  if (!n_known && shape.nranks) {
    n_known = shape.nranks;
    nranks_from = "launcher command line";
  } else if (!n_known && alloc.nranks) {
    n_known = alloc.nranks;
    nranks_from = "batch allocation (salloc/sbatch/#SBATCH/#PBS)";
  } else if (!n_known && shape.default_nranks) {
    n_known = shape.default_nranks;
    nranks_from = "launcher command line (srun -N without -n: one task per node)";
  }
  const int n = n_known.value_or(2);
  std::optional<int> nnodes_known = opt.nnodes;
  std::string nnodes_from = opt.nnodes ? "--nnodes" : "unknown (assumed 1)";
  if (!nnodes_known)
    if (const auto launched = detail::nodes_from_launch(shape, launch.map_hosts.size(), alloc, n)) {
      nnodes_known = launched->first;
      nnodes_from = launched->second;
    }
  // A paste of several runs, each command followed by its table (a scaling sweep: `mpirun -n 16
  // ./osu_allgather`, its table, `mpirun -n 24 ...`, its table) gives each table the ranks and
  // nodes of the command before it. When the commands do not alternate with the tables (a script
  // of commands, then the outputs) and start different rank counts, which table ran with which is
  // not in the file: said, and every table takes the first command's.
  const std::vector<std::size_t> headers = header_indices(lines);
  const auto &cmds = launch.commands;
  bool alternate = cmds.size() > 1;
  for (std::size_t c = 1; c < cmds.size() && alternate; ++c)
    alternate = std::any_of(headers.begin(), headers.end(), [&](std::size_t h) {
      return h > cmds[c - 1].index && h < cmds[c].index;
    });
  bool disagree = false;
  for (const LaunchCommand &c : cmds)
    disagree |= command_ranks(c) && command_ranks(cmds.front()) &&
                *command_ranks(c) != *command_ranks(cmds.front());
  bool warned_disagree = false;
  bool noted_nranks = false;
  // A title whose test got no OSU table before the next title or the end: its rows (if any)
  // sat under a header that is not OMB's (a page's own table, three MPI libraries side by side):
  // said, not silently dropped.
  long title_ln = 0;
  std::string title_test;
  const auto untabled_title = [&] {
    if (title_ln > 0)
      diag.warn(title_ln, "test",
                "'" + title_test +
                    "': no OSU table ('# Size ...' header) follows this title; "
                    "nothing read for it");
    title_ln = 0;
  };

  for (std::size_t i = 0; i < lines.size(); ++i) {
    const long ln = lines[i].line;
    const std::string_view t = detail::strip_prefixes(lines[i].text).text;
    if (t.empty())
      continue;
    const bool comment = t.front() == '#';
    const std::string body(comment ? trim(t.substr(1)) : t);
    if (comment && first_comment.empty() && !body.empty())
      first_comment = std::string(t);
    const auto btoks = split_ws(body);
    if (btoks.empty())
      continue;
    if (const auto title = parse_title(btoks)) {
      if (version.empty())
        version = title->second;
      if (title_line.empty() && !sizeless_test(title->first))
        title_line = body;
      untabled_title();
      title_ln = ln;
      title_test = title->first;
      pending_test = test_from_title(title->first);
      pending_dtype.reset();
      datatype_text.clear();
      cur.reset();
      if (!pending_test && sizeless_test(title->first)) {
        // osu_barrier, osu_init, osu_hello: one number, no message size; nothing to fit
        diag.warn(ln, "test",
                  "'" + title->first + "' has no message sizes (one figure per run): skipped");
        title_ln = 0;
        continue;
      }
      if (!pending_test) {
        if (!opt.op)
          diag.fail(ln, "test",
                    "unsupported OSU test '" + title->first +
                        "' (supported: latency, bw, bibw, allreduce, reduce, bcast, "
                        "reduce_scatter, allgather, alltoall, alltoallv and their non-blocking "
                        "versions); pass --op to read it as a "
                        "latency table of that op");
        diag.warn(ln, "test",
                  "unknown OSU test '" + title->first + "'; read as " +
                      std::string(op_name(*opt.op)) + " latency with bytes = size (--op)");
        pending_test = OsuTest{*opt.op, OsuKind::latency, false, false, "osu"};
      }
      continue;
    }
    if (body.rfind("Datatype:", 0) == 0) {
      const auto toks = split_ws(body.substr(9));
      datatype_text = toks.empty() ? "" : toks[0];
      pending_dtype = dtype_from_mpi(datatype_text);
      if (!pending_dtype) {
        if (opt.dtype)
          diag.warn(ln, "Datatype", "unknown MPI datatype '" + datatype_text + "'; using --dtype");
        else
          diag.warn(ln, "Datatype",
                    "unknown MPI datatype '" + datatype_text + "'; assuming 1-byte MPI_CHAR");
        pending_dtype = opt.dtype.value_or(DType::int8);
      }
      if (cur) {
        cur->dtype = pending_dtype;
        cur->datatype_text = datatype_text;
        cur->dtype_assumed = false;
      }
      continue;
    }
    if (to_lower(btoks[0]) == "size" && btoks.size() >= 2) {
      const auto cols = header_columns(body);
      std::string test_from = "title";
      if (!pending_test || !detail::header_fits_test(cols, *pending_test)) {
        // No title for this table (lost in the paste, or a second test pasted after the
        // first's table): the columns tell latency from bandwidth, the nearest command line's
        // binary tells osu_bw from osu_bibw and names a collective.
        std::optional<OsuTest> hint;
        for (const auto &[at, test] : launch.binaries)
          if (at < i)
            hint = test;
        pending_test = detail::test_from_header(cols, hint);
        test_from = pending_test && hint && pending_test->name == hint->name ? "command line"
                                                                             : "column header";
        if (!pending_test && opt.op) {
          pending_test = OsuTest{*opt.op, OsuKind::latency,
                                 *opt.op == Op::allgather || *opt.op == Op::alltoall, false,
                                 "osu_" + std::string(op_name(*opt.op))};
          test_from = "--op";
        }
        if (!pending_test)
          diag.fail(ln, "test",
                    "table header without an '# OSU ... Test' title, and no command line in the "
                    "file names the osu_* binary: an 'Avg Latency(us)' table is a collective; "
                    "pass --op to say which");
        if (test_from == "column header" && pending_test->kind == OsuKind::bandwidth)
          diag.warn(ln, "test",
                    "no '# OSU ... Test' title and no command line names osu_bw or osu_bibw: "
                    "read as osu_bw (one direction); if this is osu_bibw its times are half "
                    "those written");
        else
          diag.note(ln, "no '# OSU ... Test' title before this header: read as " +
                            pending_test->name + " (from its " + test_from + ")");
      }
      Table tb;
      tb.header_line = ln;
      tb.test = *pending_test;
      tb.nranks = n;
      tb.nnodes = nnodes_known;
      if (!opt.nranks && alternate) {
        const LaunchCommand *before = nullptr;
        for (const LaunchCommand &c : cmds)
          if (c.index < i)
            before = &c;
        if (before && before != &cmds.front() && command_ranks(*before)) {
          tb.nranks = *command_ranks(*before);
          tb.nnodes = opt.nnodes;
          if (!tb.nnodes)
            if (const auto nodes = detail::nodes_from_launch(before->shape, launch.map_hosts.size(),
                                                             alloc, tb.nranks))
              tb.nnodes = nodes->first;
          if (!tb.test.pt2pt && (tb.nranks != n || tb.nnodes != nnodes_known))
            diag.note(ln, std::to_string(tb.nranks) + " ranks on " +
                              (tb.nnodes ? std::to_string(*tb.nnodes) : std::string("unknown")) +
                              " nodes, from the command before this table (line " +
                              std::to_string(lines[before->index].line) + ": " + before->text +
                              ")");
          if (!tb.nnodes && nnodes_known && !tb.test.pt2pt)
            diag.warn(ln, "nnodes",
                      "the command before this table gives no node count: assuming 1 node "
                      "(pass --nnodes)");
        }
      } else if (!opt.nranks && disagree && !warned_disagree && !tb.test.pt2pt) {
        warned_disagree = true;
        std::string counts;
        for (const LaunchCommand &c : cmds)
          if (command_ranks(c))
            counts += (counts.empty() ? "" : ", ") + std::to_string(*command_ranks(c)) +
                      " at line " + std::to_string(lines[c.index].line);
        diag.warn(ln, "nranks",
                  "the file's commands start different rank counts (" + counts +
                      ") and do not alternate with its tables: every table read with the "
                      "first's " +
                      std::to_string(n) + "; pass --nranks, or split the file by run");
      }
      tb.columns = cols;
      tb.dtype = pending_dtype;
      tb.datatype_text = datatype_text;
      if (!tb.dtype) {
        tb.dtype = opt.dtype.value_or(DType::int8);
        tb.dtype_assumed = true;
      }
      const bool has_time = std::any_of(cols.begin(), cols.end(), [](const std::string &c) {
        return c == "avglatency(us)" || c == "latency(us)" || c == "bandwidth(mb/s)" ||
               c == "bi-bandwidth(mb/s)" || c == "purecomm.(us)";
      });
      if (!has_time)
        diag.fail(ln, "header", "OSU table without a latency or bandwidth column ('" + body + "')");
      if (tb.test.pt2pt) {
        if (opt.nranks && *opt.nranks != 2 && !noted_nranks)
          diag.warn(ln, "nranks",
                    "--nranks " + std::to_string(*opt.nranks) + " ignored: " + tb.test.name +
                        " runs between 2 ranks");
      } else if (!n_known) {
        diag.fail(ln, "nranks",
                  "OSU output does not print the number of processes, and no launcher command "
                  "line or batch allocation in the file gives it: pass --nranks N (the -np of the " +
                      tb.test.name + " run)");
      }
      noted_nranks = true;
      title_ln = 0;
      tests.push_back({{"header_line", ln},
                       {"test", tb.test.name},
                       {"op", op_name(tb.test.op)},
                       {"test_from", test_from}});
      cur = tb;
      continue;
    }
    if (comment)
      continue;
    std::vector<std::string> toks = btoks;
    if (cur && to_u64(toks[0]) && detail::is_annotated_row(toks, cur->columns.size())) {
      diag.note(ln, "text after the row's " + std::to_string(cur->columns.size()) +
                        " fields ignored ('" + toks[cur->columns.size()] + " ...')");
      toks.resize(cur->columns.size());
    }
    if (cur && detail::is_bad_size_token(toks[0]) && toks.size() == cur->columns.size()) {
      diag.warn(ln, "size", "expected a byte count, got '" + toks[0] + "'; row skipped");
      continue; // a broken row: -1, nan, inf
    }
    if (!cur || !to_u64(toks[0]))
      continue; // mpirun/shell/module/time noise
    if (cur->dtype_assumed) {
      diag.note(cur->header_line, opt.dtype
                                      ? "no '# Datatype:' line; using --dtype"
                                      : "no '# Datatype:' line; assuming MPI_CHAR (OMB's default)");
      cur->dtype_assumed = false;
    }
    if (cur->run == 0 && toks.size() == cur->columns.size()) {
      cur->run =
          ++runs_of[cur->test.name + "/" + std::to_string(cur->test.pt2pt ? 2 : cur->nranks) + "/" +
                    std::to_string(cur->nnodes.value_or(0))];
      if (cur->run > 1)
        diag.note(cur->header_line,
                  cur->test.name + " again (table " + std::to_string(cur->run) +
                      " of it in this file): another run, read as its own curve, method " +
                      cur->test.name + "_run" + std::to_string(cur->run));
    }
    const Table &tb = *cur;
    if (toks.size() != tb.columns.size()) {
      diag.warn(
          ln, "",
          "cannot read row: expected " + std::to_string(tb.columns.size()) + " fields (" +
              [&] {
                std::string s;
                for (const auto &c : tb.columns)
                  s += (s.empty() ? "" : " ") + c;
                return s;
              }() +
              "), got " + std::to_string(toks.size()));
      continue;
    }
    const std::uint64_t size = *to_u64(toks[0]);
    const int nr = tb.test.pt2pt ? 2 : tb.nranks;
    if (size == 0) {
      diag.note(ln, "size 0 row skipped");
      continue;
    }
    MeasurementRecord m;
    m.op = tb.test.op;
    const int nn = std::clamp(tb.nnodes.value_or(1), 1, nr);
    m.group = GroupShape{"world", nr, nn, std::max(1, nr / nn)};
    m.dtype = *tb.dtype;
    m.redop = RedOp::sum;
    m.root = op_has_root(m.op) ? 0 : -1;
    m.placement = Placement::out_of_place;
    m.bytes = tb.test.bytes_times_n ? size * static_cast<std::uint64_t>(nr) : size;
    m.count = count_per_rank(m.op, m.bytes, dtype_size(m.dtype), m.group.nranks);
    m.extra = json::object();
    m.extra["source_line"] = ln;
    m.extra["osu_size"] = size;
    m.extra["osu_test"] = tb.test.name;
    if (tb.test.pt2pt)
      m.method = tb.test.name; // osu_latency, osu_bw and osu_bibw are separate curves
    if (m.op == Op::alltoallv)
      m.method = "uniform"; // OMB's counts: the curve of scalefit-bench's uniform matrix
    if (tb.test.nonblocking) // MPI_I<coll> + MPI_Wait: the library's non-blocking algorithms
      m.method = m.op == Op::alltoallv ? "uniform_nonblocking" : "nonblocking";
    if (tb.run > 1)
      m.method = tb.test.name + "_run" + std::to_string(tb.run);
    bool ok = true;
    std::optional<double> time_us;
    for (std::size_t c = 1; c < tb.columns.size() && ok; ++c) {
      const std::string &col = tb.columns[c];
      const std::string &tok = toks[c];
      if (col == "validation") {
        const std::string v = to_lower(tok);
        if (v == "pass") {
          m.wrong = 0;
        } else if (v == "fail") {
          m.wrong = 1;
          m.extra["validation"] = tok;
        } else {
          diag.warn(ln, "Validation", "expected Pass or Fail, got '" + tok + "'");
        }
        continue;
      }
      const auto v = to_double(tok);
      if (!v || *v < 0) {
        diag.warn(ln, col, "expected a non-negative number, got '" + tok + "'; row skipped");
        ok = false;
        break;
      }
      if (col == "avglatency(us)" || col == "latency(us)" ||
          (col == "purecomm.(us)" && tb.test.nonblocking)) {
        time_us = *v;
      } else if (col == "overall(us)" || col == "compute(us)") {
        m.extra[col.substr(0, col.size() - 4) + "_us"] = *v; // overall_us, compute_us
      } else if (col == "overlap(%)") {
        m.extra["overlap_pct"] = *v;
      } else if (col == "bandwidth(mb/s)" || col == "bi-bandwidth(mb/s)") {
        m.extra["bandwidth_mbps"] = *v;
        if (*v <= 0) {
          diag.warn(ln, col, "zero bandwidth; row skipped");
          ok = false;
          break;
        }
        // MB/s = 1e6 B/s, so bytes / (MB/s) is microseconds.
        const double factor = tb.test.kind == OsuKind::bibandwidth ? 2.0 : 1.0;
        time_us = factor * static_cast<double>(size) / *v;
      } else if (col == "minlatency(us)") {
        m.extra["min_us"] = *v;
      } else if (col == "maxlatency(us)") {
        m.extra["max_us"] = *v;
      } else if (col == "p50taillat(us)" || col == "p90taillat(us)" || col == "p99taillat(us)") {
        m.extra[col.substr(0, 3) + "_us"] = *v; // OMB 7.5's tail latencies (osu_* -z)
      } else if (col == "iterations") {
        m.iters_per_sample = static_cast<int>(std::min(*v, 2e9));
        m.extra["iterations"] = m.iters_per_sample;
      } else {
        m.extra[col] = *v;
      }
    }
    if (!ok)
      continue;
    if (!time_us || !detail::plausible_time_us(*time_us)) {
      diag.warn(ln, "time",
                time_us ? "time out of range (" + std::to_string(*time_us) + " us); row skipped"
                        : std::string("no positive latency in the row; row skipped"));
      continue;
    }
    m.time_us = *time_us;
    m.algbw_gbps = gbps(static_cast<double>(m.bytes), m.time_us);
    m.busbw_gbps = m.algbw_gbps * busbw_factor(m.op, nr);
    if (!detail::plausible_bandwidth_gbps(m.algbw_gbps) ||
        !detail::plausible_bandwidth_gbps(m.busbw_gbps)) {
      diag.warn(ln, "time",
                "bandwidth beyond 1 PB/s (" + std::to_string(m.algbw_gbps) +
                    " GB/s: size / time); row skipped");
      continue;
    }
    res.measurements.push_back(std::move(m));
  }
  if (tests.empty())
    diag.fail(0, "",
              "no OSU result table found (expected '# OSU MPI ... Test' and a '# Size ...' "
              "header)");
  untabled_title();

  // Context: one per file.
  bool any_collective = false;
  for (const auto &m : res.measurements)
    if (m.op != Op::sendrecv)
      any_collective = true;
  ctx.nranks = any_collective ? n : 2;
  ctx.nnodes = std::clamp(nnodes_known.value_or(1), 1, ctx.nranks);
  if (!nnodes_known) // the record needs a number: 1, flagged in nnodes_from and warned
    diag.warn(0, "nnodes",
              "OSU prints no hosts and no launcher line or allocation in the file gives the "
              "nodes: the node count is unknown; assuming 1 node (pass --nnodes)");
  ctx.ranks_per_node = std::max(1, ctx.nranks / std::max(1, ctx.nnodes));
  detail::begin_source(res, diag, path, opt, "osu", version, first_comment);
  ctx.source["title"] = title_line;
  ctx.source["tables"] = tests;
  ctx.source["nranks_from"] = any_collective ? nranks_from : std::string("point-to-point");
  ctx.source["nnodes_from"] = nnodes_from;
  detail::end_source(res, diag);
  return res;
}

} // namespace scalefit::ingest

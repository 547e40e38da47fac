// `scalefit ingest nccl-tests|osu|imb FILE... -o OUT.jsonl`:
// existing logs -> the JSONL records `scalefit-bench comm` writes (a context record per file, then
// its measurements). Warnings and notes go to stderr; --strict turns warnings into errors (exit 2).
#include "commands.hpp"

#include "scalefit/core/atomic_file.hpp"
#include "scalefit/core/error.hpp"
#include "scalefit/core/input_file.hpp"
#include "scalefit/core/records.hpp"
#include "scalefit/ingest/ingest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>

namespace scalefit::cli {
namespace {

struct IngestArgs {
  std::vector<std::string> files;
  std::string out;
  std::string op, dtype, system;
  int nranks = 0, nnodes = 0;
  bool strict = false, append = false, quiet = false;
  std::string imb_time = "avg"; ///< IMB: t_min, t_avg or t_max as the record's time
};

/// The log formats `scalefit ingest` reads.
enum class LogTool { nccl_tests, osu, imb };

ingest::IngestOptions to_options(const IngestArgs &a) {
  ingest::IngestOptions opt;
  if (!a.op.empty()) {
    opt.op = parse_op(a.op);
    if (!opt.op)
      throw InputError("unknown operation '" + a.op + "'", "", 0, "--op");
  }
  if (!a.dtype.empty()) {
    opt.dtype = parse_dtype(a.dtype);
    if (!opt.dtype)
      throw InputError("unknown data type '" + a.dtype + "'", "", 0, "--dtype");
  }
  if (a.nranks < 0)
    throw InputError("must be >= 1", "", 0, "--nranks");
  if (a.nnodes < 0)
    throw InputError("must be >= 1", "", 0, "--nnodes");
  if (a.nranks > 0 && a.nnodes > 0 && a.nranks % a.nnodes != 0)
    throw InputError(fmt::format("--nranks {} is not divisible by --nnodes {}: every node runs "
                                 "the same number of ranks",
                                 a.nranks, a.nnodes),
                     "", 0, "--nnodes");
  if (a.nranks > 0)
    opt.nranks = a.nranks;
  if (a.nnodes > 0)
    opt.nnodes = a.nnodes;
  opt.system = a.system;
  opt.strict = a.strict;
  opt.imb_time = a.imb_time == "min"   ? ingest::ImbTime::min
                 : a.imb_time == "max" ? ingest::ImbTime::max
                                       : ingest::ImbTime::avg;
  return opt;
}

void run_ingest(const IngestArgs &a, LogTool tool) {
  const ingest::IngestOptions opt = to_options(a);
  refuse_outputs_over_inputs({{a.out, "--out"}}, a.files);
  // Read everything first: a bad file leaves no half-written output.
  std::vector<ingest::IngestResult> results;
  for (const auto &f : a.files) {
    results.push_back(tool == LogTool::osu   ? ingest::read_osu(f, opt)
                      : tool == LogTool::imb ? ingest::read_imb(f, opt)
                                             : ingest::read_nccl_tests(f, opt));
    const auto &r = results.back();
    if (!a.quiet)
      for (const auto &n : r.notes)
        std::fprintf(stderr, "scalefit: note: %s\n", n.c_str());
    for (const auto &w : r.warnings)
      std::fprintf(stderr, "scalefit: warning: %s\n", w.c_str());
    // A log whose every table or row was skipped (only size-0 rows, a size-less test such as
    // osu_barrier, a benchmark with no scalefit op, a run that crashed after its first row) has
    // nothing to fit: said, exit 2, rather than an output of a context alone at exit 0.
    if (r.measurements.empty())
      throw InputError("no measurement read: every table or row of the log was skipped (the "
                       "notes and warnings above say why)",
                       f, 0, "");
  }
  // Output: written whole to a temporary file and renamed over -o (core's AtomicFile), so a full
  // disk or a kill leaves the previous file, never a torn one. --append copies the existing
  // records first.
  std::unique_ptr<AtomicFile> file;
  if (!a.out.empty() && a.out != "-") {
    file = std::make_unique<AtomicFile>(a.out);
    if (a.append) {
      std::ifstream old(a.out, std::ios::binary);
      if (old) {
        std::string buf((std::istreambuf_iterator<char>(old)), std::istreambuf_iterator<char>());
        if (!buf.empty() && buf.back() != '\n')
          buf.push_back('\n');
        file->write(buf);
      }
    }
  }
  const auto emit = [&](const nlohmann::json &j) {
    const std::string line = dump_json(j) + "\n";
    if (file)
      file->write(line);
    else
      std::fputs(line.c_str(), stdout);
  };
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto &r = results[i];
    emit(to_json(r.context));
    for (const auto &m : r.measurements)
      emit(to_json(m));
    if (!a.quiet) {
      std::string ops; // each op once, in file order ("reduce" is not "allreduce")
      std::vector<Op> seen;
      for (const auto &m : r.measurements)
        if (std::find(seen.begin(), seen.end(), m.op) == seen.end()) {
          seen.push_back(m.op);
          ops += (ops.empty() ? "" : ",") + std::string(op_name(m.op));
        }
      // the records' groups, collectives first (a pasted sweep runs each table at its own
      // count; point-to-point tests always on 2 ranks); the context's when there are none
      int lo_r = 0, hi_r = 0, lo_n = 0, hi_n = 0;
      for (const bool collectives : {true, false}) {
        for (const auto &m : r.measurements) {
          if (collectives && m.op == Op::sendrecv)
            continue;
          const bool first = lo_r == 0;
          lo_r = first ? m.group.nranks : std::min(lo_r, m.group.nranks);
          hi_r = first ? m.group.nranks : std::max(hi_r, m.group.nranks);
          lo_n = first ? m.group.nnodes : std::min(lo_n, m.group.nnodes);
          hi_n = first ? m.group.nnodes : std::max(hi_n, m.group.nnodes);
        }
        if (lo_r > 0)
          break;
      }
      if (lo_r == 0) {
        lo_r = hi_r = r.context.nranks;
        lo_n = hi_n = r.context.nnodes;
      }
      const auto range = [](int lo, int hi) {
        return lo == hi ? fmt::format("{}", lo) : fmt::format("{}-{}", lo, hi);
      };
      std::fprintf(stderr, "%s",
                   fmt::format("scalefit: {}: {} records ({}; {} ranks, {} nodes), {} warnings\n",
                               a.files[i], r.measurements.size(), ops, range(lo_r, hi_r),
                               range(lo_n, hi_n), r.warnings.size())
                       .c_str());
    }
  }
  if (file)
    file->commit();
}

void add_common(CLI::App *sub, IngestArgs &a) {
  sub->add_option("files", a.files, "log files to read")->required()->check(CLI::ExistingFile);
  sub->add_option("-o,--out", a.out, "output JSONL file (default: stdout)");
  sub->add_option("--op", a.op,
                  "operation when the log does not name it (allreduce, allgather, ...)");
  sub->add_option("--nranks", a.nranks,
                  "ranks when the log does not reveal them (required for OSU collectives unless "
                  "the file holds the mpirun/srun line or its salloc/#SBATCH/#PBS allocation)")
      ->check(CLI::Range(1, 1 << 24));
  sub->add_option("--nnodes", a.nnodes,
                  "nodes when the log does not reveal them (default: inferred, else 1)")
      ->check(CLI::Range(1, 1 << 24));
  sub->add_option("--dtype", a.dtype, "data type when the log's is missing or unknown");
  sub->add_option("--system", a.system, "system name (default: the file name)");
  sub->add_flag("--strict", a.strict, "treat every warning as an error (exit 2)");
  sub->add_flag("--append", a.append, "append to the output file instead of replacing it");
  sub->add_flag("-q,--quiet", a.quiet, "print warnings only (no notes, no summary)");
}

} // namespace

void add_ingest_commands(CLI::App &app) {
  auto *ingest =
      app.add_subcommand("ingest", "convert nccl-tests, OSU or IMB output to scalefit JSONL");
  ingest->require_subcommand(1);
  auto args = std::make_shared<IngestArgs>();
  auto *nccl = ingest->add_subcommand("nccl-tests", "read nccl-tests *_perf output (any version)");
  add_common(nccl, *args);
  nccl->callback([args] { run_ingest(*args, LogTool::nccl_tests); });
  auto osu_args = std::make_shared<IngestArgs>();
  auto *osu = ingest->add_subcommand(
      "osu", "read OSU Micro-Benchmarks output (latency, bw, bibw, collectives)");
  add_common(osu, *osu_args);
  osu->callback([osu_args] { run_ingest(*osu_args, LogTool::osu); });
  auto imb_args = std::make_shared<IngestArgs>();
  auto *imb = ingest->add_subcommand(
      "imb", "read Intel MPI Benchmarks output (IMB-MPI1: PingPong, PingPing, Sendrecv, "
             "Allreduce, Reduce, Reduce_scatter, Allgather, Alltoall, Bcast; every #processes)");
  add_common(imb, *imb_args);
  imb->add_option("--imb-time", imb_args->imb_time,
                  "IMB column taken as the time: avg (t_avg, as nccl-tests averages its ranks; "
                  "default), max (t_max, what IMB's Mbytes/sec uses) or min")
      ->check(CLI::IsMember({"min", "avg", "max"}));
  imb->callback([imb_args] { run_ingest(*imb_args, LogTool::imb); });
}

} // namespace scalefit::cli

/// \file ingest.hpp
/// Readers of existing nccl-tests, OSU Micro-Benchmarks and Intel MPI Benchmarks output. Each turns one log file into
/// the records `scalefit-bench comm` writes (core's ContextRecord + MeasurementRecord), so that
/// `scalefit fit` treats ingested and measured curves alike.
///
/// Conventions (nccl-tests doc/PERFORMANCE.md, as in core/collectives.hpp): `bytes` is nccl-tests'
/// "size" (the whole array), `count` = bytes / type size, algbw = bytes / time [GB/s = 1e9 B/s],
/// busbw = algbw * busbw_factor(op, nranks).
///
/// Diagnostics: a row or field that cannot be read is never dropped silently nor invented. It
/// becomes a warning "FILE:LINE: field 'F': message" (with IngestOptions::strict, an InputError
/// instead). Expected noise that loses nothing measured (size-0 rows, defaults applied) becomes a
/// note, which strict mode does not promote.
#pragma once

#include "scalefit/core/collectives.hpp"
#include "scalefit/core/records.hpp"

#include <optional>
#include <string>
#include <vector>

namespace scalefit::ingest {

/// Result of reading one log: context + records + warnings ("file:line: message").
struct IngestResult {
  /// One context per source file: backend "nccl-tests" / "osu", system, ranks, nodes, hosts,
  /// versions; `source` holds provenance (file, first comment line, tool, version, format, where
  /// nranks/nnodes came from, notes and warnings).
  ContextRecord context;
  /// One record per (table row, placement), in file order.
  std::vector<MeasurementRecord> measurements;
  /// "FILE:LINE: [field 'F': ]message" for anything that could not be read or looks wrong.
  std::vector<std::string> warnings;
  /// "FILE:LINE: message" for expected noise and applied defaults (size-0 rows skipped, nnodes
  /// lower bounds, ...). Not promoted to errors by `strict`.
  std::vector<std::string> notes;
};

/// Which of IMB's per-process time statistics a record's time is (IMB prints t_min, t_max and
/// t_avg over the processes of each one's mean time per call).
enum class ImbTime { min, avg, max };

/// Fallbacks for what a log does not say, and strictness.
struct IngestOptions {
  std::optional<Op> op;       ///< used when the file does not name the operation
  /// Used when the log does not reveal the rank count (OSU collectives: required unless the file
  /// holds the launcher line; nccl-tests: after count column, busbw/algbw, NCCL init lines).
  std::optional<int> nranks;
  /// Used when the log does not reveal nodes; without it such a log's records say 1 node, with
  /// nnodes_from "unknown (assumed 1)" and a warning naming --nnodes.
  std::optional<int> nnodes;
  std::optional<DType> dtype; ///< used when the file's type is missing or unknown
  std::string system;         ///< system name; empty: the file name without extension (noted)
  bool strict = false;        ///< turn every warning into an InputError
  /// IMB: the statistic a record's time is; avg (the default) matches nccl-tests' default of
  /// averaging the ranks' times (`-a 1`), max is what IMB's Mbytes/sec uses.
  ImbTime imb_time = ImbTime::avg;
};

/// Reads an nccl-tests log (stdout of `*_perf`): all three formats (before 2.13 with an `error`
/// column and per-collective columns; 2.13-2.17 with `redop root ... #wrong`; current, with the
/// `# nccl-tests version` banner, `# Collective test starting/concluded` and optional `-I`
/// per-iteration columns `i_min i_max i_p99 i_cv%`), parsed by the header's column names.
/// Both placements (out-of-place, in-place) become records. Several tables in one file (one per
/// `# Collective test starting:`) are all read.
/// - op: `# Collective test starting: <bin>`, else the `*_perf[_mpi]` binary on a command line,
///   else the columns (redop/root/count), else IngestOptions::op (the file name breaks a tie
///   between column-compatible ops, e.g. allgather vs alltoall, with a note).
/// Launcher prefixes (`[1,0]<stdout>:`, `0: `, `[host:0]`, Ray's `(head, rank=0, pid=..)`) are
/// stripped, `#` is optional, NCCL INFO lines are read for facts; nccl-tests `-J` JSON and
/// rccl-tests JSON lines are read too. No regex touches the text (lines of any length are safe).
/// - nranks: a complete Rank list; else exact from the count column for AllGather/ReduceScatter/
///   AllToAll (bytes = count * type size * n); else busbw/algbw (AllReduce 2(n-1)/n, the others
///   (n-1)/n; every row's printed precision intersected), which wins over partial Rank lists;
///   else NCCL init `nRanks`, the Rank lines, a launcher's -np, IngestOptions::nranks; else 1 with
///   a warning. `source.tables[].nranks_from` names the source.
/// - nnodes: hosts of a complete Rank list; else NCCL `nNodes`; else the Rank lines' host pattern;
///   else IngestOptions::nnodes or a launcher's -N/ppr; else a lower bound (hosts seen, a channel
///   `via NET/`; hosts by short name), flagged `nnodes_lower_bound`; else unknown: 1 in the
///   records, nnodes_from "unknown (assumed 1)", and a warning naming --nnodes.
/// algbw/busbw are the printed values (computed from bytes/time where printed as N/A).
/// \throws InputError (file, line, field) when the file cannot be opened, holds no result table,
/// the operation cannot be determined, or (strict) on the first warning.
IngestResult read_nccl_tests(const std::string &path, const IngestOptions &opt = {});

/// Reads an OSU Micro-Benchmarks (5.x-7.x) output file: latency tables of the collectives
/// (`# OSU MPI Allreduce Latency Test v7.4`, `# Size  Avg Latency(us)`, with or without `-f`
/// Min/Max/Iterations and `-c` Validation columns) and of osu_latency, and bandwidth tables of
/// osu_bw / osu_bibw (`# Size  Bandwidth (MB/s)`, MB = 1e6 B). Mappings to nccl-tests' `bytes`
/// and time are documented in osu.cpp; nranks is not printed by OSU: IngestOptions::nranks, else
/// the launcher line in the file (`mpirun -np 144`, `srun -N2 --ntasks-per-node=4`, `srun -N2`
/// alone: one task per node, `mpirun_rsh -np 4 host1 host2`; continued with `\` or wrapped
/// before the binary), else its batch allocation; point-to-point tests are always 2 ranks.
/// Headers are read token by token (collapsed spacing reads the same); a table without a title
/// line is told by its header and the nearest command's binary (osu.cpp);
/// `All-to-All Personalized Exchange` is alltoall; size-0 rows are skipped. A log pasted through
/// HTML (`<p>...<br>`, `&lt;`, `&nbsp;`) is unwrapped first (html.hpp); diagnostics name the
/// file's own line numbers. nnodes: IngestOptions::nnodes, else the launch (launcher line, Open
/// MPI job map, allocation), else unknown: 1 in the records with a warning naming --nnodes.
/// \throws InputError (file, line, field) when the file cannot be opened, holds no OSU table,
/// the test is not supported, an untitled collective table's op is unknown (field test: pass
/// --op), a collective's rank count is unknown (field nranks), or (strict) on the first warning.
IngestResult read_osu(const std::string &path, const IngestOptions &opt = {});

/// Reads Intel MPI Benchmarks output (IMB-MPI1 2018-2021.x and its GPU variant; IMB 3.x's
/// `#Benchmarking #procs` layout): every `# Benchmarking <name>` / `# #processes = P` table,
/// several process counts per file (-npmin) included. PingPong, PingPing, Sendrecv, Allreduce,
/// Reduce, Reduce_scatter(_block), Allgather, Alltoall and Bcast become records (mapping to
/// nccl-tests' bytes and time in imb.cpp: Allgather and Alltoall bytes = size * P; PingPong and
/// PingPing 2 ranks, one-way time); other benchmarks are skipped with a note. time_us is the
/// IngestOptions::imb_time column (t_avg by default; t[usec] for the ping tests), the other two
/// go to `extra`. A row IMB cut at its time limit (`time-out.`) becomes a warning naming the size.
/// Ranks per table from `#processes`; the job's shape and nodes from a launcher line in the file
/// (`mpirun -n 144 -N 36 ... IMB-MPI1`), its allocation, or --nranks/--nnodes; else 1 node
/// (noted). Tables of fewer processes than the job (-npmin) are placed on its first ranks by slot.
/// \throws InputError (file, line, field) when the file cannot be opened, holds no IMB table, a
/// table has no process count and --nranks is not given, or (strict) on the first warning.
IngestResult read_imb(const std::string &path, const IngestOptions &opt = {});

} // namespace scalefit::ingest

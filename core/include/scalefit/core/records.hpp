/// \file records.hpp
/// The measurement records of scalefit's JSON Lines files (schema "scalefit.comm/1"), written by
/// `scalefit-bench comm` and `scalefit ingest`, read by `scalefit fit`.
///
/// A file is a sequence of lines; each line is one JSON object with a "type":
///   - "context": describes the run (system, hosts, ranks, backend, versions, command line...).
///     Every measurement belongs to the context record most recently read before it.
///   - "measurement": one (op, group shape, dtype, placement, size) point with its statistics.
/// Field names and units: bytes [B], count [elements], time_us [us], algbw_gbps/busbw_gbps [GB/s].
#pragma once

#include "scalefit/core/collectives.hpp"
#include "scalefit/core/repeats.hpp"
#include "scalefit/core/stats.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace scalefit {

/// Schema identifier written into every context record.
inline constexpr const char *kCommSchema = "scalefit.comm/1";

/// The run a set of measurements came from.
struct ContextRecord {
  std::string schema = kCommSchema;
  std::string system;                    ///< --system NAME, or the ingested file's description
  std::string backend;                   ///< "mpi", "nccl", or the tool ingested ("nccl-tests", "osu")
  int nranks = 0;                        ///< ranks in MPI_COMM_WORLD
  int nnodes = 0;                        ///< distinct nodes (or emulated nodes)
  int ranks_per_node = 0;                ///< nranks / nnodes
  bool emulated_nodes = false;           ///< nodes come from --emulate-nodes, not from hosts
  std::vector<std::string> hosts;        ///< host name per node, in node order
  std::vector<std::string> devices;      ///< GPU names (nccl) or the CPU model (mpi), per rank
  std::map<std::string, std::string> versions;  ///< "mpi", "nccl", "cuda", "scalefit", "nccl-tests"...
  std::string command_line;              ///< argv joined with spaces
  std::map<std::string, std::string> env;       ///< NCCL_* (and similar) environment variables
  std::string start_time;                ///< ISO 8601 UTC, e.g. "2026-11-22T02:37:51Z"
  nlohmann::json source;                 ///< provenance of ingested data (file, first line...); null otherwise
  nlohmann::json extra;                  ///< any other fields, kept on round trip
};

/// One measured point.
struct MeasurementRecord {
  Op op = Op::allreduce;
  GroupShape group;                      ///< the communicator it ran on
  DType dtype = DType::float32;
  RedOp redop = RedOp::sum;              ///< meaningful for ops that reduce
  int root = -1;                         ///< root rank for reduce/broadcast, else -1 (as nccl-tests)
  Placement placement = Placement::out_of_place;
  /// How the time was measured when one op has several benchmarks that measure different things:
  /// OSU's "osu_latency" (ping-pong, half the round trip), "osu_bw" (a window of sends: bytes /
  /// bandwidth), "osu_bibw" (both directions at once). Empty for a timed loop of the op itself
  /// (scalefit, nccl-tests, OSU collectives). Part of key(): the methods are separate curves.
  std::string method;
  std::uint64_t bytes = 0;               ///< message size: the whole array (nccl-tests' "size") [B]
  std::uint64_t count = 0;               ///< elements per rank, nccl-tests' "count" column: count_per_rank(op, bytes, type size, nranks)
  double time_us = 0;                    ///< time per operation [us] (mean over samples, as nccl-tests)
  double algbw_gbps = 0;                 ///< bytes / time [GB/s]
  double busbw_gbps = 0;                 ///< algbw * busbw_factor(op, nranks) [GB/s]
  std::optional<std::int64_t> wrong;     ///< wrong elements when checked (-c), else absent
  std::optional<Summary> stats;          ///< per-operation time statistics over samples [us]
  int iters_per_sample = 0;              ///< operations timed back-to-back per sample (0: unknown)
  std::vector<double> samples_us;        ///< every sample's per-operation time [us] (may be empty)
  /// A point merged from repeats in several files (drop_duplicate_measurements): each repeat's
  /// time_us [us], the first file's first; time_us is then their median. Empty for a point
  /// measured once. JSONL field "repeat_time_us".
  std::vector<double> repeat_time_us;
  nlohmann::json extra;                  ///< other fields (e.g. OSU's iterations), kept on round trip

  /// The key `--resume` and the fitter group by: op, group shape, dtype, redop, root, placement,
  /// method (when set), and (with_size) the size.
  std::string key(bool with_size = true) const;
};

/// Largest rank count a record may carry (2^24): larger values are refused as corrupt.
inline constexpr std::int64_t kMaxRecordRanks = std::int64_t{1} << 24;
/// Largest message size a record may carry [B] (2^60).
inline constexpr std::int64_t kMaxRecordBytes = std::int64_t{1} << 60;

/// The JSON text of `j` (compact when indent < 0). Strings that are not UTF-8 (a Latin-1 host name
/// read from a log) have their invalid bytes replaced by U+FFFD instead of throwing
/// nlohmann's type_error.316: use this, not json::dump, for every JSON scalefit writes.
std::string dump_json(const nlohmann::json &j, int indent = -1);

/// The JSONL object of a context record ("type": "context"; fields as ContextRecord, extra kept).
nlohmann::json to_json(const ContextRecord &c);
/// The JSONL object of a measurement ("type": "measurement"; units as MeasurementRecord).
nlohmann::json to_json(const MeasurementRecord &m);
/// \throws InputError naming `file`, `line` and the field when a field is missing or malformed.
ContextRecord context_from_json(const nlohmann::json &j, const std::string &file = "", long line = 0);
/// \throws InputError naming `file`, `line` and the field when a field is missing or malformed, or
/// a number is not finite or outside its range (group sizes 1..kMaxRecordRanks, 0 <= bytes <=
/// kMaxRecordBytes, times in bounds::time_us [us], bandwidths in [0, 1e6] GB/s, root in
/// -1..nranks-1).
MeasurementRecord measurement_from_json(const nlohmann::json &j, const std::string &file = "",
                                        long line = 0);

/// A measurement together with the context it belongs to (index into the file's contexts).
struct RecordSet {
  std::vector<ContextRecord> contexts;
  std::vector<MeasurementRecord> measurements;
  std::vector<std::size_t> context_of;   ///< context index of each measurement
  std::vector<std::string> origin;       ///< "file:line" of each measurement
};

/// Reads a scalefit JSONL file. Blank lines are skipped.
/// \throws InputError with file:line and the field for malformed JSON (invalid UTF-8 included), a
/// number beyond a double (1e400), an unknown "type", a bad field, or a measurement before any
/// context record.
RecordSet read_records(const std::string &path);

/// The files named on a command line: a file stands for itself, a directory for its `*.jsonl`
/// files (sorted by name). Throws InputError naming the path for a missing path or a directory
/// with no `*.jsonl` file.
std::vector<std::string> expand_jsonl_inputs(const std::vector<std::string> &inputs);

/// Removes duplicate measurements across `sets` (one RecordSet per file read, in command-line
/// order) so that no point is fitted twice, and merges repeats (repeats.hpp). Two measurements
/// are of the same point when their context's system and their MeasurementRecord::key() (op,
/// group kind/nranks/nnodes/ranks per node, dtype, redop, root, placement, method, size) are
/// equal. The first one read is kept:
///  - identical readings (time_us, algbw_gbps and busbw_gbps equal: the same file given twice, a
///    copy) are dropped, one warning each: "B duplicates A (identical; merged)";
///  - a different reading from ANOTHER file (origin "file:line") is a repeat: under
///    RepeatPolicy::merge it is dropped and merged into the kept record, whose time_us becomes
///    the median of the repeats' time_us [us] (algbw/busbw scaled to it), repeat_time_us holds
///    every repeat's time_us, stats and samples_us are cleared (they were one repeat's);
///    one warning per (first file, repeating file) pair says so (RepeatLog::lines).
/// \returns the warnings, identical duplicates first, then one line per pair of files merged.
/// \throws InputError naming the second record's file and line (field time_us), and the first
/// record's origin, when a point has two different readings in ONE file (two runs appended to
/// it: which one to trust is the user's call), or in two files under RepeatPolicy::refuse.
std::vector<std::string> drop_duplicate_measurements(std::vector<RecordSet> &sets,
                                                     RepeatPolicy policy = RepeatPolicy::merge);

/// Appends records to a JSONL file, one line each, flushed as soon as written so that a killed
/// run loses no finished point.
class JsonlWriter {
public:
  /// Opens `path` for appending (creating it). \throws InputError if it cannot be opened.
  explicit JsonlWriter(const std::string &path);
  ~JsonlWriter();
  JsonlWriter(const JsonlWriter &) = delete;
  JsonlWriter &operator=(const JsonlWriter &) = delete;
  /// Writes one compact JSON line (dump_json: invalid UTF-8 replaced) and flushes it to the OS.
  /// \throws InputError naming the path on an I/O failure (a full disk is the environment: exit 2,
  /// as AtomicFile).
  void write(const nlohmann::json &j);
  const std::string &path() const { return m_path; }

private:
  std::string m_path;
  std::FILE *m_file = nullptr;
};

/// Current UTC time as ISO 8601 ("2026-11-22T02:37:51Z").
std::string utc_now_iso8601();

}  // namespace scalefit

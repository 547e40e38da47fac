// Internals of the nccl-tests reader, split along its seams:
//   nccl_tests_table.cpp  - header/row/rank-line tokenizing (format detection, table parsing)
//   nccl_tests_infer.cpp  - operation, rank and node inference (context)
//   nccl_tests_json.cpp   - nccl-tests `-J` JSON and rccl-tests `--output_file` JSON lines
//   nccl_tests.cpp        - the line loop, records and the context record
#pragma once

#include "lines.hpp"
#include "text.hpp"

#include "scalefit/core/collectives.hpp"
#include "scalefit/ingest/ingest.hpp"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace scalefit::ingest::detail {

/// One `#  Rank N [Group G] Pid P on HOST device D [busid] NAME` line.
struct RankLine {
  int rank = 0;
  std::string host;
  std::string device;
  long line = 0;
};

/// One placement's tokens by column name ("time", "algbw", "busbw", "#wrong", "i_min", ...).
struct RawHalf {
  std::map<std::string, std::string> cols;
};

/// One result row: prefix columns (size, count, type, redop, root) and the placements.
struct RawRow {
  long line = 0;
  std::map<std::string, std::string> prefix;
  std::vector<RawHalf> halves; ///< out-of-place, in-place
  std::string timestamp;
};

/// One result table (one per `# Collective test starting:` or per header).
struct Section {
  long header_line = 0;
  std::vector<std::string> columns;
  std::optional<Op> op_banner; ///< `# Collective test starting: <bin>` or JSON args[0]
  std::optional<Op> op_cmd;    ///< a `*_perf` binary on a command line before the table
  std::vector<RankLine> ranks;
  bool rank_list_elided = false; ///< `...` among the rank lines, or a line cut
  std::vector<RawRow> rows;
  bool footer = false;
  long last_row_line = 0;
  std::optional<int> json_nranks; ///< rccl-tests JSON's "gpus" field (exact)
  /// The operation the log names for this table: the banner's, else the command line's; nullopt
  /// when neither names one.
  std::optional<Op> named_op() const { return op_banner ? op_banner : op_cmd; }
};

/// What the whole file says about the job besides the tables: NCCL INFO lines, launcher
/// prefixes and command lines.
struct LogFacts {
  std::set<std::string> info_hosts;  ///< hosts of `host:pid:tid [d] NCCL INFO` lines
  std::optional<int> info_nranks;    ///< `nRanks N` / `nranks N` of NCCL init lines (largest)
  std::optional<int> info_nnodes;    ///< `nNodes N` of NCCL init lines (largest)
  long via_net_line = 0;             ///< first `via NET/...` channel line (proves > 1 node)
  std::string via_net;               ///< its transport ("NET/IB/0", "NET/Socket/0", ...)
  long net_init_line = 0;            ///< first `NET/IB : Using` / `NET/OFI` / ... init line
  std::set<int> prefix_ranks;        ///< ranks named by launcher prefixes
  std::set<std::string> prefix_hosts;///< hosts named by launcher prefixes
  LaunchShape launch;                ///< the first launcher command line naming a *_perf binary
  LaunchShape alloc;                 ///< salloc/sbatch/#SBATCH/qsub/#PBS lines, merged
  std::set<std::string> map_hosts;   ///< hosts of an Open MPI job map (`--display-map`)
};

/// The op, ranks and nodes of one table, and where each came from.
struct Derived {
  Op op = Op::allreduce;
  int nranks = 1;
  int nnodes = 1;
  std::string nranks_from;
  std::string nnodes_from;
  bool nnodes_lower_bound = false;
  std::vector<std::string> hosts;
  std::vector<std::string> devices;
};

// ---- nccl_tests_table.cpp ----

/// "./build/all_reduce_perf_mpi:" -> allreduce (also rccl-tests' names); nullopt if the token is
/// no `*_perf[_mpi]` binary. `stem` receives the binary's stem even when it is no supported op.
std::optional<Op> op_from_binary(std::string tok, std::string *stem = nullptr);
/// The op of a banner's tokens `# Collective test starting: <binary>` (nccl-tests) or
/// `... starting: <op> (<binary>)` (scalefit-bench: its op name, then nccl-tests' binary in
/// parentheses); nullopt when neither names a known *_perf binary.
std::optional<Op> op_from_banner(const std::vector<std::string> &toks);

/// Whether whitespace tokens form a result-table header ("size count type ... time algbw busbw").
bool is_table_header(const std::vector<std::string> &toks);

/// Parses the tokens of a Rank line (after an optional '#'); nullopt if it is none.
std::optional<RankLine> parse_rank_line(const std::vector<std::string> &toks, long line);

/// Number of whitespace tokens a row of this header has (a timestamp column is 2 tokens).
std::size_t expected_tokens(const std::vector<std::string> &cols);

/// Maps a row's tokens to the header's columns, allowing the blank redop/root columns of old
/// formats, and a blank redop in the current format when `op` (the operation the banner or a
/// command line names; nullopt when none does) has no reduction or is unknown: a vendor fork
/// prints nothing under `redop` for its allgather rows. A row read without a header column must
/// still hold a type name, a root integer and a time where the header puts them. nullopt when the
/// token count fits no variant.
std::optional<RawRow> map_row(const std::vector<std::string> &header,
                              const std::vector<std::string> &toks, long line,
                              std::optional<Op> op = std::nullopt);

/// Rows pasted without their header ("only the rows"): the lines whose 13 tokens read as nccl-tests'
/// columns since 2.13 (size count type redop root, then time algbw busbw #wrong out of place and in
/// place: sizes, a dtype, a redop name, a root, numbers, #wrong counts or N/A). A section of them
/// when there are at least two, else nullopt.
std::optional<Section> headerless_section(const std::vector<std::string> &lines);

/// Warns (once, at the first repeat) when rows of one table repeat a size (size 0 aside: old
/// versions print it twice, and it is skipped): several processes each printed the table, as
/// nccl-tests built without MPI=1 but launched by mpirun does; each is a 1-rank run.
void warn_repeated_sizes(const Section &s, Diagnostics &diag);

/// Splits the first token where two fixed-point numbers were printed without a separator
/// ("2821923.322821923.32" -> "2821923.32" "2821923.32"). `what` describes the split.
bool split_glued(std::vector<std::string> &toks, std::string &what);

/// Whether column name `c` is a time column ("time", "cputime").
bool is_time_col(const std::string &c);

/// Joins strings with a separator.
std::string join(const std::vector<std::string> &v, const char *sep = " ");

// ---- nccl_tests_infer.cpp ----

/// Decides op, nranks and nnodes of a section from its columns, values and the file's facts.
Derived derive(const Section &s, const LogFacts &facts, const IngestOptions &opt,
               Diagnostics &diag);

// ---- nccl_tests_json.cpp ----

/// Whether the file's first non-blank character opens JSON (`{` or `[`).
bool looks_like_json(const std::vector<std::string> &lines);

/// Reads nccl-tests' `-J` JSON (one document: args, config.devices, results[] with
/// out_of_place/in_place {time|cpu_time, alg_bw, bus_bw, nwrong}) or rccl-tests' JSON lines
/// (`{"name":"AllReduce","gpus":4,"inPlace":0,"size":..,"time":..,"algBw":..,"busBw":..}`) into
/// sections as the text reader makes them. \throws InputError naming the line on malformed JSON.
std::vector<Section> read_json_sections(const std::vector<std::string> &lines,
                                        Diagnostics &diag, std::string &tool_version,
                                        std::string &command_line);

} // namespace scalefit::ingest::detail

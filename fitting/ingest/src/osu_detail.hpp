// OSU Micro-Benchmarks: which test a table is (from its title, its binary's name or its column
// header), its MPI datatype, and its header's columns. Shared by osu.cpp (the reader) and
// osu_tests.cpp (these helpers). No regex touches log text.
#pragma once

#include "html.hpp"
#include "lines.hpp"

#include "scalefit/core/collectives.hpp"

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace scalefit::ingest::detail {

/// What a table's time column holds: a latency [us], a one-way bandwidth or a bi-directional
/// bandwidth [MB/s = 1e6 B/s].
enum class OsuKind { latency, bandwidth, bibandwidth };

/// One OSU test: the op it maps to (osu.cpp's table), its kind and its binary's name.
struct OsuTest {
  Op op = Op::sendrecv;
  OsuKind kind = OsuKind::latency;
  bool bytes_times_n = false; ///< allgather/alltoall: bytes = size * n
  bool pt2pt = false;         ///< osu_latency, osu_bw, osu_bibw: always 2 ranks
  std::string name;           ///< osu_allreduce, osu_latency, ...
  /// OMB's non-blocking collective (osu_iallgather, ...): timed by "Pure Comm.(us)", the
  /// collective without the overlapped compute; its own curve (method "nonblocking").
  bool nonblocking = false;
};

/// Maps an OMB title ("Allreduce Latency", "All-to-All Personalized Exchange Latency",
/// "Bi-Directional Bandwidth"; `Persistent`/`Blocking` words ignored; "Non-blocking X Latency" to
/// X's op with `nonblocking` set and the name osu_i<x>) to its test; letters and digits only are
/// compared. nullopt for a test the reader does not support.
std::optional<OsuTest> test_from_title(const std::string &title);

/// Maps a binary's name (a path or a bare token: `./osu_bibw`, `.../pt2pt/osu_latency`,
/// `osu_allreduce_persistent`) to its test. nullopt when the token names no supported OSU binary.
std::optional<OsuTest> test_from_binary(const std::string &token);

/// The test a column header names when no title line precedes it (a paste that lost it):
/// `Latency (us)` is osu_latency; `Bandwidth (MB/s)` is osu_bw, or osu_bibw when `binary_hint`
/// (the binary named by the nearest command line before the header) is osu_bibw; `Bi-Bandwidth
/// (MB/s)` (OMB 3.x) is osu_bibw; `Avg
/// Latency(us)` is a collective, whose op only `binary_hint` can say. Input: the normalized
/// columns (header_columns) and that hint (nullopt when no command line names an OSU binary).
/// nullopt when the header does not tell the test.
std::optional<OsuTest> test_from_header(const std::vector<std::string> &columns,
                                        const std::optional<OsuTest> &binary_hint);

/// Whether a table of `columns` (normalized) can be a table of `test`: a latency test has a
/// latency column, a bandwidth test a bandwidth column.
bool header_fits_test(const std::vector<std::string> &columns, const OsuTest &test);

/// Parses an OSU title line's tokens: "OSU MPI Allreduce Latency Test v7.4" -> {"Allreduce
/// Latency", "7.4"}; OMB 2.x/3.0's "OSU MPI Bandwidth Test (Version 2.0)" -> {"Bandwidth",
/// "2.0"}. The second token names the flavour (MPI, MPI-CUDA, NCCL, ...). nullopt when the tokens
/// are no OSU title.
std::optional<std::pair<std::string, std::string>> parse_title(const std::vector<std::string> &t);

/// The scalefit type of an MPI datatype name ("MPI_CHAR." as OMB 7 prints it, trailing '.' or
/// ',' dropped): MPI_CHAR int8, MPI_BYTE uint8, MPI_INT int32, MPI_FLOAT float32, ... nullopt
/// for any other name.
std::optional<DType> dtype_from_mpi(std::string name);

/// Header columns, normalized (lower case, spaces removed: "Avg Latency(us)" -> "avglatency(us)",
/// "Bandwidth (MB/s)" -> "bandwidth(mb/s)"). Read token by token: a column ends at a token that
/// closes a unit ("(us)", "Latency(us)", "(MB/s)") or is a one-word column (Size, Iterations,
/// Validation, Messages/s), so headers whose spacing was collapsed read the same. Input: the
/// header line without its leading '#'.
std::vector<std::string> header_columns(const std::string &body);

/// A command line in the file that starts an osu_* binary through a launcher (or after a prompt).
struct LaunchCommand {
  std::size_t index = 0; ///< index in the reader's lines
  LaunchShape shape;     ///< what its options say (launch_shape)
  std::string text;      ///< the command, from its launcher on
};

/// What the file's command lines and allocations say about the job (OMB prints none of it).
struct Launch {
  LaunchShape shape;               ///< of the first launcher command line naming an osu_* binary
  LaunchShape alloc;               ///< of the batch allocation (salloc/sbatch/#SBATCH/#PBS)
  std::set<std::string> map_hosts; ///< hosts of a job map (Open MPI Data for node:, Slurm cpu-bind)
  std::string command_line;        ///< that command, from its launcher on
  /// Every OSU binary a command names, by index in the lines: tells a table without a title.
  std::vector<std::pair<std::size_t, OsuTest>> binaries;
  /// Every command that starts an osu_* binary, in file order (the first is `command_line`): a
  /// paste of several runs (a scaling sweep, `-n 16` then `-n 24`) gives each table its own.
  std::vector<LaunchCommand> commands;
};

/// Whether `title` (as parse_title returns it) is one of the tests that print no message sizes
/// (osu_barrier, osu_ibarrier, osu_init, osu_hello).
bool sizeless_test(const std::string &title);
/// Whether `tok` (a path or a name) is one of those tests' binaries.
bool sizeless_binary(const std::string &tok);

/// Reads the launch: a command continued with trailing backslashes is read whole on its last
/// line; a launcher line without the binary (a command wrapped by a mail client or a terminal,
/// `mpirun_rsh -np 2 host1 host2 MV2_X=1` then `./osu_latency` on the next line) is joined with
/// the line naming it when that comes within 4 non-empty lines, none of them a '#' line. Every
/// command naming an osu_* binary is kept in `commands`; the first also in `shape` and
/// `command_line`. Throws nothing.
Launch scan_launch(const std::vector<SourceLine> &lines);

} // namespace scalefit::ingest::detail

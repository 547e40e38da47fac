// Line-level normalization shared by the nccl-tests and OSU readers: launcher prefixes
// (`mpirun --tag-output`, `srun --label`, `mpiexec -l`, `pdsh`-style `host: `, ISO timestamps of
// `kubectl logs --timestamps`) are stripped and the rank/host they name is kept; NCCL INFO lines
// (`host:pid:tid [dev] NCCL INFO ...`) are recognized; launcher command lines give -np / nodes.
// Everything here is hand-written scanning over bounded state (no backtracking regexes): a line of
// any length costs time linear in its length and constant stack.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace scalefit::ingest::detail {

/// A log line with its launcher prefixes removed.
struct CleanLine {
  std::string_view text;            ///< the line without prefixes, trimmed
  std::optional<int> prefix_rank;   ///< rank named by `[1,R]<stdout>:`, `R: `, `[R] `, `[host:R]`
  std::string prefix_host;          ///< host named by `host: ` or `[host:R]` (empty when none)
};

/// Strips, repeatedly, the launcher prefixes at the start of `line` (each at most once per
/// kind): `[J,R]<stdout>:` / `<stderr>:` (Open MPI --tag-output), `R: ` (srun --label; digits,
/// colon, space), `[R] ` / `[R]: ` (Intel MPI / MPICH -l), `[host:R] `, `host: ` (pdsh; a host
/// token of letters, digits, `.-_` followed by `: `; never a `#` line), an ISO-8601 timestamp
/// (`2024-05-01T12:00:00.123Z `), Ray's `(head, rank=0, pid=3808) `. Leading whitespace and tabs are removed.
CleanLine strip_prefixes(std::string_view line);

/// An NCCL debug line: `host:pid:tid [dev] NCCL INFO|WARN ...`.
struct NcclInfo {
  std::string host;       ///< the host name before the first ':'
  std::string_view body;  ///< text after "NCCL INFO " / "NCCL WARN "
};

/// Recognizes an NCCL debug line; nullopt otherwise.
std::optional<NcclInfo> parse_nccl_info(std::string_view line);

/// Value of an integer field in NCCL INFO text, e.g. field "nRanks" in "... nRanks 16 nNodes 2
/// localRanks 8 ..." or "nranks" in "... rank 3 nranks 32 cudaDev 3 ...". nullopt when absent.
std::optional<long> info_int_field(std::string_view body, std::string_view field);

/// What a launcher command line says about the job (`mpirun -np 16 -npernode 8 ...`, `srun -N 2
/// --ntasks-per-node=8 ...`, `mpiexec -n 4 -ppn 2 ...`). Fields unset when not given.
struct LaunchShape {
  std::optional<int> nranks;      ///< -np/-n/--np/--ntasks, or nodes * per-node
  std::optional<int> nnodes;      ///< srun -N/--nodes, or a -H/--host list's distinct hosts
  std::optional<int> per_node;    ///< -npernode/-ppn/--ntasks-per-node/--map-by ppr:K:node
};

/// Reads a launcher command line's shape; tokens after the launched binary are not read.
/// `binary_index`: index of the launched binary's token (tokens after it are its own options).
LaunchShape launch_shape(const std::vector<std::string> &tokens, std::size_t binary_index);

/// Whether `tok` names a launcher (mpirun, mpiexec, srun, aprun, jsrun, mpiexec.hydra).
bool is_launcher(std::string_view tok);

} // namespace scalefit::ingest::detail

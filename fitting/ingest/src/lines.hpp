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
#include <utility>
#include <vector>

namespace scalefit::ingest::detail {

/// A log line with its launcher prefixes removed.
struct CleanLine {
  std::string_view text;          ///< the line without prefixes, trimmed
  std::optional<int> prefix_rank; ///< rank named by `[1,R]<stdout>:`, `R: `, `[R] `, `[host:R]`
  std::string prefix_host;        ///< host named by `host: ` or `[host:R]` (empty when none)
};

/// Strips, repeatedly, the launcher prefixes at the start of `line` (each at most once per
/// kind): `[J,R]<stdout>:` / `<stderr>:` (Open MPI --tag-output), `R: ` (srun --label; digits,
/// colon, space), `[R] ` / `[R]: ` (Intel MPI / MPICH -l), `[host:R] `, `host: ` (pdsh; a host
/// token of letters, digits, `.-_` followed by `: `; never a `#` line), an ISO-8601 timestamp
/// (`2024-05-01T12:00:00.123Z `), Ray's `(head, rank=0, pid=3808) `. Leading whitespace and tabs
/// are removed.
CleanLine strip_prefixes(std::string_view line);

/// An NCCL debug line: `host:pid:tid [dev] NCCL INFO|WARN ...`.
struct NcclInfo {
  std::string host;      ///< the host name before the first ':'
  std::string_view body; ///< text after "NCCL INFO " / "NCCL WARN "
};

/// Recognizes an NCCL debug line; nullopt otherwise.
std::optional<NcclInfo> parse_nccl_info(std::string_view line);

/// Value of an integer field in NCCL INFO text, e.g. field "nRanks" in "... nRanks 16 nNodes 2
/// localRanks 8 ..." or "nranks" in "... rank 3 nranks 32 cudaDev 3 ...". nullopt when absent.
std::optional<long> info_int_field(std::string_view body, std::string_view field);

/// What a launcher command line or a batch allocation says about the job (`mpirun -np 16
/// -npernode 8 ...`, `srun -N 2 --ntasks-per-node=8 ...`, `mpiexec -n 4 -ppn 2 ...`,
/// `#SBATCH --nodes=2`, `#PBS -l select=2:mpiprocs=4`). Fields unset when not given.
struct LaunchShape {
  std::optional<int> nranks;   ///< -np/-n/--np/--ntasks, a -H list's slots, or nodes * per-node
  std::optional<int> nnodes;   ///< srun -N/--nodes, a -H/--host list's distinct hosts, select=N
  std::optional<int> per_node; ///< -npernode/-ppn/--ntasks-per-node/--map-by ppr:K:node, and
                               ///< -N of Open MPI's mpirun and of aprun (processes per node)
  /// The ranks the launcher starts when nothing sets them: `srun -N 2` without -n/--ntasks/
  /// --ntasks-per-node starts one task per node (Slurm's default), unless the allocation it runs
  /// in set a task count (so nranks and the allocation's ranks come first).
  std::optional<int> default_nranks;
};

/// Reads a launcher command line's shape; tokens after the launched binary are not read.
/// `binary_index`: index of the launched binary's token (tokens after it are its own options).
/// `-N` is nodes for srun and Flux (`flux run -N4 --tasks-per-node=96`) and processes per node
/// for mpirun/mpiexec (Open MPI) and aprun.
/// Without -np, a host list with slots (`-H a:4,b:4`, Open MPI and Hydra) gives the ranks.
/// MVAPICH's `mpirun_rsh -np 2 host1 host2 [VAR=value...] ./binary`: the bare host names before
/// the binary (not a -hostfile's) are the nodes. IBM's `jsrun -n 2 -a 6 -r 1`: resource sets x
/// tasks per set (12 ranks), resource sets per host give the nodes (2).
LaunchShape launch_shape(const std::vector<std::string> &tokens, std::size_t binary_index);

/// Reads a batch allocation line: `salloc`/`sbatch` options (the command anywhere on the line,
/// after a prompt or environment settings), `#SBATCH` directives (also given without the '#', as
/// a reader that strips comment marks passes them), `qsub`/`#PBS -l select=N[:mpiprocs=K]` or
/// `-l nodes=N:ppn=K` (PBS, Torque). Empty for any other line.
LaunchShape allocation_shape(const std::vector<std::string> &tokens);

/// Fills the fields `into` lacks from `from` (a launcher line's shape from its allocation's),
/// then completes ranks = nodes * per-node or nodes = ranks / per-node where that divides.
void fill_missing(LaunchShape &into, const LaunchShape &from);

/// The node count the job's launch says for `nranks` ranks, and where it came from, most trusted
/// first: the launcher line's nodes, its ranks per node, an Open MPI job map's hosts
/// (`map_hosts`), the batch allocation's nodes, its ranks per node. nullopt when none says.
std::optional<std::pair<int, std::string>> nodes_from_launch(const LaunchShape &launch,
                                                             std::size_t map_hosts,
                                                             const LaunchShape &alloc, int nranks);

/// Whether `tok` names a launcher (mpirun, mpiexec, srun, aprun, jsrun, mpiexec.hydra,
/// mpirun_rsh, flux: Flux's `flux run`, ibrun: TACC's wrapper).
bool is_launcher(std::string_view tok);

/// Joins a shell command continued over lines with a trailing backslash (`srun --nodes=4 ... \`
/// then `-- all_gather_perf -b 64K ...`). Feed every line's tokens in order.
class CommandJoiner {
public:
  /// The tokens of the command that `tokens` ends: the continued lines' tokens, then its own.
  /// Empty while the command goes on (`tokens` ends with a backslash). At most 512 tokens are
  /// held: a longer run of continued lines is dropped, not joined.
  const std::vector<std::string> &feed(const std::vector<std::string> &tokens);

private:
  std::vector<std::string> m_held, m_joined;
};

/// Host of a job map line: Open MPI's (`mpirun --display-map`: " Data for node: HOST  Num slots:
/// ...") or Slurm's per-task binding report (`srun --cpu-bind=verbose`: "cpu_bind=MASK - HOST,
/// task 0 0 [pid]: mask 0x1 set"); nullopt for any other line.
std::optional<std::string> job_map_host(const std::vector<std::string> &tokens);

} // namespace scalefit::ingest::detail

// Helpers of `scalefit-bench comm` (comm.cpp) that need no state of the sweep: the dtypes and
// backend rules, block sizes, point names, the communicator warm-up and the last rank's tally.
// Internal to the bench library.
#pragma once

#include "scalefit/bench/backend.hpp"
#include "scalefit/bench/collective.hpp"
#include "scalefit/bench/options.hpp"
#include "scalefit/bench/verify.hpp"
#include "scalefit/bench/groups.hpp"
#include "scalefit/core/collectives.hpp"
#include "scalefit/core/records.hpp"
#include "scalefit/core/timing.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <map>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace scalefit::bench::detail {

/// The outlier rule, as recorded in the context (core/timing.hpp: outlier_indices).
inline constexpr const char *kOutlierRule =
    "sample > median + 5 * max(1.4826 * MAD, 0.01 * median) (slow samples only)";

/// The sweep's dtypes: -d's list, or with -d all every type the backend ("mpi", "nccl") has.
std::vector<DType> sweep_dtypes(const CommOptions &o, const std::string &backend_name);

/// Backend-dependent validation (every rank alike). \throws InputError naming the flag: a type
/// or reduction the mpi backend lacks, -G/--timer events/-R/--alloc on mpi, --baseline on nccl.
void validate_for_backend(const CommOptions &o, const std::string &backend_name,
                          const std::vector<DType> &dtypes);

/// Bytes of the send and receive allocations of one (op, shape, dtype) block [B]: its largest
/// point's buffers (per-rank count `cmax` on `nranks`), or at least `rotation_bytes` each so
/// the rotation leaves the cache.
std::pair<std::size_t, std::size_t> block_bytes(const Collective &coll, std::size_t cmax,
                                                DType t, int nranks, std::size_t rotation_bytes);

/// "what" for the watchdog and progress: "allreduce 1048576 B float out-of-place world n=4 ...".
std::string point_name(Op op, std::uint64_t bytes, DType t, Placement p, const GroupShape &s);

/// A new communicator's first operations set up connections and buffers (NCCL's lazy
/// connection setup, MPI's eager/rendezvous paths): runs max(1, -w) untimed out-of-place
/// operations at each per-rank count of `counts` (the sweep's largest, then smallest) and waits,
/// as nccl-tests warms before timing, so that no point's warm-up inherits that cost and
/// calibrates a batch of 1. Collective over `comm`.
void warm_communicator(Comm &comm, const Collective &coll, Buffers &bufs, const CommOptions &o,
                       Op op, DType dtype, int nranks, const std::vector<std::size_t> &counts);

/// The world rank that was the slowest (PointSamples::slowest_rank) in most samples, and the
/// share of samples it was [0, 1]; nullopt without samples.
std::optional<std::pair<int, double>> most_often_last(const std::vector<int> &slowest_rank);

/// The --baseline line of a point: bare MPI_Allreduce loop vs harness, medians of the
/// interleaved samples, the overhead [us, %] against the goal (<= 2% or 0.1 us), and the means
/// beside them (`baseline`: time_baseline's object; `bytes` [B]; `batch`: ops per sample). Ends
/// with '\n'.
std::string baseline_summary(const nlohmann::json &baseline, std::uint64_t bytes, int batch);

/// The end-of-run line naming a rank that finished last in most samples of more than half of
/// `points_judged` points (`last_rank_points`: per world rank, such points), with its host;
/// "" when none is, with fewer than 4 points judged or fewer than 3 ranks.
std::string slowest_rank_summary(const std::map<int, int> &last_rank_points, int points_judged,
                                 const std::vector<std::string> &hosts_per_rank);

/// The context's `sampling`: how samples are formed (mode "nccl-tests" or "adaptive", batch,
/// warm-up operations, CUDA graph launches) and the communicator warm-up's definition.
nlohmann::json sampling_context(const CommOptions &o);

/// The table header's time line: the statistic, how samples combine over ranks, the timer
/// (`timer_name`: host or events) and the timing definition (--sync: back to back as nccl-tests,
/// or a barrier after each operation as OSU and IMB).
std::string time_definition_line(const CommOptions &o, const std::string &timer_name);

/// The context's `timer` object: name, definition, across_ranks, sync and sync_definition
/// (docs/records.md, "Timing definitions side by side").
nlohmann::json timer_context(const CommOptions &o, const std::string &timer_name);

/// The context's `stop_rule` object: the options of core/timing.hpp's StopRule as this run set
/// them, the budget, and the definition of the claimed interval (`ci_rel`).
nlohmann::json stop_rule_context(const CommOptions &o);

/// The context's `modes_rule`: when a record carries extra.modes (core/timing.hpp detect_modes).
inline constexpr const char *kModesRule =
    "extra.modes when the samples split into two clusters (Otsu split of log times) each >= "
    "10% of them, >= 1.1x apart, Ashman's D >= 4";

/// The banner rank 0 prints before the sweep: backend and versions, nccl-tests' "# nRanks ..."
/// line, buffers, --repeat, the devices per rank and what --resume reuses (`resumed` points).
/// Ends with '\n'.
std::string run_banner(const CommOptions &o, const std::string &backend_name,
                       const ContextRecord &ctx, const NodeLayout &layout,
                       std::size_t rotation_bytes, std::uint64_t cache,
                       const std::string &cache_source, const Backend &backend,
                       const std::vector<std::string> &hosts, const std::vector<std::string> &devices,
                       std::size_t resumed);

/// The context record of a comm run before its backend exists: system, backend, rank and node
/// layout, one host per node (its first rank's; `hosts_per_rank` has one name per world rank),
/// command line, captured environment, the dtypes, the alltoallv matrix and the (op, placement)
/// pairs the backend does not run, and the method fields --resume compares (statistic,
/// buffers, timer, sampling). comm.cpp adds devices, versions and the backend's details. No
/// errors.
ContextRecord initial_context(const CommOptions &o, const std::string &backend_name,
                              const NodeLayout &layout,
                              const std::vector<std::string> &hosts_per_rank,
                              const std::vector<DType> &dtypes, const std::string &command_line);

/// Bytes of the run's one send and one receive allocation on this rank [B].
struct RunBufferBytes {
  std::size_t send = 0, recv = 0;
};

/// The run's buffers: every (op, shape, dtype) block's largest point (block_bytes, at least
/// `rotation_bytes` each), allocated once so every page is faulted in before the first timed
/// point. Collective over MPI_COMM_WORLD (every rank agrees). \throws InputError naming -e when
/// an mpi-backend count exceeds INT_MAX (MPI-3 counts are C ints) or when the buffers (and, for
/// a device backend with -c, the pinned check staging) exceed the memory `backend` reports for
/// the `local_size` ranks of a node (guard.hpp: memory_refusal).
RunBufferBytes run_buffer_bytes(const CommOptions &o, const std::string &backend_name,
                                const std::vector<GroupShape> &shapes,
                                const std::vector<DType> &dtypes,
                                const std::vector<std::uint64_t> &sizes, std::size_t rotation_bytes,
                                Backend &backend, int local_size);

} // namespace scalefit::bench::detail

/// \file sampling.hpp
/// The timing loop of one point: warm-up, batch calibration, barrier-separated samples combined
/// over ranks, the stop rule (core/timing.hpp); the --baseline comparison; and the buffer
/// rotation that keeps data out of the cache between operations (nccl-tests' "shift the buffers
/// by one message size per iteration to avoid cache effects").
#pragma once

#include "scalefit/bench/backend.hpp"
#include "scalefit/bench/collective.hpp"
#include "scalefit/bench/guard.hpp"
#include "scalefit/core/timing.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace scalefit::bench {

/// Where operation k of a point reads and writes: base pointers advanced by (k mod steps) x
/// step bytes. step = the larger of the point's send and receive footprint (nccl-tests'
/// max(sendBytes, expectedBytes)); steps = how many such shifts fit in the allocation (1: no
/// rotation, --hot or a point as large as the allocation).
struct Rotation {
  std::size_t step = 0;  ///< bytes between consecutive operations' buffers
  std::size_t steps = 1; ///< distinct positions cycled through
  /// Rotation for a footprint of `extent` bytes (the farthest byte the point touches from the
  /// base, send and receive) in an allocation of `alloc` bytes, shifting by `step` bytes;
  /// `hot` or step 0 gives steps = 1. \pre extent <= alloc.
  static Rotation make(std::size_t step, std::size_t extent, std::size_t alloc, bool hot);
};

/// How one point is sampled.
struct SamplingPlan {
  int warmup_iters = 5;        ///< -w: warm-up operations (the first alone, the rest as a batch)
  int batch = 0;               ///< --batch / -G: operations per sample (0: calibrated)
  double batch_time_us = 1000; ///< target duration of a calibrated sample [us]
  /// CUDA graph launches per sample (-G; Comm::graph_launches): a calibrated batch is sized so
  /// that `graph_launches` launches of it last batch_time_us. 1 when eager.
  int graph_launches = 1;
  StopRule rule;               ///< when to stop (max_time_s: this point's cap)
};

/// The samples of one point. Sample j's time per operation [us] on each rank is its batch time
/// / batch; `mean_us[j]` is its mean over all world ranks (nccl-tests' default "average" across
/// ranks) and `max_us[j]` the max (the slowest rank's view). The stop rule runs on mean_us.
struct PointSamples {
  std::vector<double> mean_us;
  std::vector<double> max_us;
  std::vector<int> slowest_rank; ///< per sample: the world rank with the max (the last to finish)
  int batch = 1;
  double warmup_op_us = 0; ///< time per operation the warm-up measured (max over ranks) [us]
  double elapsed_s = 0;    ///< sampling time when the rule stopped (max over ranks) [s]
  /// Page faults (minor + major, getrusage) any one rank took during the timed samples, the
  /// max over ranks: 0 when the buffers were resident before timing (issue 20, Sec. 1).
  std::int64_t page_faults = 0;
};

/// Warm-up, batch calibration and samples of one point. Collective over MPI_COMM_WORLD: ranks
/// without a communicator (`comm` null) join the barriers and gathers with zero times and do not
/// count in the mean. The watchdog is armed around every barrier, batch and gather.
PointSamples time_point(Comm *comm, const std::function<void()> &op, const SamplingPlan &plan,
                        std::uint64_t point_id, Watchdog &watchdog);

/// --baseline (mpi): `nsamples` interleaved pairs of a harness batch (`op`, as measured) and a
/// bare MPI_Allreduce loop over the same rotated buffers (send/recv + (k mod steps) x step),
/// each combined over ranks as time_point does (mean over ranks). Returns the record's
/// "baseline" object: samples, iters_per_sample, {harness,bare}_{mean,median}_us, and the
/// overhead of the medians (us and %: the figure README's <= 2% or 0.1 us goal rests on; means
/// swing by microseconds on a shared host where medians move by tenths), with `within_goal`.
/// `op_us`: expected time per operation [us] (for the watchdog's deadline).
nlohmann::json time_baseline(Comm *comm, const std::function<void()> &op, const char *send,
                             char *recv, const CollArgs &a, const Rotation &rot, int batch,
                             double op_us, int nsamples, Watchdog &watchdog);

/// Stderr progress of a sweep with an ETA (rank 0), at most every 2 s unless forced:
/// "scalefit-bench: D/T points (what), E s elapsed, ETA S s".
class Progress {
public:
  explicit Progress(std::size_t total);
  void advance(std::size_t n, const std::string &what, bool force);

private:
  std::size_t m_total, m_done = 0;
  double m_start, m_last;
};

} // namespace scalefit::bench

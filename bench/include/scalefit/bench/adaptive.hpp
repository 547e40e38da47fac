/// \file adaptive.hpp
/// When to stop timing a point: nvbench's rule (stop once relative noise stddev/mean is under a
/// target and a minimum time has passed, or at a time budget), with a floor and a ceiling on
/// samples, or a fixed sample count (-n). Also the batch calibration.
#pragma once

#include <span>

namespace scalefit::bench {

/// The stop rule for one point. Times in seconds; samples in any unit (scalefit: us per op).
struct StopRule {
  double min_time_s = 0.01; ///< noise may stop the point only after this much timed time
  double max_time_s = 0.05; ///< the point stops after this much time (once min_samples taken)
  double max_noise = 0.01;  ///< relative noise target, stddev/mean of the samples
  int min_samples = 3;      ///< floor: never fewer samples (also with the time cap)
  int max_samples = 1000;   ///< ceiling: never more samples
  int fixed_samples = 0;    ///< > 0: exactly this many samples (-n), the others ignored

  /// Whether to stop after `samples` were taken in `elapsed_s` seconds. Deterministic in its
  /// inputs, so every rank that sees the same (max-combined) samples decides the same.
  bool should_stop(std::span<const double> samples, double elapsed_s) const;
};

/// Operations per sample so that one sample lasts about `target_us`: ceil(target / op time),
/// clamped to [1, max_batch]. `op_time_us` <= 0 (unmeasurable) gives max_batch.
int calibrate_batch(double op_time_us, double target_us, int max_batch);

} // namespace scalefit::bench

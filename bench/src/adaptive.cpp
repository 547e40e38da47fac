// Stop rule and batch calibration (nvbench's noise/time criterion with sample floor and ceiling).
#include "scalefit/bench/adaptive.hpp"

#include "scalefit/core/stats.hpp"

#include <algorithm>
#include <cmath>

namespace scalefit::bench {

bool StopRule::should_stop(std::span<const double> samples, double elapsed_s) const {
  const int n = static_cast<int>(samples.size());
  if (fixed_samples > 0)
    return n >= fixed_samples;
  if (n >= max_samples)
    return true;
  if (n < std::max(min_samples, 2))
    return false;
  if (elapsed_s >= max_time_s)
    return true;
  if (elapsed_s < min_time_s)
    return false;
  return summarize(samples).rel_noise() <= max_noise;
}

int calibrate_batch(double op_time_us, double target_us, int max_batch) {
  max_batch = std::max(1, max_batch);
  if (!(op_time_us > 0))
    return max_batch;
  const double want = std::ceil(target_us / op_time_us);
  if (!(want >= 1))
    return 1;
  return want >= max_batch ? max_batch : static_cast<int>(want);
}

} // namespace scalefit::bench

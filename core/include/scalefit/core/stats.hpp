/// \file stats.hpp
/// Summary statistics of timing samples, as nvbench and google/benchmark report them.
#pragma once

#include <span>
#include <vector>

namespace scalefit {

/// Statistics of a set of samples (any unit; scalefit uses microseconds).
struct Summary {
  std::size_t n = 0;    ///< number of samples
  double min = 0;       ///< smallest sample
  double median = 0;    ///< middle value; mean of the two middle values for even n
  double mean = 0;      ///< arithmetic mean
  double max = 0;       ///< largest sample
  double stddev = 0;    ///< sample standard deviation (n-1 denominator; 0 for n < 2)
  double p99 = 0;       ///< 99th percentile, linear interpolation between order statistics
  /// Relative noise stddev/mean (0 when mean is 0), the stopping criterion of adaptive timing.
  double rel_noise() const { return mean != 0 ? stddev / mean : 0.0; }
};

/// Percentile q in [0, 100] of `sorted` (ascending) by linear interpolation between closest
/// ranks (NumPy's default, "linear"): position q/100 * (n-1). \throws std::invalid_argument when
/// empty or q outside [0, 100].
double percentile_sorted(std::span<const double> sorted, double q);

/// Summarizes samples (need not be sorted). Empty input gives an all-zero Summary with n = 0.
Summary summarize(std::span<const double> samples);

}  // namespace scalefit

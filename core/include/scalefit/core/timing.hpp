/// \file timing.hpp
/// What the timing loops of `scalefit-bench comm` (bench/) and `scalefit-bench kernels`
/// (kernels/) share: when to stop sampling a point, how many operations one sample batches, the
/// confidence interval of the reported statistic, and the outlier rule records flag samples by.
/// Pure functions of the samples (no clocks, no MPI), so every rank that sees the same combined
/// samples takes the same decision.
#pragma once

#include "scalefit/core/stats.hpp"

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

namespace scalefit {

/// The statistic a point reports (its `time_us`) and a confidence interval is computed for.
enum class Statistic { mean, median };

/// "mean" or "median".
std::string_view statistic_name(Statistic s);

/// The stop rule for one point. Times in seconds; samples in any unit (scalefit: us per op).
/// Two precision criteria, chosen by `max_ci`:
///  - `max_ci` > 0 (comm's default): stop once the interval claimed for `statistic` (the 95%
///    confidence interval's relative half-width or the drift between the samples' halves,
///    whichever is larger: claimed_interval) is <= max_ci and `min_samples` were taken;
///  - `max_ci` == 0: nvbench's rule, stop once stddev/mean <= `max_noise` after `min_time_s`.
/// Either way the point stops at `max_time_s` (once `min_samples`, or `min_samples_at_cap` when
/// set, were taken) and at `max_samples`; `fixed_samples` > 0 (-n) takes exactly that many.
struct StopRule {
  double min_time_s = 0.01; ///< precision may stop the point only after this much timed time
  double max_time_s = 0.05; ///< the point stops after this much time (once min_samples taken)
  double max_noise = 0.01;  ///< relative noise target, stddev/mean of the samples (max_ci == 0)
  int min_samples = 3;      ///< floor: never fewer samples (also with the time cap)
  int max_samples = 1000;   ///< ceiling: never more samples
  int fixed_samples = 0;    ///< > 0: exactly this many samples (-n), the others ignored
  double max_ci = 0;        ///< > 0: target relative 95% CI half-width of `statistic`
  Statistic statistic = Statistic::mean; ///< the statistic whose CI max_ci bounds
  /// > 0: the floor once max_time_s has passed (a time budget that outranks min_samples, e.g.
  /// 2 for `comm --budget`); 0: min_samples holds at the cap too.
  int min_samples_at_cap = 0;

  /// Whether to stop after `samples` were taken in `elapsed_s` seconds. Deterministic in its
  /// inputs, so every rank that sees the same (combined) samples decides the same.
  bool should_stop(std::span<const double> samples, double elapsed_s) const;
};

/// Operations per sample so that one sample lasts about `target_us`: ceil(target / op time),
/// clamped to [1, max_batch]. `op_time_us` <= 0 (unmeasurable) gives max_batch.
int calibrate_batch(double op_time_us, double target_us, int max_batch);

/// Two-sided 97.5% quantile of Student's t distribution with `dof` >= 1 degrees of freedom (the
/// factor of a 95% confidence interval of a mean): exact table values for dof <= 30, the
/// Cornish-Fisher expansion about z = 1.959964 beyond (error < 1e-4). \throws
/// std::invalid_argument for dof < 1.
double student_t975(int dof);

/// Relative half-width of the 95% confidence interval of `s` over `samples` (any unit; the
/// result is unitless): mean: t975(n-1) * stddev / sqrt(n) / mean (Student's t interval);
/// median: distribution-free order-statistic interval [x_(l), x_(u)] with l, u = n/2 -/+ 1.96
/// sqrt(n)/2 (normal approximation to the binomial, rounded outward), half of (x_(u) - x_(l))
/// over the median. +infinity when undefined (fewer than 2 samples, fewer than 6 for the
/// median, or a zero statistic); 0 when all samples are equal.
double relative_ci_halfwidth(std::span<const double> samples, Statistic s);

/// The interval scalefit claims for a point: the larger of relative_ci_halfwidth (what the
/// samples' scatter allows) and the drift between the first and the second half of the samples
/// in time order, |s(first half) - s(second half)| / (2 s(all)). On a shared host a point can
/// change regime while it is sampled (a neighbour starts, a core is taken); within-sample
/// intervals assume one regime and claim precision that the next run does not reproduce
/// (issue 20: two runs that each claimed <= 2% differed by a median of 7-47%). The drift term is
/// that between-regime component as far as one point's samples can see it. +infinity as
/// relative_ci_halfwidth (and for fewer than 4 samples, where the halves are undefined).
double claimed_interval(std::span<const double> samples, Statistic s);

/// The value of statistic `s` in a Summary (mean or median).
double statistic_of(const Summary &summary, Statistic s);

/// The outlier rule of scalefit's records: sample i is an outlier when it exceeds
/// median + k * sigma, sigma = max(1.4826 * MAD, 0.01 * median) (MAD: median absolute deviation
/// from the median; 1.4826 makes it the standard deviation of normal data; the floor keeps a run
/// of identical samples from flagging every sample that differs at all). Only slow samples are
/// flagged (a stall, a stopped rank, a preempted core), as fast ones cannot be caused by them.
/// Returns the indices in increasing order; empty for fewer than 3 samples.
std::vector<std::size_t> outlier_indices(std::span<const double> samples, double k = 5.0);

/// Two regimes in one point's samples: a shared host that switches between a fast and a slow
/// state (a core shared with another rank or job, a frequency step) leaves two clusters of
/// sample times, and the point's statistic then depends on how long each regime lasted.
struct Modes {
  bool multimodal = false; ///< two separated clusters, each holding >= 10% of the samples
  double low = 0;          ///< median of the fast cluster (the samples' unit)
  double high = 0;         ///< median of the slow cluster
  double high_share = 0;   ///< fraction of samples in the slow cluster, in (0, 1)
  double separation = 0;   ///< Ashman's D of the two clusters in log time (>= 4 to flag)
};

/// Detects two regimes in `samples` (times > 0, any unit, at least 12 samples; fewer, or any
/// sample <= 0 or not finite, give `multimodal == false`). The sorted log times are split where
/// the between-cluster variance is largest (Otsu's threshold, Otsu 1979, IEEE Trans. SMC 9(1),
/// eq. 18, on a 1-D sample); the split counts as two modes when each side holds at least
/// max(3, 10%) of the samples, the slow cluster's median is >= 1.1x the fast one's, and Ashman's
/// D = sqrt(2) |mu1 - mu2| / sqrt(s1^2 + s2^2) (Ashman, Bird & Zepf 1994, AJ 108, eq. 3) is at
/// least 4. A hard split of one normal cluster gives D = 2.65 and of a uniform one 3.46, so
/// neither is flagged; two clean regimes 1.3x apart with 3% noise give D > 10.
Modes detect_modes(std::span<const double> samples);

} // namespace scalefit

// Stop rule, batch calibration, confidence intervals and the outlier rule (see timing.hpp).
#include "scalefit/core/timing.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace scalefit {

std::string_view statistic_name(Statistic s) {
  return s == Statistic::median ? "median" : "mean";
}

bool StopRule::should_stop(std::span<const double> samples, double elapsed_s) const {
  const int n = static_cast<int>(samples.size());
  if (fixed_samples > 0)
    return n >= fixed_samples;
  if (n >= max_samples)
    return true;
  if (elapsed_s >= max_time_s && min_samples_at_cap > 0 && n >= std::max(min_samples_at_cap, 1))
    return true;
  if (n < std::max(min_samples, 2))
    return false;
  if (elapsed_s >= max_time_s)
    return true;
  if (elapsed_s < min_time_s)
    return false;
  if (max_ci > 0)
    return claimed_interval(samples, statistic) <= max_ci;
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

double student_t975(int dof) {
  // t_{0.975, dof} for dof = 1..30 (standard tables, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2).
  static constexpr std::array<double, 30> kTable = {
      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
      2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
      2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof < 1)
    throw std::invalid_argument("Student's t needs at least 1 degree of freedom");
  if (dof <= 30)
    return kTable[static_cast<std::size_t>(dof - 1)];
  // Cornish-Fisher expansion of the t quantile in 1/dof (Abramowitz & Stegun 26.7.5).
  const double z = 1.959963984540054, v = dof;
  const double z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z;
  return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * v * v * v);
}

double statistic_of(const Summary &summary, Statistic s) {
  return s == Statistic::median ? summary.median : summary.mean;
}

double relative_ci_halfwidth(std::span<const double> samples, Statistic s) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const std::size_t n = samples.size();
  if (n < 2)
    return kInf;
  if (s == Statistic::mean) {
    const Summary sum = summarize(samples);
    if (!(sum.mean > 0))
      return sum.stddev == 0 && sum.mean == 0 ? 0.0 : kInf;
    return student_t975(static_cast<int>(n - 1)) * sum.stddev / std::sqrt(static_cast<double>(n)) /
           sum.mean;
  }
  if (n < 6)
    return kInf;
  std::vector<double> v(samples.begin(), samples.end());
  std::sort(v.begin(), v.end());
  const double half = 1.959963984540054 * std::sqrt(static_cast<double>(n)) / 2;
  // 1-based ranks l and u, rounded outward, clamped to the sample.
  const auto l = static_cast<std::size_t>(std::max(1.0, std::floor(n / 2.0 - half)));
  const auto u = static_cast<std::size_t>(std::min<double>(n, std::ceil(n / 2.0 + half + 1)));
  const double median = percentile_sorted(v, 50.0);
  if (!(median > 0))
    return v.front() == v.back() ? 0.0 : kInf;
  return (v[u - 1] - v[l - 1]) / 2 / median;
}

double claimed_interval(std::span<const double> samples, Statistic s) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double ci = relative_ci_halfwidth(samples, s);
  const std::size_t n = samples.size();
  if (!std::isfinite(ci) || n < 4)
    return kInf;
  const double all = statistic_of(summarize(samples), s);
  if (!(all > 0))
    return ci;
  const std::size_t h = n / 2;
  const double a = statistic_of(summarize(samples.subspan(0, h)), s);
  const double b = statistic_of(summarize(samples.subspan(n - h, h)), s); // odd n: middle dropped
  return std::max(ci, std::fabs(a - b) / (2 * all));
}

std::vector<std::size_t> outlier_indices(std::span<const double> samples, double k) {
  std::vector<std::size_t> out;
  if (samples.size() < 3)
    return out;
  std::vector<double> v(samples.begin(), samples.end());
  std::sort(v.begin(), v.end());
  const double median = percentile_sorted(v, 50.0);
  for (double &x : v)
    x = std::fabs(x - median);
  std::sort(v.begin(), v.end());
  const double mad = percentile_sorted(v, 50.0);
  const double sigma = std::max(1.4826 * mad, 0.01 * std::fabs(median));
  const double limit = median + k * sigma;
  for (std::size_t i = 0; i < samples.size(); ++i)
    if (samples[i] > limit)
      out.push_back(i);
  return out;
}

Modes detect_modes(std::span<const double> samples) {
  Modes m;
  const std::size_t n = samples.size();
  if (n < 12)
    return m;
  std::vector<double> x;
  x.reserve(n);
  for (double v : samples) {
    if (!(v > 0) || !std::isfinite(v))
      return m;
    x.push_back(std::log(v));
  }
  std::sort(x.begin(), x.end());
  // Prefix sums for the mean of each side of every split in O(1).
  std::vector<double> sum(n + 1, 0.0), sq(n + 1, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    sum[i + 1] = sum[i] + x[i];
    sq[i + 1] = sq[i] + x[i] * x[i];
  }
  const std::size_t least =
      std::max<std::size_t>(3, static_cast<std::size_t>(std::ceil(0.1 * static_cast<double>(n))));
  if (2 * least > n)
    return m;
  std::size_t best = 0;
  double best_between = -1;
  for (std::size_t k = least; k <= n - least; ++k) { // k samples on the fast side
    const double n1 = static_cast<double>(k), n2 = static_cast<double>(n - k);
    const double mu1 = sum[k] / n1, mu2 = (sum[n] - sum[k]) / n2;
    const double between = n1 * n2 * (mu1 - mu2) * (mu1 - mu2);
    if (between > best_between) {
      best_between = between;
      best = k;
    }
  }
  const double n1 = static_cast<double>(best), n2 = static_cast<double>(n - best);
  const double mu1 = sum[best] / n1, mu2 = (sum[n] - sum[best]) / n2;
  const double v1 = std::max(0.0, sq[best] / n1 - mu1 * mu1);
  const double v2 = std::max(0.0, (sq[n] - sq[best]) / n2 - mu2 * mu2);
  const double spread = std::sqrt(v1 + v2);
  m.separation = spread > 0 ? std::sqrt(2.0) * (mu2 - mu1) / spread
                            : std::numeric_limits<double>::infinity();
  std::vector<double> lo(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(best));
  std::vector<double> hi(x.begin() + static_cast<std::ptrdiff_t>(best), x.end());
  m.low = std::exp(percentile_sorted(lo, 50.0));
  m.high = std::exp(percentile_sorted(hi, 50.0));
  m.high_share = n2 / static_cast<double>(n);
  m.multimodal = m.separation >= 4.0 && m.high >= 1.1 * m.low;
  return m;
}

} // namespace scalefit

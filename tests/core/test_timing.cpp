// The shared timing rules (core/timing.hpp): the stop rule on synthetic sample streams, batch
// calibration, confidence intervals and the outlier rule.
#include "scalefit/core/timing.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace scalefit;

namespace {
/// Feeds samples one by one, `dt_s` apart, and returns how many the rule took.
int samples_until_stop(const StopRule &rule, const std::vector<double> &stream, double dt_s) {
  std::vector<double> taken;
  for (std::size_t i = 0; i < stream.size(); ++i) {
    taken.push_back(stream[i]);
    if (rule.should_stop(taken, dt_s * static_cast<double>(i + 1)))
      return static_cast<int>(i + 1);
  }
  return -1;
}
} // namespace

TEST(StopRule, QuietStreamStopsAtMinTime) {
  StopRule r{0.0095, 1.0, 0.01, 3, 1000, 0};
  const std::vector<double> quiet(100, 10.0);
  // 1 ms per sample: min-time 9.5 ms is passed at sample 10; noise is 0 by then.
  EXPECT_EQ(samples_until_stop(r, quiet, 0.001), 10);
}

TEST(StopRule, NoisyStreamRunsToMaxTime) {
  StopRule r{0.01, 0.049, 0.01, 3, 1000, 0};
  std::vector<double> noisy;
  for (int i = 0; i < 200; ++i)
    noisy.push_back(i % 2 ? 10.0 : 12.0); // ~9% noise
  // 2 ms per sample: max-time 49 ms is passed at sample 25.
  EXPECT_EQ(samples_until_stop(r, noisy, 0.002), 25);
}

TEST(StopRule, FloorHoldsEvenPastTheTimeCap) {
  StopRule r{0.01, 0.05, 0.01, 5, 1000, 0};
  const std::vector<double> slow{100, 200, 100, 200, 100, 200, 100};
  // Every sample takes 1 s, far beyond max-time; still at least 5 samples.
  EXPECT_EQ(samples_until_stop(r, slow, 1.0), 5);
}

TEST(StopRule, CeilingStopsANoisyFastStream) {
  StopRule r{0.0, 100.0, 1e-9, 2, 20, 0};
  std::vector<double> noisy;
  for (int i = 0; i < 100; ++i)
    noisy.push_back(1.0 + (i % 3));
  EXPECT_EQ(samples_until_stop(r, noisy, 1e-6), 20);
}

TEST(StopRule, NoiseThresholdDecides) {
  StopRule loose{0.0, 100.0, 0.2, 2, 1000, 0};
  StopRule tight{0.0, 100.0, 0.01, 2, 1000, 0};
  const std::vector<double> s{10, 11, 10, 11, 10, 11};
  // stddev/mean of {10, 11} is 0.0666: under 0.2, over 0.01.
  EXPECT_EQ(samples_until_stop(loose, s, 1e-3), 2);
  EXPECT_EQ(samples_until_stop(tight, s, 1e-3), -1);
}

TEST(StopRule, FixedCountIgnoresTheOtherCriteria) {
  StopRule r{0.0, 1e-9, 1e9, 1, 2, 7};
  const std::vector<double> s(20, 5.0);
  EXPECT_EQ(samples_until_stop(r, s, 1.0), 7);
}

TEST(CalibrateBatch, FillsTheTargetDuration) {
  EXPECT_EQ(calibrate_batch(10.0, 1000.0, 1 << 20), 100);
  EXPECT_EQ(calibrate_batch(3.0, 1000.0, 1 << 20), 334);
  EXPECT_EQ(calibrate_batch(5000.0, 1000.0, 1 << 20), 1);
  EXPECT_EQ(calibrate_batch(0.001, 1000.0, 500), 500);
  EXPECT_EQ(calibrate_batch(0.0, 1000.0, 64), 64);
}

TEST(StudentT, TableAndExpansionAgreeWithKnownQuantiles) {
  EXPECT_DOUBLE_EQ(student_t975(1), 12.706);
  EXPECT_DOUBLE_EQ(student_t975(10), 2.228);
  // Published t_{0.975}: dof 40 2.021, 60 2.000, 120 1.980; large dof tends to z = 1.960.
  EXPECT_NEAR(student_t975(40), 2.021, 1e-3);
  EXPECT_NEAR(student_t975(60), 2.000, 1e-3);
  EXPECT_NEAR(student_t975(120), 1.980, 1e-3);
  EXPECT_NEAR(student_t975(100000), 1.960, 1e-3);
  EXPECT_THROW(student_t975(0), std::invalid_argument);
}

TEST(ConfidenceInterval, MeanHalfWidthByHand) {
  // {10, 12, 14}: mean 12, stddev 2, n 3: t(2) = 4.303; half-width 4.303 * 2 / sqrt(3) / 12.
  const std::vector<double> s{10, 12, 14};
  EXPECT_NEAR(relative_ci_halfwidth(s, Statistic::mean), 4.303 * 2 / std::sqrt(3.0) / 12, 1e-12);
  const std::vector<double> flat(6, 3.0);
  EXPECT_EQ(relative_ci_halfwidth(flat, Statistic::mean), 0.0);
  EXPECT_EQ(relative_ci_halfwidth(flat, Statistic::median), 0.0);
  const std::vector<double> one{1.0};
  EXPECT_TRUE(std::isinf(relative_ci_halfwidth(one, Statistic::mean)));
}

TEST(ConfidenceInterval, MedianUsesOrderStatistics) {
  // n = 16: half = 1.96 * 4 / 2 = 3.92; l = floor(8 - 3.92) = 4, u = ceil(8 + 3.92 + 1) = 13.
  std::vector<double> s;
  for (int i = 1; i <= 16; ++i)
    s.push_back(100 + i); // 101..116, median 108.5
  EXPECT_NEAR(relative_ci_halfwidth(s, Statistic::median), (113.0 - 104.0) / 2 / 108.5, 1e-12);
  const std::vector<double> few{1, 2, 3, 4, 5};
  EXPECT_TRUE(std::isinf(relative_ci_halfwidth(few, Statistic::median)));
}

TEST(ConfidenceInterval, CoversTheTrueMeanAboutNinetyFivePercentOfTheTime) {
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(100.0, 5.0);
  int covered = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> s(8);
    for (double &x : s)
      x = noise(rng);
    const Summary sum = summarize(s);
    const double hw = relative_ci_halfwidth(s, Statistic::mean) * sum.mean;
    covered += std::fabs(sum.mean - 100.0) <= hw;
  }
  EXPECT_NEAR(static_cast<double>(covered) / trials, 0.95, 0.02);
}

TEST(StopRule, ConfidenceTargetStopsQuietPointsEarlyAndNoisyOnesLate) {
  StopRule r{0.0, 100.0, 0.01, 5, 1000, 0, 0.01, Statistic::mean};
  std::vector<double> quiet, noisy;
  for (int i = 0; i < 1000; ++i) {
    quiet.push_back(i % 2 ? 10.0 : 10.05); // 0.35% noise: 1% CI after the floor of 5
    noisy.push_back(i % 2 ? 10.0 : 12.0);  // 9.5% noise: ~ (1.96 * 0.095 / 0.01)^2 = 347 samples
  }
  EXPECT_EQ(samples_until_stop(r, quiet, 1e-3), 5);
  const int n = samples_until_stop(r, noisy, 1e-3);
  EXPECT_GT(n, 300);
  EXPECT_LT(n, 400);
  // The median's interval is undefined below 6 samples; at 6 it spans the whole quiet stream.
  StopRule med = r;
  med.statistic = Statistic::median;
  EXPECT_EQ(samples_until_stop(med, quiet, 1e-3), 6);
}

TEST(Outliers, FlagsOnlySamplesBeyondMedianPlusFiveMad) {
  // median 10.05, |dev| {.05, .05, .15, .15, .25, 29.95} -> MAD 0.15, sigma max(0.2224, 0.1005)
  // = 0.2224; limit 10.05 + 5 * 0.2224 = 11.16: only 40 is out.
  const std::vector<double> s{10.0, 10.1, 9.9, 10.2, 9.8, 40.0};
  EXPECT_EQ(outlier_indices(s), std::vector<std::size_t>{5});
  const std::vector<double> fast_one{10.0, 10.0, 10.0, 1.0};
  EXPECT_TRUE(outlier_indices(fast_one).empty()); // fast samples are never flagged
  const std::vector<double> flat{5.0, 5.0, 5.0, 5.2};
  EXPECT_TRUE(outlier_indices(flat).empty()); // within the 1%-of-median floor x 5
  const std::vector<double> two{1.0, 100.0};
  EXPECT_TRUE(outlier_indices(two).empty());
}

TEST(StopRule, ABudgetFloorOutranksMinSamplesAtTheCap) {
  StopRule r{0.0, 0.5, 0.01, 5, 1000, 0, 0.01, Statistic::mean, 2};
  const std::vector<double> slow{100, 200, 100, 200, 100, 200};
  // 1 s per sample, cap 0.5 s: two samples, not five.
  EXPECT_EQ(samples_until_stop(r, slow, 1.0), 2);
  r.min_samples_at_cap = 0;
  EXPECT_EQ(samples_until_stop(r, slow, 1.0), 5);
}

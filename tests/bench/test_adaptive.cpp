// The adaptive stop rule on synthetic sample streams, and batch calibration.
#include "scalefit/bench/adaptive.hpp"

#include <gtest/gtest.h>

#include <vector>

using scalefit::bench::calibrate_batch;
using scalefit::bench::StopRule;

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

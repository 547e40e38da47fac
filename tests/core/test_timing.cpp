// The shared timing rules (core/timing.hpp): the stop rule on synthetic sample streams, batch
// calibration, confidence intervals, the claimed interval, the outlier and the two-regime rules,
// on synthetic streams and on sample sets recorded by scalefit-bench.
#include "scalefit/core/timing.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <string>
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

namespace {
// n log-normal samples around `center` with relative spread `rel` (seeded: the same on every run).
std::vector<double> lognormal(std::size_t n, double center, double rel, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> v(n);
  for (double &x : v)
    x = center * std::exp(rel * z(gen));
  return v;
}
} // namespace

TEST(DetectModes, OneNormalClusterIsNotFlagged) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    const Modes m = detect_modes(lognormal(200, 10.0, 0.05, seed));
    EXPECT_FALSE(m.multimodal) << "seed " << seed << " D " << m.separation;
    EXPECT_LT(m.separation, 3.2) << "seed " << seed; // a hard split of one normal: D about 2.65
  }
}

TEST(DetectModes, UniformSpreadIsNotFlagged) {
  std::vector<double> v;
  for (int i = 0; i < 100; ++i)
    v.push_back(10.0 + 0.1 * i); // 10 .. 19.9: wide but one cluster
  const Modes m = detect_modes(v);
  EXPECT_FALSE(m.multimodal) << m.separation;
}

TEST(DetectModes, TwoRegimesAreFlaggedWithTheirLevelsAndShares) {
  // A shared host: 70% of samples in the fast regime (0.6 us), 30% at 2x (1.2 us), 3% noise.
  std::vector<double> v = lognormal(70, 0.6, 0.03, 7);
  const std::vector<double> slow = lognormal(30, 1.2, 0.03, 8);
  v.insert(v.end(), slow.begin(), slow.end());
  std::shuffle(v.begin(), v.end(), std::mt19937(9));
  const Modes m = detect_modes(v);
  EXPECT_TRUE(m.multimodal);
  EXPECT_NEAR(m.low, 0.6, 0.03);
  EXPECT_NEAR(m.high, 1.2, 0.06);
  EXPECT_NEAR(m.high_share, 0.3, 0.02);
  EXPECT_GT(m.separation, 10);
}

TEST(DetectModes, AFewPreemptedSamplesAreOutliersNotAMode) {
  std::vector<double> v = lognormal(98, 5.0, 0.02, 3);
  v.push_back(50.0); // two preempted samples: 2% of the set, below the 10% floor of a mode
  v.push_back(40.0);
  EXPECT_FALSE(detect_modes(v).multimodal);
  EXPECT_EQ(outlier_indices(v).size(), 2u);
}

TEST(DetectModes, CloseTightClustersBelowTenPercentApartAreNotFlagged) {
  // Two very tight clusters 5% apart (a rotation position that is a little slower): separated
  // (large D) but too close to call regimes.
  std::vector<double> v = lognormal(50, 1.00, 0.002, 4);
  const std::vector<double> b = lognormal(50, 1.05, 0.002, 5);
  v.insert(v.end(), b.begin(), b.end());
  const Modes m = detect_modes(v);
  EXPECT_GT(m.separation, 4);
  EXPECT_FALSE(m.multimodal);
}

TEST(DetectModes, TooFewOrInvalidSamplesAreNotJudged) {
  EXPECT_FALSE(detect_modes(std::vector<double>{1, 1, 1, 2, 2, 2}).multimodal); // < 12
  std::vector<double> v = lognormal(20, 1.0, 0.01, 1);
  std::vector<double> w = lognormal(20, 2.0, 0.01, 2);
  v.insert(v.end(), w.begin(), w.end());
  EXPECT_TRUE(detect_modes(v).multimodal);
  v.push_back(0.0);
  EXPECT_FALSE(detect_modes(v).multimodal); // a zero time: not judged
  v.back() = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(detect_modes(v).multimodal);
}

// Sample sets recorded by scalefit-bench on a loaded 2-core machine (tests/data/bench/
// recorded_samples.json names the command): a quiet point, a noisy one (heavy preemption tail),
// one in two regimes, and one whose regime changed while it was sampled.
namespace {
std::vector<double> recorded(const std::string &which) {
  std::ifstream in(std::string(SCALEFIT_TEST_DATA_DIR) + "/bench/recorded_samples.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  return j.at("points").at(which).at("samples_us").get<std::vector<double>>();
}
} // namespace

TEST(RecordedSamples, QuietPointClaimsItsConfidenceInterval) {
  const std::vector<double> s = recorded("quiet");
  EXPECT_FALSE(detect_modes(s).multimodal);
  const double ci = relative_ci_halfwidth(s, Statistic::median);
  EXPECT_LT(ci, 0.02);
  EXPECT_LT(claimed_interval(s, Statistic::median), 0.02); // the halves agree too
}

TEST(RecordedSamples, NoisyTailIsNotTwoRegimesAndTheMedianIgnoresIt) {
  const std::vector<double> s = recorded("noisy");
  const Summary sum = summarize(s);
  EXPECT_GT(sum.mean, 1.1 * sum.median); // preempted samples pull the mean up
  EXPECT_GT(sum.max, 5 * sum.median);
  EXPECT_FALSE(outlier_indices(s).empty());
  EXPECT_FALSE(detect_modes(s).multimodal);
  EXPECT_LT(claimed_interval(s, Statistic::median), claimed_interval(s, Statistic::mean));
}

TEST(RecordedSamples, TwoRegimesAreNamed) {
  const Modes m = detect_modes(recorded("bimodal"));
  EXPECT_TRUE(m.multimodal);
  EXPECT_GT(m.high / m.low, 1.2);
}

TEST(RecordedSamples, ARegimeChangeWhileSamplingWidensTheClaimedInterval) {
  const std::vector<double> s = recorded("drift");
  const double ci = relative_ci_halfwidth(s, Statistic::median);
  const double claimed = claimed_interval(s, Statistic::median);
  EXPECT_GT(claimed, 0.05);
  EXPECT_GT(claimed, 2 * ci); // the within-sample interval alone would claim more precision
  StopRule rule;
  rule.max_ci = 0.02;
  rule.statistic = Statistic::median;
  rule.max_time_s = 1e9;
  EXPECT_FALSE(rule.should_stop(s, 0.5)); // no precision claim on these samples
}

TEST(ClaimedInterval, ASwitchLateInThePointIsSeenByTheHalves) {
  // 70 samples at 1.0 then 30 at 1.3 (tight): the median's order-statistic interval sits inside
  // the fast regime and claims < 1%; the second half's median is in the slow one.
  std::vector<double> s = lognormal(70, 1.0, 0.002, 11);
  const std::vector<double> slow = lognormal(30, 1.3, 0.002, 12);
  s.insert(s.end(), slow.begin(), slow.end());
  EXPECT_LT(relative_ci_halfwidth(s, Statistic::median), 0.01);
  EXPECT_GT(claimed_interval(s, Statistic::median), 0.1);
  // Shuffled (regimes interleaved finely) the halves agree: only the CI remains.
  std::shuffle(s.begin(), s.end(), std::mt19937(13));
  EXPECT_NEAR(claimed_interval(s, Statistic::median), relative_ci_halfwidth(s, Statistic::median),
              0.05);
  EXPECT_EQ(claimed_interval(std::vector<double>{1, 2, 3}, Statistic::mean),
            std::numeric_limits<double>::infinity());
}

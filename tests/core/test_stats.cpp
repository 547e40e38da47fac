#include "scalefit/core/stats.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace scalefit;

// Hand-computed: {4, 1, 3, 2, 10}: sorted 1 2 3 4 10; mean 4; median 3;
// stddev sqrt(((9+4+1+0+36)/4)) = sqrt(12.5); p99 at position 0.99*4 = 3.96 -> 4 + 0.96*6 = 9.76.
TEST(Stats, MatchesHandComputedValues) {
  const std::vector<double> v = {4, 1, 3, 2, 10};
  const Summary s = summarize(v);
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.mean, 4);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(12.5));
  EXPECT_DOUBLE_EQ(s.p99, 9.76);
  EXPECT_DOUBLE_EQ(s.rel_noise(), std::sqrt(12.5) / 4);
}

TEST(Stats, EvenCountMedianAndDegenerateCases) {
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(summarize(v).median, 2.5);
  const std::vector<double> one = {7};
  const Summary s1 = summarize(one);
  EXPECT_DOUBLE_EQ(s1.stddev, 0);
  EXPECT_DOUBLE_EQ(s1.p99, 7);
  EXPECT_EQ(summarize(std::vector<double>{}).n, 0u);
  EXPECT_THROW(percentile_sorted(std::vector<double>{}, 50), std::invalid_argument);
}

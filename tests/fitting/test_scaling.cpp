// Scaling efficiency (Cheng et al.), log-linear trends, speedup from shares.
#include "scalefit/fitting/scaling.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace scalefit::fitting;

namespace {
CurveModel ab(double alpha_us, double beta_gbps) {
  CurveModel m;
  m.kind = ModelKind::alpha_beta;
  m.alpha_us = alpha_us;
  m.beta_gbps = beta_gbps;
  return m;
}
} // namespace

TEST(Scaling, EfficiencyPerBandOnSyntheticCurves) {
  const CurveModel g = ab(10, 100), n = ab(20, 25);
  const ScalingEfficiency e = scaling_efficiency(g, 1024, 1 << 30, 2, n, 8, 1 << 28, 4);
  EXPECT_EQ(e.from_nnodes, 2);
  EXPECT_EQ(e.to_nnodes, 4);
  ASSERT_EQ(e.bands.size(), 3u);
  auto eff = [](double s) { return (10 + s / 1e5) / (20 + s / 2.5e4); };
  double small = 0, ws = 0, w = 0;
  int nsmall = 0;
  for (double s = 1024; s <= (1 << 28); s *= 2) {
    if (s < 65536)
      small += eff(s), ++nsmall;
    ws += s * eff(s), w += s;
  }
  EXPECT_EQ(e.bands[0].sizes, nsmall); // 1K..32K: 6 sizes
  EXPECT_NEAR(e.bands[0].efficiency, small / nsmall, 1e-12);
  EXPECT_NEAR(e.size_weighted, ws / w, 1e-12);
  EXPECT_LT(e.bands[2].efficiency,
            e.bands[0].efficiency); // quartering bandwidth hurts large messages most
}

TEST(Scaling, DisjointRangesThrow) {
  EXPECT_THROW(scaling_efficiency(ab(1, 1), 8, 64, 1, ab(1, 1), 1024, 4096, 2),
               std::invalid_argument);
}

TEST(Scaling, LogLinearTrendIsClampedToItsValidRange) {
  const LogLinearTrend t = fit_log_linear_trend({2, 4}, {10, 20});
  EXPECT_NEAR(t.slope, 10, 1e-12);
  EXPECT_NEAR(t.intercept, 0, 1e-12);
  EXPECT_NEAR(t.at(8), 30, 1e-12);
  EXPECT_NEAR(t.at(16), 40, 1e-12);   // hi_nnodes = 4 x 4
  EXPECT_NEAR(t.at(1024), 40, 1e-12); // clamped above
  EXPECT_NEAR(t.at(1), 10, 1e-12);    // clamped below at lo_nnodes = 2
  const LogLinearTrend down = fit_log_linear_trend({1, 2, 4}, {100, 60, 20});
  EXPECT_NEAR(down.at(16), 5, 1e-12); // floor 0.25 * min = 5 keeps it positive
}

TEST(Scaling, SpeedupFromShares) {
  EXPECT_NEAR(speedup_from_shares(0.5, 0.5, 0.8), 1.0 / (0.5 + 0.5 / 0.8), 1e-12);
  EXPECT_DOUBLE_EQ(speedup_from_shares(0.3, 0.7, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(speedup_from_shares(1.0, 0.0, 0.5), 1.0);
  EXPECT_THROW(speedup_from_shares(0.5, 0.5, 0.0), std::invalid_argument);
  EXPECT_THROW(speedup_from_shares(-0.1, 0.5, 1.0), std::invalid_argument);
}

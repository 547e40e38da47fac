// Models: values against hand-computed times, internal round trip, Jacobians vs finite differences.
#include "scalefit/fitting/models.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace scalefit::fitting;

namespace {

Eigen::VectorXd sizes() {
  Eigen::VectorXd s(12);
  for (int i = 0; i < 12; ++i)
    s[i] = std::pow(4.0, i) * 8; // 8 B .. 32 MiB
  return s;
}

/// Central finite differences of the functor's residuals.
template <class F> Eigen::MatrixXd numeric_jacobian(const F &f, const Eigen::VectorXd &x) {
  Eigen::MatrixXd J(f.values(), f.inputs());
  for (int j = 0; j < f.inputs(); ++j) {
    const double h = 1e-6 * std::max(1.0, std::abs(x[j]));
    Eigen::VectorXd xp = x, xm = x, rp(f.values()), rm(f.values());
    xp[j] += h;
    xm[j] -= h;
    f(xp, rp);
    f(xm, rm);
    J.col(j) = (rp - rm) / (2 * h);
  }
  return J;
}

} // namespace

TEST(Models, AlphaBetaTimeByHand) {
  CurveModel m;
  m.kind = ModelKind::alpha_beta;
  m.alpha_us = 10;
  m.beta_gbps = 1; // 1e3 B/us
  EXPECT_DOUBLE_EQ(m.time_us(1e6), 10 + 1e6 / 1e3);
  EXPECT_DOUBLE_EQ(m.asymptotic_algbw_gbps(), 1);
  EXPECT_EQ(m.num_parameters(), 2);
}

TEST(Models, LogisticTimeByHand) {
  CurveModel m;
  m.kind = ModelKind::logistic;
  m.alpha_us = 5;
  m.steps = {{100, 1.0, 1e6}};
  // At s = s_half the bandwidth is bmax/2 = 50 GB/s = 5e4 B/us.
  EXPECT_NEAR(m.time_us(1e6), 5 + 1e6 / 5e4, 1e-9);
  EXPECT_NEAR(m.bandwidth_gbps(1e6), 50, 1e-9);
  EXPECT_EQ(m.num_parameters(), 4);
}

TEST(Models, InternalRoundTrip) {
  CurveModel m;
  m.kind = ModelKind::regimes;
  m.alpha_us = 12.5;
  m.steps = {{3, 0.7, 4096}, {200, 2.5, 3e7}};
  const CurveModel back = from_internal(ModelKind::regimes, to_internal(m));
  ASSERT_EQ(back.steps.size(), 2u);
  EXPECT_NEAR(back.alpha_us, 12.5, 1e-9);
  EXPECT_NEAR(back.steps[1].bmax_gbps, 200, 1e-9);
  EXPECT_NEAR(back.steps[0].k, 0.7, 1e-12);
  EXPECT_NEAR(back.steps[1].s_half_bytes, 3e7, 1e-3);
}

TEST(Models, AlphaBetaJacobianMatchesFiniteDifferences) {
  const Eigen::VectorXd s = sizes();
  Eigen::VectorXd t = (7.0 + s.array() / 2e3).matrix();
  AlphaBetaFunctor f(s, t * 1.1);
  Eigen::VectorXd x(2);
  x << std::log(6.0), std::log(1.5e3);
  Eigen::MatrixXd J(f.values(), 2);
  f.df(x, J);
  EXPECT_LT((J - numeric_jacobian(f, x)).cwiseAbs().maxCoeff(), 1e-6);
}

TEST(Models, LogisticStepsJacobianMatchesFiniteDifferences) {
  const Eigen::VectorXd s = sizes();
  const Eigen::VectorXd t = (20.0 + s.array() / 5e4).matrix();
  for (int steps : {1, 2, 3}) {
    LogisticStepsFunctor f(steps, s, t);
    Eigen::VectorXd x(1 + 3 * steps);
    x[0] = std::log(15.0);
    for (int j = 0; j < steps; ++j) {
      x[1 + 3 * j] = std::log(1e4 * (j + 1));
      x[2 + 3 * j] = std::log(0.6 + 0.5 * j);
      x[3 + 3 * j] = std::log(1e3) + 3.0 * j;
    }
    Eigen::MatrixXd J(f.values(), f.inputs());
    f.df(x, J);
    const Eigen::MatrixXd N = numeric_jacobian(f, x);
    EXPECT_LT((J - N).cwiseAbs().maxCoeff(), 1e-6) << "steps=" << steps;
  }
}

TEST(Models, DropTimeByHand) {
  CurveModel m;
  m.kind = ModelKind::regimes;
  m.alpha_us = 5;
  m.steps = {{100, 1.0, 1e3}};
  m.drops = {{0.6, 2.0, 1e6}};
  // At s = s_half of the drop: B = 100 σ(ln 1e3) (1 − 0.6/2) GB/s.
  const double b = 100.0 / (1.0 + 1e-3) * 0.7;
  EXPECT_NEAR(m.bandwidth_gbps(1e6), b, 1e-9);
  EXPECT_NEAR(m.time_us(1e6), 5 + 1e6 / (b * 1e3), 1e-9);
  EXPECT_NEAR(m.asymptotic_algbw_gbps(), 100 * 0.4, 1e-12);
  EXPECT_EQ(m.num_parameters(), 7);
  // The bandwidth falls across the drop: after it, less than before it.
  EXPECT_LT(m.bandwidth_gbps(1e8), 0.5 * m.bandwidth_gbps(1e4));
}

TEST(Models, InternalRoundTripWithDrops) {
  CurveModel m;
  m.kind = ModelKind::regimes;
  m.alpha_us = 3;
  m.steps = {{8, 1.2, 2048}};
  m.drops = {{0.75, 3.0, 4e7}, {0.3, 1.5, 1e3}};
  const CurveModel back = from_internal(ModelKind::regimes, to_internal(m), 2);
  ASSERT_EQ(back.steps.size(), 1u);
  ASSERT_EQ(back.drops.size(), 2u);
  // Sorted by s_half on the way back.
  EXPECT_NEAR(back.drops[0].fraction, 0.3, 1e-12);
  EXPECT_NEAR(back.drops[1].fraction, 0.75, 1e-12);
  EXPECT_NEAR(back.drops[1].k, 3.0, 1e-12);
  EXPECT_NEAR(back.drops[0].s_half_bytes, 1e3, 1e-6);
  EXPECT_THROW(from_internal(ModelKind::regimes, to_internal(m), 3), std::invalid_argument);
}

TEST(Models, StepsWithDropsAndLiftsJacobianMatchesFiniteDifferences) {
  const Eigen::VectorXd s = sizes();
  const Eigen::VectorXd t = (20.0 + s.array() / 5e4).matrix();
  for (int steps : {1, 2}) {
    for (int drops : {0, 1, 3}) {
      for (int lifts : {0, 1, 2}) {
        if (drops + lifts == 0)
          continue;
        LogisticStepsFunctor f(steps, s, t, drops, lifts);
        Eigen::VectorXd x(1 + 3 * (steps + drops + lifts));
        x[0] = std::log(15.0);
        for (int j = 0; j < steps; ++j) {
          x[1 + 3 * j] = std::log(1e4 * (j + 1));
          x[2 + 3 * j] = std::log(0.6 + 0.5 * j);
          x[3 + 3 * j] = std::log(1e3) + 3.0 * j;
        }
        for (int m = 0; m < drops; ++m) {
          const int o = 1 + 3 * (steps + m);
          x[o] = -1.0 + 1.2 * m; // logit of the fraction: 0.27, 0.55, 0.80
          x[o + 1] = std::log(1.0 + m);
          x[o + 2] = std::log(300.0) + 4.0 * m;
        }
        for (int l = 0; l < lifts; ++l) {
          const int o = 1 + 3 * (steps + drops + l);
          x[o] = std::log(8.0 + 5 * l); // delta [us]
          x[o + 1] = std::log(1.5 + l);
          x[o + 2] = std::log(2048.0) + 5.0 * l;
        }
        Eigen::MatrixXd J(f.values(), f.inputs());
        Eigen::VectorXd r(f.values());
        f(x, r); // fills the sigmoid cache that df reuses
        f.df(x, J);
        const Eigen::MatrixXd N = numeric_jacobian(f, x);
        EXPECT_LT((J - N).cwiseAbs().maxCoeff(), 1e-6)
            << "steps=" << steps << " drops=" << drops << " lifts=" << lifts;
        // Every drop and lift column is non-zero somewhere: those parameters move the residuals.
        for (int c = 1 + 3 * steps; c < f.inputs(); ++c)
          EXPECT_GT(J.col(c).cwiseAbs().maxCoeff(), 1e-4) << "column " << c;
      }
    }
  }
}

TEST(Models, LiftTimeByHand) {
  CurveModel m;
  m.kind = ModelKind::regimes;
  m.alpha_us = 2;
  m.steps = {{10, 1.0, 1.0}}; // ~10 GB/s from a few bytes on
  m.lifts = {{8, 3.0, 4096}};
  const double b = 10.0 / (1.0 + 1.0 / 4096) * 1e3; // B/us at 4 KiB
  EXPECT_NEAR(m.time_us(4096), 2 + 4 + 4096 / b, 1e-9);
  EXPECT_EQ(m.num_parameters(), 7);
  // The latency steps up by delta σ(±3 ln 16) four octaves either side of the step.
  const double hi = 8.0 / (1.0 + std::pow(16.0, -3.0)), lo = 8.0 / (1.0 + std::pow(16.0, 3.0));
  EXPECT_NEAR(m.time_us(1 << 16) - (1 << 16) / m.bandwidth_gbps(1 << 16) / 1e3, 2 + hi, 1e-9);
  EXPECT_NEAR(m.time_us(256) - 256 / m.bandwidth_gbps(256) / 1e3, 2 + lo, 1e-9);
  const CurveModel back = from_internal(ModelKind::regimes, to_internal(m), 0, 1);
  ASSERT_EQ(back.lifts.size(), 1u);
  EXPECT_NEAR(back.lifts[0].delta_us, 8, 1e-12);
  EXPECT_NEAR(back.lifts[0].s_half_bytes, 4096, 1e-6);
}

TEST(Models, DropsKeepTheModelPositiveAndFinite) {
  // Extreme internal parameters (fractions at the logit bounds, sharp drops): B > 0, t finite.
  Eigen::VectorXd x(1 + 3 + 6);
  x << std::log(2.0), std::log(1e3), std::log(1.0), std::log(1e3), 100.0, std::log(200.0),
      std::log(1e4), 100.0, std::log(200.0), std::log(1e5);
  const CurveModel m = from_internal(ModelKind::regimes, x, 2);
  for (double s = 1; s < 1e13; s *= 3) {
    EXPECT_GT(m.bandwidth_gbps(s), 0) << s;
    EXPECT_TRUE(std::isfinite(m.time_us(s))) << s;
    EXPECT_GT(m.time_us(s), 0) << s;
  }
}

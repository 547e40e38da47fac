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

// Models of collective time against message size and their analytic Jacobians (log-time).
#include "scalefit/fitting/models.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace scalefit::fitting {
namespace {

constexpr double kBperusPerGbps = 1e3; // 1 GB/s = 1e9 B/s = 1e3 B/us
constexpr double kZClamp = 300.0;      // keeps exp() finite for absurd steps during LM

/// Logistic σ(z) = 1/(1+e^{-z}), stable for large |z|.
inline double sigmoid(double z) {
  z = std::clamp(z, -kZClamp, kZClamp);
  if (z >= 0)
    return 1.0 / (1.0 + std::exp(-z));
  const double e = std::exp(z);
  return e / (1.0 + e);
}

// Bounds on the internal (log) parameters: beyond them a parameter is held at the bound with a
// zero derivative, so that LM cannot drive a step to k = inf or s_half = inf (which makes
// 0 * inf = NaN) and the model stays finite everywhere.
constexpr double kLogAlphaLo = -30, kLogAlphaHi = 30; // alpha in [1e-13, 1e13] us
constexpr double kLogBLo = -30, kLogBHi = 40;         // B in B/us
constexpr double kLogKLo = -5, kLogKHi = 5;           // k in [0.0067, 148]
constexpr double kLogHLo = -10, kLogHHi = 60;         // s_half in [4.5e-5, 1.1e26] B

inline double clamp_to(double v, double lo, double hi, bool &held) {
  held = v < lo || v > hi;
  return std::clamp(v, lo, hi);
}

} // namespace

std::string_view model_name(ModelKind kind) {
  switch (kind) {
  case ModelKind::alpha_beta:
    return "alpha_beta";
  case ModelKind::logistic:
    return "logistic";
  case ModelKind::regimes:
    return "regimes";
  }
  return "?";
}

std::optional<ModelKind> parse_model(std::string_view name) {
  for (ModelKind k : {ModelKind::alpha_beta, ModelKind::logistic, ModelKind::regimes})
    if (model_name(k) == name)
      return k;
  return std::nullopt;
}

double CurveModel::bandwidth_gbps(double bytes) const {
  if (kind == ModelKind::alpha_beta)
    return beta_gbps;
  const double u = std::log(bytes);
  double b = 0;
  for (const LogisticStep &st : steps)
    b += st.bmax_gbps * sigmoid(st.k * (u - std::log(st.s_half_bytes)));
  return b;
}

double CurveModel::time_us(double bytes) const {
  const double b = bandwidth_gbps(bytes) * kBperusPerGbps;
  if (b <= 0)
    return std::numeric_limits<double>::infinity();
  return alpha_us + bytes / b;
}

double CurveModel::asymptotic_algbw_gbps() const {
  if (kind == ModelKind::alpha_beta)
    return beta_gbps;
  double b = 0;
  for (const LogisticStep &st : steps)
    b += st.bmax_gbps;
  return b;
}

int CurveModel::num_parameters() const {
  return kind == ModelKind::alpha_beta ? 2 : 1 + 3 * static_cast<int>(steps.size());
}

int CurveModel::num_regimes() const {
  return kind == ModelKind::regimes ? static_cast<int>(steps.size()) : 1;
}

Eigen::VectorXd to_internal(const CurveModel &m) {
  if (m.kind == ModelKind::alpha_beta) {
    Eigen::VectorXd x(2);
    x << std::log(m.alpha_us), std::log(m.beta_gbps * kBperusPerGbps);
    return x;
  }
  Eigen::VectorXd x(1 + 3 * m.steps.size());
  x[0] = std::log(m.alpha_us);
  for (std::size_t j = 0; j < m.steps.size(); ++j) {
    x[1 + 3 * j] = std::log(m.steps[j].bmax_gbps * kBperusPerGbps);
    x[2 + 3 * j] = std::log(m.steps[j].k);
    x[3 + 3 * j] = std::log(m.steps[j].s_half_bytes);
  }
  return x;
}

CurveModel from_internal(ModelKind kind, const Eigen::VectorXd &x) {
  CurveModel m;
  m.kind = kind;
  m.alpha_us = std::exp(std::clamp(x[0], kLogAlphaLo, kLogAlphaHi));
  if (kind == ModelKind::alpha_beta) {
    if (x.size() != 2)
      throw std::invalid_argument("alpha_beta takes 2 parameters");
    m.beta_gbps = std::exp(std::clamp(x[1], kLogBLo, kLogBHi)) / kBperusPerGbps;
    return m;
  }
  if (x.size() < 4 || (x.size() - 1) % 3 != 0)
    throw std::invalid_argument("logistic models take 1 + 3 R parameters");
  const int nsteps = static_cast<int>((x.size() - 1) / 3);
  for (int j = 0; j < nsteps; ++j)
    m.steps.push_back({std::exp(std::clamp(x[1 + 3 * j], kLogBLo, kLogBHi)) / kBperusPerGbps,
                       std::exp(std::clamp(x[2 + 3 * j], kLogKLo, kLogKHi)),
                       std::exp(std::clamp(x[3 + 3 * j], kLogHLo, kLogHHi))});
  std::sort(m.steps.begin(), m.steps.end(), [](const LogisticStep &a, const LogisticStep &b) {
    return a.s_half_bytes < b.s_half_bytes;
  });
  return m;
}

// ---------------------------------------------------------------------------------------------
AlphaBetaFunctor::AlphaBetaFunctor(Eigen::VectorXd bytes, Eigen::VectorXd time_us)
    : DenseFunctor<double>(2, static_cast<int>(bytes.size())), m_bytes(std::move(bytes)),
      m_log_time(time_us.array().log()) {}

int AlphaBetaFunctor::operator()(const InputType &x, ValueType &fvec) const {
  bool h0, h1;
  const double a = std::exp(clamp_to(x[0], kLogAlphaLo, kLogAlphaHi, h0));
  const double inv_b = std::exp(-clamp_to(x[1], kLogBLo, kLogBHi, h1));
  for (Eigen::Index i = 0; i < m_bytes.size(); ++i)
    fvec[i] = std::log(a + m_bytes[i] * inv_b) - m_log_time[i];
  return 0;
}

int AlphaBetaFunctor::df(const InputType &x, JacobianType &fjac) const {
  bool h0, h1;
  const double a = std::exp(clamp_to(x[0], kLogAlphaLo, kLogAlphaHi, h0));
  const double inv_b = std::exp(-clamp_to(x[1], kLogBLo, kLogBHi, h1));
  for (Eigen::Index i = 0; i < m_bytes.size(); ++i) {
    const double q = m_bytes[i] * inv_b, t = a + q;
    fjac(i, 0) = h0 ? 0.0 : a / t;
    fjac(i, 1) = h1 ? 0.0 : -q / t;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
LogisticStepsFunctor::LogisticStepsFunctor(int nsteps, Eigen::VectorXd bytes,
                                           Eigen::VectorXd time_us)
    : DenseFunctor<double>(1 + 3 * nsteps, static_cast<int>(bytes.size())), m_nsteps(nsteps),
      m_bytes(std::move(bytes)), m_log_bytes(m_bytes.array().log()),
      m_log_time(time_us.array().log()) {
  if (nsteps < 1 || nsteps > 8)
    throw std::invalid_argument("1 to 8 logistic steps");
}

int LogisticStepsFunctor::operator()(const InputType &x, ValueType &fvec) const {
  bool held;
  const double a = std::exp(clamp_to(x[0], kLogAlphaLo, kLogAlphaHi, held));
  double bj[8], kj[8], hj[8];
  for (int j = 0; j < m_nsteps; ++j) {
    bj[j] = std::exp(clamp_to(x[1 + 3 * j], kLogBLo, kLogBHi, held));
    kj[j] = std::exp(clamp_to(x[2 + 3 * j], kLogKLo, kLogKHi, held));
    hj[j] = clamp_to(x[3 + 3 * j], kLogHLo, kLogHHi, held);
  }
  m_cache_sigmoid.resize(m_bytes.size(), m_nsteps);
  for (Eigen::Index i = 0; i < m_bytes.size(); ++i) {
    const double u = m_log_bytes[i];
    double b = 0;
    for (int j = 0; j < m_nsteps; ++j) {
      const double sg = sigmoid(kj[j] * (u - hj[j]));
      m_cache_sigmoid(i, j) = sg;
      b += bj[j] * sg;
    }
    fvec[i] = std::log(a + m_bytes[i] / b) - m_log_time[i];
  }
  m_cache_x = x;
  return 0;
}

int LogisticStepsFunctor::df(const InputType &x, JacobianType &fjac) const {
  bool ha, hb[8], hk[8], hh[8];
  const double a = std::exp(clamp_to(x[0], kLogAlphaLo, kLogAlphaHi, ha));
  double bj[8], sj[8], kj[8], hj[8];
  for (int j = 0; j < m_nsteps; ++j) {
    bj[j] = std::exp(clamp_to(x[1 + 3 * j], kLogBLo, kLogBHi, hb[j]));
    kj[j] = std::exp(clamp_to(x[2 + 3 * j], kLogKLo, kLogKHi, hk[j]));
    hj[j] = clamp_to(x[3 + 3 * j], kLogHLo, kLogHHi, hh[j]);
  }
  const bool cached =
      m_cache_x.size() == x.size() && m_cache_x == x && m_cache_sigmoid.rows() == m_bytes.size();
  for (Eigen::Index i = 0; i < m_bytes.size(); ++i) {
    const double u = m_log_bytes[i];
    double b = 0;
    double kz[8];
    for (int j = 0; j < m_nsteps; ++j) {
      const double z = kj[j] * (u - hj[j]);
      sj[j] = cached ? m_cache_sigmoid(i, j) : sigmoid(z);
      // Outside the clamp the step is flat in z: its z-derivative is 0, as the value says.
      kz[j] = std::abs(z) >= kZClamp ? 0.0 : kj[j];
      b += bj[j] * sj[j];
    }
    const double q = m_bytes[i] / b, t = a + q;
    fjac(i, 0) = ha ? 0.0 : a / t;
    const double g = -q / (b * t); // d ln t / d B
    for (int j = 0; j < m_nsteps; ++j) {
      const double dz = bj[j] * sj[j] * (1 - sj[j]); // d B / d z_j
      fjac(i, 1 + 3 * j) = hb[j] ? 0.0 : g * bj[j] * sj[j];
      fjac(i, 2 + 3 * j) = hk[j] ? 0.0 : g * dz * kz[j] * (u - hj[j]);
      fjac(i, 3 + 3 * j) = hh[j] ? 0.0 : -g * dz * kz[j];
    }
  }
  return 0;
}

} // namespace scalefit::fitting

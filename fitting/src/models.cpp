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
// A drop loses at most 99% of the bandwidth: a sharper fall is a latency step (LatencyStep), and
// an unbounded fraction lets a leave-one-out refit put a 1e6x spike between two points.
constexpr double kLogitLo = -30, kLogitHi = 4.59512; // drop fraction in [9e-14, 0.99]

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
  for (const LogisticDrop &dr : drops)
    b *= 1.0 - dr.fraction * sigmoid(dr.k * (u - std::log(dr.s_half_bytes)));
  return b;
}

double CurveModel::time_us(double bytes) const {
  const double b = bandwidth_gbps(bytes) * kBperusPerGbps;
  if (b <= 0)
    return std::numeric_limits<double>::infinity();
  double lift = 0;
  if (!lifts.empty()) {
    const double u = std::log(bytes);
    for (const LatencyStep &l : lifts)
      lift += l.delta_us * sigmoid(l.k * (u - std::log(l.s_half_bytes)));
  }
  return alpha_us + lift + bytes / b;
}

double CurveModel::asymptotic_algbw_gbps() const {
  if (kind == ModelKind::alpha_beta)
    return beta_gbps;
  double b = 0;
  for (const LogisticStep &st : steps)
    b += st.bmax_gbps;
  for (const LogisticDrop &dr : drops)
    b *= 1.0 - dr.fraction;
  return b;
}

int CurveModel::num_parameters() const {
  return kind == ModelKind::alpha_beta
             ? 2
             : 1 + 3 * static_cast<int>(steps.size() + drops.size() + lifts.size());
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
  const std::size_t r = m.steps.size();
  Eigen::VectorXd x(1 + 3 * (r + m.drops.size() + m.lifts.size()));
  x[0] = std::log(m.alpha_us);
  for (std::size_t j = 0; j < r; ++j) {
    x[1 + 3 * j] = std::log(m.steps[j].bmax_gbps * kBperusPerGbps);
    x[2 + 3 * j] = std::log(m.steps[j].k);
    x[3 + 3 * j] = std::log(m.steps[j].s_half_bytes);
  }
  for (std::size_t j = 0; j < m.drops.size(); ++j) {
    const double f = m.drops[j].fraction;
    x[1 + 3 * (r + j)] = std::log(f) - std::log1p(-f);
    x[2 + 3 * (r + j)] = std::log(m.drops[j].k);
    x[3 + 3 * (r + j)] = std::log(m.drops[j].s_half_bytes);
  }
  const std::size_t o = r + m.drops.size();
  for (std::size_t j = 0; j < m.lifts.size(); ++j) {
    x[1 + 3 * (o + j)] = std::log(m.lifts[j].delta_us);
    x[2 + 3 * (o + j)] = std::log(m.lifts[j].k);
    x[3 + 3 * (o + j)] = std::log(m.lifts[j].s_half_bytes);
  }
  return x;
}

CurveModel from_internal(ModelKind kind, const Eigen::VectorXd &x, int ndrops, int nlifts) {
  CurveModel m;
  m.kind = kind;
  m.alpha_us = std::exp(std::clamp(x[0], kLogAlphaLo, kLogAlphaHi));
  if (kind == ModelKind::alpha_beta) {
    if (x.size() != 2)
      throw std::invalid_argument("alpha_beta takes 2 parameters");
    m.beta_gbps = std::exp(std::clamp(x[1], kLogBLo, kLogBHi)) / kBperusPerGbps;
    return m;
  }
  if (ndrops < 0 || nlifts < 0 || x.size() < 4 + 3 * (ndrops + nlifts) || (x.size() - 1) % 3 != 0)
    throw std::invalid_argument("logistic models take 1 + 3 (R + D + L) parameters with R >= 1");
  const int nsteps = static_cast<int>((x.size() - 1) / 3) - ndrops - nlifts;
  for (int j = 0; j < nsteps; ++j)
    m.steps.push_back({std::exp(std::clamp(x[1 + 3 * j], kLogBLo, kLogBHi)) / kBperusPerGbps,
                       std::exp(std::clamp(x[2 + 3 * j], kLogKLo, kLogKHi)),
                       std::exp(std::clamp(x[3 + 3 * j], kLogHLo, kLogHHi))});
  for (int j = nsteps; j < nsteps + ndrops; ++j)
    m.drops.push_back({sigmoid(std::clamp(x[1 + 3 * j], kLogitLo, kLogitHi)),
                       std::exp(std::clamp(x[2 + 3 * j], kLogKLo, kLogKHi)),
                       std::exp(std::clamp(x[3 + 3 * j], kLogHLo, kLogHHi))});
  std::sort(m.steps.begin(), m.steps.end(), [](const LogisticStep &a, const LogisticStep &b) {
    return a.s_half_bytes < b.s_half_bytes;
  });
  for (int j = nsteps + ndrops; j < nsteps + ndrops + nlifts; ++j)
    m.lifts.push_back({std::exp(std::clamp(x[1 + 3 * j], kLogAlphaLo, kLogAlphaHi)),
                       std::exp(std::clamp(x[2 + 3 * j], kLogKLo, kLogKHi)),
                       std::exp(std::clamp(x[3 + 3 * j], kLogHLo, kLogHHi))});
  std::sort(m.drops.begin(), m.drops.end(), [](const LogisticDrop &a, const LogisticDrop &b) {
    return a.s_half_bytes < b.s_half_bytes;
  });
  std::sort(m.lifts.begin(), m.lifts.end(), [](const LatencyStep &a, const LatencyStep &b) {
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
                                           Eigen::VectorXd time_us, int ndrops, int nlifts)
    : DenseFunctor<double>(1 + 3 * (nsteps + ndrops + nlifts), static_cast<int>(bytes.size())),
      m_nsteps(nsteps), m_ndrops(ndrops), m_nlifts(nlifts), m_bytes(std::move(bytes)),
      m_log_bytes(m_bytes.array().log()), m_log_time(time_us.array().log()) {
  if (nsteps < 1 || nsteps > 8)
    throw std::invalid_argument("1 to 8 logistic steps");
  if (ndrops < 0 || ndrops > 8)
    throw std::invalid_argument("0 to 8 logistic drops");
  if (nlifts < 0 || nlifts > 8)
    throw std::invalid_argument("0 to 8 latency steps");
}

namespace {

/// Physical parameters of a LogisticStepsFunctor point, with the "held at a bound" flags.
struct StepParams {
  double a = 0;
  bool ha = false;
  double v[24], k[24], h[24]; // v: Bmax [B/us] for steps, fraction f for drops, delta [us] lifts
  bool hv[24], hk[24], hh[24];
  double fq[24]; // drops: f (1 - f) = d f / d logit f
};

void unpack(const Eigen::VectorXd &x, int nsteps, int ndrops, int nlifts, double lift_lo,
            double lift_hi, StepParams &p) {
  p.a = std::exp(clamp_to(x[0], kLogAlphaLo, kLogAlphaHi, p.ha));
  for (int j = 0; j < nsteps + ndrops + nlifts; ++j) {
    if (j < nsteps) {
      p.v[j] = std::exp(clamp_to(x[1 + 3 * j], kLogBLo, kLogBHi, p.hv[j]));
    } else if (j >= nsteps + ndrops) {
      p.v[j] = std::exp(clamp_to(x[1 + 3 * j], kLogAlphaLo, kLogAlphaHi, p.hv[j]));
    } else {
      p.v[j] = sigmoid(clamp_to(x[1 + 3 * j], kLogitLo, kLogitHi, p.hv[j]));
      p.fq[j] = p.v[j] * (1 - p.v[j]);
    }
    p.k[j] = std::exp(clamp_to(x[2 + 3 * j], kLogKLo, kLogKHi, p.hk[j]));
    p.h[j] = j >= nsteps + ndrops ? clamp_to(x[3 + 3 * j], lift_lo, lift_hi, p.hh[j])
                                  : clamp_to(x[3 + 3 * j], kLogHLo, kLogHHi, p.hh[j]);
  }
}

} // namespace

int LogisticStepsFunctor::operator()(const InputType &x, ValueType &fvec) const {
  StepParams p;
  const int nd = m_nsteps + m_ndrops, nt = nd + m_nlifts;
  unpack(x, m_nsteps, m_ndrops, m_nlifts, m_log_bytes.minCoeff(), m_log_bytes.maxCoeff(), p);
  m_cache_sigmoid.resize(m_bytes.size(), nt);
  for (Eigen::Index i = 0; i < m_bytes.size(); ++i) {
    const double u = m_log_bytes[i];
    double b = 0, d = 1, l = 0;
    for (int j = 0; j < nt; ++j) {
      const double sg = sigmoid(p.k[j] * (u - p.h[j]));
      m_cache_sigmoid(i, j) = sg;
      if (j < m_nsteps)
        b += p.v[j] * sg;
      else if (j < nd)
        d *= 1.0 - p.v[j] * sg;
      else
        l += p.v[j] * sg;
    }
    fvec[i] = std::log(p.a + l + m_bytes[i] / (b * d)) - m_log_time[i];
  }
  m_cache_x = x;
  return 0;
}

int LogisticStepsFunctor::df(const InputType &x, JacobianType &fjac) const {
  StepParams p;
  const int nd = m_nsteps + m_ndrops, nt = nd + m_nlifts;
  unpack(x, m_nsteps, m_ndrops, m_nlifts, m_log_bytes.minCoeff(), m_log_bytes.maxCoeff(), p);
  const bool cached =
      m_cache_x.size() == x.size() && m_cache_x == x && m_cache_sigmoid.rows() == m_bytes.size();
  double sj[24], kz[24], dm[24];
  for (Eigen::Index i = 0; i < m_bytes.size(); ++i) {
    const double u = m_log_bytes[i];
    double b = 0, d = 1, l = 0;
    for (int j = 0; j < nt; ++j) {
      const double z = p.k[j] * (u - p.h[j]);
      sj[j] = cached ? m_cache_sigmoid(i, j) : sigmoid(z);
      // Outside the clamp the step is flat in z: its z-derivative is 0, as the value says.
      kz[j] = std::abs(z) >= kZClamp ? 0.0 : p.k[j];
      if (j < m_nsteps) {
        b += p.v[j] * sj[j];
      } else if (j < nd) {
        dm[j] = 1.0 - p.v[j] * sj[j];
        d *= dm[j];
      } else {
        l += p.v[j] * sj[j];
      }
    }
    const double q = m_bytes[i] / (b * d), t = p.a + l + q, inv_t = 1.0 / t;
    fjac(i, 0) = p.ha ? 0.0 : p.a * inv_t;
    const double g = -q * inv_t; // d ln t / d ln B
    const double gb = g / b;     // d ln t / d P
    for (int j = 0; j < m_nsteps; ++j) {
      const double dz = p.v[j] * sj[j] * (1 - sj[j]); // d P / d z_j
      fjac(i, 1 + 3 * j) = p.hv[j] ? 0.0 : gb * p.v[j] * sj[j];
      fjac(i, 2 + 3 * j) = p.hk[j] ? 0.0 : gb * dz * kz[j] * (u - p.h[j]);
      fjac(i, 3 + 3 * j) = p.hh[j] ? 0.0 : -gb * dz * kz[j];
    }
    for (int j = m_nsteps; j < nd; ++j) {
      const double gd = g / dm[j];                     // d ln t / d d_m
      const double dz = -p.v[j] * sj[j] * (1 - sj[j]); // d d_m / d z_m
      fjac(i, 1 + 3 * j) = p.hv[j] ? 0.0 : -gd * sj[j] * p.fq[j];
      fjac(i, 2 + 3 * j) = p.hk[j] ? 0.0 : gd * dz * kz[j] * (u - p.h[j]);
      fjac(i, 3 + 3 * j) = p.hh[j] ? 0.0 : -gd * dz * kz[j];
    }
    for (int j = nd; j < nt; ++j) {
      const double dz = p.v[j] * sj[j] * (1 - sj[j]) * inv_t; // d ln t / d z_l
      fjac(i, 1 + 3 * j) = p.hv[j] ? 0.0 : p.v[j] * sj[j] * inv_t;
      fjac(i, 2 + 3 * j) = p.hk[j] ? 0.0 : dz * kz[j] * (u - p.h[j]);
      fjac(i, 3 + 3 * j) = p.hh[j] ? 0.0 : -dz * kz[j];
    }
  }
  return 0;
}

} // namespace scalefit::fitting

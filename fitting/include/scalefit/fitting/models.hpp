/// \file models.hpp
/// Models of collective time against message size, and their Eigen Levenberg–Marquardt functors.
///
/// Units inside the fitter: message size s in bytes, time in microseconds [us], bandwidth in
/// bytes per microsecond [B/us] (1 B/us = 1e-3 GB/s); the public CurveModel speaks GB/s.
/// Every functor's residual is r_i = ln t_model(s_i) − ln t_meas,i (fit in log-time: a relative
/// error, so 8 B and 16 GiB points weigh the same) and its parameters are unconstrained
/// transforms (logarithms) of the physical ones, so that LM cannot step into negative times.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/LevenbergMarquardt>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace scalefit::fitting {

/// The model families the fitter knows.
enum class ModelKind {
  alpha_beta, ///< Hockney: t = α + s/β
  logistic,   ///< latency + logistic bandwidth (Lu et al.): t = α + s/B(s), one sigmoid step
  /// latency + a sum of R logistic bandwidth steps (protocol/algorithm regimes), times D >= 0
  /// multiplicative logistic drops (bandwidth falls: eager→rendezvous, buffers leaving cache);
  /// R >= 2, or R >= 1 with D >= 1
  regimes,
};

/// "alpha_beta", "logistic", "regimes".
std::string_view model_name(ModelKind kind);
/// Parses model_name's output. \returns std::nullopt when unknown.
std::optional<ModelKind> parse_model(std::string_view name);

/// One logistic step of bandwidth in ln s (Lu et al., sigmoid fit of nccl-tests bandwidth):
/// B_j(s) = bmax / (1 + exp(−k (ln s − ln s_half))).
struct LogisticStep {
  double bmax_gbps = 0;    ///< height of the step (algbw) [GB/s]
  double k = 1;            ///< steepness in ln s [1]
  double s_half_bytes = 1; ///< size at half height [B]
};

/// One multiplicative logistic drop of bandwidth in ln s: d(s) = 1 − fraction σ(k (ln s − ln
/// s_half)), with σ(z) = 1/(1 + e^{−z}). Bandwidth falls smoothly by the factor (1 − fraction)
/// around s_half; d ∈ [1 − fraction, 1] ⊂ (0, 1], so B stays positive.
struct LogisticDrop {
  double fraction = 0.5;   ///< share of the bandwidth lost across the drop, in (0, 1) [1]
  double k = 1;            ///< steepness in ln s [1]
  double s_half_bytes = 1; ///< size at half the drop [B]
};

/// One logistic latency step in ln s: L(s) = delta_us σ(k (ln s − ln s_half)), added to α. A
/// protocol switch that costs a fixed extra time from some size on (MPI eager → rendezvous: a
/// handshake round trip, e.g. 6.7 µs at 2 KiB → 14.7 µs at 4 KiB on host memory).
struct LatencyStep {
  double delta_us = 1;     ///< latency added above the step [us] (> 0)
  double k = 1;            ///< steepness in ln s [1]
  double s_half_bytes = 1; ///< size at half the step [B]
};

/// A fitted (or loaded) curve. time_us(s) is the model itself, without any range rule.
///  - alpha_beta: t(s) = alpha_us + s / beta  (Hockney 1994)
///  - logistic / regimes: t(s) = alpha_us + Σ_l lifts[l](s) + s / B(s),
///    B(s) = (Σ_j steps[j](s)) · Π_m drops[m](s) (Lu et al., sigmoidal bandwidth fit; regimes sums
///    R steps, one per NCCL protocol/algorithm regime, multiplies D >= 0 drops, each a fall of
///    bandwidth, and adds L >= 0 latency steps; logistic has neither drops nor lifts)
struct CurveModel {
  ModelKind kind = ModelKind::alpha_beta;
  double alpha_us = 0;             ///< latency [us]
  double beta_gbps = 0;            ///< alpha_beta only: bandwidth (algbw) [GB/s]
  std::vector<LogisticStep> steps; ///< logistic: 1 step; regimes: >= 1 step (>= 2 without drops)
  std::vector<LogisticDrop> drops; ///< regimes only: D >= 0 drops, ascending s_half
  std::vector<LatencyStep> lifts;  ///< regimes only: L >= 0 latency steps, ascending s_half

  /// Model time [us] of a message of `bytes` [B] (> 0).
  double time_us(double bytes) const;
  /// Bandwidth term B(s) [GB/s] (beta for alpha_beta).
  double bandwidth_gbps(double bytes) const;
  /// Asymptotic algbw as s → ∞ [GB/s]: beta, or Σ bmax · Π (1 − fraction).
  double asymptotic_algbw_gbps() const;
  /// Number of free parameters (2, or 1 + 3 (R + D + L)).
  int num_parameters() const;
  /// Regimes: 1 for alpha_beta and logistic, steps.size() for regimes.
  int num_regimes() const;
};

/// Internal parameter vector of a CurveModel: alpha_beta [ln α, ln β]; logistic/regimes
/// [ln α, (ln Bmax_j, ln k_j, ln s_half_j) for each step j, (logit fraction_m, ln k_m,
/// ln s_half_m) for each drop m, (ln delta_l [us], ln k_l, ln s_half_l) for each lift l], with
/// α [us], B [B/us]; size 1 + 3 (R + D + L).
Eigen::VectorXd to_internal(const CurveModel &model);
/// Inverse of to_internal for `kind` with `ndrops` drops and `nlifts` lifts (the number of
/// steps follows from x.size()). Steps, drops and lifts are each sorted by s_half.
/// \throws std::invalid_argument on a size that does not match the kind.
CurveModel from_internal(ModelKind kind, const Eigen::VectorXd &x, int ndrops = 0, int nlifts = 0);

/// Hockney alpha–beta model in log-time for Eigen's LevenbergMarquardt, analytic Jacobian.
/// x = [ln α_us, ln β_Bperus]; r_i = ln(α + s_i/β) − ln t_i.
struct AlphaBetaFunctor : Eigen::DenseFunctor<double> {
  /// \param bytes, time_us: equal-length vectors of positive sizes [B] and times [us]
  AlphaBetaFunctor(Eigen::VectorXd bytes, Eigen::VectorXd time_us);
  /// Residuals (values() of them). \returns 0.
  int operator()(const InputType &x, ValueType &fvec) const;
  /// Analytic Jacobian d r_i / d x_j (values() × 2). \returns 0.
  int df(const InputType &x, JacobianType &fjac) const;
  Eigen::VectorXd m_bytes, m_log_time;
};

/// Latency (+ `nlifts` latency steps) + sum of `nsteps` logistic bandwidth steps times `ndrops`
/// logistic drops in log-time, analytic Jacobian. x = [ln α, (ln Bmax_j [B/us], ln k_j,
/// ln s_half_j [ln B]) ..., (logit fraction_m, ln k_m, ln s_half_m) ..., (ln delta_l [us], ln k_l,
/// ln s_half_l) ...]; nsteps = 1 without drops and lifts is Lu et al.'s model. With
/// P = Σ_j Bmax_j σ_j, d_m = 1 − f_m σ_m and L = Σ_l delta_l σ_l: B = P Π d_m and
/// r_i = ln(α + L + s_i/B) − ln t_i. A lift's s_half is held inside [min s_i, max s_i] (zero
/// derivative beyond): a lift centred outside the data would act as a power law c·s^k there.
struct LogisticStepsFunctor : Eigen::DenseFunctor<double> {
  /// \param nsteps 1..8, ndrops 0..8, nlifts 0..8; bytes, time_us as for AlphaBetaFunctor
  /// \throws std::invalid_argument outside those counts
  LogisticStepsFunctor(int nsteps, Eigen::VectorXd bytes, Eigen::VectorXd time_us, int ndrops = 0,
                       int nlifts = 0);
  /// Residuals. \returns 0.
  int operator()(const InputType &x, ValueType &fvec) const;
  /// Analytic Jacobian (values() × (1 + 3 (nsteps + ndrops + nlifts))). \returns 0.
  int df(const InputType &x, JacobianType &fjac) const;
  int m_nsteps, m_ndrops, m_nlifts;
  Eigen::VectorXd m_bytes, m_log_bytes, m_log_time;
  // operator() keeps its sigmoids for df at the same x (Eigen's LM asks for both at each accepted
  // point): halves the exp() calls of a fit.
  mutable Eigen::VectorXd m_cache_x;
  mutable Eigen::MatrixXd m_cache_sigmoid; // values() x (nsteps + ndrops + nlifts)
};

} // namespace scalefit::fitting

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
  regimes,    ///< latency + a sum of R >= 2 logistic bandwidth steps (protocol/algorithm regimes)
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

/// A fitted (or loaded) curve. time_us(s) is the model itself, without any range rule.
///  - alpha_beta: t(s) = alpha_us + s / beta  (Hockney 1994)
///  - logistic / regimes: t(s) = alpha_us + s / B(s), B(s) = Σ_j steps[j] (Lu et al., Eq. of the
///    sigmoidal bandwidth fit; regimes sums R steps, one per NCCL protocol/algorithm regime)
struct CurveModel {
  ModelKind kind = ModelKind::alpha_beta;
  double alpha_us = 0;             ///< latency [us]
  double beta_gbps = 0;            ///< alpha_beta only: bandwidth (algbw) [GB/s]
  std::vector<LogisticStep> steps; ///< logistic: 1 step; regimes: >= 2 steps

  /// Model time [us] of a message of `bytes` [B] (> 0).
  double time_us(double bytes) const;
  /// Bandwidth term B(s) [GB/s] (beta for alpha_beta).
  double bandwidth_gbps(double bytes) const;
  /// Asymptotic algbw as s → ∞ [GB/s]: beta, or Σ bmax.
  double asymptotic_algbw_gbps() const;
  /// Number of free parameters (2, or 1 + 3 R).
  int num_parameters() const;
  /// Regimes: 1 for alpha_beta and logistic, steps.size() for regimes.
  int num_regimes() const;
};

/// Internal parameter vector of a CurveModel: alpha_beta [ln α, ln β]; logistic/regimes
/// [ln α, (ln Bmax_j, ln k_j, ln s_half_j) for each step j], with α [us], B [B/us].
Eigen::VectorXd to_internal(const CurveModel &model);
/// Inverse of to_internal for `kind` (the number of steps follows from x.size()).
CurveModel from_internal(ModelKind kind, const Eigen::VectorXd &x);

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

/// Latency + sum of `nsteps` logistic bandwidth steps in log-time, analytic Jacobian.
/// x = [ln α, (ln Bmax_j [B/us], ln k_j, ln s_half_j [ln B]) ...]; nsteps = 1 is Lu et al.'s model.
struct LogisticStepsFunctor : Eigen::DenseFunctor<double> {
  /// \param nsteps >= 1; bytes, time_us as for AlphaBetaFunctor
  LogisticStepsFunctor(int nsteps, Eigen::VectorXd bytes, Eigen::VectorXd time_us);
  /// Residuals. \returns 0.
  int operator()(const InputType &x, ValueType &fvec) const;
  /// Analytic Jacobian (values() × (1 + 3 nsteps)). \returns 0.
  int df(const InputType &x, JacobianType &fjac) const;
  int m_nsteps;
  Eigen::VectorXd m_bytes, m_log_bytes, m_log_time;
  // operator() keeps its sigmoids for df at the same x (Eigen's LM asks for both at each accepted
  // point): halves the exp() calls of a fit.
  mutable Eigen::VectorXd m_cache_x;
  mutable Eigen::MatrixXd m_cache_sigmoid; // values() x nsteps
};

} // namespace scalefit::fitting

/// \file fit.hpp
/// Fitting one curve (time against message size): Levenberg–Marquardt in log-time from several
/// deterministic starting points, model selection by BIC, outlier screening, quality metrics
/// (R² of log-time, MAPE, max APE, leave-one-out MAPE) and parameter standard errors.
#pragma once

#include "scalefit/fitting/models.hpp"

#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace scalefit::fitting {

/// Outcome of one Levenberg–Marquardt run.
struct LmResult {
  int status = 0; ///< Eigen::LevenbergMarquardtSpace::Status
  int info = 0;   ///< Eigen::ComputationInfo (0 Success)
  int evaluations = 0;
  double rss = 0; ///< Σ r_i² at the end (inf when not finite)
};

/// The fitter's single use of Eigen's LevenbergMarquardt (analytic Jacobian from functor.df):
/// relative tolerances xtol and ftol, at most `max_evaluations` function evaluations. The functor
/// must outlive the call. x is the start on entry and the optimum on return.
template <class Functor>
LmResult minimize_lm(Functor &functor, Eigen::VectorXd &x, int max_evaluations = 400,
                     double xtol = 1e-10, double ftol = 1e-12) {
  Eigen::LevenbergMarquardt<Functor> lm(functor);
  // Scaling of the trust region: the Jacobian's column norms at the start, floored at 1e-3 of the
  // largest. Eigen's own scaling takes a nearly-zero column (a parameter at a bound, e.g. α at
  // 1e-13 us, or a sharp step between two sizes) as given, which makes the trust region unbounded
  // along it: every trial step lands far off, is rejected, and LM stops where it started.
  {
    typename Functor::JacobianType J(functor.values(), functor.inputs());
    functor.df(x, J);
    const Eigen::VectorXd norms = J.colwise().norm().transpose();
    const double top = norms.allFinite() ? norms.maxCoeff() : 0.0;
    if (top > 0) {
      lm.setExternalScaling(true);
      lm.diag() = norms.cwiseMax(1e-3 * top);
    }
  }
  lm.setMaxfev(max_evaluations);
  lm.setXtol(xtol);
  lm.setFtol(ftol);
  LmResult out;
  out.status = static_cast<int>(lm.minimize(x));
  out.info = static_cast<int>(lm.info());
  out.evaluations = static_cast<int>(lm.nfev());
  Eigen::VectorXd r(functor.values());
  functor(x, r);
  out.rss = r.allFinite() ? r.squaredNorm() : std::numeric_limits<double>::infinity();
  return out;
}

/// What fit_curve may do.
struct FitOptions {
  std::vector<ModelKind> models{ModelKind::alpha_beta, ModelKind::logistic, ModelKind::regimes};
  int max_regimes = 3; ///< largest R tried for the regimes model (2..8)
  /// Largest number of falls added to each rising model (logistic, regimes R = 2..max_regimes):
  /// bandwidth drops (LogisticDrop) and latency steps (LatencyStep) together, D + L (0..8; 0:
  /// bandwidth only rises and latency is constant).
  int max_drops = 3;
  /// Of those, at most this many latency steps L (0..max_drops).
  int max_lifts = 1;
  /// Drops are tried only when the best rising model misses some point by more than this factor
  /// (a curve fitted to within it has no fall worth 3 more parameters).
  double drops_min_ratio = 1.10;
  /// Fewer usable points than this: the curve is not fitted. 2 and 3 points get alpha-beta only
  /// (what they determine), marked not cross-validated; 4 or more get the full selection.
  std::size_t min_points = 2;
  bool reject_outliers = true;     ///< screen isolated spikes (see fit_curve)
  /// Neighbour-spike screen: an interior point more than this factor off the log-log
  /// interpolation of its two neighbours (which rise at a plausible slope) is an outlier.
  double spike_min_ratio = 2.0;
  double spike_max_share = 0.20; ///< at most this share of the points (at least 1) are spikes
  double outlier_min_ratio = 1.25; ///< a point is an outlier only if off by more than this factor
  double outlier_max_share = 0.10; ///< at most this share of the points is rejected
  bool leave_one_out = true;       ///< compute the leave-one-out MAPE of the chosen model
  /// A model with more parameters is chosen over a simpler one only if it lowers BIC by more than
  /// this (6: "strong evidence", Kass & Raftery 1995), so noise does not buy extra regimes.
  double bic_margin = 6.0;
};

/// One measured point of a curve.
struct CurvePoint {
  double bytes = 0;   ///< message size [B]
  double time_us = 0; ///< time per operation [us]
};

/// A point left out of the fit, and why.
struct ExcludedPoint {
  double bytes = 0;
  double time_us = 0;
  std::string reason; ///< "zero size", "zero time", "non-finite", "outlier: 3.77x the fit"
};

/// Result of fitting one model family (with its best R for regimes) to the kept points.
struct CandidateFit {
  CurveModel model;
  double rss_log = 0; ///< Σ (ln t_model − ln t_meas)² over kept points
  double bic = 0;     ///< n ln(rss/n) + p ln n (Schwarz 1978)
  int status = 0;     ///< Eigen LevenbergMarquardtSpace::Status of the best start
  int info =
      0; ///< Eigen ComputationInfo (0 Success, 1 NumericalIssue, 2 NoConvergence, 3 InvalidInput)
  int starts = 0;      ///< starting points tried
  int evaluations = 0; ///< function evaluations of all starts
};

/// Quality of the chosen fit over the kept points. APE_i = |t_model − t_meas| / t_meas.
struct FitQuality {
  double r2_log_time = 0;   ///< 1 − RSS/TSS of ln t (R² in log-time, not in time)
  double mape_pct = 0;      ///< mean APE of time [%]
  double max_ape_pct = 0;   ///< largest APE of time [%]
  double loo_mape_pct = -1; ///< leave-one-out MAPE [%] (−1 when not computed)
  double mape_all_pct = 0;  ///< MAPE over kept and outlier points [%] (the error with them)
  double rmse_log = 0;      ///< sqrt(RSS/n) of ln t
  int outliers = 0;         ///< points screened out as outliers (listed in CurveFit::excluded)
  bool cross_validated = true; ///< false when too few points for leave-one-out (2-3 points)
};

/// The full result of fit_curve.
struct CurveFit {
  bool ok = false;        ///< false: not fitted, see diagnostic
  std::string diagnostic; ///< why not fitted, or warnings (LM status...)
  CurveModel model;       ///< the chosen model
  std::vector<double>
      stderrs; ///< standard error per physical parameter (parameter_names order); NaN when singular
  FitQuality quality;
  std::vector<CandidateFit> candidates;    ///< every family tried (regimes: best R), for the record
  std::vector<CandidateFit> regime_trials; ///< regimes: each R tried
  std::string selection;                   ///< "BIC: regimes(2) -123.4 < logistic -98.1 < ..."
  std::vector<CurvePoint> kept;            ///< points fitted, ascending size
  std::vector<ExcludedPoint> excluded;     ///< points left out, with reasons
  int status = 0;                          ///< Eigen LM status of the chosen fit
  int info = 0;                            ///< Eigen ComputationInfo of the chosen fit
};

/// Candidate label as in `selection.reason`: "alpha_beta", "logistic", "regimes(R=3)",
/// "regimes(R=2,D=1)" (D: drops).
std::string model_label(const CurveModel &model);

/// Names of a model's physical parameters in CurveModel order: alpha_us, beta_gbps; or alpha_us,
/// then bmax_gbps.j, k.j, s_half_bytes.j for each step j (0-based, ascending s_half), then
/// drop_fraction.m, drop_k.m, drop_s_half_bytes.m for each drop m.
std::vector<std::string> parameter_names(const CurveModel &model);

/// Fits the points (any order; duplicates of a size are kept as separate points).
/// Two or three usable points (>= options.min_points): alpha_beta only, no screening, quality
/// marked not cross-validated and a warning in `diagnostic`.
/// Robust screening (reject_outliers), after the residual screen below: an interior point more than
/// spike_min_ratio (2x) off the log-log interpolation of its neighbours, whose own slope
/// d ln t/d ln s lies in [-0.25, 1.25], is a spike; the end points are judged against the
/// extrapolation of their two inner neighbours (at most spike_max_share of the points, >= 1).
/// Then isolated deviations (issue 19): an interior point more than max(outlier_min_ratio, 3 x
/// 1.4826 x median |log residual|) off the final fit (falls included) and off the line through
/// its neighbours while both neighbours lie within a third of its log deviation is an outlier
/// (largest first, never two adjacent, spike_max_share of all points counting earlier outliers);
/// `excluded` says "outlier: isolated, ...", and predict and the report show it.
/// Procedure: drop points with size or time <= 0 or non-finite (noted in `excluded`); each family
/// in options.models is fitted with Eigen's LevenbergMarquardt on log-time residuals from several
/// deterministic starts (regimes: R = 2..max_regimes, each R seeded from the best R−1 fit plus a
/// new step at 4 positions, and from evenly spaced steps); going from the simplest candidate
/// (alpha_beta, logistic, regimes R=2, R=3, ...) a more complex one replaces the current choice
/// when its BIC is lower by more than options.bic_margin (n must exceed p + 1). With
/// reject_outliers, points whose residual exceeds max(ln outlier_min_ratio, 5 × 1.4826 MAD) are
/// dropped (largest first, at most outlier_max_share of the points, at least one from 6 points on)
/// and the selection is redone
/// (up to 3 rounds; a dropped point within half the threshold of the final rising fit is put back),
/// all against the rising models. Then, when the best rising model misses a point by more than
/// drops_min_ratio, falls (LogisticDrop, LatencyStep; up to max_drops, at most max_lifts lifts, n
/// >= 1.5 p) are added one at a time to each rising model and the selection is redone with them. R
/// + 1 regimes (R >= 2) are skipped once R beat R − 1 by the margin and its residual signs pass a
/// runs test. Never throws for bad data: returns ok = false with a diagnostic instead. `transient`:
/// points the paired-placement screen (paired_spikes) judged transient; with reject_outliers they
/// are left out first, listed in `excluded` with their reason and counted as outliers (matched by
/// size and time; ignored when fewer than 6 points would remain).
CurveFit fit_curve(std::span<const CurvePoint> points, const FitOptions &options = {},
                   std::span<const ExcludedPoint> transient = {});

/// The other placement's model as one more start (the two curves of one run share their
/// algorithm and protocol steps, so the sibling's fitted regimes and falls are a start the
/// deterministic ones may miss): a Levenberg-Marquardt run from `start` on `fit`'s kept points
/// replaces the chosen model when its BIC is lower by more than options.bic_margin, its
/// parameters lie in their physical ranges and its structure is one options allows; quality,
/// stderrs and `selection` (which names `from`) are recomputed. Returns whether it replaced.
/// `fit` must be a result of fit_curve with the same options; a fit that is not ok, has fewer
/// than 4 kept points or was not cross-validated (the few-points path) is left alone. No errors.
bool adopt_sibling_model(CurveFit &fit, const CurveModel &start, const FitOptions &options,
                         const std::string &from);

/// Paired-placement screen (issue 19's single-size spikes): nccl-tests times every size
/// out-of-place and then in-place in the same run, with the algorithm and protocol NCCL picks
/// for that size either way (its tuner does not look at the placement), so a bump the algorithm
/// makes (a protocol switch, a slow size) shows in both curves, and a bump one curve alone shows
/// is transient. An interior point of `curve` is returned, with the reason "outlier: transient,
/// ..." naming `sibling_name`, when its time over `sibling`'s at the same size moves more than
/// options.outlier_min_ratio (1.25x) from that ratio's median over the 7 shared sizes around it,
/// and the point itself lies more than that factor off the log-log line through its neighbours,
/// the same way, while `sibling` lies within a third of that (in log), and within
/// sqrt(outlier_min_ratio), of its own line there (a bump it shares even in part is the
/// algorithm's), and the ratio's move exceeds 5 robust sigmas of such moves over the curve (where
/// the placements jitter against each other, 1.25x is noise). The ratio, not the point's own
/// line, decides: two spikes one size apart do not make the size between them a dip. Largest first,
/// at most options.spike_max_share of the points (at least 1). Sizes [B] and times [us] as
/// CurvePoint, any order. Empty when either curve repeats a size (several runs merged: the
/// pairing is lost), when they share fewer than 5 sizes, or without reject_outliers. No errors.
std::vector<ExcludedPoint> paired_spikes(std::span<const CurvePoint> curve,
                                         std::span<const CurvePoint> sibling,
                                         const FitOptions &options,
                                         const std::string &sibling_name);

/// Fits one family with R regimes (R ignored for alpha_beta/logistic) to the given points from the
/// default starts; no outlier screening, no selection. Used by tests and the benchmark.
CandidateFit fit_model(std::span<const CurvePoint> points, ModelKind kind, int regimes = 1);

/// Runs LM from `start` on the points. \returns the candidate (status, info, rss, bic).
CandidateFit fit_from(std::span<const CurvePoint> points, const CurveModel &start,
                      int max_evaluations = 400);

/// Leave-one-out MAPE [%]: refit `model` without point i (warm-started from `model`), predict i.
double leave_one_out_mape_pct(std::span<const CurvePoint> points, const CurveModel &model);

/// Standard errors of the physical parameters at the optimum: Cov(x) = σ² (JᵀJ)⁻¹ on the internal
/// (log) parameters with σ² = RSS/(n − p), mapped by the delta method (se(e^x) = e^x se(x)).
/// Order as parameter_names; NaN when JᵀJ is singular or n <= p.
std::vector<double> parameter_stderrs(std::span<const CurvePoint> points, const CurveModel &model);

/// Mean absolute percentage error of time [%] of `model` over points.
double mape_pct(std::span<const CurvePoint> points, const CurveModel &model);
/// Largest absolute percentage error of time [%].
double max_ape_pct(std::span<const CurvePoint> points, const CurveModel &model);
/// R² of log-time: 1 − Σ(ln t_model − ln t)² / Σ(ln t − mean ln t)²; 1 when all times equal and
/// fitted.
double r2_log_time(std::span<const CurvePoint> points, const CurveModel &model);

/// Human-readable Eigen LevenbergMarquardtSpace::Status name ("RelativeReductionTooSmall", ...).
std::string lm_status_name(int status);

} // namespace scalefit::fitting

// Internals shared by fit.cpp (LM runs, model selection) and fit_curve.cpp (screening, the
// few-points path, quality).
#pragma once

#include "scalefit/fitting/fit.hpp"

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace scalefit::fitting::detail {

/// Below this many points only alpha-beta is determined (the few-points path of fit_curve).
inline constexpr std::size_t kFullModelPoints = 4;

/// Fits every family of opt.models that the n points can support (n > p + 1) and ranks them by
/// BIC with opt.bic_margin (simplest first); with `falls`, drops and lifts are added. Sets
/// *falls_gate when the best rising model misses a point by more than opt.drops_min_ratio.
/// Returns an empty list when no family is feasible.
std::vector<CandidateFit> select(std::span<const CurvePoint> pts, const FitOptions &opt,
                                 std::vector<CandidateFit> &regime_trials, bool falls,
                                 bool *falls_gate = nullptr);

/// Fills f.quality and f.stderrs for f.model on f.kept (sizes [B], times [us]): MAPE, max APE,
/// R^2 and RMSE of ln t (from `rss_log`, the chosen candidate's sum of squared log residuals), the
/// outlier count and the MAPE with `outliers` included, the leave-one-out MAPE when
/// opt.leave_one_out. f.kept must not be empty. No errors.
void set_quality(CurveFit &f, double rss_log, std::span<const ExcludedPoint> outliers,
                 const FitOptions &opt);

/// Label of a candidate as printed in `selection` ("alpha_beta", "regimes(R=3)", ...).
std::string candidate_label(const CandidateFit &c);

} // namespace scalefit::fitting::detail

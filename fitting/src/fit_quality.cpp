// Labels and quality figures of a fitted curve model (MAPE, max APE, R² of log time): the
// definitions fit.hpp documents. The fits themselves live in fit.cpp and fit_curve.cpp.
#include "scalefit/fitting/fit.hpp"

#include "fit_detail.hpp"
#include "numbers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace scalefit::fitting {
namespace {} // namespace
namespace detail {

std::string candidate_label(const CandidateFit &c) {
  return model_label(c.model);
}

} // namespace detail

std::string model_label(const CurveModel &model) {
  if (model.kind != ModelKind::regimes)
    return std::string(model_name(model.kind));
  std::string label = fmt::format("regimes(R={}", model.steps.size());
  if (!model.drops.empty())
    label += fmt::format(",D={}", model.drops.size());
  if (!model.lifts.empty())
    label += fmt::format(",L={}", model.lifts.size());
  return label + ")";
}

std::vector<std::string> parameter_names(const CurveModel &model) {
  std::vector<std::string> names{"alpha_us"};
  if (model.kind == ModelKind::alpha_beta) {
    names.push_back("beta_gbps");
    return names;
  }
  for (std::size_t j = 0; j < model.steps.size(); ++j) {
    names.push_back(fmt::format("bmax_gbps.{}", j));
    names.push_back(fmt::format("k.{}", j));
    names.push_back(fmt::format("s_half_bytes.{}", j));
  }
  for (std::size_t j = 0; j < model.drops.size(); ++j) {
    names.push_back(fmt::format("drop_fraction.{}", j));
    names.push_back(fmt::format("drop_k.{}", j));
    names.push_back(fmt::format("drop_s_half_bytes.{}", j));
  }
  for (std::size_t j = 0; j < model.lifts.size(); ++j) {
    names.push_back(fmt::format("lift_delta_us.{}", j));
    names.push_back(fmt::format("lift_k.{}", j));
    names.push_back(fmt::format("lift_s_half_bytes.{}", j));
  }
  return names;
}

std::string lm_status_name(int status) {
  switch (status) {
  case -2:
    return "NotStarted";
  case -1:
    return "Running";
  case 0:
    return "ImproperInputParameters";
  case 1:
    return "RelativeReductionTooSmall";
  case 2:
    return "RelativeErrorTooSmall";
  case 3:
    return "RelativeErrorAndReductionTooSmall";
  case 4:
    return "CosinusTooSmall";
  case 5:
    return "TooManyFunctionEvaluation";
  case 6:
    return "FtolTooSmall";
  case 7:
    return "XtolTooSmall";
  case 8:
    return "GtolTooSmall";
  case 9:
    return "UserAsked";
  }
  return "Unknown";
}

double mape_pct(std::span<const CurvePoint> pts, const CurveModel &model) {
  if (pts.empty())
    return 0;
  double s = 0;
  for (const CurvePoint &p : pts)
    s += std::abs(model.time_us(p.bytes) - p.time_us) / p.time_us;
  return 100.0 * s / static_cast<double>(pts.size());
}

double max_ape_pct(std::span<const CurvePoint> pts, const CurveModel &model) {
  double m = 0;
  for (const CurvePoint &p : pts)
    m = std::max(m, std::abs(model.time_us(p.bytes) - p.time_us) / p.time_us);
  return 100.0 * m;
}

double r2_log_time(std::span<const CurvePoint> pts, const CurveModel &model) {
  if (pts.empty())
    return kNaN;
  double mean = 0;
  for (const CurvePoint &p : pts)
    mean += std::log(p.time_us);
  mean /= static_cast<double>(pts.size());
  double rss = 0, tss = 0;
  for (const CurvePoint &p : pts) {
    const double r = std::log(model.time_us(p.bytes)) - std::log(p.time_us);
    rss += r * r;
    tss += (std::log(p.time_us) - mean) * (std::log(p.time_us) - mean);
  }
  if (tss <= 0)
    return rss <= 1e-24 ? 1.0 : 0.0;
  return 1.0 - rss / tss;
}

} // namespace scalefit::fitting

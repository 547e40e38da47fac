// fit_curve: the points a curve is fitted to (exclusions, spike screening), the few-points path
// (alpha-beta from 2-3 points, not cross-validated) and the quality of the chosen fit.
//
// Robustness rule (stated in fit.hpp): three screens, the first two against the rising models
// only, the third against the final fit.
//  1. Fit residuals: points whose log-time residual exceeds max(ln outlier_min_ratio, 5 x 1.4826
//     MAD) are dropped, largest first, at most outlier_max_share (at least one when >= 6 points),
//     then the selection is redone (up to 3 rounds). A dropped point within half the threshold
//     of the final rising fit is put back (the spike had bent the first fit away from it).
//  2. Neighbour spikes (on the points screen 1 kept): an interior point whose time is more than
//     FitOptions::spike_min_ratio (2x) off the log-log interpolation of its two neighbours,
//     where the neighbours themselves rise at a plausible slope (d ln t / d ln s in
//     [-0.25, 1.25]: time never falls much with size nor grows faster than linearly), is an
//     outlier; the first and last points are judged against the extrapolation of their two inner
//     neighbours (slope clipped to [0, 1]); at most spike_max_share of the points. A protocol step moves later points too
//     and fails the neighbour-slope test, so it is kept. This catches the spike a first fit
//     bent towards (a 20x dip among a few hundred points).
//  3. Isolated deviations, after the falls: an interior point more than max(outlier_min_ratio
//     (1.25x), 3 robust sigmas) off both the final fit and the line through its neighbours,
//     while both neighbours lie within a third of that of the fit (at most spike_max_share of
//     the points, outliers of 1-2 included; never two adjacent).
// Outliers are listed in CurveFit::excluded; quality reports MAPE without (mape_pct) and with
// (mape_all_pct) them.
#include "scalefit/fitting/fit.hpp"

#include "curve_bounds.hpp"
#include "fit_detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace scalefit::fitting {
namespace {

using detail::kFullModelPoints;

/// Indices (into `pts`, sorted by size, sizes distinct) of neighbour spikes (rule 1 above).
std::vector<std::size_t> neighbour_spikes(std::span<const CurvePoint> pts, const FitOptions &opt,
                                          std::vector<double> &ratio) {
  std::vector<std::size_t> out;
  const std::size_t n = pts.size();
  if (n < 5)
    return out;
  std::vector<std::pair<double, std::size_t>> cands;
  for (std::size_t i = 1; i + 1 < n; ++i) {
    const double u0 = std::log(pts[i - 1].bytes), u = std::log(pts[i].bytes),
                 u1 = std::log(pts[i + 1].bytes);
    if (!(u1 > u0) || !(u > u0) || !(u1 > u))
      continue;
    const double l0 = std::log(pts[i - 1].time_us), l = std::log(pts[i].time_us),
                 l1 = std::log(pts[i + 1].time_us);
    const double slope = (l1 - l0) / (u1 - u0);
    if (slope < -0.25 || slope > 1.25)
      continue;
    const double pred = l0 + slope * (u - u0);
    const double d = l - pred;
    if (std::abs(d) > std::log(opt.spike_min_ratio))
      cands.emplace_back(d, i);
  }
  // Endpoints, against the extrapolation of their two inner neighbours (slope clipped to [0, 1]):
  // a first size 2x above the second is a warm-up, not a latency.
  const auto endpoint = [&](std::size_t i, std::size_t a, std::size_t b) {
    const double ua = std::log(pts[a].bytes), ub = std::log(pts[b].bytes),
                 u = std::log(pts[i].bytes);
    if (!(ub > ua))
      return;
    const double la = std::log(pts[a].time_us), lb = std::log(pts[b].time_us);
    const double slope = std::clamp((lb - la) / (ub - ua), 0.0, 1.0);
    const double d = std::log(pts[i].time_us) - (la + slope * (u - ua));
    if (std::abs(d) > std::log(opt.spike_min_ratio))
      cands.emplace_back(d, i);
  };
  endpoint(0, 1, 2);
  endpoint(n - 1, n - 3, n - 2);
  // Largest first, capped.
  std::sort(cands.begin(), cands.end(),
            [](const auto &a, const auto &b) { return std::abs(a.first) > std::abs(b.first); });
  const std::size_t cap =
      std::max<std::size_t>(1, static_cast<std::size_t>(opt.spike_max_share * static_cast<double>(n)));
  for (const auto &cand : cands) {  // no structured binding: clang 14 cannot capture one
    const double d = cand.first;
    const std::size_t i = cand.second;
    if (out.size() >= cap)
      break;
    // Two adjacent candidates are a plateau, not two spikes: keep the larger only.
    if (std::any_of(out.begin(), out.end(),
                    [&](std::size_t j) { return j + 1 == i || i + 1 == j; }))
      continue;
    out.push_back(i);
    ratio.push_back(std::exp(d));
  }
  return out;
}

/// A point a screen leaves out: its index into the points screened and why.
struct Dropped {
  std::size_t index = 0;
  ExcludedPoint why;
};

/// Isolated deviations (rule 3 above) among `pts` (sorted by size) against the fit `m`: an
/// interior point more than max(outlier_min_ratio, 3 x 1.4826 x median |log residual|) off the
/// log-log line through its two neighbours and more than outlier_min_ratio off the fit, on the
/// same side, while both neighbours lie within a third of that deviation of the fit: one size
/// that went wrong (a busy host, a protocol switch at that size alone) while the curve around it
/// holds. The line, not the fit, measures the deviation: a flexible fit bends towards a spike.
/// A noisy curve's MAD-scaled threshold in screen 1 and the 2x of screen 2 let such 1.3-2x points
/// through. Largest first, never two adjacent, at most spike_max_share of all the points
/// counting `outliers_before` found by the other screens.
std::vector<Dropped> isolated_deviations(std::span<const CurvePoint> pts, const CurveModel &m,
                                         const FitOptions &opt, std::size_t outliers_before) {
  std::vector<Dropped> out;
  const std::size_t n = pts.size();
  if (n < 5)
    return out;
  std::vector<double> res(n), absres(n);
  for (std::size_t i = 0; i < n; ++i) {
    res[i] = std::log(pts[i].time_us) - std::log(m.time_us(pts[i].bytes));
    absres[i] = std::abs(res[i]);
  }
  // Above 3 robust sigmas too: on a noisy curve (sigma 8%: about 1.27x) a 3-sigma point is
  // noise, not a size that went wrong.
  std::nth_element(absres.begin(), absres.begin() + static_cast<std::ptrdiff_t>(n / 2),
                   absres.end());
  const double ratio = std::log(opt.outlier_min_ratio);
  const double thresh = std::max(ratio, 3.0 * 1.4826 * absres[n / 2]);
  std::vector<std::size_t> cands;
  std::vector<double> dev(n, 0.0);
  for (std::size_t i = 1; i + 1 < n; ++i) {
    const double u0 = std::log(pts[i - 1].bytes), u = std::log(pts[i].bytes),
                 u1 = std::log(pts[i + 1].bytes);
    if (!(u1 > u0))
      continue;
    const double l0 = std::log(pts[i - 1].time_us), l1 = std::log(pts[i + 1].time_us);
    const double d = std::log(pts[i].time_us) - (l0 + (l1 - l0) * (u - u0) / (u1 - u0));
    dev[i] = d;
    if (std::isfinite(d) && std::abs(d) > thresh && std::abs(res[i]) > ratio && res[i] * d > 0 &&
        std::abs(res[i - 1]) < std::abs(d) / 3 && std::abs(res[i + 1]) < std::abs(d) / 3)
      cands.push_back(i);
  }
  std::sort(cands.begin(), cands.end(),
            [&](std::size_t a, std::size_t b) { return std::abs(dev[a]) > std::abs(dev[b]); });
  const std::size_t cap =
      static_cast<std::size_t>(opt.spike_max_share * static_cast<double>(n + outliers_before));
  std::vector<bool> taken(n, false);
  for (std::size_t i : cands) {
    if (outliers_before + out.size() >= cap)
      break;
    if (taken[i - 1] || taken[i + 1])
      continue;
    taken[i] = true;
    const double nb = std::exp(std::max(std::abs(res[i - 1]), std::abs(res[i + 1])));
    out.push_back({i,
                   {pts[i].bytes, pts[i].time_us,
                    fmt::format("outlier: isolated, {:.3g}x its neighbours' line and {:.3g}x the "
                                "fit while both neighbours are within {:.3g}x of it (threshold "
                                "{:.3g}x)",
                                std::exp(dev[i]), std::exp(res[i]), nb, std::exp(thresh))}});
  }
  return out;
}

/// Two or three points: the alpha-beta model they determine, no cross-validation. Of three, a
/// point slower by more than outlier_min_ratio than a larger size is an outlier (time does not
/// fall with size; a warm-up or a busy host), leaving the two that agree.
CurveFit few_points(std::vector<CurvePoint> kept, CurveFit out, const FitOptions &opt) {
  if (opt.reject_outliers && kept.size() == 3) {
    for (std::size_t i = 0; i < 2; ++i) {
      bool above_later = false;
      for (std::size_t j = i + 1; j < 3; ++j)
        above_later |= kept[j].bytes > kept[i].bytes &&
                       kept[i].time_us > opt.outlier_min_ratio * kept[j].time_us;
      if (!above_later)
        continue;
      out.excluded.push_back(
          {kept[i].bytes, kept[i].time_us,
           fmt::format("outlier: slower than a larger size by more than {:.3g}x",
                       opt.outlier_min_ratio)});
      out.quality.outliers = 1;
      const CurvePoint dropped = kept[i];
      kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(i));
      out.quality.mape_all_pct = -1; // set below with the model
      std::vector<CurvePoint> all = kept;
      all.push_back(dropped);
      CurveFit f = few_points(std::move(kept), std::move(out), opt);
      f.quality.mape_all_pct = mape_pct(all, f.model);
      return f;
    }
  }
  const CandidateFit c = fit_model(kept, ModelKind::alpha_beta);
  const std::string outside = detail::out_of_bounds(c.model);
  out.ok = std::isfinite(c.model.alpha_us) && c.model.beta_gbps > 0 && outside.empty();
  if (!out.ok) {
    out.diagnostic =
        outside.empty()
            ? fmt::format("{} points: alpha-beta could not be fitted", kept.size())
            : fmt::format("{} points: the alpha-beta fit has {}: not fitted", kept.size(), outside);
    out.kept = std::move(kept);
    return out;
  }
  out.model = c.model;
  out.status = c.status;
  out.info = c.info;
  out.candidates = {c};
  out.selection = fmt::format("only {} points: alpha_beta (2 parameters) is all they determine",
                              kept.size());
  out.diagnostic = fmt::format("warning: only {} points: alpha-beta fitted, quality not "
                               "cross-validated (leave-one-out needs more points than parameters)",
                               kept.size());
  out.quality.mape_pct = mape_pct(kept, out.model);
  out.quality.max_ape_pct = max_ape_pct(kept, out.model);
  if (out.quality.outliers == 0)
    out.quality.mape_all_pct = out.quality.mape_pct;
  out.quality.r2_log_time = r2_log_time(kept, out.model);
  out.quality.rmse_log = std::sqrt(c.rss_log / static_cast<double>(kept.size()));
  out.quality.loo_mape_pct = -1;
  out.quality.cross_validated = false;
  out.stderrs = parameter_stderrs(kept, out.model);
  out.kept = std::move(kept);
  return out;
}

} // namespace

CurveFit fit_curve(std::span<const CurvePoint> points, const FitOptions &opt,
                   std::span<const ExcludedPoint> transient) {
  CurveFit out;
  std::vector<CurvePoint> kept;
  for (const CurvePoint &p : points) {
    if (!std::isfinite(p.bytes) || !std::isfinite(p.time_us))
      out.excluded.push_back({p.bytes, p.time_us, "non-finite size or time"});
    else if (p.bytes <= 0)
      out.excluded.push_back({p.bytes, p.time_us, "zero size"});
    else if (p.time_us <= 0)
      out.excluded.push_back({p.bytes, p.time_us, "zero time"});
    else
      kept.push_back(p);
  }
  std::stable_sort(kept.begin(), kept.end(),
                   [](const CurvePoint &a, const CurvePoint &b) { return a.bytes < b.bytes; });
  const std::size_t usable = kept.size();
  const std::size_t need = std::max<std::size_t>(opt.min_points, 2);
  if (usable < need) {
    out.diagnostic = fmt::format("{} usable points of {} (need at least {}): not fitted", usable,
                                 points.size(), need);
    out.kept = kept;
    return out;
  }
  const bool ab_allowed =
      std::find(opt.models.begin(), opt.models.end(), ModelKind::alpha_beta) != opt.models.end();
  if (usable < kFullModelPoints) {
    if (!ab_allowed) {
      out.diagnostic = fmt::format("{} points: only alpha_beta is determined by so few, and it "
                                   "is not among the requested models: not fitted",
                                   usable);
      out.kept = kept;
      return out;
    }
    return few_points(std::move(kept), std::move(out), opt);
  }

  std::vector<ExcludedPoint> outliers;
  // 0. Transients the other placement of the same run told (paired_spikes), first: they would
  //    bend the model selection the later screens judge against.
  if (opt.reject_outliers && !transient.empty() && kept.size() >= transient.size() + 6) {
    for (const ExcludedPoint &e : transient) {
      const auto at = std::find_if(kept.begin(), kept.end(), [&](const CurvePoint &p) {
        return p.bytes == e.bytes && p.time_us == e.time_us;
      });
      if (at == kept.end())
        continue;
      kept.erase(at);
      outliers.push_back(e);
    }
  }
  // Outliers are screened against the rising models only: a fall (drop, latency step) placed
  // between two sizes could otherwise absorb an isolated spike. Falls are fitted afterwards.
  bool falls_gate = false;
  std::vector<CandidateFit> ranked =
      detail::select(kept, opt, out.regime_trials, false, &falls_gate);
  if (ranked.empty()) {
    if (ab_allowed && kept.size() >= 2) {
      CurveFit f = few_points(kept, std::move(out), opt);
      for (const ExcludedPoint &e : outliers)
        f.excluded.push_back(e);
      if (f.ok) // enough points, but no richer model kept its parameters in range
        f.diagnostic = fmt::format("warning: {} points, but no model but alpha-beta has every "
                                   "parameter in its physical range: alpha-beta fitted, quality "
                                   "not cross-validated",
                                   usable);
      return f;
    }
    out.diagnostic = fmt::format(
        "{} points: fewer than any requested model's parameters + 2: not fitted", usable);
    out.kept = kept;
    return out;
  }
  // 1. Fit residuals.
  const std::size_t max_drop =
      std::max<std::size_t>(usable >= 6 ? 1 : 0, static_cast<std::size_t>(
                                                     opt.outlier_max_share *
                                                     static_cast<double>(usable)));
  double last_thresh = std::log(opt.outlier_min_ratio);
  const std::size_t screened_before = outliers.size(); // the transients: not screen 1's share
  for (int round = 0;
       opt.reject_outliers && round < 3 && outliers.size() - screened_before < max_drop; ++round) {
    const CurveModel &m = ranked.front().model;
    std::vector<double> res(kept.size()), absdev(kept.size());
    for (std::size_t i = 0; i < kept.size(); ++i)
      res[i] = std::log(m.time_us(kept[i].bytes)) - std::log(kept[i].time_us);
    std::vector<double> tmp = res;
    std::nth_element(tmp.begin(), tmp.begin() + static_cast<std::ptrdiff_t>(tmp.size() / 2),
                     tmp.end());
    const double med = tmp[tmp.size() / 2];
    for (std::size_t i = 0; i < res.size(); ++i)
      absdev[i] = std::abs(res[i] - med);
    tmp = absdev;
    std::nth_element(tmp.begin(), tmp.begin() + static_cast<std::ptrdiff_t>(tmp.size() / 2),
                     tmp.end());
    const double thresh =
        std::max(std::log(opt.outlier_min_ratio), 5.0 * 1.4826 * tmp[tmp.size() / 2]);
    last_thresh = thresh;
    std::vector<std::size_t> order(kept.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return std::abs(res[a]) > std::abs(res[b]); });
    std::vector<bool> drop(kept.size(), false);
    std::size_t dropped_now = 0;
    for (std::size_t i : order) {
      if (std::abs(res[i]) <= thresh || outliers.size() - screened_before >= max_drop)
        break;
      drop[i] = true;
      ++dropped_now;
      outliers.push_back({kept[i].bytes, kept[i].time_us,
                          fmt::format("outlier: measured {:.3g}x the fit (threshold {:.3g}x)",
                                      std::exp(-res[i]), std::exp(thresh))});
    }
    if (dropped_now == 0)
      break;
    std::vector<CurvePoint> next;
    for (std::size_t i = 0; i < kept.size(); ++i)
      if (!drop[i])
        next.push_back(kept[i]);
    kept.swap(next);
    std::vector<CandidateFit> again =
        detail::select(kept, opt, out.regime_trials, false, &falls_gate);
    if (again.empty())
      break;
    ranked.swap(again);
  }
  // A spike bends the first fit, and a point it bent away from can be dropped with it: an outlier
  // within half the threshold of the final rising fit is put back (and the selection redone).
  // (Not the transients of screen 0: the other placement, not this fit, judged them.)
  if (outliers.size() > screened_before) {
    const CurveModel &m = ranked.front().model;
    std::vector<CurvePoint> back = kept;
    std::vector<ExcludedPoint> still(
        outliers.begin(), outliers.begin() + static_cast<std::ptrdiff_t>(screened_before));
    for (std::size_t k = screened_before; k < outliers.size(); ++k) {
      const ExcludedPoint &e = outliers[k];
      const double r = std::log(m.time_us(e.bytes)) - std::log(e.time_us);
      if (std::isfinite(r) && std::abs(r) <= 0.5 * last_thresh)
        back.push_back({e.bytes, e.time_us});
      else
        still.push_back(e);
    }
    if (still.size() < outliers.size()) {
      std::stable_sort(back.begin(), back.end(), [](const CurvePoint &a, const CurvePoint &b) {
        return a.bytes < b.bytes;
      });
      std::vector<CandidateFit> again =
          detail::select(back, opt, out.regime_trials, false, &falls_gate);
      if (!again.empty()) {
        kept.swap(back);
        ranked.swap(again);
        outliers.swap(still);
      }
    }
  }
  // Drops `found` (indices into kept) and redoes the selection (with falls or not; `gate` as
  // select's); when no model fits what is left, the points stay and are not outliers.
  const auto drop_and_refit = [&](const std::vector<Dropped> &found, bool falls, bool *gate) {
    if (found.empty())
      return;
    std::vector<bool> drop(kept.size(), false);
    for (const Dropped &d : found)
      drop[d.index] = true;
    std::vector<CurvePoint> next;
    for (std::size_t i = 0; i < kept.size(); ++i)
      if (!drop[i])
        next.push_back(kept[i]);
    std::vector<CandidateFit> again = detail::select(next, opt, out.regime_trials, falls, gate);
    if (again.empty())
      return;
    kept.swap(next);
    ranked.swap(again);
    for (const Dropped &d : found)
      outliers.push_back(d.why);
  };
  // 2. Neighbour spikes the residual screen left (a spike the first fit bent towards).
  if (opt.reject_outliers) {
    std::vector<double> ratio;
    const auto spikes = neighbour_spikes(kept, opt, ratio);
    std::vector<Dropped> found;
    for (std::size_t k = 0; k < spikes.size(); ++k)
      found.push_back({spikes[k],
                       {kept[spikes[k]].bytes, kept[spikes[k]].time_us,
                        fmt::format("outlier: spike, {:.3g}x the interpolation of its neighbours "
                                    "(threshold {:.3g}x)",
                                    ratio[k], opt.spike_min_ratio)}});
    drop_and_refit(found, false, &falls_gate);
  }
  if (falls_gate) {
    std::vector<CandidateFit> again = detail::select(kept, opt, out.regime_trials, true);
    if (!again.empty())
      ranked.swap(again);
  }
  // 3. Isolated deviations (issue 19), against the final fit (falls included: a curve that
  //    needs a drop or a lift misses every point with its rising models alone, which would
  //    hide a single bad size in the noise; a fall that absorbs the point leaves it unflagged).
  if (opt.reject_outliers)
    drop_and_refit(isolated_deviations(kept, ranked.front().model, opt, outliers.size()),
                   falls_gate, nullptr);
  if (const std::string outside = detail::out_of_bounds(ranked.front().model); !outside.empty()) {
    // select() keeps only candidates inside the ranges; a refit after a screen may still leave
    // one outside: such a curve is not fitted rather than written as a file no one can load.
    for (const ExcludedPoint &e : outliers)
      out.excluded.push_back(e);
    out.diagnostic = fmt::format("the best fit has {}: not fitted", outside);
    out.kept = kept;
    return out;
  }
  for (const ExcludedPoint &e : outliers)
    out.excluded.push_back(e);

  const CandidateFit &best = ranked.front();
  out.ok = true;
  out.model = best.model;
  out.status = best.status;
  out.info = best.info;
  out.candidates = ranked;
  std::string sel = fmt::format("BIC (margin {:g}): {} {:.1f}; others:", opt.bic_margin,
                                detail::candidate_label(ranked[0]), ranked[0].bic);
  for (std::size_t i = 1; i < ranked.size(); ++i)
    sel += fmt::format(" {} {:.1f}", detail::candidate_label(ranked[i]), ranked[i].bic);
  out.selection = sel;
  if (best.info != 0 || best.status <= 0 || best.status == 5)
    out.diagnostic = fmt::format("LM ended with status {} ({}), info {}", best.status,
                                 lm_status_name(best.status), best.info);
  out.kept = std::move(kept);
  detail::set_quality(out, best.rss_log, outliers, opt);
  return out;
}

namespace detail {

void set_quality(CurveFit &f, double rss_log, std::span<const ExcludedPoint> outliers,
                 const FitOptions &opt) {
  f.quality.mape_pct = mape_pct(f.kept, f.model);
  f.quality.max_ape_pct = max_ape_pct(f.kept, f.model);
  f.quality.r2_log_time = r2_log_time(f.kept, f.model);
  f.quality.rmse_log = std::sqrt(rss_log / static_cast<double>(f.kept.size()));
  f.quality.outliers = static_cast<int>(outliers.size());
  std::vector<CurvePoint> all = f.kept;
  for (const ExcludedPoint &e : outliers)
    all.push_back({e.bytes, e.time_us});
  f.quality.mape_all_pct = mape_pct(all, f.model);
  if (opt.leave_one_out)
    f.quality.loo_mape_pct = leave_one_out_mape_pct(f.kept, f.model);
  f.quality.cross_validated = opt.leave_one_out;
  f.stderrs = parameter_stderrs(f.kept, f.model);
}

std::string out_of_bounds(const CurveModel &m) {
  std::string why;
  const auto check = [&why](const std::string &name, double v, const Bounds &b) {
    if (why.empty() && !b.contains(v))
      why = fmt::format("{} = {:.3g} outside {}", name, v, b.text());
  };
  // A transition's height (its own bounds), steepness and position.
  const auto transition = [&](const char *what, std::size_t j, const char *height, double h,
                              const Bounds &hb, double k, double s_half) {
    const std::string at = fmt::format("{}[{}].", what, j);
    check(at + height, h, hb);
    check(at + "k", k, kSteepness);
    check(at + "s_half_bytes", s_half, kHalfBytes);
  };
  check("alpha_us", m.alpha_us, kAlphaUs);
  if (m.kind == ModelKind::alpha_beta)
    check("beta_gbps", m.beta_gbps, kBandwidthGbps);
  for (std::size_t j = 0; j < m.steps.size(); ++j)
    transition("steps", j, "bmax_gbps", m.steps[j].bmax_gbps, kBandwidthGbps, m.steps[j].k,
               m.steps[j].s_half_bytes);
  for (std::size_t j = 0; j < m.drops.size(); ++j)
    transition("drops", j, "fraction", m.drops[j].fraction, kFraction, m.drops[j].k,
               m.drops[j].s_half_bytes);
  for (std::size_t j = 0; j < m.lifts.size(); ++j)
    transition("lifts", j, "delta_us", m.lifts[j].delta_us, kDeltaUs, m.lifts[j].k,
               m.lifts[j].s_half_bytes);
  return why;
}

} // namespace detail

} // namespace scalefit::fitting

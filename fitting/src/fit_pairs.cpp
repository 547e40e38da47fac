// fit_pairs: the two placements of one run side by side (nccl-tests times every size
// out-of-place and then in-place with the algorithm and protocol NCCL picks for that size either
// way): a size one curve alone runs slow or fast is transient (paired_spikes, screen 0 of
// fit_curve), and each curve's fitted model is one more start for the other's fit
// (adopt_sibling_model). fit_records (fit_file.cpp) pairs the curves; declared in fit.hpp.
#include "scalefit/fitting/fit.hpp"

#include "curve_bounds.hpp"
#include "fit_detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace scalefit::fitting {
using detail::kFullModelPoints;

bool adopt_sibling_model(CurveFit &f, const CurveModel &start, const FitOptions &opt,
                         const std::string &from) {
  if (!f.ok || f.kept.size() < kFullModelPoints || !f.quality.cross_validated ||
      f.candidates.empty())
    return false;
  const bool allowed =
      std::find(opt.models.begin(), opt.models.end(), start.kind) != opt.models.end() &&
      (start.kind != ModelKind::regimes || start.num_regimes() <= std::min(opt.max_regimes, 8)) &&
      static_cast<int>(start.drops.size() + start.lifts.size()) <= opt.max_drops &&
      static_cast<int>(start.lifts.size()) <= opt.max_lifts;
  if (!allowed || f.kept.size() <= static_cast<std::size_t>(start.num_parameters()) + 1)
    return false;
  const CandidateFit c = fit_from(f.kept, start);
  if (!std::isfinite(c.bic) || c.status <= 0 || c.status == 5 ||
      !detail::out_of_bounds(c.model).empty() ||
      !(c.bic < f.candidates.front().bic - opt.bic_margin))
    return false;
  f.model = c.model;
  f.status = c.status;
  f.info = c.info;
  f.selection = fmt::format("from {}'s model: {} {:.1f}, lower by more than the margin than "
                            "the deterministic starts' {}",
                            from, detail::candidate_label(c), c.bic, f.selection);
  f.candidates.insert(f.candidates.begin(), c);
  f.diagnostic.clear();
  std::vector<ExcludedPoint> outliers; // the screens' verdicts stand
  for (const ExcludedPoint &e : f.excluded)
    if (e.reason.rfind("outlier", 0) == 0)
      outliers.push_back(e);
  detail::set_quality(f, c.rss_log, outliers, opt);
  return true;
}

std::vector<ExcludedPoint> paired_spikes(std::span<const CurvePoint> curve,
                                         std::span<const CurvePoint> sibling, const FitOptions &opt,
                                         const std::string &sibling_name) {
  std::vector<ExcludedPoint> out;
  if (!opt.reject_outliers)
    return out;
  const auto sorted_unique = [](std::span<const CurvePoint> pts, std::vector<CurvePoint> &v) {
    for (const CurvePoint &p : pts)
      if (std::isfinite(p.bytes) && std::isfinite(p.time_us) && p.bytes > 0 && p.time_us > 0)
        v.push_back(p);
    std::sort(v.begin(), v.end(),
              [](const CurvePoint &a, const CurvePoint &b) { return a.bytes < b.bytes; });
    return std::adjacent_find(v.begin(), v.end(), [](const CurvePoint &a, const CurvePoint &b) {
             return a.bytes == b.bytes;
           }) == v.end();
  };
  std::vector<CurvePoint> c, s;
  if (!sorted_unique(curve, c) || !sorted_unique(sibling, s))
    return out;
  // The sibling's time at each of the curve's sizes (NaN where it did not measure it).
  std::vector<double> t2(c.size(), std::numeric_limits<double>::quiet_NaN());
  std::size_t shared = 0;
  for (std::size_t i = 0, j = 0; i < c.size(); ++i) {
    while (j < s.size() && s[j].bytes < c[i].bytes)
      ++j;
    if (j < s.size() && s[j].bytes == c[i].bytes) {
      t2[i] = s[j].time_us;
      ++shared;
    }
  }
  if (shared < 5)
    return out;
  // q: log ratio of the two placements at each shared size, smooth across sizes in a sound run;
  // its median over the 7 shared sizes around a size (fewer at the ends) is that size's reference.
  std::vector<std::size_t> at; // indices of the shared sizes in c
  for (std::size_t i = 0; i < c.size(); ++i)
    if (!std::isnan(t2[i]))
      at.push_back(i);
  std::vector<double> q(at.size());
  for (std::size_t k = 0; k < at.size(); ++k)
    q[k] = std::log(c[at[k]].time_us) - std::log(t2[at[k]]);
  // Log deviation of the middle of three points from the log-log line through the outer two.
  const auto off_line = [&](std::size_t i, double t0, double t, double t1) {
    const double u0 = std::log(c[i - 1].bytes), u = std::log(c[i].bytes),
                 u1 = std::log(c[i + 1].bytes);
    return std::log(t) - (std::log(t0) + (std::log(t1) - std::log(t0)) * (u - u0) / (u1 - u0));
  };
  const double ratio = std::log(opt.outlier_min_ratio);
  struct Cand {
    std::size_t i;
    double dq, d, d2;
  };
  std::vector<Cand> cands, all;
  for (std::size_t k = 0; k < at.size(); ++k) {
    const std::size_t i = at[k];
    if (i == 0 || i + 1 == c.size() || std::isnan(t2[i - 1]) || std::isnan(t2[i + 1]))
      continue; // the ends: no line through neighbours to tell which placement moved
    const std::size_t lo = k >= 3 ? k - 3 : 0, hi = std::min(at.size(), k + 4);
    std::vector<double> win(q.begin() + static_cast<std::ptrdiff_t>(lo),
                            q.begin() + static_cast<std::ptrdiff_t>(hi));
    if (win.size() < 5)
      continue;
    std::nth_element(win.begin(), win.begin() + static_cast<std::ptrdiff_t>(win.size() / 2),
                     win.end());
    const double dq = q[k] - win[win.size() / 2];
    const double d = off_line(i, c[i - 1].time_us, c[i].time_us, c[i + 1].time_us);
    const double d2 = off_line(i, t2[i - 1], t2[i], t2[i + 1]);
    if (std::isfinite(dq) && std::isfinite(d) && std::isfinite(d2))
      all.push_back({i, dq, d, d2});
  }
  if (all.size() < 5)
    return out;
  // Above the ratio's own scatter too (5 robust sigmas of dq, as screen 1 of fit_curve): where the
  // placements jitter against each other (a 1-rank collective: in place does nothing, out of
  // place copies), a 1.25x move is noise, not a transient.
  std::vector<double> adq;
  for (const Cand &x : all)
    adq.push_back(std::abs(x.dq));
  std::nth_element(adq.begin(), adq.begin() + static_cast<std::ptrdiff_t>(adq.size() / 2),
                   adq.end());
  const double thresh = std::max(ratio, 5.0 * 1.4826 * adq[adq.size() / 2]);
  // this curve (not the sibling) left its line, the way the ratio moved, by > the threshold,
  // while the sibling stayed on its own (within a third of that, and within half the minimum
  // ratio: a bump the sibling shares even in part is the algorithm's)
  for (const Cand &x : all)
    if (std::abs(x.dq) > thresh && x.dq * x.d > 0 && std::abs(x.d) > ratio &&
        std::abs(x.d2) < std::min(std::abs(x.d) / 3, ratio / 2))
      cands.push_back(x);
  std::sort(cands.begin(), cands.end(),
            [](const Cand &a, const Cand &b) { return std::abs(a.dq) > std::abs(b.dq); });
  const std::size_t cap = std::max<std::size_t>(
      1, static_cast<std::size_t>(opt.spike_max_share * static_cast<double>(c.size())));
  for (const Cand &x : cands) {
    if (out.size() >= cap)
      break;
    out.push_back({c[x.i].bytes, c[x.i].time_us,
                   fmt::format("outlier: transient, {:.3g}x its neighbours' line and {:.3g}x "
                               "its usual ratio to {} at the same size (same run), which is "
                               "{:.3g}x its own line (threshold {:.3g}x)",
                               std::exp(x.d), std::exp(x.dq), sibling_name, std::exp(x.d2),
                               std::exp(thresh))});
  }
  return out;
}

} // namespace scalefit::fitting

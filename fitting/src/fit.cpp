// Levenberg–Marquardt fits of one curve from several starts, model selection by BIC,
// leave-one-out and standard errors. fit_curve (screening, the few-points path) lives in
// fit_curve.cpp; labels and quality figures in fit_quality.cpp.
#include "scalefit/fitting/fit.hpp"

#include "curve_bounds.hpp"
#include "fit_detail.hpp"
#include "numbers.hpp"

#include <fmt/format.h>

#include <Eigen/SVD>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace scalefit::fitting {
namespace {

constexpr int kScreenEvaluations = 15;
constexpr int kLmStarts = 5;
constexpr int kPolished = 1; // screened starts polished to convergence // LM runs from the most
                             // promising starts of each model

struct Data {
  Eigen::VectorXd bytes, time;
  explicit Data(std::span<const CurvePoint> pts) : bytes(pts.size()), time(pts.size()) {
    for (std::size_t i = 0; i < pts.size(); ++i) {
      bytes[static_cast<Eigen::Index>(i)] = pts[i].bytes;
      time[static_cast<Eigen::Index>(i)] = pts[i].time_us;
    }
  }
};

struct LmOutcome {
  int status = 0, info = 0, nfev = 0;
  double rss = 0;
};

// Log-time residuals carry ~1% noise: relative changes below 1e-8 in x or 1e-10 in RSS are noise.
template <class F> LmOutcome run_lm(F &functor, Eigen::VectorXd &x, int max_evaluations) {
  const LmResult r = minimize_lm(functor, x, max_evaluations, 1e-8, 1e-10);
  return {r.status, r.info, r.evaluations, r.rss};
}

/// Drops and latency steps of a model: with the internal vector's size they fix its layout.
struct Blocks {
  int drops = 0, lifts = 0;
};

Blocks blocks_of(const CurveModel &m) {
  return {static_cast<int>(m.drops.size()), static_cast<int>(m.lifts.size())};
}

/// Steps of an internal vector of a logistic/regimes model with these drops and lifts.
int steps_of(const Eigen::VectorXd &x, Blocks b) {
  return static_cast<int>((x.size() - 1) / 3) - b.drops - b.lifts;
}

/// Runs LM for `kind` (with drops and lifts `nb`) from x (updated in place) on the data.
LmOutcome run_kind(const Data &d, ModelKind kind, Eigen::VectorXd &x, int max_evaluations,
                   Blocks nb = {}) {
  if (kind == ModelKind::alpha_beta) {
    AlphaBetaFunctor f(d.bytes, d.time);
    return run_lm(f, x, max_evaluations);
  }
  LogisticStepsFunctor f(steps_of(x, nb), d.bytes, d.time, nb.drops, nb.lifts);
  return run_lm(f, x, max_evaluations);
}

double bic_of(double rss, std::size_t n, int p) {
  const double nn = static_cast<double>(n);
  return nn * std::log(std::max(rss, 1e-300) / nn) + p * std::log(nn);
}

/// Facts about the data the starting points are built from.
struct Shape {
  double t_min = 0, b_peak = 0, u_min = 0, u_max = 0, u_half = 0; // B in B/us
};

Shape shape_of(std::span<const CurvePoint> pts) {
  Shape s;
  s.t_min = std::numeric_limits<double>::infinity();
  s.u_min = std::numeric_limits<double>::infinity();
  s.u_max = -s.u_min;
  for (const CurvePoint &p : pts) {
    s.t_min = std::min(s.t_min, p.time_us);
    s.b_peak = std::max(s.b_peak, p.bytes / p.time_us);
    s.u_min = std::min(s.u_min, std::log(p.bytes));
    s.u_max = std::max(s.u_max, std::log(p.bytes));
  }
  s.u_half = s.u_max;
  for (const CurvePoint &p : pts) // smallest size reaching half the peak algbw
    if (p.bytes / p.time_us >= 0.5 * s.b_peak)
      s.u_half = std::min(s.u_half, std::log(p.bytes));
  return s;
}

CurveModel logistic_start(const Shape &s, double k) {
  CurveModel m;
  m.kind = ModelKind::logistic;
  m.alpha_us = 0.9 * s.t_min;
  m.steps = {{1.1 * s.b_peak * 1e-3, k, std::exp(s.u_half)}};
  return m;
}

CandidateFit finish(std::span<const CurvePoint> pts, ModelKind kind, const Eigen::VectorXd &x,
                    const LmOutcome &o, Blocks nb = {}) {
  CandidateFit c;
  c.model = from_internal(kind, x, nb.drops, nb.lifts);
  // The functor holds a lift's s_half inside the measured sizes (zero derivative beyond): give
  // the model the value the functor used.
  if (!c.model.lifts.empty()) {
    const auto [lo, hi] =
        std::minmax_element(pts.begin(), pts.end(), [](const CurvePoint &a, const CurvePoint &b) {
          return a.bytes < b.bytes;
        });
    for (LatencyStep &l : c.model.lifts)
      l.s_half_bytes = std::clamp(l.s_half_bytes, lo->bytes, hi->bytes);
  }
  c.rss_log = o.rss;
  c.bic = bic_of(o.rss, pts.size(), c.model.num_parameters());
  c.status = o.status;
  c.info = o.info;
  return c;
}

/// Tries every start with a screening budget, then polishes the best one.
double initial_rss(const Data &d, ModelKind kind, const Eigen::VectorXd &x, Blocks nb) {
  Eigen::VectorXd r(d.bytes.size());
  if (kind == ModelKind::alpha_beta) {
    AlphaBetaFunctor f(d.bytes, d.time);
    f(x, r);
  } else {
    LogisticStepsFunctor f(steps_of(x, nb), d.bytes, d.time, nb.drops, nb.lifts);
    f(x, r);
  }
  return r.allFinite() ? r.squaredNorm() : std::numeric_limits<double>::infinity();
}

CandidateFit best_of(std::span<const CurvePoint> pts, const Data &d, ModelKind kind,
                     const std::vector<CurveModel> &starts) {
  Eigen::VectorXd best_x;
  LmOutcome best;
  best.rss = std::numeric_limits<double>::infinity();
  int evals = 0;
  const Blocks ndrops = blocks_of(starts.front());
  // Run LM only from the kLmStarts starts with the lowest initial RSS (one evaluation each).
  std::vector<std::pair<double, std::size_t>> order;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    Eigen::VectorXd x = to_internal(starts[i]);
    order.emplace_back(initial_rss(d, kind, x, ndrops), i);
    ++evals;
  }
  std::stable_sort(order.begin(), order.end());
  if (order.size() > static_cast<std::size_t>(kLmStarts))
    order.resize(static_cast<std::size_t>(kLmStarts));
  // Screen every start with a short budget, then polish the kPolished best screened ones.
  std::vector<std::pair<LmOutcome, Eigen::VectorXd>> screened;
  for (const auto &[rss0, i] : order) {
    Eigen::VectorXd x = to_internal(starts[i]);
    LmOutcome o = run_kind(d, kind, x, kScreenEvaluations, ndrops);
    evals += o.nfev;
    screened.emplace_back(o, std::move(x));
  }
  std::stable_sort(screened.begin(), screened.end(),
                   [](const auto &a, const auto &b) { return a.first.rss < b.first.rss; });
  for (std::size_t k = 0; k < screened.size() && k < static_cast<std::size_t>(kPolished); ++k) {
    auto &[o, x] = screened[k];
    if (o.status == Eigen::LevenbergMarquardtSpace::TooManyFunctionEvaluation) {
      const LmOutcome p = run_kind(d, kind, x, k == 0 ? 200 : 40, ndrops);
      evals += p.nfev;
      o = p;
    }
    if (o.rss < best.rss)
      best = o, best_x = x;
  }
  if (best_x.size() == 0)
    best_x = to_internal(starts.front());
  CandidateFit c = finish(pts, kind, best_x, best, ndrops);
  c.starts = static_cast<int>(starts.size());
  c.evaluations = evals;
  return c;
}

std::vector<CurveModel> default_starts(const Shape &s, ModelKind kind, int regimes,
                                       const CurveModel *previous) {
  std::vector<CurveModel> starts;
  if (kind == ModelKind::alpha_beta) {
    CurveModel m;
    m.kind = kind;
    m.alpha_us = 0.9 * s.t_min;
    m.beta_gbps = s.b_peak * 1e-3;
    starts.push_back(m);
    m.alpha_us *= 0.5;
    m.beta_gbps *= 2;
    starts.push_back(m);
    return starts;
  }
  if (kind == ModelKind::logistic) {
    for (double k : {1.0, 0.6, 1.8})
      starts.push_back(logistic_start(s, k));
    return starts;
  }
  const double span = std::max(s.u_max - s.u_min, 1.0);
  if (previous && !previous->steps.empty()) {
    double sum = 0;
    for (const LogisticStep &st : previous->steps)
      sum += st.bmax_gbps;
    for (double f : {0.2, 0.4, 0.6, 0.8}) {
      CurveModel m = *previous;
      m.kind = ModelKind::regimes;
      for (LogisticStep &st : m.steps)
        st.bmax_gbps *= 0.8;
      m.steps.push_back({0.25 * sum, 2.0, std::exp(s.u_min + f * span)});
      starts.push_back(m);
    }
  }
  CurveModel m;
  m.kind = ModelKind::regimes;
  m.alpha_us = 0.9 * s.t_min;
  for (int j = 0; j < regimes; ++j)
    m.steps.push_back({1.1 * s.b_peak * 1e-3 / regimes, 1.5,
                       std::exp(s.u_min + span * (j + 1.0) / (regimes + 1.0))});
  starts.push_back(m);
  return starts;
}

/// The gaps between adjacent sizes where the measured time jumps relative to `base`'s fit, largest
/// first: (ln jump, gap index i between points i and i+1). Shared by the drop and lift starts.
std::vector<std::pair<double, std::size_t>> time_jumps(std::span<const CurvePoint> pts,
                                                       const CurveModel &base) {
  std::vector<std::pair<double, std::size_t>> jumps; // (ln jump, gap index i: between i and i+1)
  for (std::size_t i = 0; i + 1 < pts.size(); ++i) {
    const double r0 = std::log(base.time_us(pts[i].bytes) / pts[i].time_us);
    const double r1 = std::log(base.time_us(pts[i + 1].bytes) / pts[i + 1].time_us);
    if (pts[i + 1].bytes > pts[i].bytes && std::isfinite(r0 - r1))
      jumps.emplace_back(r0 - r1, i);
  }
  std::sort(jumps.begin(), jumps.end(), std::greater<>());
  return jumps;
}

/// Starts that add one drop to `base`: at the kDropStarts size gaps where the measured time jumps
/// most relative to the base fit (the bandwidth the base overestimates from there on), each with a
/// fraction from the size of the jump, plus one broad drop over the upper half of the sizes.
std::vector<CurveModel> drop_starts(std::span<const CurvePoint> pts, const Shape &s,
                                    const CurveModel &base) {
  constexpr std::size_t kDropStarts = 3;
  const std::vector<std::pair<double, std::size_t>> jumps = time_jumps(pts, base);
  std::vector<CurveModel> starts;
  CurveModel m = base;
  m.kind = ModelKind::regimes;
  for (std::size_t k = 0; k < jumps.size() && k < kDropStarts; ++k) {
    const auto [jump, i] = jumps[k];
    CurveModel st = m;
    const double f = std::clamp(1.0 - std::exp(-2.0 * std::max(jump, 0.05)), 0.2, 0.9);
    st.drops.push_back({f, 4.0, std::sqrt(pts[i].bytes * pts[i + 1].bytes)});
    starts.push_back(st);
  }
  CurveModel broad = m;
  broad.drops.push_back({0.5, 1.0, std::exp(s.u_min + 0.75 * (s.u_max - s.u_min))});
  starts.push_back(broad);
  if (!jumps.empty()) { // the base optimum itself, with a barely-there drop at the largest jump
    CurveModel tiny = m;
    const std::size_t i = jumps.front().second;
    tiny.drops.push_back({0.02, 4.0, std::sqrt(pts[i].bytes * pts[i + 1].bytes)});
    starts.push_back(tiny);
  }
  return starts;
}

/// Starts that add one latency step to `base`: at the kLiftStarts size gaps where the measured
/// time jumps most relative to the base fit, each with the height of the jump, plus the base
/// optimum with a barely-there step at the largest jump.
std::vector<CurveModel> lift_starts(std::span<const CurvePoint> pts, const Shape &s,
                                    const CurveModel &base) {
  constexpr std::size_t kLiftStarts = 3;
  const std::vector<std::pair<double, std::size_t>> jumps = time_jumps(pts, base);
  std::vector<CurveModel> starts;
  CurveModel m = base;
  m.kind = ModelKind::regimes;
  for (std::size_t k = 0; k < jumps.size() && k < kLiftStarts; ++k) {
    const auto [jump, i] = jumps[k];
    CurveModel st = m;
    const double delta =
        std::max(pts[i + 1].time_us * (1.0 - std::exp(-std::max(jump, 0.0))), 0.05 * s.t_min);
    st.lifts.push_back({delta, 4.0, std::sqrt(pts[i].bytes * pts[i + 1].bytes)});
    starts.push_back(st);
  }
  if (!jumps.empty()) {
    CurveModel tiny = m;
    const std::size_t i = jumps.front().second;
    tiny.lifts.push_back({0.01 * s.t_min, 4.0, std::sqrt(pts[i].bytes * pts[i + 1].bytes)});
    starts.push_back(tiny);
  }
  return starts;
}

/// Wald–Wolfowitz runs test on the signs of the log-time residuals of `m` (points ascending in
/// size): true when the number of runs is not significantly below chance (z > −1), i.e. the fit
/// leaves no systematic over/under-shoot over a range of sizes that another term could take up.
bool residuals_look_random(std::span<const CurvePoint> pts, const CurveModel &m) {
  int pos = 0, neg = 0, runs = 0, last = 0;
  for (const CurvePoint &p : pts) {
    const double r = std::log(m.time_us(p.bytes) / p.time_us);
    const int sign = r >= 0 ? 1 : -1;
    (sign > 0 ? pos : neg)++;
    if (sign != last)
      ++runs;
    last = sign;
  }
  const double n = pos + neg;
  if (pos == 0 || neg == 0 || n < 3)
    return false;
  const double mu = 2.0 * pos * neg / n + 1;
  const double var = (mu - 1) * (mu - 2) / (n - 1);
  return var > 0 && (runs - mu) / std::sqrt(var) > -1.0;
}

/// All candidate families on the points; returns them sorted by BIC (best first).
/// With `falls` false, only rising models are fitted and *falls_gate (if given) tells whether the
/// falls stage would run (the best rising model misses a point by more than drops_min_ratio).
} // namespace

namespace detail {

std::vector<CandidateFit> select(std::span<const CurvePoint> pts, const FitOptions &opt,
                                 std::vector<CandidateFit> &regime_trials, bool falls,
                                 bool *falls_gate) {
  const Data d(pts);
  const Shape s = shape_of(pts);
  const std::size_t n = pts.size();
  std::vector<CandidateFit> out;
  regime_trials.clear();
  auto feasible = [&](int p) { return n > static_cast<std::size_t>(p) + 1; };
  auto wants = [&](ModelKind k) {
    return std::find(opt.models.begin(), opt.models.end(), k) != opt.models.end();
  };
  if (wants(ModelKind::alpha_beta) && feasible(2))
    out.push_back(best_of(pts, d, ModelKind::alpha_beta,
                          default_starts(s, ModelKind::alpha_beta, 1, nullptr)));
  std::optional<CandidateFit> logistic;
  if ((wants(ModelKind::logistic) || wants(ModelKind::regimes)) && feasible(4))
    logistic =
        best_of(pts, d, ModelKind::logistic, default_starts(s, ModelKind::logistic, 1, nullptr));
  if (logistic && wants(ModelKind::logistic))
    out.push_back(*logistic);
  if (wants(ModelKind::regimes)) {
    const CurveModel *prev = logistic ? &logistic->model : nullptr;
    for (int r = 2; r <= std::min(opt.max_regimes, 8) && feasible(1 + 3 * r); ++r) {
      // Forward selection: once the R - 1 fit (R >= 3) beat its predecessor and its residuals
      // look like noise (as many sign runs as chance gives), one more regime has nothing to fit.
      if (r >= 3 && residuals_look_random(pts, *prev)) {
        const double prev_bic = regime_trials.back().bic;
        const double before = regime_trials.size() >= 2
                                  ? regime_trials[regime_trials.size() - 2].bic
                                  : (logistic ? logistic->bic : prev_bic);
        if (prev_bic < before - opt.bic_margin)
          break;
      }
      CandidateFit c =
          best_of(pts, d, ModelKind::regimes, default_starts(s, ModelKind::regimes, r, prev));
      regime_trials.push_back(c);
      prev = &regime_trials.back().model;
    }
    for (const CandidateFit &c : regime_trials)
      out.push_back(c);
    // Falls: to each rising model (logistic, regimes R = 2..) add, one at a time, a bandwidth
    // drop or a latency step (whichever lowers RSS more), up to max_drops additions of which at
    // most max_lifts latency steps; only when the best rising model misses a point by more than
    // drops_min_ratio.
    std::vector<const CandidateFit *> bases;
    if (logistic)
      bases.push_back(&*logistic);
    for (const CandidateFit &c : regime_trials)
      bases.push_back(&c);
    double best_rising_ape = std::numeric_limits<double>::infinity();
    for (const CandidateFit *c : bases)
      best_rising_ape = std::min(best_rising_ape, max_ape_pct(pts, c->model));
    const int max_add = std::clamp(opt.max_drops, 0, 8);
    const int max_lifts = std::clamp(opt.max_lifts, 0, max_add);
    std::vector<CandidateFit> drop_trials;
    const bool gate = max_add > 0 && best_rising_ape > 100.0 * (opt.drops_min_ratio - 1);
    if (falls_gate)
      *falls_gate = gate;
    if (falls && gate) {
      for (const CandidateFit *base : bases) {
        CandidateFit current = *base;
        // Falls are local features: at least 3 points per 2 parameters (n >= 1.5 p), or a
        // leave-one-out refit can put a step where the left-out point was.
        auto roomy = [&](int p) { return 2 * n >= 3 * static_cast<std::size_t>(p); };
        for (int a = 1; a <= max_add && roomy(current.model.num_parameters() + 3); ++a) {
          std::optional<CandidateFit> next;
          if (static_cast<int>(current.model.lifts.size()) < max_lifts)
            next = best_of(pts, d, ModelKind::regimes, lift_starts(pts, s, current.model));
          CandidateFit c = best_of(pts, d, ModelKind::regimes, drop_starts(pts, s, current.model));
          if (!next || c.rss_log < next->rss_log)
            next = c;
          current = *next;
          drop_trials.push_back(current);
        }
      }
    }
    for (const CandidateFit &c : drop_trials)
      out.push_back(c);
  }
  // A candidate with a parameter outside its physical range (a step of 1e-17 GB/s on absurd
  // data) is not a choice: the fit file could not hold it (curve_bounds.hpp).
  std::erase_if(out, [](const CandidateFit &c) { return !out_of_bounds(c.model).empty(); });
  // Simplest first; a more complex candidate wins only by more than bic_margin.
  std::stable_sort(out.begin(), out.end(), [](const CandidateFit &a, const CandidateFit &b) {
    return a.model.num_parameters() < b.model.num_parameters();
  });
  std::size_t chosen = 0;
  for (std::size_t i = 1; i < out.size(); ++i)
    if (out[i].bic < out[chosen].bic - opt.bic_margin)
      chosen = i;
  if (chosen != 0)
    std::rotate(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(chosen),
                out.begin() + static_cast<std::ptrdiff_t>(chosen) + 1);
  return out;
}

} // namespace detail

CandidateFit fit_from(std::span<const CurvePoint> pts, const CurveModel &start,
                      int max_evaluations) {
  const Data d(pts);
  Eigen::VectorXd x = to_internal(start);
  const Blocks ndrops = blocks_of(start);
  LmOutcome o = run_kind(d, start.kind, x, max_evaluations, ndrops);
  CandidateFit c = finish(pts, start.kind, x, o, ndrops);
  c.starts = 1;
  c.evaluations = o.nfev;
  return c;
}

CandidateFit fit_model(std::span<const CurvePoint> pts, ModelKind kind, int regimes) {
  const Data d(pts);
  const Shape s = shape_of(pts);
  if (kind != ModelKind::regimes)
    return best_of(pts, d, kind, default_starts(s, kind, 1, nullptr));
  std::optional<CandidateFit> prev =
      best_of(pts, d, ModelKind::logistic, default_starts(s, ModelKind::logistic, 1, nullptr));
  for (int r = 2; r <= regimes; ++r)
    prev =
        best_of(pts, d, ModelKind::regimes, default_starts(s, ModelKind::regimes, r, &prev->model));
  return *prev;
}

double leave_one_out_mape_pct(std::span<const CurvePoint> pts, const CurveModel &model) {
  if (pts.size() < 2)
    return kNaN;
  std::vector<CurvePoint> rest(pts.size() - 1);
  double s = 0;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    std::copy(pts.begin(), pts.begin() + static_cast<std::ptrdiff_t>(i), rest.begin());
    std::copy(pts.begin() + static_cast<std::ptrdiff_t>(i) + 1, pts.end(),
              rest.begin() + static_cast<std::ptrdiff_t>(i));
    // Warm start from the full-data optimum: a few LM steps move it to the n-1 optimum.
    const CandidateFit c = fit_from(rest, model, 30);
    const double t = c.model.time_us(pts[i].bytes);
    s += std::isfinite(t) ? std::abs(t - pts[i].time_us) / pts[i].time_us : 1.0;
  }
  return 100.0 * s / static_cast<double>(pts.size());
}

std::vector<double> parameter_stderrs(std::span<const CurvePoint> pts, const CurveModel &model) {
  const Eigen::VectorXd x = to_internal(model);
  const int p = static_cast<int>(x.size());
  std::vector<double> se(static_cast<std::size_t>(p), kNaN);
  if (pts.size() <= static_cast<std::size_t>(p))
    return se;
  const Data d(pts);
  Eigen::MatrixXd J(static_cast<Eigen::Index>(pts.size()), p);
  Eigen::VectorXd r(static_cast<Eigen::Index>(pts.size()));
  if (model.kind == ModelKind::alpha_beta) {
    AlphaBetaFunctor f(d.bytes, d.time);
    f(x, r);
    f.df(x, J);
  } else {
    LogisticStepsFunctor f(static_cast<int>(model.steps.size()), d.bytes, d.time,
                           static_cast<int>(model.drops.size()),
                           static_cast<int>(model.lifts.size()));
    f(x, r);
    f.df(x, J);
  }
  const double sigma2 = r.squaredNorm() / static_cast<double>(static_cast<int>(pts.size()) - p);
  // Cov = σ² (JᵀJ)⁻¹ through the SVD J = U S Vᵀ: (JᵀJ)⁺ = V S⁻² Vᵀ over the singular values above
  // 1e-10 of the largest. A parameter with a share > 1% in the null space (directions the data do
  // not determine, e.g. a sharp step between two sizes) gets NaN; the others keep their errors.
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(J, Eigen::ComputeThinV);
  const Eigen::VectorXd sv = svd.singularValues();
  const Eigen::MatrixXd &V = svd.matrixV();
  const double tol = 1e-10 * (sv.size() ? sv[0] : 0.0);
  for (int j = 0; j < p; ++j) {
    double var = 0, null_share = 0;
    for (int k = 0; k < sv.size(); ++k) {
      if (sv[k] > tol)
        var += V(j, k) * V(j, k) / (sv[k] * sv[k]);
      else
        null_share += V(j, k) * V(j, k);
    }
    se[static_cast<std::size_t>(j)] =
        null_share <= 0.01 ? std::exp(x[j]) * std::sqrt(sigma2 * var) : kNaN;
  }
  // Physical bmax is in GB/s while x holds ln(B/us): rescale those entries. A drop's fraction
  // f = σ(x) has se(f) = f (1 − f) se(x), not e^x se(x).
  const int nsteps = static_cast<int>(model.steps.size());
  for (int j = 1; j < 1 + 3 * nsteps && model.kind != ModelKind::alpha_beta; j += 3)
    se[static_cast<std::size_t>(j)] *= 1e-3;
  for (int m = 0; m < static_cast<int>(model.drops.size()); ++m) {
    const int j = 1 + 3 * (nsteps + m);
    const double f = 1.0 / (1.0 + std::exp(-x[j]));
    se[static_cast<std::size_t>(j)] *= f * (1 - f) / std::exp(x[j]);
  }
  if (model.kind == ModelKind::alpha_beta)
    se[1] *= 1e-3;
  return se;
}

} // namespace scalefit::fitting

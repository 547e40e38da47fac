// Plot data of collective measurements and fits: bandwidth curves, small-message latency,
// scaling efficiency.
#include "scalefit/core/collectives.hpp"
#include "scalefit/fitting/fit_file.hpp"
#include "scalefit/report/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace scalefit::report {
namespace {

using fitting::FitEntry;
using fitting::FitFile;

/// Lowercase [a-z0-9-] file stem of a free-form label.
std::string slug(const std::string &s) {
  std::string o;
  for (char c : s) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if ((l >= 'a' && l <= 'z') || (l >= '0' && l <= '9'))
      o += l;
    else if (!o.empty() && o.back() != '-')
      o += '-';
  }
  while (!o.empty() && o.back() == '-')
    o.pop_back();
  return o.empty() ? "x" : o;
}

/// Ops whose records carry a reduction operator.
bool reduces(Op op) {
  return op == Op::allreduce || op == Op::reduce || op == Op::reducescatter;
}

/// Group kinds in reading order: world, intra, inter, then the rest alphabetically.
int kind_rank(const std::string &k) {
  return k == "world" ? 0 : k == "intra" ? 1 : k == "inter" ? 2 : 3;
}

struct GroupKey {
  std::string kind;
  int nranks = 0, nnodes = 0;
  bool operator<(const GroupKey &o) const {
    return std::tuple(kind_rank(kind), kind, nnodes, nranks) <
           std::tuple(kind_rank(o.kind), o.kind, o.nnodes, o.nranks);
  }
};

/// One curve: measured points of one entry id (and the fit entry, when a fit file has it).
struct Curve {
  std::string system;
  Op op = Op::allreduce;
  GroupShape group;
  DType dtype = DType::float32;
  Placement placement = Placement::out_of_place;
  std::string label_suffix; ///< " max" / " root 2" / " osu_bw" where redop, root, method are set
  std::vector<double> bytes, time_us, algbw, busbw;
  /// Run-to-run range of the points measured with `scalefit-bench comm --repeat N` (the record's
  /// extra.repeat busbw_min_gbps/busbw_max_gbps [GB/s]), per point; NaN where a point has none.
  std::vector<double> busbw_lo, busbw_hi;
  int runs = 0; ///< the largest run count of those points
  const FitEntry *fit = nullptr;
  std::string fit_file;
};

/// The fit entry of a curve: id, or id@system when ids collided across systems.
const FitEntry *find_entry(const Inputs &in, const std::string &id, const std::string &system,
                           std::string &file) {
  for (const auto &f : in.fits) {
    const FitEntry *e = f->find(id);
    if (!e || (e->system != system && !system.empty()))
      e = f->find(id + "@" + system);
    if (e) {
      file = f->path;
      return e;
    }
  }
  return nullptr;
}

/// All curves: measured ones (with their fit entry when one matches) and fit-only entries.
std::vector<Curve> collect_curves(const Inputs &in) {
  std::map<std::pair<std::string, std::string>, Curve> curves; // (system, entry id)
  for (const RecordSet &rs : in.comm) {
    for (std::size_t i = 0; i < rs.measurements.size(); ++i) {
      const MeasurementRecord &m = rs.measurements[i];
      const std::string &system = rs.contexts[rs.context_of[i]].system;
      const std::string id = fitting::entry_id(m);
      auto [it, fresh] = curves.try_emplace({system, id});
      Curve &c = it->second;
      if (fresh) {
        c.system = system;
        c.op = m.op;
        c.group = m.group;
        c.dtype = m.dtype;
        c.placement = m.placement;
        if (m.redop != RedOp::sum && reduces(m.op))
          c.label_suffix += std::string(" ") + std::string(redop_name(m.redop));
        if (m.root >= 0)
          c.label_suffix += " root " + std::to_string(m.root);
        if (!m.method.empty())
          c.label_suffix += " " + m.method;
        c.fit = find_entry(in, id, system, c.fit_file);
        if (!c.fit) // a fit file that did not keep the group kind (kind ""): match the fields
          for (const auto &f : in.fits)
            for (const FitEntry &e : f->entries)
              if (!c.fit && e.group.kind.empty() && e.op == m.op &&
                  e.group.nranks == m.group.nranks && e.group.nnodes == m.group.nnodes &&
                  e.dtype == m.dtype && e.placement == m.placement && e.redop == m.redop &&
                  e.root == m.root && e.method == m.method &&
                  (e.system == system || system.empty())) {
                c.fit = &e;
                c.fit_file = f->path;
              }
      }
      if (!(m.bytes > 0) || !(m.time_us > 0))
        continue; // nothing to draw on a log axis (the fitter excludes them too)
      c.bytes.push_back(static_cast<double>(m.bytes));
      c.time_us.push_back(m.time_us);
      c.algbw.push_back(m.algbw_gbps);
      c.busbw.push_back(m.busbw_gbps);
      double lo = std::nan(""), hi = std::nan("");
      if (m.extra.is_object() && m.extra.contains("repeat")) {
        // A merged point's spread (scalefit-bench --repeat): drawn when its fields are numbers;
        // anything else in a record's free-form extra is not drawn (never a type_error).
        const nlohmann::json &r = m.extra["repeat"];
        auto field = [&](const char *k) {
          return r.is_object() && r.contains(k) && r[k].is_number() ? r[k].get<double>()
                                                                    : std::nan("");
        };
        const double rlo = field("busbw_min_gbps"), rhi = field("busbw_max_gbps");
        const double runs = field("runs");
        if (runs >= 2 && runs < 1e9 && std::isfinite(rlo) && std::isfinite(rhi) && rlo <= rhi) {
          lo = rlo;
          hi = rhi;
          c.runs = std::max(c.runs, static_cast<int>(runs));
        }
      }
      c.busbw_lo.push_back(lo);
      c.busbw_hi.push_back(hi);
    }
  }
  // Fit entries without measurements still show their curve.
  for (const auto &f : in.fits)
    for (const FitEntry &e : f->entries) {
      bool seen = false;
      for (const auto &[k, c] : curves)
        seen = seen || c.fit == &e;
      if (seen)
        continue;
      Curve c;
      c.system = e.system;
      c.op = e.op;
      c.group = e.group;
      c.dtype = e.dtype;
      c.placement = e.placement;
      if (e.redop != RedOp::sum && reduces(e.op))
        c.label_suffix += std::string(" ") + std::string(redop_name(e.redop));
      if (e.root >= 0)
        c.label_suffix += " root " + std::to_string(e.root);
      if (!e.method.empty())
        c.label_suffix += " " + e.method;
      c.fit = &e;
      c.fit_file = f->path;
      curves.emplace(std::pair(e.system, e.id), std::move(c));
    }
  std::vector<Curve> out;
  for (auto &[k, c] : curves)
    out.push_back(std::move(c));
  return out;
}

std::string series_label(const Curve &c) {
  return fmt::format("{} {} {} {} {}{}", c.system.empty() ? "(no system)" : c.system,
                     op_name(c.op), c.group.label(), dtype_name(c.dtype),
                     placement_name(c.placement), c.label_suffix);
}

/// Sizes on a log2 grid, `per_octave` points per doubling, from lo to hi inclusive.
std::vector<double> log2_grid(double lo, double hi, int per_octave) {
  std::vector<double> g;
  if (!(lo > 0) || !(hi >= lo))
    return g;
  const double l0 = std::log2(lo), l1 = std::log2(hi);
  const int n = std::max(1, static_cast<int>(std::ceil((l1 - l0) * per_octave)));
  for (int i = 0; i <= n; ++i)
    g.push_back(std::exp2(l0 + (l1 - l0) * i / n));
  return g;
}

/// The JSON of one curve: points, flags, fitted curve, regimes, residuals.
nlohmann::json curve_json(const Curve &c) {
  nlohmann::json s;
  s["label"] = series_label(c);
  s["system"] = c.system;
  s["op"] = op_name(c.op);
  s["group"] = c.group.label();
  s["dtype"] = dtype_name(c.dtype);
  s["placement"] = placement_name(c.placement);
  s["bytes"] = c.bytes;
  s["time_us"] = c.time_us;
  s["algbw_gbps"] = c.algbw;
  s["busbw_gbps"] = c.busbw;
  // The run-to-run band (--repeat): min..max busbw over the runs at the points that have them.
  nlohmann::json band = nullptr;
  for (std::size_t i = 0; i < c.bytes.size(); ++i) {
    if (!std::isfinite(c.busbw_lo[i]))
      continue;
    if (band.is_null())
      band = {{"runs", c.runs},
              {"bytes", nlohmann::json::array()},
              {"min_gbps", nlohmann::json::array()},
              {"max_gbps", nlohmann::json::array()}};
    band["bytes"].push_back(c.bytes[i]);
    band["min_gbps"].push_back(c.busbw_lo[i]);
    band["max_gbps"].push_back(c.busbw_hi[i]);
  }
  s["busbw_band"] = band;
  std::vector<bool> excluded(c.bytes.size(), false);
  std::vector<std::string> reasons(c.bytes.size());
  if (c.fit) {
    const FitEntry &e = *c.fit;
    // A point the fitter left out (outlier, zero time...) is flagged where size and time match.
    for (const auto &x : e.excluded)
      for (std::size_t i = 0; i < c.bytes.size(); ++i)
        if (c.bytes[i] == x.bytes && std::abs(c.time_us[i] - x.time_us) <= 1e-6 * x.time_us) {
          excluded[i] = true;
          reasons[i] = x.reason;
        }
    const double factor = e.busbw_factor();
    nlohmann::json f;
    f["entry"] = e.id;
    f["file"] = c.fit_file;
    f["model"] = fitting::model_label(e.model);
    f["mape_pct"] = e.quality.mape_pct;
    f["loo_mape_pct"] = e.quality.loo_mape_pct;
    f["min_bytes"] = e.min_bytes;
    f["max_bytes"] = e.max_bytes;
    std::vector<double> gb, ga, gu;
    for (double b : log2_grid(e.min_bytes, e.max_bytes, 8)) {
      const double t = e.model.time_us(b);
      gb.push_back(b);
      ga.push_back(b / t * 1e-3); // B/us -> GB/s
      gu.push_back(b / t * 1e-3 * factor);
    }
    f["bytes"] = gb;
    f["algbw_gbps"] = ga;
    f["busbw_gbps"] = gu;
    // Regime centres inside the fitted range: bandwidth steps, drops and latency steps.
    nlohmann::json marks = nlohmann::json::array();
    auto mark = [&](double at, const char *what) {
      if (at >= e.min_bytes && at <= e.max_bytes)
        marks.push_back({{"bytes", at}, {"what", what}});
    };
    for (const auto &st : e.model.steps)
      mark(st.s_half_bytes, "bandwidth step");
    for (const auto &d : e.model.drops)
      mark(d.s_half_bytes, "bandwidth drop");
    for (const auto &l : e.model.lifts)
      mark(l.s_half_bytes, "latency step");
    f["regimes"] = marks;
    std::vector<double> res;
    for (std::size_t i = 0; i < c.bytes.size(); ++i) {
      const double t = e.model.time_us(c.bytes[i]);
      res.push_back(100.0 * (c.time_us[i] / t - 1.0));
    }
    f["residual_pct"] = res;
    s["fit"] = f;
  } else {
    s["fit"] = nullptr;
  }
  s["excluded"] = excluded;
  s["excluded_reason"] = reasons;
  return s;
}

} // namespace

std::string size_label(double bytes) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024) {
    bytes /= 1024;
    ++u;
  }
  return fmt::format("{:g} {}", bytes, units[u]);
}

std::vector<Plot> bandwidth_plots(const Inputs &in) {
  std::map<std::pair<std::string, int>, std::map<GroupKey, std::vector<const Curve *>>> by;
  const std::vector<Curve> curves = collect_curves(in);
  for (const Curve &c : curves)
    by[{c.system, static_cast<int>(c.op)}][{c.group.kind, c.group.nranks, c.group.nnodes}]
        .push_back(&c);
  std::vector<Plot> plots;
  for (const auto &[key, groups] : by) {
    const auto &[system, op] = key;
    Plot p;
    p.kind = "bandwidth";
    const std::string opn(op_name(static_cast<Op>(op)));
    p.name = "bw-" + slug(system) + "-" + opn;
    p.title = fmt::format("{} {}: busbw and algbw against message size", system, opn);
    p.caption = fmt::format(
        "{} on {}: measured busbw (filled) and algbw (hollow) per group shape, the fitted curve "
        "(line) with its regime centres (dotted), points the fitter excluded (red x); residuals "
        "100 (t_meas / t_fit - 1) underneath.",
        opn, system.empty() ? "an unnamed system" : system);
    const int ncols = static_cast<int>(groups.size());
    p.width_px = std::clamp(520 * ncols, 900, 2100);
    p.height_px = 760;
    nlohmann::json panels = nlohmann::json::array();
    for (const auto &[g, cs] : groups) {
      nlohmann::json panel;
      panel["group"] = cs.front()->group.label();
      panel["kind"] = g.kind;
      panel["nranks"] = g.nranks;
      panel["nnodes"] = g.nnodes;
      nlohmann::json series = nlohmann::json::array();
      for (const Curve *c : cs)
        series.push_back(curve_json(*c));
      panel["series"] = series;
      panels.push_back(panel);
    }
    p.data = {{"system", system}, {"op", opn}, {"panels", panels}};
    plots.push_back(std::move(p));
  }
  return plots;
}

std::vector<Plot> latency_plots(const Inputs &in) {
  // (system) -> group label -> op -> points (<= 64 KiB), out-of-place preferred.
  std::map<std::string, std::map<GroupKey, std::map<int, const Curve *>>> by;
  const std::vector<Curve> curves = collect_curves(in);
  for (const Curve &c : curves) {
    if (c.bytes.empty())
      continue;
    auto &slot = by[c.system][{c.group.kind, c.group.nranks, c.group.nnodes}][static_cast<int>(c.op)];
    if (!slot || (slot->placement != Placement::out_of_place &&
                  c.placement == Placement::out_of_place))
      slot = &c;
  }
  std::vector<Plot> plots;
  constexpr double kSmall = 64 * 1024;
  for (const auto &[system, groups] : by) {
    Plot p;
    p.kind = "latency";
    p.name = "latency-" + slug(system);
    p.title = fmt::format("{}: small-message latency per op", system);
    p.caption = "Time per operation [us] of messages up to 64 KiB, one line per op, one panel per "
                "group shape (out-of-place where measured).";
    p.width_px = std::clamp(480 * static_cast<int>(groups.size()), 900, 2100);
    p.height_px = 520;
    nlohmann::json panels = nlohmann::json::array();
    for (const auto &[g, ops] : groups) {
      nlohmann::json series = nlohmann::json::array();
      std::string label;
      for (const auto &[op, c] : ops) {
        label = c->group.label();
        std::vector<double> b, t;
        for (std::size_t i = 0; i < c->bytes.size(); ++i)
          if (c->bytes[i] <= kSmall) {
            b.push_back(c->bytes[i]);
            t.push_back(c->time_us[i]);
          }
        if (b.empty())
          continue;
        series.push_back({{"op", op_name(c->op)},
                          {"dtype", dtype_name(c->dtype)},
                          {"placement", placement_name(c->placement)},
                          {"bytes", b},
                          {"time_us", t}});
      }
      if (!series.empty())
        panels.push_back({{"group", label}, {"series", series}});
    }
    if (panels.empty())
      continue;
    p.data = {{"system", system}, {"max_bytes", kSmall}, {"panels", panels}};
    plots.push_back(std::move(p));
  }
  return plots;
}

std::vector<Plot> scaling_plots(const Inputs &in) {
  std::vector<Plot> plots;
  for (const auto &f : in.fits) {
    nlohmann::json series = nlohmann::json::array();
    std::string system;
    for (fitting::ScalingSeries s : f->scaling) {
      if (s.entries.size() < 2)
        continue;
      system = s.system;
      const FitEntry *base = f->find(s.entries.front());
      if (!base)
        continue;
      if (s.efficiency.empty()) // a loaded file: the loader keeps entries and trends only
        for (std::size_t i = 1; i < s.entries.size(); ++i)
          if (const FitEntry *e = f->find(s.entries[i]); e) {
            try {
              s.efficiency.push_back(fitting::scaling_efficiency(
                  base->model, base->min_bytes, base->max_bytes, s.nnodes.front(), e->model,
                  e->min_bytes, e->max_bytes, s.nnodes[i]));
            } catch (const std::invalid_argument &) {
              // ranges without a common power of two: no measured efficiency to show
            }
          }
      nlohmann::json measured = nlohmann::json::array();
      measured.push_back({{"nnodes", s.nnodes.front()}, {"size_weighted", 1.0}});
      for (const auto &ef : s.efficiency) {
        nlohmann::json bands = nlohmann::json::object();
        for (const auto &b : ef.bands)
          if (b.sizes)
            bands[b.band.name] = b.efficiency;
        measured.push_back(
            {{"nnodes", ef.to_nnodes}, {"size_weighted", ef.size_weighted}, {"bands", bands}});
      }
      // Fitted trend: size-weighted eff(g→n) = t(g)/t(n) with both times from predict() (the
      // curves the estimator prices with, of the series' placement) at n = g, 2g, ... 4·max (the
      // trend's validity range), over the base curve's power-of-two sizes.
      nlohmann::json trend = nlohmann::json::array();
      const int g = s.nnodes.front(), nmax = 4 * s.nnodes.back();
      for (int n = g; n <= nmax; n *= 2) {
        fitting::CommQuery q;
        q.op = s.op;
        q.nnodes = n;
        q.nranks = n * s.ranks_per_node;
        q.dtype = s.dtype;
        q.placement = s.placement; // the series' own curves
        double num = 0, den = 0;
        bool extrapolated = false, ok = true;
        for (double b = std::exp2(std::ceil(std::log2(base->min_bytes))); b <= base->max_bytes;
             b *= 2) {
          const auto pn = fitting::predict(*f, q, b);
          if (!pn) {
            ok = false;
            break;
          }
          fitting::CommQuery qg = q;
          qg.nnodes = g;
          qg.nranks = g * s.ranks_per_node;
          const auto pg = fitting::predict(*f, qg, b);
          if (!pg) {
            ok = false;
            break;
          }
          const double tg = pg->time_us;
          extrapolated = extrapolated || pn->extrapolated;
          num += b * tg / pn->time_us;
          den += b;
        }
        if (!ok || den == 0)
          continue;
        const bool measured_n =
            std::find(s.nnodes.begin(), s.nnodes.end(), n) != s.nnodes.end();
        trend.push_back({{"nnodes", n},
                         {"size_weighted", num / den},
                         {"extrapolated", extrapolated && !measured_n}});
      }
      series.push_back({{"label", fmt::format("{} {} {} {}/node {} {}", s.system, op_name(s.op),
                                              s.kind, s.ranks_per_node, dtype_name(s.dtype),
                                              placement_name(s.placement))},
                        {"op", op_name(s.op)},
                        {"kind", s.kind},
                        {"ranks_per_node", s.ranks_per_node},
                        {"measured", measured},
                        {"trend", trend}});
    }
    if (series.empty())
      continue;
    Plot p;
    p.kind = "scaling";
    p.name = "scaling-" + slug(system);
    p.title = fmt::format("{}: scaling efficiency eff(g->n) against node count", system);
    p.caption = "Cheng et al.'s eff(g->n) = t(g)/t(n) at equal message size, size-weighted: "
                "measured node counts (markers, per size band small), the fitted trend (line) and "
                "where it is extrapolated beyond the measured counts (dashed).";
    p.width_px = 1000;
    p.height_px = 600;
    p.data = {{"system", system}, {"series", series}};
    plots.push_back(std::move(p));
  }
  return plots;
}

} // namespace scalefit::report

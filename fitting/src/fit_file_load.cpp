// Fit file: the loader, validating every field and naming file, line, entry and field.
#include "scalefit/fitting/fit_file.hpp"

#include "curve_bounds.hpp"

#include "numbers.hpp"
#include "scalefit/core/error.hpp"
#include "scalefit/core/input_file.hpp"
#include "scalefit/core/validate.hpp"
#include "scalefit/core/yaml.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace scalefit::fitting {
namespace {

// Ranges of the fitted parameters (kAlphaUs .. kDeltaUs): curve_bounds.hpp, shared with the
// fitter. Generous (a fit may put a step's s_half beyond the data), but finite, and away from the
// denormals that make a time infinite or NaN.
using detail::kAlphaUs, detail::kBandwidthGbps, detail::kSteepness, detail::kHalfBytes,
    detail::kFraction, detail::kDeltaUs;
constexpr Bounds kSizeBytes{1e-3, 1.2e18};         ///< size range [B]
constexpr Bounds kTrendValue{-1e12, 1e12};         ///< intercept, slope of a trend
constexpr Bounds kR2{-1e12, 1};                   ///< R^2 of ln t (negative: worse than the mean)
constexpr Bounds kRmseLog{0, 1e3};                 ///< sqrt(RSS/n) of ln t
constexpr Bounds kLooPct{-1, 1e300};               ///< (leave-one-out) MAPE [%], as bounds::error_pct; -1: not cross-validated
constexpr long kMaxNodes = 1L << 24;
constexpr long kMaxRanks = 1L << 24;

// ---------------------------------------------------------------- loader helpers
/// Reads fields of one YAML node, naming file, line, entry and field on error.
struct Reader {
  const std::string &file;
  std::string entry; // entry id or index, for messages

  [[noreturn]] void fail(const YAML::Node &at, const std::string &field,
                         const std::string &why) const {
    const long line = at.IsDefined() && at.Mark().line >= 0 ? at.Mark().line + 1 : 0;
    throw InputError(entry.empty() ? why : why + " (entry " + entry + ")", file, line, field);
  }
  YAML::Node need(const YAML::Node &parent, const std::string &key, const std::string &path) const {
    if (!parent.IsMap())
      fail(parent, path, "expected a mapping");
    YAML::Node n = parent[key];
    if (!n || n.IsNull())
      fail(parent, path + key, "missing");
    return n;
  }
  double num(const YAML::Node &n, const std::string &field) const {
    if (n.IsNull())
      return kNaN;
    if (!n.IsScalar())
      fail(n, field, "expected a number");
    try {
      return n.as<double>();
    } catch (const YAML::Exception &) {
      fail(n, field, "expected a number, got '" + n.Scalar() + "'");
    }
  }
  double num(const YAML::Node &parent, const std::string &key, const std::string &path) const {
    return num(need(parent, key, path), path + key);
  }
  long integer(const YAML::Node &parent, const std::string &key, const std::string &path) const {
    YAML::Node n = need(parent, key, path);
    if (!n.IsScalar())
      fail(n, path + key, "expected an integer");
    try {
      return n.as<long>();
    } catch (const YAML::Exception &) {
      fail(n, path + key, "expected an integer, got '" + n.Scalar() + "'");
    }
  }
  std::string str(const YAML::Node &parent, const std::string &key, const std::string &path) const {
    YAML::Node n = need(parent, key, path);
    if (!n.IsScalar())
      fail(n, path + key, "expected a string");
    return n.Scalar();
  }
  /// `v` when inside `b` (finite); else fails at `at` naming `field` and the range.
  double in(const YAML::Node &at, const std::string &field, double v, const Bounds &b) const {
    if (!b.contains(v))
      fail(at, field, fmt::format("expected a finite number in {}, got {}", b.text(), v));
    return v;
  }
  /// An optional number at parent[key] inside `b`: `dflt` when absent, NaN when null (`~`, what
  /// the writer writes for "not available") and `null_ok`; .nan, .inf or out of range fail.
  double opt_in(const YAML::Node &parent, const char *key, const std::string &path, const Bounds &b,
                double dflt, bool null_ok) const {
    const YAML::Node n = parent[key];
    if (!n)
      return dflt;
    if (n.IsNull() && null_ok)
      return kNaN;
    if (n.IsNull())
      fail(n, path + key, "expected a number, got null");
    return in(n, path + key, num(n, path + key), b);
  }
  /// An integer in [lo, hi].
  long int_in(const YAML::Node &parent, const std::string &key, const std::string &path, long lo,
              long hi) const {
    const long v = integer(parent, key, path);
    if (v < lo || v > hi)
      fail(parent[key], path + key, fmt::format("expected an integer in [{}, {}], got {}", lo, hi, v));
    return v;
  }
  /// {value, stderr} pair; stderr optional.
  std::pair<double, double> param(const YAML::Node &parent, const std::string &key,
                                  const std::string &path) const {
    YAML::Node n = need(parent, key, path);
    if (n.IsScalar())
      return {num(n, path + key), kNaN};
    const double v = num(n, "value", path + key + ".");
    if (!std::isfinite(v))
      fail(n, path + key + ".value", "expected a finite number");
    YAML::Node se = n["stderr"];
    return {v, se ? num(se, path + key + ".stderr") : kNaN};
  }
};

LogLinearTrend read_trend(const Reader &r, const YAML::Node &parent, const std::string &key,
                          const std::string &path, const Bounds &floor_bounds) {
  YAML::Node n = r.need(parent, key, path);
  const std::string p = path + key + ".";
  LogLinearTrend t;
  t.intercept = r.in(n["intercept"], p + "intercept", r.num(n, "intercept", p), kTrendValue);
  t.slope = r.in(n["slope"], p + "slope", r.num(n, "slope", p), kTrendValue);
  const Bounds nodes{1, static_cast<double>(kMaxNodes)};
  t.lo_nnodes = r.in(n["lo_nnodes"], p + "lo_nnodes", r.num(n, "lo_nnodes", p), nodes);
  t.hi_nnodes = r.in(n["hi_nnodes"], p + "hi_nnodes", r.num(n, "hi_nnodes", p), nodes);
  // The floor bounds the trend from below: a latency may be 0, a bandwidth (a divisor) may not.
  t.floor = r.in(n["floor"], p + "floor", r.num(n, "floor", p), floor_bounds);
  if (!(t.hi_nnodes >= t.lo_nnodes))
    r.fail(n, p + "hi_nnodes", "expected 1 <= lo_nnodes <= hi_nnodes");
  return t;
}

/// The last key of the top-level mapping must be `end: true` (kFitEndKey): a file cut short, even
/// at an entry boundary where the YAML still parses, lacks it.
void require_end_marker(const YAML::Node &root, const std::string &text, const std::string &name) {
  // Keys and values are read as strings: assigning a YAML::Node to a defined YAML::Node would
  // overwrite the referenced node's content (yaml-cpp's reference semantics).
  std::string last_key, last_value;
  bool last_scalar = false;
  for (auto it = root.begin(); it != root.end(); ++it) {
    last_key = it->first.IsScalar() ? it->first.Scalar() : "";
    last_scalar = it->second.IsScalar();
    last_value = last_scalar ? it->second.Scalar() : "";
  }
  const bool ok = last_key == kFitEndKey && last_scalar &&
                  (last_value == "true" || last_value == "True" || last_value == "TRUE");
  if (ok)
    return;
  const long lines = static_cast<long>(std::count(text.begin(), text.end(), '\n')) +
                     (!text.empty() && text.back() != '\n' ? 1 : 0);
  throw InputError(std::string("the file does not end with '") + kFitEndKey +
                       ": true': it is truncated (cut short while being written or copied), or "
                       "was not written by scalefit fit; refit it (docs/fit-file.md, End marker)",
                   name, lines, kFitEndKey);
}

} // namespace

static FitFile parse_fit_file_unguarded(const std::string &text, const std::string &name);

FitFile parse_fit_file(const std::string &text, const std::string &name) {
  try {
    return parse_fit_file_unguarded(text, name);
  } catch (const YAML::Exception &e) {
    // Anything yaml-cpp throws past the checks (a key that is not a scalar, a subscript of a
    // scalar...) is still the file's fault: exit 2 with the line.
    throw InputError("malformed fit file: " + e.msg, name, e.mark.is_null() ? 0 : e.mark.line + 1);
  }
}

static FitFile parse_fit_file_unguarded(const std::string &text, const std::string &name) {
  const YAML::Node root = parse_yaml(text, name);
  Reader r{name, ""};
  FitFile fit;
  fit.path = name;
  fit.schema = r.str(root, "schema", "");
  if (fit.schema != kFitSchema && fit.schema != kFitSchemaV3 && fit.schema != kFitSchemaV1)
    r.fail(root["schema"], "schema",
           "unsupported schema '" + fit.schema + "' (this version reads '" + kFitSchemaV3 + "', '" +
               kFitSchema + "' and '" + kFitSchemaV1 + "')");
  const bool v1 = fit.schema == kFitSchemaV1;
  require_end_marker(root, text, name);
  if (YAML::Node t = root["tool"]; t && t.IsScalar())
    fit.tool = t.Scalar();
  if (YAML::Node t = root["created"]; t && t.IsScalar())
    fit.created = t.Scalar();
  if (YAML::Node sys = root["system"]; sys && sys.IsMap())
    for (auto it = sys.begin(); it != sys.end(); ++it)
      if (it->second.IsScalar())
        fit.system[it->first.as<std::string>()] = it->second.Scalar();
  if (YAML::Node rep = root["repeats"]; rep) {
    if (!rep.IsMap())
      r.fail(rep, "repeats", "expected a mapping {policy, rule, merged_points}");
    fit.repeat_policy = r.str(rep, "policy", "repeats.");
    if (!parse_repeat_policy(fit.repeat_policy))
      r.fail(rep["policy"], "repeats.policy",
             "expected merge or refuse, got '" + fit.repeat_policy + "'");
  }
  YAML::Node entries = r.need(root, "entries", "");
  if (!entries.IsSequence())
    r.fail(entries, "entries", "expected a list");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const YAML::Node n = entries[i];
    const std::string path = fmt::format("entries[{}].", i);
    r.entry = fmt::format("#{}", i);
    FitEntry e;
    e.id = r.str(n, "id", path);
    r.entry = "'" + e.id + "'";
    require_known_keys(n, {"id", "system", "op", "group", "dtype", "redop", "root", "placement",
                           "method", "points", "repeats", "size_range_bytes", "peak_busbw_gbps",
                           "model", "regimes", "latency_us", "parameters", "asymptotic", "quality",
                           "lm", "selection", "excluded", "diagnostic"},
                       name, path);
    if (YAML::Node sys = n["system"]; sys && sys.IsScalar())
      e.system = sys.Scalar();
    const std::string op = r.str(n, "op", path);
    if (auto o = parse_op(op))
      e.op = *o;
    else
      r.fail(n["op"], path + "op", "unknown operation '" + op + "'");
    YAML::Node g = r.need(n, "group", path);
    e.group.kind = r.str(g, "kind", path + "group.");
    e.group.nranks = static_cast<int>(r.int_in(g, "nranks", path + "group.", 1, kMaxRanks));
    e.group.nnodes = static_cast<int>(r.int_in(g, "nnodes", path + "group.", 1, kMaxNodes));
    e.group.ranks_per_node =
        static_cast<int>(r.int_in(g, "ranks_per_node", path + "group.", 1, kMaxRanks));
    if (e.group.nranks < 1 || e.group.nnodes < 1 || e.group.ranks_per_node < 1)
      r.fail(g, path + "group", "nranks, nnodes and ranks_per_node must be >= 1");
    const std::string dt = r.str(n, "dtype", path);
    if (auto d = parse_dtype(dt))
      e.dtype = *d;
    else
      r.fail(n["dtype"], path + "dtype", "unknown dtype '" + dt + "'");
    if (n["redop"]) {
      const std::string ro = r.str(n, "redop", path);
      if (auto x = parse_redop(ro))
        e.redop = *x;
      else
        r.fail(n["redop"], path + "redop", "unknown redop '" + ro + "'");
    }
    if (n["root"])
      e.root = static_cast<int>(r.int_in(n, "root", path, -1, e.group.nranks - 1));
    const std::string pl = r.str(n, "placement", path);
    if (auto p = parse_placement(pl))
      e.placement = *p;
    else
      r.fail(n["placement"], path + "placement", "unknown placement '" + pl + "'");
    if (n["method"]) {
      e.method = r.str(n, "method", path);
      if (e.method.empty() || e.method.size() > 64 ||
          !std::all_of(e.method.begin(), e.method.end(), [](char ch) {
            return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.';
          }))
        r.fail(n["method"], path + "method",
               "expected a benchmark name of letters, digits, '_', '-', '.' (1 to 64)");
    }
    if (n["points"])
      e.points = static_cast<int>(r.int_in(n, "points", path, 0, 1L << 30));
    e.repeats = parse_repeats(n, path, name);
    YAML::Node range = r.need(n, "size_range_bytes", path);
    if (!range.IsSequence() || range.size() != 2)
      r.fail(range, path + "size_range_bytes", "expected [min_bytes, max_bytes]");
    e.min_bytes = r.in(range[0], path + "size_range_bytes[0]",
                       r.num(range[0], path + "size_range_bytes[0]"), kSizeBytes);
    e.max_bytes = r.in(range[1], path + "size_range_bytes[1]",
                       r.num(range[1], path + "size_range_bytes[1]"), kSizeBytes);
    if (!(e.min_bytes > 0) || !(e.max_bytes >= e.min_bytes))
      r.fail(range, path + "size_range_bytes", "expected 0 < min_bytes <= max_bytes");
    if (n["peak_busbw_gbps"])
      e.peak_busbw_gbps = r.in(n["peak_busbw_gbps"], path + "peak_busbw_gbps",
                               r.num(n, "peak_busbw_gbps", path), Bounds{0, 1e12});
    const std::string model = r.str(n, "model", path);
    const auto kind = parse_model(model);
    if (!kind)
      r.fail(n["model"], path + "model",
             "unknown model '" + model + "' (known: alpha_beta, logistic, regimes)");
    e.model.kind = *kind;
    YAML::Node params = r.need(n, "parameters", path);
    const std::string pp = path + "parameters.";
    require_known_keys(params, {"alpha_us", "beta_gbps", "steps", "drops", "lifts"}, name, pp);
    auto [alpha, alpha_se] = r.param(params, "alpha_us", pp);
    e.model.alpha_us = r.in(params["alpha_us"], pp + "alpha_us", alpha, kAlphaUs);
    e.stderrs.push_back(alpha_se);
    if (*kind == ModelKind::alpha_beta) {
      auto [beta, beta_se] = r.param(params, "beta_gbps", pp);
      e.model.beta_gbps = r.in(params["beta_gbps"], pp + "beta_gbps", beta, kBandwidthGbps);
      e.stderrs.push_back(beta_se);
    } else {
      YAML::Node steps = r.need(params, "steps", pp);
      if (!steps.IsSequence() || steps.size() == 0)
        r.fail(steps, pp + "steps", "expected a non-empty list");
      if (*kind == ModelKind::logistic && steps.size() != 1)
        r.fail(steps, pp + "steps", "the logistic model has exactly 1 step");
      YAML::Node drops = params["drops"], lifts = params["lifts"];
      for (const auto &[node, key] : {std::pair{drops, "drops"}, std::pair{lifts, "lifts"}}) {
        if (!node)
          continue;
        if (*kind != ModelKind::regimes)
          r.fail(node, pp + key, std::string("only the regimes model has ") + key);
        if (v1)
          r.fail(node, pp + key,
                 std::string(key) + " need schema '" + kFitSchema + "' (the file says '" +
                     kFitSchemaV1 + "')");
        if (!node.IsSequence() || node.size() == 0 || node.size() > 8)
          r.fail(node, pp + key, "expected a list of 1 to 8 entries");
      }
      if (steps.size() > 8)
        r.fail(steps, pp + "steps", "expected at most 8 steps");
      if (*kind == ModelKind::regimes && steps.size() < 2 && !drops && !lifts)
        r.fail(steps, pp + "steps",
               "the regimes model has at least 2 steps, or 1 with drops or lifts");
      for (std::size_t j = 0; j < steps.size(); ++j) {
        const std::string sp = fmt::format("{}steps[{}].", pp, j);
        auto [b, bse] = r.param(steps[j], "bmax_gbps", sp);
        auto [k, kse] = r.param(steps[j], "k", sp);
        auto [h, hse] = r.param(steps[j], "s_half_bytes", sp);
        r.in(steps[j]["bmax_gbps"], sp + "bmax_gbps", b, kBandwidthGbps);
        r.in(steps[j]["k"], sp + "k", k, kSteepness);
        r.in(steps[j]["s_half_bytes"], sp + "s_half_bytes", h, kHalfBytes);
        e.model.steps.push_back({b, k, h});
        e.stderrs.insert(e.stderrs.end(), {bse, kse, hse});
      }
      for (std::size_t j = 0; drops && j < drops.size(); ++j) {
        const std::string sp = fmt::format("{}drops[{}].", pp, j);
        if (!drops[j].IsMap())
          r.fail(drops[j], sp, "expected a mapping {fraction, k, s_half_bytes}");
        auto [f, fse] = r.param(drops[j], "fraction", sp);
        auto [k, kse] = r.param(drops[j], "k", sp);
        auto [h, hse] = r.param(drops[j], "s_half_bytes", sp);
        r.in(drops[j]["fraction"], sp + "fraction", f, kFraction);
        r.in(drops[j]["k"], sp + "k", k, kSteepness);
        r.in(drops[j]["s_half_bytes"], sp + "s_half_bytes", h, kHalfBytes);
        e.model.drops.push_back({f, k, h});
        e.stderrs.insert(e.stderrs.end(), {fse, kse, hse});
      }
      for (std::size_t j = 0; lifts && j < lifts.size(); ++j) {
        const std::string sp = fmt::format("{}lifts[{}].", pp, j);
        if (!lifts[j].IsMap())
          r.fail(lifts[j], sp, "expected a mapping {delta_us, k, s_half_bytes}");
        auto [dl, dse] = r.param(lifts[j], "delta_us", sp);
        auto [k, kse] = r.param(lifts[j], "k", sp);
        auto [h, hse] = r.param(lifts[j], "s_half_bytes", sp);
        r.in(lifts[j]["delta_us"], sp + "delta_us", dl, kDeltaUs);
        r.in(lifts[j]["k"], sp + "k", k, kSteepness);
        r.in(lifts[j]["s_half_bytes"], sp + "s_half_bytes", h, kHalfBytes);
        e.model.lifts.push_back({dl, k, h});
        e.stderrs.insert(e.stderrs.end(), {dse, kse, hse});
      }
    }
    if (YAML::Node q = n["quality"]; q) {
      const std::string qp = path + "quality.";
      if (!q.IsMap())
        r.fail(q, path + "quality", "expected a mapping");
      require_known_keys(q, {"r2_log_time", "mape_pct", "max_ape_pct", "loo_mape_pct",
                             "mape_all_pct", "rmse_log", "outliers", "cross_validated"},
                         name, qp);
      e.quality.r2_log_time = r.opt_in(q, "r2_log_time", qp, kR2, kNaN, true);
      e.quality.mape_pct = r.opt_in(q, "mape_pct", qp, bounds::error_pct, kNaN, true);
      e.quality.max_ape_pct = r.opt_in(q, "max_ape_pct", qp, bounds::error_pct, kNaN, true);
      e.quality.loo_mape_pct = r.opt_in(q, "loo_mape_pct", qp, kLooPct, kNaN, true); // -1: not cross-validated
      // (-1 as loo_mape_pct: a fit's placeholder when no point was screened out)
      e.quality.mape_all_pct = r.opt_in(q, "mape_all_pct", qp, kLooPct, kNaN, true);
      e.quality.rmse_log = r.opt_in(q, "rmse_log", qp, kRmseLog, kNaN, true);
      e.quality.outliers = static_cast<int>(r.opt_in(q, "outliers", qp, bounds::point_count, 0, false));
      if (q["cross_validated"] && q["cross_validated"].IsScalar())
        e.quality.cross_validated = q["cross_validated"].Scalar() != "false";
    }
    if (YAML::Node lm = n["lm"]; lm && lm.IsMap()) {
      if (lm["status"])
        e.status = static_cast<int>(r.integer(lm, "status", path + "lm."));
      if (lm["info"])
        e.info = static_cast<int>(r.integer(lm, "info", path + "lm."));
    }
    if (YAML::Node s = n["selection"]; s && s.IsMap() && s["reason"] && s["reason"].IsScalar())
      e.selection = s["reason"].Scalar();
    if (YAML::Node d = n["diagnostic"]; d && d.IsScalar())
      e.diagnostic = d.Scalar();
    if (YAML::Node x = n["excluded"]; x && x.IsSequence())
      for (std::size_t j = 0; j < x.size(); ++j) {
        const std::string xp = fmt::format("{}excluded[{}].", path, j);
        e.excluded.push_back(
            {r.num(x[j], "bytes", xp), r.num(x[j], "time_us", xp), r.str(x[j], "reason", xp)});
      }
    if (fit.find(e.id))
      r.fail(n["id"], path + "id", "duplicate entry id");
    fit.entries.push_back(std::move(e));
  }
  r.entry.clear();
  if (YAML::Node u = root["unfitted"]; u && u.IsSequence())
    for (std::size_t i = 0; i < u.size(); ++i) {
      const std::string up = fmt::format("unfitted[{}].", i);
      fit.unfitted.push_back({r.str(u[i], "id", up),
                              u[i]["points"] ? static_cast<int>(r.integer(u[i], "points", up)) : 0,
                              u[i]["reason"] ? r.str(u[i], "reason", up) : ""});
    }
  if (YAML::Node sc = root["scaling"]; sc) {
    if (!sc.IsSequence())
      r.fail(sc, "scaling", "expected a list");
    for (std::size_t i = 0; i < sc.size(); ++i) {
      const YAML::Node n = sc[i];
      const std::string path = fmt::format("scaling[{}].", i);
      ScalingSeries s;
      if (YAML::Node sys = n["system"]; sys && sys.IsScalar())
        s.system = sys.Scalar();
      const std::string op = r.str(n, "op", path);
      if (auto o = parse_op(op))
        s.op = *o;
      else
        r.fail(n["op"], path + "op", "unknown operation '" + op + "'");
      const std::string dt = r.str(n, "dtype", path);
      if (auto d = parse_dtype(dt))
        s.dtype = *d;
      else
        r.fail(n["dtype"], path + "dtype", "unknown dtype '" + dt + "'");
      const std::string pl = r.str(n, "placement", path);
      if (auto p = parse_placement(pl))
        s.placement = *p;
      else
        r.fail(n["placement"], path + "placement", "unknown placement '" + pl + "'");
      if (n["redop"])
        if (auto x = parse_redop(r.str(n, "redop", path)))
          s.redop = *x;
      if (n["root"])
        s.root = static_cast<int>(r.int_in(n, "root", path, -1, kMaxRanks));
      s.kind = r.str(n, "kind", path);
      s.ranks_per_node = static_cast<int>(r.int_in(n, "ranks_per_node", path, 1, kMaxRanks));
      YAML::Node nn = r.need(n, "nnodes", path), ids = r.need(n, "entries", path);
      if (!nn.IsSequence() || !ids.IsSequence() || nn.size() != ids.size() || nn.size() < 2)
        r.fail(nn, path + "nnodes",
               "expected two equal-length lists (nnodes, entries) of >= 2 items");
      for (std::size_t j = 0; j < nn.size(); ++j) {
        const std::string nf = fmt::format("{}nnodes[{}]", path, j);
        const double count = r.in(nn[j], nf, r.num(nn[j], nf), Bounds{1, double(kMaxNodes)});
        if (count != std::floor(count))
          r.fail(nn[j], nf, "expected a whole node count");
        s.nnodes.push_back(static_cast<int>(count));
        if (!ids[j].IsScalar() || !fit.find(ids[j].Scalar()))
          r.fail(ids[j], fmt::format("{}entries[{}]", path, j), "no entry with this id");
        s.entries.push_back(ids[j].Scalar());
      }
      YAML::Node trend = r.need(n, "trend", path);
      s.alpha_us = read_trend(r, trend, "alpha_us", path + "trend.", kAlphaUs);
      s.busbw_gbps = read_trend(r, trend, "busbw_gbps", path + "trend.", kBandwidthGbps);
      fit.scaling.push_back(std::move(s));
    }
  }
  if (fit.schema == kFitSchemaV3)
    fit.compute = parse_compute_yaml(root, name);
  // last, so that a known key's own error comes first
  require_known_keys(root, {"schema", "tool", "created", "system", "sources", "method", "repeats",
                            "entries", "unfitted", "scaling", "compute", "framework", kFitEndKey},
                     name, "");
  return fit;
}

FitFilePtr load_fit_file(const std::string &path) {
  // read once: a pipe (`--fit <(...)`) or FIFO is kept for a second load (core/input_file.hpp)
  return std::make_shared<const FitFile>(parse_fit_file(*read_input(path), path));
}

} // namespace scalefit::fitting

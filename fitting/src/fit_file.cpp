// Fit file: building from records, YAML emitter, loader with file/line/entry/field errors.
#include "scalefit/fitting/fit_file.hpp"

#include "scalefit/core/error.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace scalefit::fitting {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string shape_id(const GroupShape &g) {
  return fmt::format("{}:{}={}x{}", g.kind, g.nranks, g.nnodes, g.ranks_per_node);
}

// ---------------------------------------------------------------- emitter helpers
void emit_num(YAML::Emitter &out, double v) {
  if (std::isfinite(v))
    out << v;
  else
    out << YAML::Null;
}

void emit_param(YAML::Emitter &out, const std::string &name, double value, double se) {
  out << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "value" << YAML::Value;
  emit_num(out, value);
  out << YAML::Key << "stderr" << YAML::Value;
  emit_num(out, se);
  out << YAML::EndMap;
}

void emit_trend(YAML::Emitter &out, const char *name, const LogLinearTrend &t) {
  out << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "intercept" << YAML::Value << t.intercept;
  out << YAML::Key << "slope" << YAML::Value << t.slope;
  out << YAML::Key << "lo_nnodes" << YAML::Value << t.lo_nnodes;
  out << YAML::Key << "hi_nnodes" << YAML::Value << t.hi_nnodes;
  out << YAML::Key << "floor" << YAML::Value << t.floor;
  out << YAML::EndMap;
}

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
                          const std::string &path) {
  YAML::Node n = r.need(parent, key, path);
  const std::string p = path + key + ".";
  LogLinearTrend t;
  t.intercept = r.num(n, "intercept", p);
  t.slope = r.num(n, "slope", p);
  t.lo_nnodes = r.num(n, "lo_nnodes", p);
  t.hi_nnodes = r.num(n, "hi_nnodes", p);
  t.floor = r.num(n, "floor", p);
  if (!(t.lo_nnodes >= 1) || !(t.hi_nnodes >= t.lo_nnodes))
    r.fail(n, p + "hi_nnodes", "expected 1 <= lo_nnodes <= hi_nnodes");
  return t;
}

} // namespace

const FitEntry *FitFile::find(const std::string &id) const {
  for (const FitEntry &e : entries)
    if (e.id == id)
      return &e;
  return nullptr;
}

std::string entry_id(const MeasurementRecord &m) {
  std::string id = fmt::format("{}:{}:{}", op_name(m.op), shape_id(m.group), dtype_name(m.dtype));
  if (op_has_redop(m.op))
    id += fmt::format(":{}", redop_name(m.redop));
  if (op_has_root(m.op) && m.root >= 0)
    id += fmt::format(":root{}", m.root);
  id += fmt::format(":{}", placement_name(m.placement));
  return id;
}

FitFile fit_records(const std::vector<RecordSet> &sets, const std::vector<std::string> &files,
                    const FitOptions &options) {
  FitFile fit;
  fit.created = utc_now_iso8601();
  struct Group {
    const MeasurementRecord *first = nullptr;
    std::string system;
    std::vector<CurvePoint> points;
    double peak_busbw = 0;
  };
  std::vector<std::string> order;
  std::map<std::string, Group> groups;
  for (std::size_t f = 0; f < sets.size(); ++f) {
    const RecordSet &rs = sets[f];
    for (const ContextRecord &c : rs.contexts) {
      FitSource src{f < files.size() ? files[f] : "", c.system, c.backend, c.nranks, c.nnodes, 0};
      src.measurements = static_cast<int>(rs.measurements.size());
      fit.sources.push_back(src);
      if (fit.system.empty()) {
        fit.system["name"] = c.system;
        fit.system["backend"] = c.backend;
        fit.system["nranks"] = std::to_string(c.nranks);
        fit.system["nnodes"] = std::to_string(c.nnodes);
        fit.system["ranks_per_node"] = std::to_string(c.ranks_per_node);
        if (!c.devices.empty())
          fit.system["device"] = c.devices.front();
        for (const auto &[k, v] : c.versions)
          fit.system["version." + k] = v;
      }
    }
    for (std::size_t i = 0; i < rs.measurements.size(); ++i) {
      const MeasurementRecord &m = rs.measurements[i];
      const std::size_t ci = i < rs.context_of.size() ? rs.context_of[i] : 0;
      const std::string system = ci < rs.contexts.size() ? rs.contexts[ci].system : "";
      const std::string key = system + "\x1f" + m.key(false);
      auto [it, fresh] = groups.try_emplace(key);
      if (fresh) {
        order.push_back(key);
        it->second.first = &m;
        it->second.system = system;
      }
      it->second.points.push_back({static_cast<double>(m.bytes), m.time_us});
      it->second.peak_busbw = std::max(it->second.peak_busbw, m.busbw_gbps);
    }
  }
  for (const std::string &key : order) {
    const Group &g = groups.at(key);
    const MeasurementRecord &m = *g.first;
    const CurveFit cf = fit_curve(g.points, options);
    if (!cf.ok) {
      fit.unfitted.push_back({entry_id(m) + (g.system.empty() ? "" : "@" + g.system),
                              static_cast<int>(g.points.size()), cf.diagnostic});
      continue;
    }
    FitEntry e;
    e.id = entry_id(m);
    if (fit.find(e.id))
      e.id += "@" + g.system;
    e.system = g.system;
    e.op = m.op;
    e.group = m.group;
    e.dtype = m.dtype;
    e.redop = m.redop;
    e.root = m.root;
    e.placement = m.placement;
    e.points = static_cast<int>(cf.kept.size());
    e.excluded = cf.excluded;
    e.min_bytes = cf.kept.front().bytes;
    e.max_bytes = cf.kept.back().bytes;
    e.peak_busbw_gbps = g.peak_busbw;
    e.model = cf.model;
    e.stderrs = cf.stderrs;
    e.quality = cf.quality;
    e.status = cf.status;
    e.info = cf.info;
    e.selection = cf.selection;
    for (const CandidateFit &c : cf.candidates) {
      e.candidate_bic[model_label(c.model)] = c.bic;
    }
    e.diagnostic = cf.diagnostic;
    fit.entries.push_back(std::move(e));
  }
  fit.scaling = build_scaling(fit.entries);
  return fit;
}

std::vector<ScalingSeries> build_scaling(const std::vector<FitEntry> &entries) {
  std::map<std::string, ScalingSeries> series;
  std::map<std::string, std::vector<const FitEntry *>> members;
  std::vector<std::string> order;
  for (const FitEntry &e : entries) {
    const std::string key =
        fmt::format("{}|{}|{}|{}|{}|{}|{}|{}", e.system, op_name(e.op), dtype_name(e.dtype),
                    placement_name(e.placement), redop_name(e.redop), e.root, e.group.kind,
                    e.group.ranks_per_node);
    auto &v = members[key];
    if (v.empty())
      order.push_back(key);
    const bool dup = std::any_of(
        v.begin(), v.end(), [&](const FitEntry *o) { return o->group.nnodes == e.group.nnodes; });
    if (!dup)
      v.push_back(&e);
  }
  std::vector<ScalingSeries> out;
  for (const std::string &key : order) {
    auto v = members[key];
    if (v.size() < 2)
      continue;
    std::sort(v.begin(), v.end(), [](const FitEntry *a, const FitEntry *b) {
      return a->group.nnodes < b->group.nnodes;
    });
    ScalingSeries s;
    s.system = v[0]->system;
    s.op = v[0]->op;
    s.dtype = v[0]->dtype;
    s.placement = v[0]->placement;
    s.redop = v[0]->redop;
    s.root = v[0]->root;
    s.kind = v[0]->group.kind;
    s.ranks_per_node = v[0]->group.ranks_per_node;
    std::vector<double> alphas, busbws;
    for (const FitEntry *e : v) {
      s.nnodes.push_back(e->group.nnodes);
      s.entries.push_back(e->id);
      alphas.push_back(e->latency_us());
      busbws.push_back(e->model.bandwidth_gbps(e->max_bytes) * e->busbw_factor());
    }
    for (std::size_t i = 1; i < v.size(); ++i) {
      try {
        s.efficiency.push_back(scaling_efficiency(v[0]->model, v[0]->min_bytes, v[0]->max_bytes,
                                                  v[0]->group.nnodes, v[i]->model, v[i]->min_bytes,
                                                  v[i]->max_bytes, v[i]->group.nnodes));
      } catch (const std::invalid_argument &) {
        // no common size range: no efficiency row for this pair
      }
    }
    s.alpha_us = fit_log_linear_trend(s.nnodes, alphas);
    s.busbw_gbps = fit_log_linear_trend(s.nnodes, busbws);
    out.push_back(std::move(s));
  }
  return out;
}

std::string to_yaml(const FitFile &fit) {
  YAML::Emitter out;
  out.SetDoublePrecision(10);
  out << YAML::BeginMap;
  const bool v3 = !fit.compute.empty() || fit.compute.framework.present;
  out << YAML::Key << "schema" << YAML::Value << (v3 ? std::string(kFitSchemaV3) : fit.schema);
  out << YAML::Key << "tool" << YAML::Value << fit.tool;
  out << YAML::Key << "created" << YAML::Value << fit.created;
  out << YAML::Key << "system" << YAML::Value << YAML::BeginMap;
  for (const auto &[k, v] : fit.system)
    out << YAML::Key << k << YAML::Value << v;
  out << YAML::EndMap;
  out << YAML::Key << "sources" << YAML::Value << YAML::BeginSeq;
  for (const FitSource &s : fit.sources) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "file" << YAML::Value << s.file;
    out << YAML::Key << "system" << YAML::Value << s.system << YAML::Key << "backend" << YAML::Value
        << s.backend;
    out << YAML::Key << "nranks" << YAML::Value << s.nranks << YAML::Key << "nnodes" << YAML::Value
        << s.nnodes;
    out << YAML::Key << "measurements" << YAML::Value << s.measurements << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "method" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "fit" << YAML::Value
      << "Eigen Levenberg-Marquardt on residuals ln t_model - ln t_measured (relative error), "
         "several deterministic starts; model, number of regimes and of falls (bandwidth drops, "
         "latency steps) chosen by BIC; isolated "
         "outliers (> 1.25x and > 5 robust sigma off) excluded";
  out << YAML::Key << "below_min_bytes" << YAML::Value
      << "latency floor: t(s) = t_model(min_bytes)";
  out << YAML::Key << "above_max_bytes" << YAML::Value
      << "asymptotic bandwidth: t(s) = t_model(max_bytes) + (s - max_bytes) / B(max_bytes)";
  out << YAML::EndMap;

  out << YAML::Key << "entries" << YAML::Value << YAML::BeginSeq;
  for (const FitEntry &e : fit.entries) {
    out << YAML::BeginMap;
    out << YAML::Key << "id" << YAML::Value << e.id;
    out << YAML::Key << "system" << YAML::Value << e.system;
    out << YAML::Key << "op" << YAML::Value << std::string(op_name(e.op));
    out << YAML::Key << "group" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "kind" << YAML::Value << e.group.kind;
    out << YAML::Key << "nranks" << YAML::Value << e.group.nranks;
    out << YAML::Key << "nnodes" << YAML::Value << e.group.nnodes;
    out << YAML::Key << "ranks_per_node" << YAML::Value << e.group.ranks_per_node << YAML::EndMap;
    out << YAML::Key << "dtype" << YAML::Value << std::string(dtype_name(e.dtype));
    out << YAML::Key << "redop" << YAML::Value << std::string(redop_name(e.redop));
    out << YAML::Key << "root" << YAML::Value << e.root;
    out << YAML::Key << "placement" << YAML::Value << std::string(placement_name(e.placement));
    out << YAML::Key << "points" << YAML::Value << e.points;
    out << YAML::Key << "size_range_bytes" << YAML::Value << YAML::Flow << YAML::BeginSeq
        << static_cast<unsigned long long>(std::llround(e.min_bytes))
        << static_cast<unsigned long long>(std::llround(e.max_bytes)) << YAML::EndSeq;
    out << YAML::Key << "peak_busbw_gbps" << YAML::Value << e.peak_busbw_gbps;
    out << YAML::Key << "model" << YAML::Value << std::string(model_name(e.model.kind));
    out << YAML::Key << "regimes" << YAML::Value << e.model.num_regimes();
    out << YAML::Key << "latency_us" << YAML::Value << e.latency_us();
    auto se = [&](std::size_t i) { return i < e.stderrs.size() ? e.stderrs[i] : kNaN; };
    out << YAML::Key << "parameters" << YAML::Value << YAML::BeginMap;
    emit_param(out, "alpha_us", e.model.alpha_us, se(0));
    if (e.model.kind == ModelKind::alpha_beta) {
      emit_param(out, "beta_gbps", e.model.beta_gbps, se(1));
    } else {
      out << YAML::Key << "steps" << YAML::Value << YAML::BeginSeq;
      for (std::size_t j = 0; j < e.model.steps.size(); ++j) {
        out << YAML::BeginMap;
        emit_param(out, "bmax_gbps", e.model.steps[j].bmax_gbps, se(1 + 3 * j));
        emit_param(out, "k", e.model.steps[j].k, se(2 + 3 * j));
        emit_param(out, "s_half_bytes", e.model.steps[j].s_half_bytes, se(3 + 3 * j));
        out << YAML::EndMap;
      }
      out << YAML::EndSeq;
      if (!e.model.drops.empty()) {
        const std::size_t o = 1 + 3 * e.model.steps.size();
        out << YAML::Key << "drops" << YAML::Value << YAML::BeginSeq;
        for (std::size_t j = 0; j < e.model.drops.size(); ++j) {
          out << YAML::BeginMap;
          emit_param(out, "fraction", e.model.drops[j].fraction, se(o + 3 * j));
          emit_param(out, "k", e.model.drops[j].k, se(o + 1 + 3 * j));
          emit_param(out, "s_half_bytes", e.model.drops[j].s_half_bytes, se(o + 2 + 3 * j));
          out << YAML::EndMap;
        }
        out << YAML::EndSeq;
      }
      if (!e.model.lifts.empty()) {
        const std::size_t o = 1 + 3 * (e.model.steps.size() + e.model.drops.size());
        out << YAML::Key << "lifts" << YAML::Value << YAML::BeginSeq;
        for (std::size_t j = 0; j < e.model.lifts.size(); ++j) {
          out << YAML::BeginMap;
          emit_param(out, "delta_us", e.model.lifts[j].delta_us, se(o + 3 * j));
          emit_param(out, "k", e.model.lifts[j].k, se(o + 1 + 3 * j));
          emit_param(out, "s_half_bytes", e.model.lifts[j].s_half_bytes, se(o + 2 + 3 * j));
          out << YAML::EndMap;
        }
        out << YAML::EndSeq;
      }
    }
    out << YAML::EndMap;
    out << YAML::Key << "asymptotic" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "algbw_gbps" << YAML::Value << e.asymptotic_algbw_gbps();
    out << YAML::Key << "busbw_gbps" << YAML::Value << e.asymptotic_algbw_gbps() * e.busbw_factor();
    out << YAML::Key << "model_limit_algbw_gbps" << YAML::Value << e.model.asymptotic_algbw_gbps();
    out << YAML::EndMap;
    out << YAML::Key << "quality" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "r2_log_time" << YAML::Value;
    emit_num(out, e.quality.r2_log_time);
    out << YAML::Key << "mape_pct" << YAML::Value << e.quality.mape_pct;
    out << YAML::Key << "max_ape_pct" << YAML::Value << e.quality.max_ape_pct;
    out << YAML::Key << "loo_mape_pct" << YAML::Value;
    emit_num(out, e.quality.loo_mape_pct);
    out << YAML::Key << "mape_all_pct" << YAML::Value << e.quality.mape_all_pct;
    out << YAML::Key << "rmse_log" << YAML::Value << e.quality.rmse_log << YAML::EndMap;
    out << YAML::Key << "lm" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "status" << YAML::Value << e.status;
    out << YAML::Key << "status_name" << YAML::Value << lm_status_name(e.status);
    out << YAML::Key << "info" << YAML::Value << e.info << YAML::EndMap;
    out << YAML::Key << "selection" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "criterion" << YAML::Value << "BIC";
    out << YAML::Key << "reason" << YAML::Value << e.selection;
    out << YAML::Key << "bic" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto &[k, v] : e.candidate_bic)
      out << YAML::Key << k << YAML::Value << v;
    out << YAML::EndMap << YAML::EndMap;
    if (!e.excluded.empty()) {
      out << YAML::Key << "excluded" << YAML::Value << YAML::BeginSeq;
      for (const ExcludedPoint &x : e.excluded)
        out << YAML::Flow << YAML::BeginMap << YAML::Key << "bytes" << YAML::Value << x.bytes
            << YAML::Key << "time_us" << YAML::Value << x.time_us << YAML::Key << "reason"
            << YAML::Value << x.reason << YAML::EndMap;
      out << YAML::EndSeq;
    }
    if (!e.diagnostic.empty())
      out << YAML::Key << "diagnostic" << YAML::Value << e.diagnostic;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;

  out << YAML::Key << "unfitted" << YAML::Value << YAML::BeginSeq;
  for (const UnfittedEntry &u : fit.unfitted)
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "id" << YAML::Value << u.id << YAML::Key
        << "points" << YAML::Value << u.points << YAML::Key << "reason" << YAML::Value << u.reason
        << YAML::EndMap;
  out << YAML::EndSeq;

  out << YAML::Key << "scaling" << YAML::Value << YAML::BeginSeq;
  for (const ScalingSeries &s : fit.scaling) {
    out << YAML::BeginMap;
    out << YAML::Key << "system" << YAML::Value << s.system;
    out << YAML::Key << "op" << YAML::Value << std::string(op_name(s.op));
    out << YAML::Key << "dtype" << YAML::Value << std::string(dtype_name(s.dtype));
    out << YAML::Key << "placement" << YAML::Value << std::string(placement_name(s.placement));
    out << YAML::Key << "redop" << YAML::Value << std::string(redop_name(s.redop));
    out << YAML::Key << "root" << YAML::Value << s.root;
    out << YAML::Key << "kind" << YAML::Value << s.kind;
    out << YAML::Key << "ranks_per_node" << YAML::Value << s.ranks_per_node;
    out << YAML::Key << "nnodes" << YAML::Value << YAML::Flow << s.nnodes;
    out << YAML::Key << "entries" << YAML::Value << s.entries;
    out << YAML::Key << "efficiency" << YAML::Value << YAML::BeginSeq;
    for (const ScalingEfficiency &ef : s.efficiency) {
      out << YAML::BeginMap;
      out << YAML::Key << "from_nnodes" << YAML::Value << ef.from_nnodes;
      out << YAML::Key << "to_nnodes" << YAML::Value << ef.to_nnodes;
      out << YAML::Key << "size_weighted" << YAML::Value << ef.size_weighted;
      out << YAML::Key << "bands" << YAML::Value << YAML::BeginSeq;
      for (const BandEfficiency &b : ef.bands) {
        out << YAML::Flow << YAML::BeginMap << YAML::Key << "band" << YAML::Value << b.band.name;
        out << YAML::Key << "efficiency" << YAML::Value;
        emit_num(out, b.efficiency);
        out << YAML::Key << "sizes" << YAML::Value << b.sizes << YAML::EndMap;
      }
      out << YAML::EndSeq << YAML::EndMap;
    }
    out << YAML::EndSeq;
    out << YAML::Key << "trend" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "rule" << YAML::Value
        << "y(n) = max(floor, intercept + slope * clamp(log2(n), log2(lo_nnodes), "
           "log2(hi_nnodes))); "
           "alpha_us is the latency floor t(min_bytes); busbw_gbps is the fitted bandwidth term at "
           "each entry's largest size times the busbw factor; a curve at n nodes = alpha(n) + "
           "(t_ref(s) - alpha_ref) * algbw_ref / algbw(n), ref = nearest measured node count";
    emit_trend(out, "alpha_us", s.alpha_us);
    emit_trend(out, "busbw_gbps", s.busbw_gbps);
    out << YAML::EndMap;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  emit_compute_yaml(out, fit.compute);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

void write_fit_file(const FitFile &fit, const std::string &path) {
  std::ofstream os(path);
  if (!os)
    throw InputError("cannot write the fit file", path);
  os << to_yaml(fit);
  if (!os)
    throw InputError("write failed", path);
}

FitFile parse_fit_file(const std::string &text, const std::string &name) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException &e) {
    throw InputError("invalid YAML: " + e.msg, name, e.mark.line >= 0 ? e.mark.line + 1 : 0);
  }
  Reader r{name, ""};
  if (!root.IsMap())
    r.fail(root, "", "expected a mapping at the top level");
  FitFile fit;
  fit.path = name;
  fit.schema = r.str(root, "schema", "");
  if (fit.schema != kFitSchema && fit.schema != kFitSchemaV3 && fit.schema != kFitSchemaV1)
    r.fail(root["schema"], "schema",
           "unsupported schema '" + fit.schema + "' (this version reads '" + kFitSchemaV3 + "', '" +
               kFitSchema + "' and '" + kFitSchemaV1 + "')");
  const bool v1 = fit.schema == kFitSchemaV1;
  if (YAML::Node t = root["tool"]; t && t.IsScalar())
    fit.tool = t.Scalar();
  if (YAML::Node t = root["created"]; t && t.IsScalar())
    fit.created = t.Scalar();
  if (YAML::Node sys = root["system"]; sys && sys.IsMap())
    for (auto it = sys.begin(); it != sys.end(); ++it)
      if (it->second.IsScalar())
        fit.system[it->first.as<std::string>()] = it->second.Scalar();
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
    if (YAML::Node sys = n["system"]; sys && sys.IsScalar())
      e.system = sys.Scalar();
    const std::string op = r.str(n, "op", path);
    if (auto o = parse_op(op))
      e.op = *o;
    else
      r.fail(n["op"], path + "op", "unknown operation '" + op + "'");
    YAML::Node g = r.need(n, "group", path);
    e.group.kind = r.str(g, "kind", path + "group.");
    e.group.nranks = static_cast<int>(r.integer(g, "nranks", path + "group."));
    e.group.nnodes = static_cast<int>(r.integer(g, "nnodes", path + "group."));
    e.group.ranks_per_node = static_cast<int>(r.integer(g, "ranks_per_node", path + "group."));
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
      e.root = static_cast<int>(r.integer(n, "root", path));
    const std::string pl = r.str(n, "placement", path);
    if (auto p = parse_placement(pl))
      e.placement = *p;
    else
      r.fail(n["placement"], path + "placement", "unknown placement '" + pl + "'");
    if (n["points"])
      e.points = static_cast<int>(r.integer(n, "points", path));
    YAML::Node range = r.need(n, "size_range_bytes", path);
    if (!range.IsSequence() || range.size() != 2)
      r.fail(range, path + "size_range_bytes", "expected [min_bytes, max_bytes]");
    e.min_bytes = r.num(range[0], path + "size_range_bytes[0]");
    e.max_bytes = r.num(range[1], path + "size_range_bytes[1]");
    if (!(e.min_bytes > 0) || !(e.max_bytes >= e.min_bytes))
      r.fail(range, path + "size_range_bytes", "expected 0 < min_bytes <= max_bytes");
    if (n["peak_busbw_gbps"])
      e.peak_busbw_gbps = r.num(n, "peak_busbw_gbps", path);
    const std::string model = r.str(n, "model", path);
    const auto kind = parse_model(model);
    if (!kind)
      r.fail(n["model"], path + "model",
             "unknown model '" + model + "' (known: alpha_beta, logistic, regimes)");
    e.model.kind = *kind;
    YAML::Node params = r.need(n, "parameters", path);
    const std::string pp = path + "parameters.";
    auto [alpha, alpha_se] = r.param(params, "alpha_us", pp);
    if (!(alpha >= 0))
      r.fail(params["alpha_us"], pp + "alpha_us", "expected >= 0");
    e.model.alpha_us = alpha;
    e.stderrs.push_back(alpha_se);
    if (*kind == ModelKind::alpha_beta) {
      auto [beta, beta_se] = r.param(params, "beta_gbps", pp);
      if (!(beta > 0))
        r.fail(params["beta_gbps"], pp + "beta_gbps", "expected > 0");
      e.model.beta_gbps = beta;
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
        LogisticStep st;
        auto [b, bse] = r.param(steps[j], "bmax_gbps", sp);
        auto [k, kse] = r.param(steps[j], "k", sp);
        auto [h, hse] = r.param(steps[j], "s_half_bytes", sp);
        if (!(b > 0))
          r.fail(steps[j]["bmax_gbps"], sp + "bmax_gbps", "expected > 0");
        if (!(k > 0))
          r.fail(steps[j]["k"], sp + "k", "expected > 0");
        if (!(h > 0))
          r.fail(steps[j]["s_half_bytes"], sp + "s_half_bytes", "expected > 0");
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
        if (!(f > 0 && f < 1))
          r.fail(drops[j]["fraction"], sp + "fraction", "expected 0 < fraction < 1");
        if (!(k > 0))
          r.fail(drops[j]["k"], sp + "k", "expected > 0");
        if (!(h > 0))
          r.fail(drops[j]["s_half_bytes"], sp + "s_half_bytes", "expected > 0");
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
        if (!(dl > 0))
          r.fail(lifts[j]["delta_us"], sp + "delta_us", "expected > 0");
        if (!(k > 0))
          r.fail(lifts[j]["k"], sp + "k", "expected > 0");
        if (!(h > 0))
          r.fail(lifts[j]["s_half_bytes"], sp + "s_half_bytes", "expected > 0");
        e.model.lifts.push_back({dl, k, h});
        e.stderrs.insert(e.stderrs.end(), {dse, kse, hse});
      }
    }
    if (YAML::Node q = n["quality"]; q && q.IsMap()) {
      auto opt = [&](const char *k, double dflt) {
        return q[k] ? r.num(q[k], path + "quality." + k) : dflt;
      };
      e.quality.r2_log_time = opt("r2_log_time", kNaN);
      e.quality.mape_pct = opt("mape_pct", kNaN);
      e.quality.max_ape_pct = opt("max_ape_pct", kNaN);
      e.quality.loo_mape_pct = opt("loo_mape_pct", kNaN);
      e.quality.mape_all_pct = opt("mape_all_pct", kNaN);
      e.quality.rmse_log = opt("rmse_log", kNaN);
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
        s.root = static_cast<int>(r.integer(n, "root", path));
      s.kind = r.str(n, "kind", path);
      s.ranks_per_node = static_cast<int>(r.integer(n, "ranks_per_node", path));
      YAML::Node nn = r.need(n, "nnodes", path), ids = r.need(n, "entries", path);
      if (!nn.IsSequence() || !ids.IsSequence() || nn.size() != ids.size() || nn.size() < 2)
        r.fail(nn, path + "nnodes",
               "expected two equal-length lists (nnodes, entries) of >= 2 items");
      for (std::size_t j = 0; j < nn.size(); ++j) {
        s.nnodes.push_back(static_cast<int>(r.num(nn[j], fmt::format("{}nnodes[{}]", path, j))));
        if (!ids[j].IsScalar() || !fit.find(ids[j].Scalar()))
          r.fail(ids[j], fmt::format("{}entries[{}]", path, j), "no entry with this id");
        s.entries.push_back(ids[j].Scalar());
      }
      YAML::Node trend = r.need(n, "trend", path);
      s.alpha_us = read_trend(r, trend, "alpha_us", path + "trend.");
      s.busbw_gbps = read_trend(r, trend, "busbw_gbps", path + "trend.");
      fit.scaling.push_back(std::move(s));
    }
  }
  if (fit.schema == kFitSchemaV3)
    fit.compute = parse_compute_yaml(root, name);
  return fit;
}

FitFilePtr load_fit_file(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw InputError("cannot open the fit file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return std::make_shared<const FitFile>(parse_fit_file(ss.str(), path));
}

} // namespace scalefit::fitting

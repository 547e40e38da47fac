// Fit file: building it from measurement records (fit each curve, then the scaling series).
#include "scalefit/fitting/fit_file.hpp"

#include "scalefit/core/error.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace scalefit::fitting {
namespace {

std::string shape_id(const GroupShape &g) {
  return fmt::format("{}:{}={}x{}", g.kind, g.nranks, g.nnodes, g.ranks_per_node);
}

} // namespace

const FitEntry *FitFile::find(const std::string &id) const {
  for (const FitEntry &e : entries)
    if (e.id == id)
      return &e;
  return nullptr;
}

int FitFile::merged_points() const {
  int n = 0;
  for (const FitEntry &e : entries)
    n += e.repeats.points;
  for (const ComputeFit &c : compute.fits)
    n += c.repeats.points;
  return n;
}

std::string entry_id(const MeasurementRecord &m) {
  std::string id = fmt::format("{}:{}:{}", op_name(m.op), shape_id(m.group), dtype_name(m.dtype));
  if (op_has_redop(m.op))
    id += fmt::format(":{}", redop_name(m.redop));
  if (op_has_root(m.op) && m.root >= 0)
    id += fmt::format(":root{}", m.root);
  id += fmt::format(":{}", placement_name(m.placement));
  if (!m.method.empty())
    id += ":" + m.method;
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
    RepeatStats repeats;
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
      it->second.repeats.add(m.repeat_time_us);
      it->second.peak_busbw = std::max(it->second.peak_busbw, m.busbw_gbps);
    }
  }
  // The other placement of each curve (nccl-tests times both in one run, with the same
  // algorithm): a bump only one of them shows at a size is transient (paired_spikes), and each
  // one's model is a start for the other's fit (adopt_sibling_model).
  const auto sibling_of = [&](const Group &g) -> std::string {
    MeasurementRecord other = *g.first;
    other.placement =
        other.placement == Placement::in_place ? Placement::out_of_place : Placement::in_place;
    const std::string k = g.system + "\x1f" + other.key(false);
    return groups.count(k) ? k : std::string();
  };
  std::map<std::string, CurveFit> fitted;
  for (const std::string &key : order) {
    const Group &g = groups.at(key);
    std::vector<ExcludedPoint> transient;
    if (const std::string sib = sibling_of(g); !sib.empty())
      transient = paired_spikes(g.points, groups.at(sib).points, options,
                                std::string(placement_name(groups.at(sib).first->placement)));
    fitted[key] = fit_curve(g.points, options, transient);
  }
  std::map<std::string, CurveModel> first_models; // each pair's own fits, before any adoption
  for (const auto &[key, cf] : fitted)
    if (cf.ok)
      first_models[key] = cf.model;
  for (const std::string &key : order)
    if (const std::string sib = sibling_of(groups.at(key)); !sib.empty() && first_models.count(sib))
      adopt_sibling_model(fitted[key], first_models.at(sib), options,
                          std::string(placement_name(groups.at(sib).first->placement)));
  for (const std::string &key : order) {
    const Group &g = groups.at(key);
    const MeasurementRecord &m = *g.first;
    const CurveFit &cf = fitted.at(key);
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
    e.method = m.method;
    e.points = static_cast<int>(cf.kept.size());
    e.repeats = g.repeats;
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
    if (!e.method.empty())
      continue; // point-to-point benchmarks (osu_bw, ...) run on 2 ranks: no node scaling
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
      // The time-based figure (max_bytes / t(max_bytes)): the bandwidth term alone can be absurd
      // where a lift carries part of the time, and the trend would then be too.
      busbws.push_back(e->asymptotic_algbw_gbps() * e->busbw_factor());
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

} // namespace scalefit::fitting

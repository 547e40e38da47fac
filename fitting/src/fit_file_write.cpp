// Fit file: the YAML emitter and the atomic writer.
#include "scalefit/fitting/fit_file.hpp"

#include "scalefit/core/atomic_file.hpp"
#include "scalefit/core/error.hpp"

#include "numbers.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace scalefit::fitting {
namespace {

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

} // namespace

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
  if (!fit.repeat_policy.empty()) {
    out << YAML::Key << "repeats" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "policy" << YAML::Value << fit.repeat_policy;
    out << YAML::Key << "rule" << YAML::Value
        << (fit.repeat_policy == "merge"
                ? "a point measured again in another file (another run) is one point: its time "
                  "the median of the repeats' times; entries' `repeats` count such points; the "
                  "same point twice in one file is refused"
                : "a point measured again in another file with another result is refused");
    out << YAML::Key << "merged_points" << YAML::Value << fit.merged_points();
    out << YAML::EndMap;
  }

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
    if (!e.method.empty())
      out << YAML::Key << "method" << YAML::Value << e.method;
    out << YAML::Key << "points" << YAML::Value << e.points;
    if (!e.repeats.empty())
      emit_repeats(out, e.repeats);
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
    out << YAML::Key << "mape_pct" << YAML::Value; // null, not .nan: the loader refuses .nan
    emit_num(out, e.quality.mape_pct);
    out << YAML::Key << "max_ape_pct" << YAML::Value;
    emit_num(out, e.quality.max_ape_pct);
    out << YAML::Key << "loo_mape_pct" << YAML::Value;
    emit_num(out, e.quality.loo_mape_pct);
    out << YAML::Key << "mape_all_pct" << YAML::Value;
    emit_num(out, e.quality.mape_all_pct);
    out << YAML::Key << "rmse_log" << YAML::Value;
    emit_num(out, e.quality.rmse_log);
    out << YAML::Key << "outliers" << YAML::Value << e.quality.outliers; // listed in `excluded`
    out << YAML::Key << "cross_validated" << YAML::Value << e.quality.cross_validated
        << YAML::EndMap;
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
           "alpha_us is the latency floor t(min_bytes); busbw_gbps is the algbw at each entry's "
           "largest size (max_bytes / t(max_bytes)) times the busbw factor; a curve at n nodes = alpha(n) + "
           "(t_ref(s) - alpha_ref) * algbw_ref / algbw(n), ref = nearest measured node count";
    emit_trend(out, "alpha_us", s.alpha_us);
    emit_trend(out, "busbw_gbps", s.busbw_gbps);
    out << YAML::EndMap;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  emit_compute_yaml(out, fit.compute);
  // Last key: the loader requires it, so a file cut anywhere (even at an entry boundary) is refused.
  out << YAML::Key << kFitEndKey << YAML::Value << true;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

void write_fit_file(const FitFile &fit, const std::string &path) {
  const std::string text = to_yaml(fit);
  // What scalefit writes, scalefit must read: a value the loader's bounds refuse is a bug here,
  // reported as one (exit 3) rather than left in a file that every later command refuses.
  try {
    parse_fit_file(text, path);
  } catch (const InputError &e) {
    throw std::logic_error(std::string("internal error: the fit file about to be written would "
                                       "not load: ") + e.what());
  }
  write_file_atomic(path, text);
}

} // namespace scalefit::fitting

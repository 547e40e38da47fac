// The fit file's `compute` and `framework` sections (docs/fit-file.md): YAML writer and reader.
#include "scalefit/core/error.hpp"
#include "scalefit/fitting/compute.hpp"

#include <fmt/format.h>

#include <cmath>

namespace scalefit::fitting {
namespace {

long line_of(const YAML::Node &n) {
  return n.Mark().is_null() ? 0 : n.Mark().line + 1;
}

/// A finite number >= `lo` (or > 0 when `positive`) at parent[key]; `fallback` when absent and
/// not required.
double number(const YAML::Node &parent, const char *key, const std::string &field,
              const std::string &file, bool required, double fallback = 0, bool positive = false) {
  const YAML::Node n = parent[key];
  if (!n) {
    if (required)
      throw InputError("missing required field", file, line_of(parent), field + key);
    return fallback;
  }
  double v = 0;
  try {
    v = n.as<double>();
  } catch (const YAML::Exception &) {
    throw InputError("expected a number", file, line_of(n), field + key);
  }
  if (!std::isfinite(v) || v < 0 || (positive && !(v > 0)))
    throw InputError(positive ? "expected a finite number > 0" : "expected a finite number >= 0",
                     file, line_of(n), field + key);
  return v;
}

} // namespace

void emit_repeats(YAML::Emitter &out, const RepeatStats &r) {
  out << YAML::Key << "repeats" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "points" << YAML::Value << r.points;
  out << YAML::Key << "measurements" << YAML::Value << r.measurements;
  out << YAML::Key << "max_spread_pct" << YAML::Value << r.max_spread_pct << YAML::EndMap;
}

RepeatStats parse_repeats(const YAML::Node &parent, const std::string &field,
                          const std::string &file) {
  RepeatStats r;
  const YAML::Node n = parent["repeats"];
  if (!n)
    return r;
  if (!n.IsMap())
    throw InputError("expected a mapping {points, measurements, max_spread_pct}", file,
                     line_of(n), field + "repeats");
  const std::string f = field + "repeats.";
  const double points = number(n, "points", f, file, true);
  const double measurements = number(n, "measurements", f, file, true);
  if (points != std::floor(points) || measurements != std::floor(measurements) ||
      points > 1e9 || measurements > 1e9 || measurements < 2 * points)
    throw InputError("expected whole counts, measurements >= 2 x points", file, line_of(n),
                     f + "measurements");
  r.points = static_cast<int>(points);
  r.measurements = static_cast<int>(measurements);
  r.max_spread_pct = number(n, "max_spread_pct", f, file, true);
  return r;
}

void emit_compute_yaml(YAML::Emitter &out, const ComputeSection &c) {
  if (!c.fits.empty()) {
    out << YAML::Key << "compute" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "device" << YAML::Value << c.device;
    out << YAML::Key << "models" << YAML::Value << YAML::BeginSeq;
    for (const ComputeFit &f : c.fits) {
      out << YAML::BeginMap;
      out << YAML::Key << "kind" << YAML::Value << kernel_kind_name(f.kind);
      out << YAML::Key << "dtype" << YAML::Value << f.dtype;
      out << YAML::Key << "c0_us" << YAML::Value << f.c0_us;
      if (f.kind == KernelKind::gemm || f.kind == KernelKind::batched_gemm ||
          f.kind == KernelKind::grouped_gemm) {
        out << YAML::Key << "sms" << YAML::Value << f.sms;
        out << YAML::Key << "tflops" << YAML::Value << f.tflops;
        out << YAML::Key << "k0" << YAML::Value << f.k0;
        out << YAML::Key << "tflops_odd" << YAML::Value << f.tflops_odd;
        out << YAML::Key << "k0_odd" << YAML::Value << f.k0_odd;
      } else if (f.kind == KernelKind::attention_fused) {
        out << YAML::Key << "tflops" << YAML::Value << f.tflops;
      } else {
        out << YAML::Key << "gbps" << YAML::Value << f.gbps;
      }
      out << YAML::Key << "quality" << YAML::Value << YAML::Flow << YAML::BeginMap;
      out << YAML::Key << "points" << YAML::Value << f.quality.points;
      out << YAML::Key << "mape_pct" << YAML::Value << f.quality.mape_pct;
      out << YAML::Key << "max_err_pct" << YAML::Value << f.quality.max_err_pct;
      out << YAML::Key << "loo_mape_pct" << YAML::Value << f.quality.loo_mape_pct;
      out << YAML::Key << "loo_max_err_pct" << YAML::Value << f.quality.loo_max_err_pct;
      out << YAML::EndMap;
      if (!f.repeats.empty())
        emit_repeats(out, f.repeats);
      out << YAML::Key << "source" << YAML::Value << f.source;
      out << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::EndMap;
  }
  const FrameworkConstants &fw = c.framework;
  if (fw.present) {
    out << YAML::Key << "framework" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "dispatch_us" << YAML::Value << fw.dispatch_us;
    out << YAML::Key << "memory_efficiency" << YAML::Value << fw.memory_efficiency;
    out << YAML::Key << "memory_overhead_gib" << YAML::Value << fw.memory_overhead_gib;
    out << YAML::Key << "steps" << YAML::Value << fw.steps;
    out << YAML::Key << "time_mape_pct" << YAML::Value << fw.time_mape_pct;
    out << YAML::Key << "memory_mape_pct" << YAML::Value << fw.memory_mape_pct;
    out << YAML::Key << "source" << YAML::Value << fw.source;
    out << YAML::EndMap;
  }
}

ComputeSection parse_compute_yaml(const YAML::Node &root, const std::string &file) {
  ComputeSection c;
  if (const YAML::Node cs = root["compute"]; cs) {
    if (!cs.IsMap())
      throw InputError("expected a mapping", file, line_of(cs), "compute");
    if (cs["device"] && cs["device"].IsScalar())
      c.device = cs["device"].Scalar();
    const YAML::Node models = cs["models"];
    if (!models || !models.IsSequence())
      throw InputError("expected a list", file, line_of(models ? models : cs), "compute.models");
    for (std::size_t i = 0; i < models.size(); ++i) {
      const YAML::Node m = models[i];
      const std::string f = fmt::format("compute.models[{}].", i);
      if (!m.IsMap())
        throw InputError("expected a mapping", file, line_of(m), f);
      ComputeFit cf;
      const std::string kind = m["kind"] && m["kind"].IsScalar() ? m["kind"].Scalar() : "";
      const auto k = parse_kernel_kind(kind);
      if (!k)
        throw InputError("unknown kind '" + kind + "'", file, line_of(m), f + "kind");
      cf.kind = *k;
      if (!m["dtype"] || !m["dtype"].IsScalar())
        throw InputError("missing required field", file, line_of(m), f + "dtype");
      cf.dtype = m["dtype"].Scalar();
      cf.c0_us = number(m, "c0_us", f, file, true);
      if (cf.kind == KernelKind::gemm || cf.kind == KernelKind::batched_gemm ||
          cf.kind == KernelKind::grouped_gemm) {
        const double sms = number(m, "sms", f, file, true, 0, true);
        if (sms != std::floor(sms) || sms > 100000)
          throw InputError("expected a whole number of SMs", file, line_of(m["sms"]), f + "sms");
        cf.sms = static_cast<int>(sms);
        cf.tflops = number(m, "tflops", f, file, true, 0, true);
        cf.k0 = number(m, "k0", f, file, true);
        cf.tflops_odd = number(m, "tflops_odd", f, file, false);
        cf.k0_odd = number(m, "k0_odd", f, file, false);
      } else if (cf.kind == KernelKind::attention_fused) {
        cf.tflops = number(m, "tflops", f, file, true, 0, true);
      } else {
        cf.gbps = number(m, "gbps", f, file, true, 0, true);
      }
      if (const YAML::Node q = m["quality"]; q && q.IsMap()) {
        cf.quality.points = static_cast<int>(number(q, "points", f + "quality.", file, false));
        cf.quality.mape_pct = number(q, "mape_pct", f + "quality.", file, false);
        cf.quality.max_err_pct = number(q, "max_err_pct", f + "quality.", file, false);
        if (q["loo_mape_pct"] && q["loo_mape_pct"].IsScalar())
          cf.quality.loo_mape_pct = q["loo_mape_pct"].as<double>(-1);
        if (q["loo_max_err_pct"] && q["loo_max_err_pct"].IsScalar())
          cf.quality.loo_max_err_pct = q["loo_max_err_pct"].as<double>(-1);
      }
      cf.repeats = parse_repeats(m, f, file);
      if (m["source"] && m["source"].IsScalar())
        cf.source = m["source"].Scalar();
      c.fits.push_back(cf);
    }
  }
  if (const YAML::Node fw = root["framework"]; fw) {
    if (!fw.IsMap())
      throw InputError("expected a mapping", file, line_of(fw), "framework");
    FrameworkConstants &k = c.framework;
    k.present = true;
    k.dispatch_us = number(fw, "dispatch_us", "framework.", file, true);
    k.memory_efficiency = number(fw, "memory_efficiency", "framework.", file, true, 1, true);
    if (k.memory_efficiency > 2)
      throw InputError("expected a value in (0, 2]", file, line_of(fw["memory_efficiency"]),
                       "framework.memory_efficiency");
    k.memory_overhead_gib = number(fw, "memory_overhead_gib", "framework.", file, true);
    k.steps = static_cast<int>(number(fw, "steps", "framework.", file, false));
    k.time_mape_pct = number(fw, "time_mape_pct", "framework.", file, false);
    k.memory_mape_pct = number(fw, "memory_mape_pct", "framework.", file, false);
    if (fw["source"] && fw["source"].IsScalar())
      k.source = fw["source"].Scalar();
  }
  return c;
}

} // namespace scalefit::fitting

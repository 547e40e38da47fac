// The fit file's `compute` and `framework` sections (docs/fit-file.md): YAML writer and reader.
#include "scalefit/core/error.hpp"
#include "scalefit/core/validate.hpp"
#include "scalefit/core/yaml.hpp"
#include "scalefit/fitting/compute.hpp"

#include <fmt/format.h>

#include <cmath>

namespace scalefit::fitting {
namespace {

// Ranges of the compute and framework values, checked where the loader reads them and before the
// writer writes them (every value the writer writes, the loader accepts): core/validate.hpp.
constexpr Bounds kSms{1, 100000};              ///< SMs of the device (a whole number)
constexpr Bounds kK0{0, 1e9};                  ///< per-tile overhead in k-steps [elements]
constexpr Bounds kMemoryEfficiency{0, 2, true, false};
constexpr Bounds kOverheadGib{0, 1e6};         ///< memory added to the peak [GiB]
constexpr Bounds kComputeLooPct{-1, 1e9};      ///< leave-one-out error [%]; -1: not computed

/// The number at parent[key] inside `b` (finite); `fallback` when absent and not required.
/// \throws InputError naming `file`, the line and `field` + key.
double number(const YAML::Node &parent, const char *key, const std::string &field,
              const std::string &file, bool required, double fallback, const Bounds &b) {
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
  return require_in(v, b, field + key, file, line_of(n));
}

/// A whole number in `b` at parent[key] (a count: points, steps, SMs).
int whole(const YAML::Node &parent, const char *key, const std::string &field,
          const std::string &file, bool required, const Bounds &b) {
  const double v = number(parent, key, field, file, required, 0, b);
  if (v != std::floor(v))
    throw InputError(fmt::format("expected a whole number, got {}", v), file,
                     line_of(parent[key]), field + key);
  return static_cast<int>(v);
}

/// The checks of the loader on the values `emit_compute_yaml` writes: a fit whose parameter is out
/// of range (fitted to absurd inputs) is refused before it is written. \throws InputError naming
/// the fit's source files and the field.
void check_before_writing(const ComputeSection &c) {
  for (std::size_t i = 0; i < c.fits.size(); ++i) {
    const ComputeFit &f = c.fits[i];
    const std::string p = fmt::format("compute.models[{}].", i);
    const std::string why = " (fitted from " + f.source + ")";
    auto check = [&](double v, const Bounds &b, const char *key) {
      if (!b.contains(v))
        throw InputError(fmt::format("fitted value {} outside {}: the inputs are not a physical "
                                     "measurement{}", v, b.text(), why), "", 0, p + key);
    };
    check(f.c0_us, bounds::kernel_overhead_us, "c0_us");
    if (f.kind == KernelKind::gemm || f.kind == KernelKind::batched_gemm ||
        f.kind == KernelKind::grouped_gemm) {
      check(f.sms, kSms, "sms");
      check(f.tflops, bounds::fitted_tflops, "tflops");
      check(f.k0, kK0, "k0");
      if (f.tflops_odd != 0)
        check(f.tflops_odd, bounds::fitted_tflops, "tflops_odd");
      check(f.k0_odd, kK0, "k0_odd");
    } else if (f.kind == KernelKind::attention_fused) {
      check(f.tflops, bounds::fitted_tflops, "tflops");
    } else {
      check(f.gbps, bounds::fitted_gbps, "gbps");
    }
    check(f.quality.points, bounds::point_count, "quality.points");
    check(f.quality.mape_pct, bounds::error_pct, "quality.mape_pct");
    check(f.quality.max_err_pct, bounds::error_pct, "quality.max_err_pct");
    check(f.quality.loo_mape_pct, kComputeLooPct, "quality.loo_mape_pct");
    check(f.quality.loo_max_err_pct, kComputeLooPct, "quality.loo_max_err_pct");
  }
  const FrameworkConstants &k = c.framework;
  if (!k.present)
    return;
  auto check = [&](double v, const Bounds &b, const char *key) {
    if (!b.contains(v))
      throw InputError(fmt::format("calibrated value {} outside {} (calibrated from {})", v,
                                   b.text(), k.source), "", 0, std::string("framework.") + key);
  };
  check(k.dispatch_us, bounds::kernel_overhead_us, "dispatch_us");
  check(k.memory_efficiency, kMemoryEfficiency, "memory_efficiency");
  check(k.memory_overhead_gib, kOverheadGib, "memory_overhead_gib");
  check(k.steps, bounds::point_count, "steps");
  check(k.time_mape_pct, bounds::error_pct, "time_mape_pct");
  check(k.memory_mape_pct, bounds::error_pct, "memory_mape_pct");
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
  require_known_keys(n, {"points", "measurements", "max_spread_pct"}, file, f);
  r.points = whole(n, "points", f, file, true, bounds::point_count);
  r.measurements = whole(n, "measurements", f, file, true, bounds::point_count);
  if (r.measurements < 2 * r.points)
    throw InputError("expected measurements >= 2 x points", file, line_of(n), f + "measurements");
  r.max_spread_pct = number(n, "max_spread_pct", f, file, true, 0, bounds::error_pct);
  return r;
}

void emit_compute_yaml(YAML::Emitter &out, const ComputeSection &c) {
  check_before_writing(c);
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
    require_known_keys(cs, {"device", "models"}, file, "compute.");
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
      const bool gemm = cf.kind == KernelKind::gemm || cf.kind == KernelKind::batched_gemm ||
                        cf.kind == KernelKind::grouped_gemm;
      if (gemm)
        require_known_keys(m, {"kind", "dtype", "c0_us", "sms", "tflops", "k0", "tflops_odd",
                               "k0_odd", "quality", "repeats", "source"}, file, f);
      else
        require_known_keys(m, {"kind", "dtype", "c0_us",
                               cf.kind == KernelKind::attention_fused ? "tflops" : "gbps",
                               "quality", "repeats", "source"}, file, f);
      if (!m["dtype"] || !m["dtype"].IsScalar())
        throw InputError("missing required field", file, line_of(m), f + "dtype");
      cf.dtype = m["dtype"].Scalar();
      cf.c0_us = number(m, "c0_us", f, file, true, 0, bounds::kernel_overhead_us);
      if (gemm) {
        cf.sms = whole(m, "sms", f, file, true, kSms);
        cf.tflops = number(m, "tflops", f, file, true, 0, bounds::fitted_tflops);
        cf.k0 = number(m, "k0", f, file, true, 0, kK0);
        // 0: no odd shape measured; else a rate like tflops
        cf.tflops_odd = number(m, "tflops_odd", f, file, false, 0, Bounds{0, 1e5});
        if (cf.tflops_odd != 0)
          require_in(cf.tflops_odd, bounds::fitted_tflops, f + "tflops_odd", file,
                     line_of(m["tflops_odd"]));
        cf.k0_odd = number(m, "k0_odd", f, file, false, 0, kK0);
      } else if (cf.kind == KernelKind::attention_fused) {
        cf.tflops = number(m, "tflops", f, file, true, 0, bounds::fitted_tflops);
      } else {
        cf.gbps = number(m, "gbps", f, file, true, 0, bounds::fitted_gbps);
      }
      if (const YAML::Node q = m["quality"]; q) {
        const std::string qf = f + "quality.";
        if (!q.IsMap())
          throw InputError("expected a mapping", file, line_of(q), f + "quality");
        require_known_keys(q, {"points", "mape_pct", "max_err_pct", "loo_mape_pct",
                               "loo_max_err_pct"}, file, qf);
        cf.quality.points = whole(q, "points", qf, file, false, bounds::point_count);
        cf.quality.mape_pct = number(q, "mape_pct", qf, file, false, 0, bounds::error_pct);
        cf.quality.max_err_pct = number(q, "max_err_pct", qf, file, false, 0, bounds::error_pct);
        cf.quality.loo_mape_pct = number(q, "loo_mape_pct", qf, file, false, -1, kComputeLooPct);
        cf.quality.loo_max_err_pct =
            number(q, "loo_max_err_pct", qf, file, false, -1, kComputeLooPct);
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
    const std::string f = "framework.";
    require_known_keys(fw, {"dispatch_us", "memory_efficiency", "memory_overhead_gib", "steps",
                            "time_mape_pct", "memory_mape_pct", "source"}, file, f);
    FrameworkConstants &k = c.framework;
    k.present = true;
    k.dispatch_us = number(fw, "dispatch_us", f, file, true, 0, bounds::kernel_overhead_us);
    k.memory_efficiency = number(fw, "memory_efficiency", f, file, true, 1, kMemoryEfficiency);
    k.memory_overhead_gib = number(fw, "memory_overhead_gib", f, file, true, 0, kOverheadGib);
    k.steps = whole(fw, "steps", f, file, false, bounds::point_count);
    k.time_mape_pct = number(fw, "time_mape_pct", f, file, false, 0, bounds::error_pct);
    k.memory_mape_pct = number(fw, "memory_mape_pct", f, file, false, 0, bounds::error_pct);
    if (fw["source"] && fw["source"].IsScalar())
      k.source = fw["source"].Scalar();
  }
  return c;
}

} // namespace scalefit::fitting

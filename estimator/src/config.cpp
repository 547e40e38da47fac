// YAML loaders for models and systems; every error names file, line (yaml Mark) and field.
#include "scalefit/estimator/config.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/yaml.hpp"
#include "scalefit/core/units.hpp"
#include "scalefit/core/validate.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <tuple>

namespace scalefit::estimator {
namespace {

YAML::Node load_yaml(const std::string &path) {
  return load_yaml_file(path);
}

/// Reads a required or optional scalar `key` of `parent` (field named `prefix.key`).
struct Reader {
  const std::string &file;
  template <class T>
  T get(const YAML::Node &parent, const std::string &key, const std::string &field,
        const T *fallback = nullptr) const {
    const YAML::Node node = parent[key];
    if (!node) {
      if (fallback)
        return *fallback;
      throw InputError("missing required field", file, line_of(parent), field);
    }
    try {
      return node.as<T>();
    } catch (const YAML::Exception &) {
      throw InputError("bad value '" + (node.IsScalar() ? node.Scalar() : std::string("<map>")) +
                           "'",
                       file, line_of(node), field);
    }
  }
  /// A number inside `b` (finite; NaN, .inf and 4.9e-324 refused), or `fallback` when absent.
  double in(const YAML::Node &parent, const std::string &key, const std::string &field,
            const Bounds &b, const double *fallback = nullptr) const {
    const double v = get<double>(parent, key, field, fallback);
    return require_in(v, b, field, file, line_of(parent[key] ? parent[key] : parent));
  }
  int positive_int(const YAML::Node &parent, const std::string &key, const std::string &field,
                   const int *fallback = nullptr) const {
    const int v = get<int>(parent, key, field, fallback);
    return static_cast<int>(require_int_in(v, 1, 1 << 16, field, file,
                                           line_of(parent[key] ? parent[key] : parent)));
  }
  YAML::Node map(const YAML::Node &parent, const std::string &key, const std::string &field) const {
    const YAML::Node node = parent[key];
    if (!node || !node.IsMap())
      throw InputError(node ? "expected a mapping" : "missing required section", file,
                       line_of(node ? node : parent), field);
    return node;
  }
  EfficiencyTable table(const YAML::Node &parent, const std::string &key,
                        const std::string &field) const {
    const YAML::Node node = parent[key];
    EfficiencyTable t;
    if (!node)
      return t; // empty: efficiency 1
    if (!node.IsSequence())
      throw InputError("expected a list of [min_size, efficiency]", file, line_of(node), field);
    for (std::size_t i = 0; i < node.size(); ++i) {
      const YAML::Node row = node[i];
      const std::string f = field + "[" + std::to_string(i) + "]";
      if (!row.IsSequence() || row.size() != 2)
        throw InputError("expected [min_size, efficiency]", file, line_of(row), f);
      EfficiencyStep s;
      try {
        s.min_size = row[0].as<double>();
        s.efficiency = row[1].as<double>();
      } catch (const YAML::Exception &) {
        throw InputError("expected two numbers", file, line_of(row), f);
      }
      for (auto [v, b, what] : {std::tuple{s.min_size, Bounds{0, 1e15}, "min_size"},
                                std::tuple{s.efficiency, bounds::efficiency, "efficiency"}})
        if (!b.contains(v))
          throw InputError(std::string(what) + ": expected a finite number in " + b.text() +
                               ", got " + std::to_string(v),
                           file, line_of(row), f);
      t.steps.push_back(s);
    }
    std::sort(t.steps.begin(), t.steps.end(), [](const EfficiencyStep &a, const EfficiencyStep &b) {
      return a.min_size > b.min_size;
    });
    return t;
  }
  CommTier tier(const YAML::Node &parent, const std::string &key, const std::string &field) const {
    const YAML::Node node = map(parent, key, field);
    CommTier t;
    const double zero = 0, one = 1;
    t.latency_us = in(node, "latency_us", field + ".latency_us", bounds::latency_us, &zero);
    t.bandwidth_gbps =
        in(node, "bandwidth_gbps", field + ".bandwidth_gbps", bounds::bandwidth_gbps);
    t.efficiency = in(node, "efficiency", field + ".efficiency", bounds::efficiency, &one);
    return t;
  }
};

} // namespace

double SystemConfig::memory_bytes() const {
  return device.memory_gib * kGiB;
}

const char *framework_name(Framework f) {
  return f == Framework::pytorch ? "pytorch" : "megatron";
}

const char *recompute_name(Recompute r) {
  switch (r) {
  case Recompute::none:
    return "none";
  case Recompute::selective:
    return "selective";
  case Recompute::full:
    return "full";
  }
  return "?";
}

const char *moe_dispatcher_name(MoeDispatcher d) {
  switch (d) {
  case MoeDispatcher::alltoall:
    return "alltoall";
  case MoeDispatcher::allgather:
    return "allgather";
  case MoeDispatcher::deepep:
    return "deepep";
  case MoeDispatcher::hybridep:
    return "hybridep";
  }
  return "?";
}

std::optional<MoeDispatcher> parse_moe_dispatcher(const std::string &name) {
  for (MoeDispatcher d : {MoeDispatcher::alltoall, MoeDispatcher::allgather, MoeDispatcher::deepep,
                          MoeDispatcher::hybridep})
    if (name == moe_dispatcher_name(d))
      return d;
  return std::nullopt;
}

const char *fp8_recipe_name(Fp8Recipe r) {
  switch (r) {
  case Fp8Recipe::delayed:
    return "delayed";
  case Fp8Recipe::tensorwise:
    return "tensorwise";
  case Fp8Recipe::mxfp8:
    return "mxfp8";
  case Fp8Recipe::blockwise:
    return "blockwise";
  }
  return "?";
}

std::optional<Fp8Recipe> parse_fp8_recipe(const std::string &name) {
  for (Fp8Recipe r :
       {Fp8Recipe::delayed, Fp8Recipe::tensorwise, Fp8Recipe::mxfp8, Fp8Recipe::blockwise})
    if (name == fp8_recipe_name(r))
      return r;
  return std::nullopt;
}

const char *attention_backend_name(AttentionBackend b) {
  return b == AttentionBackend::flash ? "flash" : "fused";
}

std::optional<AttentionBackend> parse_attention_backend(const std::string &name) {
  for (AttentionBackend b : {AttentionBackend::fused, AttentionBackend::flash})
    if (name == attention_backend_name(b))
      return b;
  return std::nullopt;
}

namespace {
struct ModuleName {
  unsigned flag;
  const char *name;
};
constexpr ModuleName kModuleNames[] = {{kRecomputeCoreAttn, "core_attn"},
                                       {kRecomputeLayernorm, "layernorm"},
                                       {kRecomputeMlaUpProj, "mla_up_proj"},
                                       {kRecomputeMlp, "mlp"},
                                       {kRecomputeMoeAct, "moe_act"},
                                       {kRecomputeSharedExperts, "shared_experts"},
                                       {kRecomputeMoe, "moe"}};
} // namespace

bool parse_recompute_modules(const std::string &list, unsigned &flags, std::string &bad) {
  flags = 0;
  std::size_t at = 0;
  while (at <= list.size()) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    const std::string name = list.substr(at, comma - at);
    bool known = false;
    for (const ModuleName &m : kModuleNames)
      if (name == m.name) {
        flags |= m.flag;
        known = true;
      }
    if (!known) {
      bad = name;
      return false;
    }
    at = comma + 1;
  }
  return true;
}

std::string recompute_modules_name(unsigned flags) {
  std::string out;
  for (const ModuleName &m : kModuleNames)
    if (flags & m.flag)
      out += (out.empty() ? "" : ",") + std::string(m.name);
  return out;
}

SystemConfig load_system(const std::string &path) {
  const YAML::Node root = load_yaml(path);
  const Reader r{path};
  SystemConfig s;
  const std::string stem = path.substr(path.find_last_of('/') + 1);
  const std::string dflt_name = stem.substr(0, stem.find_last_of('.'));
  s.name = r.get<std::string>(root, "name", "name", &dflt_name);
  s.gpus_per_node = r.positive_int(root, "gpus_per_node", "gpus_per_node");
  const YAML::Node dev = r.map(root, "device", "device");
  const std::string unnamed = "gpu";
  s.device.name = r.get<std::string>(dev, "name", "device.name", &unnamed);
  s.device.memory_gib = r.in(dev, "memory_gib", "device.memory_gib", bounds::memory_gib);
  s.device.hbm_gbps = r.in(dev, "hbm_gbps", "device.hbm_gbps", bounds::bandwidth_gbps);
  const YAML::Node peak = r.map(dev, "peak_tflops", "device.peak_tflops");
  const std::string nvidia = "nvidia";
  s.device.matrix_tflops_16 = r.in(peak, "fp16", "device.peak_tflops.fp16", bounds::tflops);
  const double fallback32 = s.device.matrix_tflops_16 / 2;
  s.device.matrix_tflops_32 = r.in(peak, "tf32", "device.peak_tflops.tf32", bounds::tflops, &fallback32);
  const double fallback_vec = s.device.matrix_tflops_16 / 4;
  s.device.vector_tflops = r.in(peak, "vector", "device.peak_tflops.vector", bounds::tflops, &fallback_vec);
  if (peak["fp8"])
    s.device.matrix_tflops_8 = r.in(peak, "fp8", "device.peak_tflops.fp8", bounds::tflops);
  s.device.vendor = r.get<std::string>(dev, "vendor", "device.vendor", &nvidia);
  if (s.device.vendor != "nvidia" && s.device.vendor != "amd")
    throw InputError("expected nvidia or amd, got '" + s.device.vendor + "'", path,
                     line_of(dev["vendor"]), "device.vendor");
  s.device.gemm_efficiency = r.table(dev, "gemm_efficiency", "device.gemm_efficiency");
  s.device.gemm_efficiency_fp8 =
      r.table(dev, "gemm_efficiency_fp8", "device.gemm_efficiency_fp8");
  // {forward: [[seq, eff]...], backward: [...]} under `key`, into fwd and bwd.
  // Optional `forward_noncausal` into *noncausal (the unmasked forward of ring attention's steps);
  // with `fused_rows` (Transformer Engine's cuDNN table only) the optional sliding-window rows
  // (by window size), the FP8 / MXFP8 rows (fractions of the FP8 peak) and the FP8 / MXFP8
  // sliding-window rows (by sequence length) into s.device.
  const auto attention_tables = [&](const char *key, EfficiencyTable &fwd, EfficiencyTable &bwd,
                                    EfficiencyTable *noncausal = nullptr, bool fused_rows = false) {
    const YAML::Node att = dev[key];
    if (!att)
      return;
    const std::string field = std::string("device.") + key;
    if (!att.IsMap())
      throw InputError("expected a mapping {forward: [[seq, eff]...], backward: [...]}", path,
                       line_of(att), field);
    fwd = r.table(att, "forward", field + ".forward");
    bwd = r.table(att, "backward", field + ".backward");
    if (att["forward_noncausal"]) {
      if (!noncausal)
        throw InputError("a forward_noncausal row is read only in fused_attention_efficiency and "
                         "flash_attention_efficiency",
                         path, line_of(att["forward_noncausal"]), field + ".forward_noncausal");
      *noncausal = r.table(att, "forward_noncausal", field + ".forward_noncausal");
    }
    DeviceConfig &d = s.device;
    const std::pair<const char *, EfficiencyTable *> rows[] = {
        {"forward_window", &d.attention_fwd_window_efficiency},
        {"backward_window", &d.attention_bwd_window_efficiency},
        {"forward_fp8", &d.attention_fwd_fp8_efficiency},
        {"backward_fp8", &d.attention_bwd_fp8_efficiency},
        {"forward_mxfp8", &d.attention_fwd_mxfp8_efficiency},
        {"backward_mxfp8", &d.attention_bwd_mxfp8_efficiency},
        {"forward_window_fp8", &d.attention_fwd_window_fp8_efficiency},
        {"backward_window_fp8", &d.attention_bwd_window_fp8_efficiency},
        {"forward_window_mxfp8", &d.attention_fwd_window_mxfp8_efficiency},
        {"backward_window_mxfp8", &d.attention_bwd_window_mxfp8_efficiency}};
    for (const auto &[row, dst] : rows) {
      if (!att[row])
        continue;
      if (!fused_rows)
        throw InputError(std::string("a ") + row +
                             " row is read only in fused_attention_efficiency",
                         path, line_of(att[row]), field + "." + row);
      *dst = r.table(att, row, field + "." + row);
    }
  };
  attention_tables("fused_attention_efficiency", s.device.attention_fwd_efficiency,
                   s.device.attention_bwd_efficiency, &s.device.attention_fwd_noncausal_efficiency,
                   true);
  attention_tables("sdpa_attention_efficiency", s.device.sdpa_fwd_efficiency,
                   s.device.sdpa_bwd_efficiency);
  attention_tables("flash_attention_efficiency", s.device.flash_fwd_efficiency,
                   s.device.flash_bwd_efficiency, &s.device.flash_fwd_noncausal_efficiency);
  s.device.hbm_efficiency = r.table(dev, "hbm_efficiency", "device.hbm_efficiency");
  const double zero = 0;
  s.device.kernel_launch_us =
      r.in(dev, "kernel_launch_us", "device.kernel_launch_us", bounds::latency_us, &zero);
  const double one = 1;
  s.device.sustained_efficiency = r.in(dev, "sustained_efficiency", "device.sustained_efficiency",
                                       bounds::efficiency, &one);
  s.device.fp8_relative_efficiency =
      r.in(dev, "fp8_relative_efficiency", "device.fp8_relative_efficiency", bounds::efficiency,
           &one);
  if (dev["mxfp8_relative_efficiency"]) // optional: only devices with MXFP8 tensor cores
    s.device.mxfp8_relative_efficiency = r.in(
        dev, "mxfp8_relative_efficiency", "device.mxfp8_relative_efficiency", bounds::efficiency);
  const YAML::Node comm = r.map(root, "communication", "communication");
  s.intra = r.tier(comm, "intra", "communication.intra");
  s.overlap_efficiency = r.in(comm, "overlap_efficiency", "communication.overlap_efficiency",
                              bounds::efficiency, &one);
  s.inter = r.tier(comm, "inter", "communication.inter");
  if (comm["host"]) // optional: prices activation CPU offloading
    s.host = r.tier(comm, "host", "communication.host");
  return s;
}

SystemConfig with_nvlink_domain(const SystemConfig &system, int domain) {
  if (domain < 1 || domain > system.gpus_per_node)
    throw InputError("an NVLink domain of " + std::to_string(domain) + " GPUs: expected 1 to " +
                         std::to_string(system.gpus_per_node) + " (the system's gpus_per_node)",
                     system.name, 0, "nvlink_domain");
  SystemConfig s = system;
  s.inter.bandwidth_gbps = system.inter.bandwidth_gbps * domain / system.gpus_per_node;
  s.gpus_per_node = domain;
  return s;
}

}  // namespace scalefit::estimator

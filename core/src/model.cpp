// The model config: YAML loader, overrides, validation. Every error names file, line and field.
#include "scalefit/core/model.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/validate.hpp"
#include "scalefit/core/yaml.hpp"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <utility>

namespace scalefit {
namespace {

std::string scalar_text(const YAML::Node &node) {
  return node.IsScalar() ? node.Scalar() : std::string("<not a scalar>");
}

/// Optional scalar `key` of `root` as T; `fallback` when absent; InputError when unparsable.
template <class T>
T get(const YAML::Node &root, const std::string &key, const std::string &file, const T &fallback,
      bool required = false) {
  const YAML::Node node = root[key];
  if (!node) {
    if (required)
      throw InputError("missing required field", file, line_of(root), key);
    return fallback;
  }
  try {
    return node.as<T>();
  } catch (const YAML::Exception &) {
    throw InputError("bad value '" + scalar_text(node) + "'", file, line_of(node), key);
  }
}

int positive_int(const YAML::Node &root, const std::string &key, const std::string &file,
                 bool required) {
  const int v = get<int>(root, key, file, 0, required);
  if (root[key] && (required ? v <= 0 : v < 0))
    throw InputError(required ? "expected a positive integer" : "expected an integer >= 0", file,
                     line_of(root[key]), key);
  return v;
}

} // namespace

const char *attention_name(Attention a) {
  return a == Attention::fused ? "fused" : "unfused";
}

std::optional<Attention> parse_attention(std::string_view name) {
  if (name == "fused" || name == "flash")
    return Attention::fused;
  if (name == "unfused")
    return Attention::unfused;
  return std::nullopt;
}

namespace {
/// Name tables of the architecture enums: the first name of a value is the one printed; the
/// others are accepted aliases.
template <class E> struct Named {
  std::string_view name;
  E value;
};
constexpr Named<Mlp> kMlps[] = {{"gelu", Mlp::gelu},         {"relu2", Mlp::relu2},
                                {"squared-relu", Mlp::relu2}, {"squared_relu", Mlp::relu2},
                                {"swiglu", Mlp::swiglu},     {"geglu", Mlp::geglu}};
constexpr Named<Norm> kNorms[] = {{"layernorm", Norm::layernorm}, {"rmsnorm", Norm::rmsnorm}};
constexpr Named<Position> kPositions[] = {{"learned", Position::learned},
                                          {"rope", Position::rope}};
constexpr Named<Softmax> kSoftmaxes[] = {{"vanilla", Softmax::vanilla},
                                         {"off-by-one", Softmax::off_by_one},
                                         {"off_by_one", Softmax::off_by_one},
                                         {"learnable", Softmax::learnable}};

template <class E, std::size_t N> const char *name_of(const Named<E> (&table)[N], E v) {
  for (const auto &n : table)
    if (n.value == v)
      return n.name.data(); // literals: NUL-terminated
  return "?";
}
template <class E, std::size_t N>
std::optional<E> parse_named(const Named<E> (&table)[N], std::string_view name) {
  for (const auto &n : table)
    if (n.name == name)
      return n.value;
  return std::nullopt;
}
} // namespace

const char *mlp_name(Mlp m) { return name_of(kMlps, m); }
std::optional<Mlp> parse_mlp(std::string_view n) { return parse_named(kMlps, n); }
const char *norm_name(Norm n) { return name_of(kNorms, n); }
std::optional<Norm> parse_norm(std::string_view n) { return parse_named(kNorms, n); }
const char *position_name(Position p) { return name_of(kPositions, p); }
std::optional<Position> parse_position(std::string_view n) { return parse_named(kPositions, n); }
const char *softmax_name(Softmax s) {
  return name_of(kSoftmaxes, s);
}
std::optional<Softmax> parse_softmax(std::string_view n) {
  return parse_named(kSoftmaxes, n);
}

namespace {
/// Applies a dtype name: fp8 means bf16 with FP8 GEMM inputs. False for an unknown or
/// unsupported name.
bool set_dtype(ModelConfig &m, const std::string &name) {
  if (name == "fp8" || name == "float8" || name == "e4m3") {
    m.dtype = DType::bfloat16;
    m.fp8 = true;
    return true;
  }
  const auto d = parse_dtype(name);
  if (!d || (*d != DType::half && *d != DType::bfloat16 && *d != DType::float32))
    return false;
  m.dtype = *d;
  m.fp8 = false;
  return true;
}
} // namespace

void validate_model(const ModelConfig &m, const std::string &origin) {
  // Upper limits keep every product of the layout arithmetic (4 h, s^2 h, ...) finite and exact
  // far beyond any real model.
  auto need = [&](int v, const char *field, int hi) {
    require_int_in(v, 1, hi, field, origin);
  };
  need(m.layers, "layers", 1 << 16);
  need(m.hidden, "hidden", 1 << 20);
  need(m.heads, "heads", 1 << 16);
  need(m.sequence, "sequence", 1 << 24);
  need(m.vocabulary, "vocabulary", 1 << 24);
  if (m.ffn != 0)
    need(m.ffn, "ffn", 1 << 22);
  if (m.global_batch != 0)
    need(m.global_batch, "global_batch", 1 << 30);
  if (m.hidden % m.heads != 0)
    throw InputError("heads (" + std::to_string(m.heads) + ") must divide hidden (" +
                         std::to_string(m.hidden) + ")",
                     origin, 0, "heads");
  if (m.head_dim_override != 0)
    need(m.head_dim_override, "head_dim", 1 << 16);
  if (m.experts != 0) {
    need(m.experts, "experts", 1 << 16);
    need(m.top_k, "top_k", m.experts);
    need(m.moe_ffn, "moe_ffn", 1 << 22);
    require_int_in(m.shared_experts, 0, 1 << 10, "shared_experts", origin);
    need(m.moe_layer_freq, "moe_layer_freq", 1 << 16);
    require_int_in(m.first_dense_layers, 0, m.layers, "first_dense_layers", origin);
  }
  require_int_in(m.mtp_layers, 0, 64, "mtp_layers", origin);
  require_int_in(m.sliding_window, 0, 1 << 30, "sliding_window", origin);
  require_int_in(m.window_skip_freq, 0, 1 << 16, "window_skip_freq", origin);
  if (m.window_skip_freq > 0 && m.sliding_window == 0)
    throw InputError("window_skip_freq needs sliding_window", origin, 0, "window_skip_freq");
  if (m.capacity_factor != 0) {
    if (!(m.capacity_factor > 0) || !(m.capacity_factor <= 1024))
      throw InputError("expected a capacity factor > 0 (up to 1024) or none", origin, 0,
                       "capacity_factor");
    if (m.experts == 0)
      throw InputError("a capacity factor needs experts (a mixture of experts)", origin, 0,
                       "capacity_factor");
  }
  if (m.pad_to_capacity && m.capacity_factor == 0)
    throw InputError("padding to capacity needs a capacity_factor (Megatron: "
                     "--moe-pad-expert-input-to-capacity needs --moe-expert-capacity-factor)",
                     origin, 0, "pad_to_capacity");
  // Multi-head latent attention: kv_lora_rank turns it on and needs the per-head sizes.
  require_int_in(m.q_lora_rank, 0, 1 << 20, "q_lora_rank", origin);
  require_int_in(m.qk_rope_head_dim, 0, 1 << 16, "qk_rope_head_dim", origin);
  require_int_in(m.qk_nope_head_dim, 0, 1 << 16, "qk_nope_head_dim", origin);
  require_int_in(m.v_head_dim, 0, 1 << 16, "v_head_dim", origin);
  if (m.kv_lora_rank != 0) {
    need(m.kv_lora_rank, "kv_lora_rank", 1 << 20);
    for (auto [v, field] : {std::pair{m.qk_nope_head_dim, "qk_nope_head_dim"},
                            {m.qk_rope_head_dim, "qk_rope_head_dim"}, {m.v_head_dim, "v_head_dim"}})
      if (v == 0)
        throw InputError("multi-head latent attention (kv_lora_rank) needs its per-head size",
                         origin, 0, field);
    if (m.kv_heads != 0 && m.kv_heads != m.heads)
      throw InputError("multi-head latent attention has one key and value per head: kv_heads "
                       "must equal heads or be left out",
                       origin, 0, "kv_heads");
    if (m.head_dim_override != 0)
      throw InputError("multi-head latent attention sets its head sizes with qk_nope_head_dim, "
                       "qk_rope_head_dim and v_head_dim, not head_dim",
                       origin, 0, "head_dim");
  } else {
    for (auto [v, field] : {std::pair{m.q_lora_rank, "q_lora_rank"},
                            {m.qk_nope_head_dim, "qk_nope_head_dim"},
                            {m.qk_rope_head_dim, "qk_rope_head_dim"}, {m.v_head_dim, "v_head_dim"}})
      if (v != 0)
        throw InputError(std::string(field) +
                             " is a multi-head latent attention size: give kv_lora_rank too",
                         origin, 0, field);
  }
  if (m.kv_heads != 0) {
    need(m.kv_heads, "kv_heads", 1 << 16);
    if (m.heads % m.kv_heads != 0)
      throw InputError("kv_heads (" + std::to_string(m.kv_heads) + ") must divide heads (" +
                           std::to_string(m.heads) + ")",
                       origin, 0, "kv_heads");
  }
  if (m.dtype != DType::half && m.dtype != DType::bfloat16 && m.dtype != DType::float32)
    throw InputError("dtype must be half, bfloat16 or float", origin, 0, "dtype");
}

void apply_overrides(ModelConfig &m, const ModelOverrides &o) {
  if (o.layers)
    m.layers = o.layers;
  if (o.hidden)
    m.hidden = o.hidden;
  if (o.heads)
    m.heads = o.heads;
  if (o.sequence)
    m.sequence = o.sequence;
  if (o.vocabulary)
    m.vocabulary = o.vocabulary;
  if (o.ffn)
    m.ffn = o.ffn;
  if (o.kv_heads)
    m.kv_heads = o.kv_heads;
  if (o.head_dim)
    m.head_dim_override = o.head_dim;
  if (o.experts)
    m.experts = o.experts;
  if (o.top_k)
    m.top_k = o.top_k;
  if (o.moe_ffn)
    m.moe_ffn = o.moe_ffn;
  if (o.shared_experts >= 0)
    m.shared_experts = o.shared_experts;
  if (o.mtp_layers >= 0)
    m.mtp_layers = o.mtp_layers;
  if (o.sliding_window >= 0)
    m.sliding_window = o.sliding_window;
  if (o.sliding_window == 0 && o.window_skip_freq < 0)
    m.window_skip_freq = 0; // no window: no blocks to skip it on
  if (o.window_skip_freq >= 0)
    m.window_skip_freq = o.window_skip_freq;
  if (o.capacity_factor >= 0)
    m.capacity_factor = o.capacity_factor;
  if (o.pad_to_capacity)
    m.pad_to_capacity = *o.pad_to_capacity;
  if (o.q_lora_rank >= 0)
    m.q_lora_rank = o.q_lora_rank;
  if (o.kv_lora_rank)
    m.kv_lora_rank = o.kv_lora_rank;
  if (o.qk_rope_head_dim)
    m.qk_rope_head_dim = o.qk_rope_head_dim;
  if (o.qk_nope_head_dim)
    m.qk_nope_head_dim = o.qk_nope_head_dim;
  if (o.v_head_dim)
    m.v_head_dim = o.v_head_dim;
  if (!o.dtype.empty() && !set_dtype(m, o.dtype))
    throw InputError("unknown dtype '" + o.dtype + "' (expected fp16, bf16, fp32 or fp8)", "", 0,
                     "--dtype");
  // A named override: kept when empty, else parsed or refused naming the flag.
  auto named = [](const std::string &v, auto parse, auto &out, const char *flag,
                  const char *expected) {
    if (v.empty())
      return;
    const auto p = parse(v);
    if (!p)
      throw InputError(std::string("expected ") + expected + ", got '" + v + "'", "", 0, flag);
    out = *p;
  };
  named(o.mlp, parse_mlp, m.mlp, "--mlp", "gelu, relu2, swiglu or geglu");
  named(o.norm, parse_norm, m.norm, "--norm", "layernorm or rmsnorm");
  named(o.position, parse_position, m.position, "--position", "learned or rope");
  named(o.softmax, parse_softmax, m.softmax, "--softmax-type", "vanilla, off-by-one or learnable");
  if (o.bias)
    m.bias = *o.bias;
  named(o.attention, parse_attention, m.attention, "--attention", "fused or unfused");
}

ModelConfig load_model(const std::string &path) {
  const YAML::Node root = load_yaml_file(path);
  ModelConfig m;
  const std::string stem = path.substr(path.find_last_of('/') + 1);
  m.name = get<std::string>(root, "name", path, stem.substr(0, stem.find_last_of('.')));
  m.layers = positive_int(root, "layers", path, true);
  m.hidden = positive_int(root, "hidden", path, true);
  m.heads = positive_int(root, "heads", path, true);
  m.sequence = positive_int(root, "sequence", path, true);
  m.vocabulary = positive_int(root, "vocabulary", path, true);
  m.ffn = positive_int(root, "ffn", path, false);
  m.global_batch = positive_int(root, "global_batch", path, false);
  const std::string dt = get<std::string>(root, "dtype", path, "half");
  if (!set_dtype(m, dt))
    throw InputError("dtype must be fp16, bf16, fp32 or fp8, got '" + dt + "'", path,
                     line_of(root["dtype"]), "dtype");
  m.kv_heads = positive_int(root, "kv_heads", path, false);
  m.head_dim_override = positive_int(root, "head_dim", path, false);
  m.experts = positive_int(root, "experts", path, false);
  m.top_k = positive_int(root, "top_k", path, false);
  m.moe_ffn = positive_int(root, "moe_ffn", path, false);
  m.shared_experts = positive_int(root, "shared_experts", path, false);
  m.first_dense_layers = positive_int(root, "first_dense_layers", path, false);
  m.mtp_layers = positive_int(root, "mtp_layers", path, false);
  m.sliding_window = positive_int(root, "sliding_window", path, false);
  m.window_skip_freq = positive_int(root, "window_skip_freq", path, false);
  if (root["moe_layer_freq"])
    m.moe_layer_freq = positive_int(root, "moe_layer_freq", path, true);
  if (const YAML::Node cf = root["capacity_factor"]) {
    // a number > 0, or none / null for dropless (Megatron's default)
    const bool none = cf.IsNull() || (cf.IsScalar() && (cf.Scalar() == "none" || cf.Scalar() == "None"));
    if (!none) {
      const double v = get<double>(root, "capacity_factor", path, 0.0);
      if (!(v > 0) || !std::isfinite(v))
        throw InputError("expected a number > 0 or none, got '" + scalar_text(cf) + "'", path,
                         line_of(cf), "capacity_factor");
      m.capacity_factor = v;
    }
  }
  m.pad_to_capacity = get<bool>(root, "pad_to_capacity", path, false);
  m.q_lora_rank = positive_int(root, "q_lora_rank", path, false);
  m.kv_lora_rank = positive_int(root, "kv_lora_rank", path, false);
  m.qk_rope_head_dim = positive_int(root, "qk_rope_head_dim", path, false);
  m.qk_nope_head_dim = positive_int(root, "qk_nope_head_dim", path, false);
  m.v_head_dim = positive_int(root, "v_head_dim", path, false);
  auto named = [&](const char *key, const char *fallback, auto parse, auto &out,
                   const char *expected) {
    const std::string v = get<std::string>(root, key, path, fallback);
    const auto p = parse(v);
    if (!p)
      throw InputError(std::string("expected ") + expected + ", got '" + v + "'", path,
                       line_of(root[key]), key);
    out = *p;
  };
  named("mlp", "gelu", parse_mlp, m.mlp, "gelu, relu2, swiglu or geglu");
  named("norm", "layernorm", parse_norm, m.norm, "layernorm or rmsnorm");
  named("position", "learned", parse_position, m.position, "learned or rope");
  named("softmax_type", "vanilla", parse_softmax, m.softmax, "vanilla, off-by-one or learnable");
  m.bias = get<bool>(root, "bias", path, true);
  m.qkv_bias = get<bool>(root, "qkv_bias", path, false);
  m.dropout = get<bool>(root, "dropout", path, true);
  m.qk_norm = get<bool>(root, "qk_norm", path, false);
  const std::string att = get<std::string>(root, "attention", path, "fused");
  const auto pa = parse_attention(att);
  if (!pa)
    throw InputError("expected fused or unfused, got '" + att + "'", path,
                     line_of(root["attention"]), "attention");
  m.attention = *pa;
  m.tied_embeddings = get<bool>(root, "tied_embeddings", path, true);
  if (m.hidden % m.heads != 0)
    throw InputError("heads must divide hidden", path, line_of(root["heads"]), "heads");
  try {
    validate_model(m, path); // the ranges and the fields that go together
  } catch (const InputError &e) {
    // name the line of the offending field when the file has it
    const YAML::Node at = e.field().empty() ? YAML::Node() : root[e.field()];
    if (e.line() == 0 && at)
      throw InputError(e.message(), path, line_of(at), e.field());
    throw;
  }
  return m;
}

ModelConfig build_model(const std::string &path, const ModelOverrides &o) {
  ModelConfig m;
  std::string origin = "command line";
  if (!path.empty()) {
    m = load_model(path);
    origin = path;
  } else {
    if (!o.complete())
      throw InputError("give --model or all of --layers --hidden --heads --seq --vocab", "", 0,
                       "--model");
    m.name = "custom";
  }
  apply_overrides(m, o);
  validate_model(m, origin);
  return m;
}

}  // namespace scalefit

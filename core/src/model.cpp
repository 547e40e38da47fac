// The model config: YAML loader, overrides, validation. Every error names file, line and field.
#include "scalefit/core/model.hpp"
#include "scalefit/core/yaml.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/validate.hpp"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace scalefit {
namespace {

long line_of(const YAML::Node &node) {
  return node.Mark().is_null() ? 0 : node.Mark().line + 1;
}

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
  if (!o.dtype.empty()) {
    const auto d = parse_dtype(o.dtype);
    if (!d)
      throw InputError("unknown dtype '" + o.dtype + "'", "", 0, "--dtype");
    m.dtype = *d;
  }
  if (!o.attention.empty()) {
    const auto a = parse_attention(o.attention);
    if (!a)
      throw InputError("expected fused or unfused, got '" + o.attention + "'", "", 0,
                       "--attention");
    m.attention = *a;
  }
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
  const auto parsed = parse_dtype(dt);
  if (!parsed ||
      (*parsed != DType::half && *parsed != DType::bfloat16 && *parsed != DType::float32))
    throw InputError("dtype must be fp16, bf16 or fp32, got '" + dt + "'", path,
                     line_of(root["dtype"]), "dtype");
  m.dtype = *parsed;
  const std::string att = get<std::string>(root, "attention", path, "fused");
  const auto pa = parse_attention(att);
  if (!pa)
    throw InputError("expected fused or unfused, got '" + att + "'", path,
                     line_of(root["attention"]), "attention");
  m.attention = *pa;
  m.tied_embeddings = get<bool>(root, "tied_embeddings", path, true);
  if (m.hidden % m.heads != 0)
    throw InputError("heads must divide hidden", path, line_of(root["heads"]), "heads");
  validate_model(m, path);  // the ranges
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

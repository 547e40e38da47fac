// The Megatron-LM GEMM list of a transformer layer (Narayanan et al. 2021).
#include "scalefit/kernels/shapes.hpp"

#include "scalefit/core/error.hpp"

#include <algorithm>
#include <cmath>

namespace scalefit::kernels {

std::string_view pass_name(Pass p) {
  return p == Pass::fwd ? "fwd" : "bwd";
}

std::string_view kernel_kind_name(KernelKind k) {
  switch (k) {
  case KernelKind::gemm:
    return "gemm";
  case KernelKind::batched_gemm:
    return "batched_gemm";
  case KernelKind::softmax:
    return "softmax";
  case KernelKind::attention:
    return "attention";
  }
  return "?";
}

double KernelShape::flops() const {
  if (kind == KernelKind::softmax)
    return 0.0;
  if (kind == KernelKind::attention) {
    const double sq = static_cast<double>(m), sk = static_cast<double>(n);
    // Unmasked (query, key) pairs: all m n, or the lower triangle (diagonal included) when causal.
    const double pairs = causal ? sq * (sq + 1.0) / 2.0 : sq * sk;
    const double fwd = 4.0 * pairs * static_cast<double>(k) * static_cast<double>(batch);
    return pass == Pass::fwd ? fwd : 2.5 * fwd;
  }
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
         static_cast<double>(batch);
}

double KernelShape::model_flops() const {
  if (kind != KernelKind::attention)
    return flops();
  const double fwd = 4.0 * static_cast<double>(m) * static_cast<double>(n) *
                     static_cast<double>(k) * static_cast<double>(batch);
  return pass == Pass::fwd ? fwd : 2.0 * fwd;
}

namespace {

KernelShape make(std::string name, KernelKind kind, Pass pass, std::int64_t m, std::int64_t n,
                 std::int64_t k, std::int64_t batch, bool per_layer = true) {
  return KernelShape{std::move(name), kind, pass, m, n, k, batch, per_layer};
}

/// Forward GEMM Y[M x N] = X[M x K] W[K x N] and its two backward GEMMs.
struct Linear {
  std::string name;
  KernelKind kind;
  std::int64_t m, n, k, batch;
  bool per_layer = true;
  KernelShape fwd() const {
    return make(name + ".fwd", kind, Pass::fwd, m, n, k, batch, per_layer);
  }
  KernelShape dgrad() const {
    return make(name + ".dgrad", kind, Pass::bwd, m, k, n, batch, per_layer);
  }
  KernelShape wgrad() const {
    return make(name + ".wgrad", kind, Pass::bwd, k, n, m, batch, per_layer);
  }
};

} // namespace

std::vector<KernelShape> transformer_gemms(const ModelConfig &model, int tp,
                                           int micro_batch, bool include_logits,
                                           Attention attention) {
  if (tp < 1)
    throw InputError("expected a positive TP degree, got " + std::to_string(tp), "", 0, "--tp");
  if (micro_batch < 1)
    throw InputError("expected a positive micro-batch, got " + std::to_string(micro_batch), "", 0,
                     "--micro-batch");
  if (model.heads % tp != 0)
    throw InputError("tp (" + std::to_string(tp) + ") must divide heads (" +
                         std::to_string(model.heads) + ")",
                     "", 0, "--tp");
  if (model.ffn_size() % tp != 0)
    throw InputError("tp (" + std::to_string(tp) + ") must divide ffn (" +
                         std::to_string(model.ffn_size()) + ")",
                     "", 0, "--tp");
  const std::int64_t b = micro_batch, s = model.sequence, h = model.hidden, a = model.heads, t = tp,
                     f = model.ffn_size(), v = model.vocabulary;
  const std::int64_t tokens = b * s, d = h / a, heads_local = b * a / t;
  const std::int64_t vocab_local = (v + t - 1) / t; // Megatron pads V to a multiple of t

  const Linear qkv{"qkv", KernelKind::gemm, tokens, 3 * h / t, h, 1};
  // Score S = Q K^T: the gradient of Q is dS K (m=s, n=d, k=s); of K, dS^T Q (m=s, n=d, k=s).
  const KernelShape score_fwd =
      make("attn_score.fwd", KernelKind::batched_gemm, Pass::fwd, s, s, d, heads_local);
  const KernelShape score_dgrad =
      make("attn_score.dgrad", KernelKind::batched_gemm, Pass::bwd, s, d, s, heads_local);
  const KernelShape score_wgrad =
      make("attn_score.wgrad", KernelKind::batched_gemm, Pass::bwd, s, d, s, heads_local);
  const KernelShape softmax =
      make("softmax.fwd", KernelKind::softmax, Pass::fwd, s, s, 0, heads_local);
  // Context O = P V is a plain batched GEMM (m=s, n=d, k=s).
  const Linear context{"attn_context", KernelKind::batched_gemm, s, d, s, heads_local};
  const Linear proj{"attn_proj", KernelKind::gemm, tokens, h, h / t, 1};
  const Linear up{"mlp_up", KernelKind::gemm, tokens, f / t, h, 1};
  const Linear down{"mlp_down", KernelKind::gemm, tokens, h, f / t, 1};
  const Linear logits{"logits", KernelKind::gemm, tokens, vocab_local, h, 1, false};

  const bool fused = attention == Attention::fused;
  KernelShape attn_fwd = make("attention.fwd", KernelKind::attention, Pass::fwd, s, s, d,
                              heads_local);
  attn_fwd.causal = true;
  KernelShape attn_bwd = attn_fwd;
  attn_bwd.name = "attention.bwd";
  attn_bwd.pass = Pass::bwd;

  std::vector<KernelShape> out{qkv.fwd()};
  if (fused) {
    out.push_back(attn_fwd);
  } else {
    out.push_back(score_fwd);
    out.push_back(softmax);
    out.push_back(context.fwd());
  }
  for (const KernelShape &k : {proj.fwd(), up.fwd(), down.fwd()})
    out.push_back(k);
  if (include_logits) {
    out.push_back(logits.fwd());
    out.push_back(logits.dgrad());
    out.push_back(logits.wgrad());
  }
  for (const Linear *l : {&down, &up, &proj}) {
    out.push_back(l->dgrad());
    out.push_back(l->wgrad());
  }
  if (fused) {
    out.push_back(attn_bwd);
  } else {
    out.push_back(context.dgrad());
    out.push_back(context.wgrad());
    out.push_back(score_dgrad);
    out.push_back(score_wgrad);
  }
  out.push_back(qkv.dgrad());
  out.push_back(qkv.wgrad());
  return out;
}

double layer_forward_flops(const ModelConfig &model, int micro_batch) {
  const double b = micro_batch, s = model.sequence, h = model.hidden, f = model.ffn_size();
  return 2.0 * b * s * (4.0 * h * h + 2.0 * h * f) + 4.0 * b * s * s * h;
}

double logits_forward_flops(const ModelConfig &model, int micro_batch) {
  return 2.0 * micro_batch * static_cast<double>(model.sequence) * model.hidden * model.vocabulary;
}

std::vector<KernelShape> scale_shapes(std::vector<KernelShape> shapes, double factor) {
  if (!(factor > 0.0 && factor <= 1.0))
    throw InputError("expected a factor in (0, 1], got " + std::to_string(factor), "", 0,
                     "--scale");
  auto shrink = [factor](std::int64_t x) {
    return x == 0 ? std::int64_t{0}
                  : std::max<std::int64_t>(1, std::llround(static_cast<double>(x) * factor));
  };
  for (KernelShape &s : shapes) {
    s.m = shrink(s.m);
    s.n = shrink(s.n);
    s.k = shrink(s.k);
    if (s.kind == KernelKind::attention) // one sequence length for queries and keys
      s.n = s.m;
  }
  return shapes;
}

} // namespace scalefit::kernels

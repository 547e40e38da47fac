// The Megatron-LM GEMM list of a transformer layer (Narayanan et al. 2021).
#include "scalefit/kernels/shapes.hpp"

#include "scalefit/core/error.hpp"

#include <algorithm>
#include <cmath>

namespace scalefit::kernels {

std::string_view pass_name(Pass p) {
  return p == Pass::fwd ? "fwd" : "bwd";
}

std::string_view grouped_gemm_api_name(GroupedGemmApi a) {
  return a == GroupedGemmApi::per_expert ? "per-expert" : "cublas-grouped";
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
  case KernelKind::grouped_gemm:
    return "grouped_gemm";
  }
  return "?";
}

std::string_view blocks_name(Blocks b) {
  return b == Blocks::all ? "all" : b == Blocks::dense ? "dense" : "moe";
}

std::vector<GemmDims> KernelShape::groups() const {
  std::vector<GemmDims> g(static_cast<std::size_t>(std::max<std::int64_t>(batch, 0)),
                          GemmDims{m, n, k});
  if (kind == KernelKind::grouped_gemm && !group_tokens.empty())
    for (std::size_t i = 0; i < g.size() && i < group_tokens.size(); ++i)
      (tokens_in_k ? g[i].k : g[i].m) = group_tokens[i];
  return g;
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
  if (kind == KernelKind::grouped_gemm && !group_tokens.empty()) {
    double sum = 0;
    for (const GemmDims &g : groups())
      sum += 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
    return sum;
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
  KernelShape s;
  s.name = std::move(name);
  s.kind = kind;
  s.pass = pass;
  s.m = m;
  s.n = n;
  s.k = k;
  s.batch = batch;
  s.per_layer = per_layer;
  return s;
}

/// Forward GEMM Y[M x N] = X[M x K] W[K x N] and its two backward GEMMs.
/// For a grouped GEMM, m is the balanced tokens per group and `tokens` each group's (empty:
/// all m); the weight gradient has them as its k.
struct Linear {
  std::string name;
  KernelKind kind;
  std::int64_t m, n, k, batch;
  bool per_layer = true;
  Blocks blocks = Blocks::all;
  std::vector<std::int64_t> tokens = {};
  KernelShape with(KernelShape s, bool in_k = false) const {
    s.blocks = blocks;
    s.group_tokens = tokens;
    s.tokens_in_k = in_k && kind == KernelKind::grouped_gemm;
    return s;
  }
  KernelShape fwd() const {
    return with(make(name + ".fwd", kind, Pass::fwd, m, n, k, batch, per_layer));
  }
  KernelShape dgrad() const {
    return with(make(name + ".dgrad", kind, Pass::bwd, m, k, n, batch, per_layer));
  }
  KernelShape wgrad() const {
    return with(make(name + ".wgrad", kind, Pass::bwd, k, n, m, batch, per_layer), true);
  }
};

void check_moe(const ModelConfig &model, int tp, int micro_batch, const MoeLayout &moe) {
  if (!model.moe())
    return;
  if (moe.ep < 1 || model.experts % moe.ep != 0)
    throw InputError("ep (" + std::to_string(moe.ep) + ") must divide the experts (" +
                         std::to_string(model.experts) + ")",
                     "", 0, "--ep");
  if (!(moe.imbalance >= 1.0) || !std::isfinite(moe.imbalance))
    throw InputError("expected an imbalance >= 1 (the busiest expert's tokens over the balanced "
                     "count)",
                     "", 0, "--moe-imbalance");
  if ((static_cast<std::int64_t>(micro_batch) * model.sequence) % tp != 0)
    throw InputError("tp (" + std::to_string(tp) + ") must divide the micro-batch's tokens b s",
                     "", 0, "--tp");
  if (model.shared_experts > 0 &&
      (static_cast<std::int64_t>(model.shared_experts) * model.moe_ffn) % tp != 0)
    throw InputError("tp must divide the shared experts' inner size", "", 0, "--tp");
}

} // namespace

std::int64_t expert_tokens(const ModelConfig &model, int tp, int micro_batch, int ep) {
  if (!model.moe() || tp < 1 || ep < 1)
    return 0;
  const std::int64_t routed = static_cast<std::int64_t>(model.top_k) * micro_batch *
                              model.sequence / tp * ep;
  return std::max<std::int64_t>(1, routed / model.experts);
}

namespace {

} // namespace

std::vector<KernelShape> transformer_gemms(const ModelConfig &model, int tp,
                                           int micro_batch, bool include_logits,
                                           Attention attention, const MoeLayout &moe) {
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
  check_moe(model, tp, micro_batch, moe);
  const std::int64_t b = micro_batch, s = model.sequence, h = model.hidden, a = model.heads, t = tp,
                     f = model.ffn_size(), v = model.vocabulary, g = model.kv_heads_count();
  const std::int64_t tokens = b * s, d = model.head_dim(), heads_local = b * a / t;
  const std::int64_t vocab_local = (v + t - 1) / t; // Megatron pads V to a multiple of t
  // GQA: the rank's a/t query heads and g/t key/value heads (replicated when t > g).
  const std::int64_t kv_local = (g + t - 1) / t;
  const std::int64_t gate = mlp_gated(model.mlp) ? 2 : 1; // fc1 holds gate and up (h x 2f)

  // The projections in front of the attention core: one fused QKV, or MLA's (DeepSeek-V2,
  // arXiv 2405.04434, Eq. 9-19; Megatron-Core MLASelfAttention): the down projections whole on
  // every TP rank (replicated), the up projections column-parallel over the heads.
  std::vector<Linear> attn_in;
  std::int64_t d_qk = d, d_v = d;
  if (model.mla()) {
    const std::int64_t dn = model.qk_nope_head_dim, dr = model.qk_rope_head_dim;
    const std::int64_t dc = model.kv_lora_rank, dq = model.q_lora_rank;
    d_qk = dn + dr;
    d_v = model.v_head_dim;
    if (dq > 0) {
      attn_in.push_back({"q_down", KernelKind::gemm, tokens, dq, h, 1});
      attn_in.push_back({"q_up", KernelKind::gemm, tokens, a / t * d_qk, dq, 1});
    } else {
      attn_in.push_back({"q", KernelKind::gemm, tokens, a / t * d_qk, h, 1});
    }
    attn_in.push_back({"kv_down", KernelKind::gemm, tokens, dc + dr, h, 1});
    attn_in.push_back({"kv_up", KernelKind::gemm, tokens, a / t * (dn + d_v), dc, 1});
  } else {
    attn_in.push_back({"qkv", KernelKind::gemm, tokens, (a / t + 2 * kv_local) * d, h, 1});
  }
  // Score S = Q K^T: the gradient of Q is dS K (m=s, n=d, k=s); of K, dS^T Q (m=s, n=d, k=s).
  const KernelShape score_fwd =
      make("attn_score.fwd", KernelKind::batched_gemm, Pass::fwd, s, s, d_qk, heads_local);
  const KernelShape score_dgrad =
      make("attn_score.dgrad", KernelKind::batched_gemm, Pass::bwd, s, d_qk, s, heads_local);
  const KernelShape score_wgrad =
      make("attn_score.wgrad", KernelKind::batched_gemm, Pass::bwd, s, d_qk, s, heads_local);
  const KernelShape softmax =
      make("softmax.fwd", KernelKind::softmax, Pass::fwd, s, s, 0, heads_local);
  // Context O = P V is a plain batched GEMM (m=s, n=d_v, k=s).
  const Linear context{"attn_context", KernelKind::batched_gemm, s, d_v, s, heads_local};
  const Linear proj{"attn_proj", KernelKind::gemm, tokens, h, a * d_v / t, 1};
  const bool moe_blocks = model.moe_layers() > 0;
  const bool dense_blocks = model.moe_layers() < model.layers;
  const Blocks dense = moe_blocks ? Blocks::dense : Blocks::all;
  const Linear up{"mlp_up", KernelKind::gemm, tokens, gate * f / t, h, 1, true, dense};
  const Linear down{"mlp_down", KernelKind::gemm, tokens, h, f / t, 1, true, dense};
  // MoE block (Megatron-Core MoE layer, sequence parallel: the rank routes its b s / t tokens).
  std::vector<Linear> moe_mlp;
  if (moe_blocks) {
    const std::int64_t e = model.experts, local = e / moe.ep, fe = model.moe_ffn;
    const std::int64_t routed_tokens = tokens / t;
    const std::int64_t r = expert_tokens(model, tp, micro_batch, moe.ep);
    std::vector<std::int64_t> rows;
    std::int64_t busiest = std::llround(moe.imbalance * static_cast<double>(r));
    // The rank's local experts receive at most every routed token of the EP group.
    busiest = std::min(busiest, static_cast<std::int64_t>(model.top_k) * routed_tokens * moe.ep);
    std::int64_t base = r;
    if (model.capacity_factor > 0) {
      const auto cap = static_cast<std::int64_t>(std::ceil(model.capacity_factor * r));
      if (model.pad_to_capacity)
        base = busiest = cap;
      else
        busiest = std::min(busiest, cap);
    }
    if (busiest != base) {
      rows.assign(static_cast<std::size_t>(local), base);
      rows.front() = busiest;
    }
    const Blocks mb = Blocks::moe;
    moe_mlp.push_back({"router", KernelKind::gemm, routed_tokens, e, h, 1, true, mb});
    moe_mlp.push_back({"expert_up", KernelKind::grouped_gemm, base, gate * fe, h, local, true, mb,
                       rows});
    moe_mlp.push_back({"expert_down", KernelKind::grouped_gemm, base, h, fe, local, true, mb,
                       rows});
    if (model.shared_experts > 0) {
      const std::int64_t fs = static_cast<std::int64_t>(model.shared_experts) * fe;
      moe_mlp.push_back({"shared_up", KernelKind::gemm, tokens, gate * fs / t, h, 1, true, mb});
      moe_mlp.push_back({"shared_down", KernelKind::gemm, tokens, h, fs / t, 1, true, mb});
    }
  }
  const Linear logits{"logits", KernelKind::gemm, tokens, vocab_local, h, 1, false};

  const bool fused = attention == Attention::fused;
  // (MLA: the fused kernel runs at the query/key head dimension d_qk; its value dimension is
  // taken as d_qk too, which one k cannot tell apart: an upper bound on the AV half.)
  KernelShape attn_fwd = make("attention.fwd", KernelKind::attention, Pass::fwd, s, s, d_qk,
                              heads_local);
  attn_fwd.causal = true;
  KernelShape attn_bwd = attn_fwd;
  attn_bwd.name = "attention.bwd";
  attn_bwd.pass = Pass::bwd;

  std::vector<KernelShape> out;
  for (const Linear &l : attn_in)
    out.push_back(l.fwd());
  if (fused) {
    out.push_back(attn_fwd);
  } else {
    out.push_back(score_fwd);
    out.push_back(softmax);
    out.push_back(context.fwd());
  }
  // Forward: the projection, the MoE block's MLP, the dense blocks' MLP; backward in reverse.
  std::vector<const Linear *> mlps;
  for (const Linear &l : moe_mlp)
    mlps.push_back(&l);
  if (dense_blocks) {
    mlps.push_back(&up);
    mlps.push_back(&down);
  }
  out.push_back(proj.fwd());
  for (const Linear *l : mlps)
    out.push_back(l->fwd());
  if (include_logits) {
    out.push_back(logits.fwd());
    out.push_back(logits.dgrad());
    out.push_back(logits.wgrad());
  }
  for (auto it = mlps.rbegin(); it != mlps.rend(); ++it) {
    out.push_back((*it)->dgrad());
    out.push_back((*it)->wgrad());
  }
  out.push_back(proj.dgrad());
  out.push_back(proj.wgrad());
  if (fused) {
    out.push_back(attn_bwd);
  } else {
    out.push_back(context.dgrad());
    out.push_back(context.wgrad());
    out.push_back(score_dgrad);
    out.push_back(score_wgrad);
  }
  for (auto it = attn_in.rbegin(); it != attn_in.rend(); ++it) {
    out.push_back(it->dgrad());
    out.push_back(it->wgrad());
  }
  for (KernelShape &k : out)
    if (k.kind == KernelKind::grouped_gemm)
      k.grouped_api = moe.grouped_api;
  return out;
}

double layer_forward_flops(const ModelConfig &model, int micro_batch) {
  const double b = micro_batch, s = model.sequence, h = model.hidden, f = model.ffn_size();
  if (model.mla()) { // DeepSeek-V2 Eq. 9-19: the five projections, QK^T at d_qk, AV at d_v
    const double a = model.heads, dn = model.qk_nope_head_dim, dr = model.qk_rope_head_dim,
                 dv = model.v_head_dim, dc = model.kv_lora_rank, dq = model.q_lora_rank;
    const double q = dq > 0 ? h * dq + dq * a * (dn + dr) : h * a * (dn + dr);
    const double proj = q + h * (dc + dr) + dc * a * (dn + dv) + a * dv * h;
    const double gate = mlp_gated(model.mlp) ? 2.0 : 1.0;
    return 2.0 * b * s * (proj + (gate + 1.0) * h * f) + 2.0 * b * s * s * a * (dn + dr + dv);
  }
  const double q = static_cast<double>(model.heads) * model.head_dim(),
               kv = static_cast<double>(model.kv_heads_count()) * model.head_dim();
  const double gate = mlp_gated(model.mlp) ? 2.0 : 1.0;
  return 2.0 * b * s * (h * (q + 2.0 * kv) + q * h + (gate + 1.0) * h * f) + 4.0 * b * s * s * q;
}

double moe_mlp_forward_flops_per_token(const ModelConfig &model) {
  if (!model.moe())
    return 0.0;
  const double h = model.hidden, fe = model.moe_ffn, fs = double(model.shared_experts) * fe;
  const double gate = mlp_gated(model.mlp) ? 2.0 : 1.0;
  return 2.0 * h * model.experts + 2.0 * model.top_k * (gate + 1.0) * h * fe +
         2.0 * (gate + 1.0) * h * fs;
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
    for (std::int64_t &r : s.group_tokens)
      r = shrink(r);
  }
  return shapes;
}

} // namespace scalefit::kernels

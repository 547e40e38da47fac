// Step 1: architecture -> operations (architecture.hpp). Byte counts per token read off the
// kernels Megatron-Core runs (Transformer Engine layers, fused bias-dropout-add, fused
// SwiGLU/GeLU, fused RoPE), each kernel reading its inputs and writing its outputs once.
#include "scalefit/estimator/architecture.hpp"

#include <cmath>

namespace scalefit::estimator {
namespace {

/// Bytes of a 16-bit element, the basis of every count here (activations and element-wise
/// kernels run in bf16/fp16 under mixed precision; fp32 models scale them by 2).
constexpr double kEl = 2;

BlockActivations block_activations(const ModelConfig &m, bool fp8) {
  const double h = m.hidden, f = m.ffn_size(), a = m.heads, g = m.kv_heads_count();
  const double d = m.head_dim(), q = a * d; // query width (h unless head_dim is set)
  const double kv = g * d;                  // width of k (and of v)
  const double lin_in = fp8 ? 1 : kEl; // TE saves FP8 inputs of linear layers
  const double mask = m.dropout ? 1 : 0;
  BlockActivations b;
  // Hidden region (Korthikanti's 10 s b h for GPT): the two norms' inputs (2h each), the norm
  // outputs that feed QKV and MLP up (saved by those GEMMs for their weight gradient), and the
  // two dropout masks after the projection and after MLP down (1 byte per element).
  b.hidden = 2 * kEl * h + 2 * lin_in * h + 2 * mask * h;
  // Inner region (Korthikanti's 24 s b h for GPT): q (h), k and v (g d each) for the attention
  // core, the attention output (h; under FP8 the projection also keeps its FP8 copy), MLP up's
  // output (f, or 2f for the gate and up halves of a gated MLP) for the activation's backward,
  // and the activation's output (f) as MLP down's input.
  const double gate = mlp_gated(m.mlp) ? 2 : 1;
  double attn_inner = kEl * (q + 2 * kv) + kEl * q + (fp8 ? 1.0 * q : 0.0);
  // QK-norm (Qwen3): Megatron-Core's q_layernorm and k_layernorm (TE RMSNorm) each keep their
  // input, the pre-norm q and k (the attention core keeps the normed ones), and an fp32 rstd per
  // token and head.
  if (m.qk_norm && !m.mla())
    attn_inner += kEl * (q + kv) + 4.0 * (a + g);
  if (m.mla()) {
    // MLA (Megatron-Core MLASelfAttention): the latents live on the rank's own tokens (the down
    // projections are replicated), each kept as its RMSNorm's input and, normed, as the up
    // projection's input (TE's LayerNormColumnParallelLinear); per head the attention core
    // keeps q and k (nope + rope each) and v, the projection the core's output (a v_dim).
    const double dq = m.qk_nope_head_dim + m.qk_rope_head_dim, dv = m.v_head_dim;
    b.hidden += (kEl + lin_in) * (double(m.q_lora_rank) + m.kv_lora_rank);
    attn_inner = kEl * (2 * a * dq + a * dv) + kEl * a * dv + (fp8 ? a * dv : 0.0);
    b.mla_up = kEl * (2 * a * dq + a * dv);
    b.norms += lin_in * h; // the input norm is a module of its own (the down projections follow)
  }
  const double dense_mlp = kEl * gate * f + lin_in * f;
  b.inner = attn_inner + dense_mlp;
  b.mlp_hidden = lin_in * h;
  b.mlp_inner = dense_mlp;
  if (m.moe()) {
    // An MoE block's MLP keeps, per token, for each of its k routes: the permuted input (the
    // expert GEMM's input, h), the expert up output (gate f_e) and the down input (f_e) (scaled
    // per layout by the expert load: routed); the shared experts as a dense MLP of shared x f_e;
    // the router's fp32 scores (4 E, kept by its softmax or sigmoid), its routing map (1 byte per
    // expert) and the fused permutation's row-id map, kept for the unpermute and the backward
    // (Transformer Engine's moe_permute: int32 of 2 E + 1 per token, triton/permutation.py
    // make_row_id_map; NVIDIA's Megatron-MoE-ModelZoo memory estimator counts it too).
    const double fe = m.moe_ffn, k = m.top_k, fs = double(m.shared_experts) * m.moe_ffn;
    const double E = m.experts;
    const double routing = 4.0 * E + 1.0 * E + 4.0 * (2 * E + 1);
    const double moe_mlp = (fs > 0 ? kEl * gate * fs + lin_in * fs : 0.0) + routing;
    const double phi = double(m.moe_layers()) / m.layers;
    b.inner = attn_inner + (1 - phi) * dense_mlp + phi * moe_mlp;
    b.routed = phi * k * (lin_in * h + kEl * gate * fe + lin_in * fe);
    b.mlp_hidden = (1 - phi) * lin_in * h;
    b.mlp_inner = (1 - phi) * dense_mlp;
    b.norms += phi * kEl * h; // the MoE blocks' pre-MLP norm feeds the router in 16-bit
    b.shared = phi * (fs > 0 ? kEl * gate * fs + lin_in * fs : 0.0);
    b.moe_act = phi * k * lin_in * fe;
    b.moe_inner = phi * moe_mlp;
  }
  // Unfused attention (Megatron 2022): softmax output (2 a s), dropout mask (a s) and dropout
  // output (2 a s) per token; without dropout only the softmax output.
  b.core_per_s = (m.dropout ? 5 : 2) * a;
  b.flash_stats = 4 * a; // one fp32 log-sum-exp per row and head (Dao et al. 2022, Alg. 2)
  return b;
}

} // namespace

ModelOps describe_model(const ModelConfig &m) {
  const double h = m.hidden, f = m.ffn_size(), a = m.heads, g = m.kv_heads_count();
  const double d = m.head_dim(), kv = g * d, q = a * d;
  const bool gated = mlp_gated(m.mlp);
  ModelOps o;
  o.q_heads = a;
  o.kv_heads = g;
  o.head_dim = d;
  o.v_head_dim = d;
  o.vocabulary = m.vocabulary;
  // Linear layers (Megatron-Core: linear_qkv column, linear_proj row, linear_fc1 column with the
  // gate and up halves fused as h x 2f, linear_fc2 row).
  int nl = 0;
  double attn_out = q; // the projection's input width
  if (m.mla()) {
    // Multi-head latent attention (DeepSeek-V2 Sec. 2.1, Appendix C; Megatron-Core
    // multi_latent_attention.py): the down projections are whole on every TP rank, the up
    // projections column-parallel over the heads, the output projection row-parallel.
    MlaOps &x = o.mla;
    x.q_lora = m.q_lora_rank;
    x.kv_lora = m.kv_lora_rank;
    x.rope = m.qk_rope_head_dim;
    x.nope = m.qk_nope_head_dim;
    x.v_dim = m.v_head_dim;
    const double dq = x.nope + x.rope;
    o.kv_heads = a;
    o.head_dim = dq;
    o.v_head_dim = x.v_dim;
    if (x.q_lora > 0) {
      o.linear[nl++] = {"MLA q down", x.q_lora, h, TpSplit::replicated, true};
      o.linear[nl++] = {"MLA q up", a * dq, x.q_lora, TpSplit::column, true, false, true};
    } else {
      o.linear[nl++] = {"MLA q", a * dq, h, TpSplit::column, true};
    }
    o.linear[nl++] = {"MLA kv down (+ RoPE key)", x.kv_lora + x.rope, h, TpSplit::replicated, true};
    o.linear[nl++] = {"MLA kv up", a * (x.nope + x.v_dim), x.kv_lora, TpSplit::column, true, false,
                      true};
    attn_out = a * x.v_dim;
  } else {
    o.linear[nl++] = {"QKV", q + 2 * kv, h, TpSplit::column, true};
  }
  o.linear[nl++] = {"attention projection", h, attn_out, TpSplit::row, false};
  o.linear[nl++] = {gated ? "MLP gate+up" : "MLP up", (gated ? 2 : 1) * f, h, TpSplit::column,
                    true, true};
  o.linear[nl++] = {"MLP down", h, f, TpSplit::row, false, true};
  o.n_linear = nl;
  // An MoE model's average block: its MLP linears count for the dense blocks' share only.
  const double phi = m.moe() ? double(m.moe_layers()) / m.layers : 0.0;
  for (int i = 0; i < nl; ++i) {
    const LinearOp &l = o.linear[i];
    const double share = l.mlp ? 1 - phi : 1.0;
    o.linear_flops_per_token += share * 2 * l.n * l.k;
    (l.split == TpSplit::replicated ? o.block_matrix_params_replicated : o.block_matrix_params) +=
        share * l.n * l.k;
  }
  if (m.moe()) {
    MoeOps &e = o.moe;
    e.fraction = phi;
    e.experts = m.experts;
    e.top_k = m.top_k;
    e.f_e = m.moe_ffn;
    e.up_n = (gated ? 2 : 1) * e.f_e;
    e.f_shared = double(m.shared_experts) * m.moe_ffn;
    // With biases (gpt-oss) each expert has its up (gated: 2 f_e) and down (h) biases.
    e.expert_params = e.experts * ((e.up_n + e.f_e) * h + (m.bias ? e.up_n + h : 0.0));
    e.router_params = h * e.experts;
    e.capacity_factor = m.capacity_factor;
    e.pad = m.pad_to_capacity;
    const double shared = (e.up_n + e.f_e) * h * m.shared_experts;
    // FLOPs per token: k routed experts and the shared ones, as Megatron's
    // num_floating_point_operations counts MoE blocks (the router GEMM, 2 h E, is left out
    // there and here; its time is priced). A capacity factor changes the rows the experts run
    // (priced per layout), not the model FLOPs.
    o.linear_flops_per_token += phi * 2 * (e.top_k * (e.up_n + e.f_e) * h + shared);
    o.block_matrix_params += phi * shared;
    o.block_expert_params = phi * e.expert_params;
  }
  // Element-wise kernels. Norm: read x, write y forward (4 B/element); backward reads x and dy,
  // writes dx (6). Residual with bias and dropout (Megatron's fused bias-dropout-add): read x,
  // residual (and bias), write y and the 1-byte mask (7 forward, 7 backward: dy, mask, write dx
  // and the residual gradient); without dropout and bias a plain add (6 each way).
  int i = 0;
  const double resid = (m.dropout || m.bias) ? 7 : 6;
  o.elementwise[i++] = {"norm (attention)", 4 * h, 6 * h, Region::hidden};
  o.elementwise[i++] = {"residual (attention)", resid * h, resid * h, Region::hidden};
  o.elementwise[i++] = {"norm (MLP)", 4 * h, 6 * h, Region::hidden};
  o.elementwise[i++] = {"residual (MLP)", resid * h, resid * h, Region::hidden};
  // Activation: GeLU / squared ReLU read and write f (4 B forward) and read x, dy and write dx
  // backward (6); SwiGLU / GeGLU read gate and up, write f (6 forward) and read gate, up, dy and
  // write both gradients backward (10). Megatron fuses the bias into it.
  if (gated)
    o.elementwise[i++] = {"activation (gated)", (1 - phi) * 6 * f, (1 - phi) * 10 * f, Region::inner};
  else
    o.elementwise[i++] = {"activation", (1 - phi) * 4 * f, (1 - phi) * 6 * f, Region::inner};
  if (m.moe()) {
    // MoE blocks: each token's k routes permuted to their experts and back (Megatron-Core's
    // token permute / unpermute: read and write k h each way), the experts' activation on k
    // routes (and the shared experts'), the router's softmax / top-k over E fp32 logits.
    const double fe = o.moe.f_e, k = o.moe.top_k, fs = o.moe.f_shared;
    const double act_f = (gated ? 6 : 4) * (k * fe + fs), act_b = (gated ? 10 : 6) * (k * fe + fs);
    o.moe.mem_fwd = phi * (8 * k * h + act_f + 12 * o.moe.experts);
    // (the routed experts' share of the activation runs in the fused grouped MLP's epilogues)
    o.elementwise[i++] = {"MoE permute, activation, router",
                          o.moe.mem_fwd,
                          phi * (8 * k * h + act_b + 12 * o.moe.experts),
                          Region::inner,
                          phi * (gated ? 6 : 4) * k * fe,
                          phi * (gated ? 10 : 6) * k * fe};
  }
  if (m.mla()) {
    // MLA: the RMSNorms of the two latents on the rank's tokens (norm bytes as above), and the
    // assembly of each head's key [k^C; k^R] and contiguous value from the kv up output (read
    // a (nope + v) and the shared rope key, write a (nope + rope) and a v; backward the same).
    const MlaOps &x = o.mla;
    const double lat = x.q_lora + x.kv_lora;
    o.elementwise[i++] = {"MLA latent norms", 4 * lat, 6 * lat, Region::hidden};
    const double kv_bytes = 2 * (a * (x.nope + x.v_dim) + x.rope) + 2 * a * (x.nope + x.rope + x.v_dim);
    o.elementwise[i++] = {"MLA key/value assembly", kv_bytes, kv_bytes, Region::inner};
    // RoPE on each query head's rope part and on the one shared key (fused MLA RoPE kernel)
    if (m.position == Position::rope)
      o.elementwise[i++] = {"RoPE", 4 * (a * x.rope + x.rope), 4 * (a * x.rope + x.rope),
                            Region::inner};
  } else if (m.position == Position::rope) {
    // RoPE on q and k (Megatron-Core's fused rotary kernel): read and write h + g d each way.
    o.elementwise[i++] = {"RoPE", 4 * (q + kv), 4 * (q + kv), Region::inner};
  }
  if (m.qk_norm && !m.mla())
    // QK-norm (Qwen3; Megatron-Core's q_layernorm / k_layernorm): an RMSNorm of d on every
    // query and key head, norm bytes as above on q + g d elements.
    o.elementwise[i++] = {"QK norms", 4 * (q + kv), 6 * (q + kv), Region::inner};
  if (m.fp8) {
    // Transformer Engine, FP8 per-tensor scaling: each linear input is cast to FP8 with its
    // transpose for the weight gradient (read 2, write 1 + 1) unless a norm in front writes it
    // (LayerNormLinear: only the transpose's extra byte); backward casts each output gradient
    // with its transpose (4 B per element of n). Replicated layers work on the hidden region.
    double fwd_hidden = 0, fwd_inner = 0, bwd_hidden = 0, bwd_inner = 0;
    for (int j = 0; j < nl; ++j) {
      const LinearOp &l = o.linear[j];
      const double in = l.input_from_norm ? 1 * l.k : 4 * l.k;
      if (l.split == TpSplit::replicated) {
        fwd_hidden += in;
        bwd_hidden += 4 * l.n;
        continue;
      }
      (l.split == TpSplit::column ? fwd_hidden : fwd_inner) += in;
      (l.split == TpSplit::column ? bwd_inner : bwd_hidden) += 4 * l.n;
    }
    o.elementwise[i++] = {"FP8 casts (hidden)", fwd_hidden, bwd_hidden, Region::hidden};
    o.elementwise[i++] = {"FP8 casts (inner)", fwd_inner, bwd_inner, Region::inner};
    if (m.moe()) {
      // The same rule on the MoE blocks' expert linears (TE's GroupedLinear casts each local
      // expert's rows; the shared experts' Linear the block's tokens): fc1 reads the permuted
      // tokens (not a norm's output: 4 B per element of h) and fc2 the activation (4 B per f_e);
      // backward casts fc1's and fc2's output gradients (4 B per up_n and per h). Per token: k
      // routes of the routed experts, once for the shared ones.
      const double k = o.moe.top_k, fe = o.moe.f_e, up = o.moe.up_n, fs = o.moe.f_shared;
      const double up_s = (gated ? 2 : 1) * fs;
      const double fwd = 4 * k * (h + fe) + (fs > 0 ? 4 * (h + fs) : 0.0);
      const double bwd = 4 * k * (up + h) + (fs > 0 ? 4 * (up_s + h) : 0.0);
      // (fused grouped MLP: fc2's input cast and fc1's output-gradient cast in the epilogues)
      o.elementwise[i++] = {"FP8 casts (experts)", phi * fwd,        phi * bwd,
                            Region::inner,         phi * 4 * k * fe, phi * 4 * k * up};
    }
  }
  o.n_elementwise = i;
  o.act = block_activations(m, false);
  o.act_fp8 = block_activations(m, true);
  // Parameters. Column-parallel weights and biases are split; a row-parallel layer's bias is
  // added after its reduction and every rank keeps it (Megatron's RowParallelLinear).
  const double norm = m.norm == Norm::layernorm ? 2 * h : h;
  o.norm_params = norm;
  const double qkv_bias = (m.bias || m.qkv_bias) && !m.mla() ? q + 2 * kv : 0.0;
  const double up_bias = m.bias ? (1 - phi) * (gated ? 2 : 1) * f : 0.0;
  // Learnable softmax offsets (gpt-oss's attention sinks; Megatron-Core's softmax_type
  // learnable): one logit per head, split with the heads. Their kernel work is not priced apart:
  // the sink is one more term of each row's softmax denominator and its gradient the row sums of
  // dO . O that flash attention's backward computes anyway (Transformer Engine's cuDNN path).
  const double sinks = m.softmax == Softmax::learnable ? a : 0.0;
  o.block_params_split = o.block_matrix_params + qkv_bias + up_bias + sinks;
  // QK-norm (Qwen3): a norm of d on q and on k per layer, replicated; MLA's latent RMSNorms
  const double qk_norm = m.qk_norm ? 2 * d : 0.0;
  const double mla_norms = o.mla.q_lora + o.mla.kv_lora;
  o.block_params_replicated = 2 * norm + qk_norm + mla_norms + o.block_matrix_params_replicated +
                              (m.bias ? (2 - phi) * h : 0.0) + phi * o.moe.router_params;
  o.embedding_params = m.vocabulary * h + (m.position == Position::learned ? m.sequence * h : 0.0);
  o.head_params = m.tied_embeddings ? 0.0 : m.vocabulary * h;
  if (m.sliding_window > 0) {
    const double s = m.sequence, W = std::min<double>(m.sliding_window, s - 1);
    const double nz_causal = s * (s + 1) / 2, nz_window = W * (W + 1) / 2 + (s - W) * (W + 1);
    const double w = double(m.windowed_layers()) / m.layers;
    o.window_attention_work = w * nz_window / nz_causal;
    o.attention_work = (1 - w) + o.window_attention_work;
  }
  if (m.mtp_layers > 0) {
    // The MTP block is the model's last kind of block: an MoE block when it has experts
    // (DeepSeek-V3's layer 61 in its released weights; Megatron-Core's MTP layer spec).
    ModelConfig b = m;
    b.mtp_layers = 0;
    b.layers = 1;
    b.first_dense_layers = 0;
    b.moe_layer_freq = 1;
    const ModelOps ob = describe_model(b);
    o.mtp.block_linear_flops = ob.linear_flops_per_token;
    const double shared = ob.block_params_split + ob.block_params_replicated;
    o.mtp.block_params = shared + ob.block_expert_params;
    o.mtp.block_active_params =
        shared + (m.moe() ? ob.block_expert_params * ob.moe.top_k / ob.moe.experts : 0.0);
    o.mtp.extra_params = 2 * h * h + 3 * norm;
  }
  return o;
}

double parameter_count(const ModelConfig &m) {
  const ModelOps o = describe_model(m);
  return m.layers * (o.block_params_split + o.block_params_replicated + o.block_expert_params) +
         o.norm_params + o.embedding_params + o.head_params +
         m.mtp_layers * (o.mtp.block_params + o.mtp.extra_params);
}

double active_parameter_count(const ModelConfig &m) {
  const ModelOps o = describe_model(m);
  const double active_experts =
      m.moe() ? o.block_expert_params * o.moe.top_k / o.moe.experts : 0.0;
  return m.layers * (o.block_params_split + o.block_params_replicated + active_experts) +
         o.norm_params + o.embedding_params + o.head_params +
         m.mtp_layers * (o.mtp.block_active_params + o.mtp.extra_params);
}

double padded_vocabulary(double V, int divisible_by, int tp) {
  const double q = static_cast<double>(divisible_by) * tp;
  return q <= 1 ? V : std::ceil(V / q) * q;
}

IterationFlops iteration_flops(const ModelConfig &m, double batch, double vocab, bool full,
                               bool selective, double recompute_layers_fraction) {
  return iteration_flops(describe_model(m), m, batch, vocab, full, selective,
                         recompute_layers_fraction);
}

IterationFlops iteration_flops(const ModelOps &o, const ModelConfig &m, double batch,
                               double vocab, bool full, bool selective,
                               double recompute_layers_fraction) noexcept {
  const double s = m.sequence, h = m.hidden, l = m.layers;
  // QK^T (2 s a d per token) and AV (2 s a d_v), non-causal: 4 s h for multi-head attention
  // Sliding windows: Megatron-LM's formula counts every block's core in full (the `megatron`
  // and `hardware` conventions keep that); `causal` counts the mask's non-zeros
  // (attention_work, 1 without windows).
  const double attn_fwd = 2 * s * o.q_heads * (o.head_dim + o.v_head_dim);
  const double attn_done = attn_fwd * o.attention_work;
  const double block_fwd = o.linear_flops_per_token + attn_fwd;
  const double logits_fwd = 2 * h * vocab;
  const double tokens = batch * s;
  IterationFlops r;
  // Multi-token prediction (Megatron-LM's num_floating_point_operations with --mtp-num-layers):
  // per module its block, the 2h x h projection with the norms counted as 3h, and the logits.
  const double mtp = m.mtp_layers;
  const double mtp_linear = mtp * (o.mtp.block_linear_flops + 2 * (3 * h + 2 * h * h) + logits_fwd);
  r.megatron = 3 * tokens * (l * block_fwd + logits_fwd + mtp_linear + mtp * attn_fwd);
  r.causal = 3 * tokens * (l * (o.linear_flops_per_token + 0.5 * attn_done) + logits_fwd +
                           mtp_linear + mtp * 0.5 * attn_fwd);
  r.hardware = r.megatron;
  if (full)
    r.hardware += tokens * l * recompute_layers_fraction * block_fwd;
  else if (selective)
    r.hardware += tokens * l * attn_fwd;
  return r;
}

} // namespace scalefit::estimator

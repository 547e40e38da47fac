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
  const double kv = g * (h / a); // width of k (and of v)
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
  const double mlp_up_out = (mlp_gated(m.mlp) ? 2 : 1) * f;
  b.inner = kEl * (h + 2 * kv) + kEl * h + (fp8 ? 1.0 * h : 0.0) + kEl * mlp_up_out + lin_in * f;
  // Unfused attention (Megatron 2022): softmax output (2 a s), dropout mask (a s) and dropout
  // output (2 a s) per token; without dropout only the softmax output.
  b.core_per_s = (m.dropout ? 5 : 2) * a;
  b.flash_stats = 4 * a; // one fp32 log-sum-exp per row and head (Dao et al. 2022, Alg. 2)
  return b;
}

} // namespace

ModelOps describe_model(const ModelConfig &m) {
  const double h = m.hidden, f = m.ffn_size(), a = m.heads, g = m.kv_heads_count();
  const double d = h / a, kv = g * d;
  const bool gated = mlp_gated(m.mlp);
  ModelOps o;
  o.q_heads = a;
  o.kv_heads = g;
  o.head_dim = d;
  o.vocabulary = m.vocabulary;
  // Linear layers (Megatron-Core: linear_qkv column, linear_proj row, linear_fc1 column with the
  // gate and up halves fused as h x 2f, linear_fc2 row).
  o.linear[0] = {"QKV", h + 2 * kv, h, TpSplit::column, true};
  o.linear[1] = {"attention projection", h, h, TpSplit::row, false};
  o.linear[2] = {gated ? "MLP gate+up" : "MLP up", (gated ? 2 : 1) * f, h, TpSplit::column, true};
  o.linear[3] = {"MLP down", h, f, TpSplit::row, false};
  for (const LinearOp &l : o.linear) {
    o.linear_flops_per_token += 2 * l.n * l.k;
    o.block_matrix_params += l.n * l.k;
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
    o.elementwise[i++] = {"activation (gated)", 6 * f, 10 * f, Region::inner};
  else
    o.elementwise[i++] = {"activation", 4 * f, 6 * f, Region::inner};
  // RoPE on q and k (Megatron-Core's fused rotary kernel): read and write h + g d each way.
  if (m.position == Position::rope)
    o.elementwise[i++] = {"RoPE", 4 * (h + kv), 4 * (h + kv), Region::inner};
  if (m.fp8) {
    // Transformer Engine, FP8 per-tensor scaling: each linear input is cast to FP8 with its
    // transpose for the weight gradient (read 2, write 1 + 1) unless a norm in front writes it
    // (LayerNormLinear: only the transpose's extra byte); backward casts each output gradient
    // with its transpose (4 B per element of n).
    double fwd_hidden = 0, fwd_inner = 0, bwd_hidden = 0, bwd_inner = 0;
    for (const LinearOp &l : o.linear) {
      const double in = l.input_from_norm ? 1 * l.k : 4 * l.k;
      (l.split == TpSplit::column ? fwd_hidden : fwd_inner) += in;
      (l.split == TpSplit::column ? bwd_inner : bwd_hidden) += 4 * l.n;
    }
    o.elementwise[i++] = {"FP8 casts (hidden)", fwd_hidden, bwd_hidden, Region::hidden};
    o.elementwise[i++] = {"FP8 casts (inner)", fwd_inner, bwd_inner, Region::inner};
  }
  o.n_elementwise = i;
  o.act = block_activations(m, false);
  o.act_fp8 = block_activations(m, true);
  // Parameters. Column-parallel weights and biases are split; a row-parallel layer's bias is
  // added after its reduction and every rank keeps it (Megatron's RowParallelLinear).
  const double norm = m.norm == Norm::layernorm ? 2 * h : h;
  o.norm_params = norm;
  const double qkv_bias = (m.bias || m.qkv_bias) ? h + 2 * kv : 0.0;
  const double up_bias = m.bias ? (gated ? 2 : 1) * f : 0.0;
  o.block_params_split = o.block_matrix_params + qkv_bias + up_bias;
  o.block_params_replicated = 2 * norm + (m.bias ? 2 * h : 0.0);
  o.embedding_params = m.vocabulary * h + (m.position == Position::learned ? m.sequence * h : 0.0);
  o.head_params = m.tied_embeddings ? 0.0 : m.vocabulary * h;
  return o;
}

double parameter_count(const ModelConfig &m) {
  const ModelOps o = describe_model(m);
  return m.layers * (o.block_params_split + o.block_params_replicated) + o.norm_params +
         o.embedding_params + o.head_params;
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
  const double q = o.q_heads * o.head_dim; // query projection size (= h)
  const double attn_fwd = 4 * s * q;       // QK^T and AV per token, non-causal
  const double block_fwd = o.linear_flops_per_token + attn_fwd;
  const double logits_fwd = 2 * h * vocab;
  const double tokens = batch * s;
  IterationFlops r;
  r.megatron = 3 * tokens * (l * block_fwd + logits_fwd);
  r.causal = 3 * tokens * (l * (o.linear_flops_per_token + 0.5 * attn_fwd) + logits_fwd);
  r.hardware = r.megatron;
  if (full)
    r.hardware += tokens * l * recompute_layers_fraction * block_fwd;
  else if (selective)
    r.hardware += tokens * l * attn_fwd;
  return r;
}

} // namespace scalefit::estimator

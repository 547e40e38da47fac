// PyTorch eager (Framework::pytorch): the memory-bound kernels of pytorch_gpt_step.py's step, by
// the byte and kernel counts of constants.hpp, priced by the memory-bound model in use; RMSNorm,
// RoPE and gated MLPs as plain PyTorch model code composes them (constants.hpp, fms).
#include "scalefit/estimator/constants.hpp"
#include "scalefit/estimator/estimator.hpp"

namespace scalefit::estimator {

Estimator::EagerCosts Estimator::eager_costs(double micro_batch, bool bf16_model) const noexcept {
  namespace c = constants;
  const ModelConfig &md = m_model;
  const double h = md.hidden, f = md.ffn_size(), V = md.vocabulary;
  const double T = micro_batch * md.sequence; // tokens
  const double th = T * h, tf = T * f;
  // matrix parameters of one block
  const double w_block = m_ops.block_matrix_params + m_ops.block_matrix_params_replicated;
  // pytorch_gpt_step.py's block: pre-LN with fused LayerNorms (under autocast 8 B per element
  // each way in its forward, 12 in backward; 4 and 6 in a bf16 model) and a fused GELU
  double fwd_th = bf16_model ? c::kEagerBf16FwdBytesPerTh : c::kEagerFwdBytesPerTh;
  double bwd_th = bf16_model ? c::kEagerBf16BwdBytesPerTh : c::kEagerBwdBytesPerTh;
  double fwd_n = (bf16_model ? c::kEagerBf16FwdKernels : c::kEagerFwdKernels) - 1;
  double bwd_n = (bf16_model ? c::kEagerBf16BwdKernels : c::kEagerBwdKernels) - 1;
  const double ln_fwd = bf16_model ? 4 : 8, ln_bwd = bf16_model ? 6 : 12;
  double act_fwd = m_price.mem_s(c::kEagerGeluBytes * tf),
         act_bwd = m_price.mem_s(c::kEagerGeluBwdBytes * tf);
  if (md.norm == Norm::rmsnorm) { // two composite RMSNorms replace the two fused LayerNorms
    fwd_th += 2 * (c::kEagerRmsNormFwdBytes - ln_fwd);
    bwd_th += 2 * (c::kEagerRmsNormBwdBytes - ln_bwd);
    fwd_n += 2 * (c::kEagerRmsNormFwdKernels - 1);
    bwd_n += 2 * (c::kEagerRmsNormBwdKernels - 2);
  }
  double rope_fwd = 0, rope_bwd = 0;
  if (md.position == Position::rope) { // on q (a d) and k (g d) of every token
    const double qk = T * double(md.head_dim()) * (md.heads + md.kv_heads_count());
    rope_fwd = m_price.mem_n_s(c::kEagerRopeFwdKernels, c::kEagerRopeFwdBytes * qk);
    rope_bwd = m_price.mem_n_s(c::kEagerRopeBwdKernels, c::kEagerRopeBwdBytes * qk);
  }
  if (mlp_gated(md.mlp)) { // a(x W_g) * (x W_1): two kernels forward, three backward
    act_fwd = m_price.mem_n_s(c::kEagerGluFwdKernels, c::kEagerGluFwdBytes * tf);
    act_bwd = m_price.mem_n_s(c::kEagerGluBwdKernels, c::kEagerGluBwdBytes * tf);
  }
  // Autocast casts each fp32 weight to bf16 per forward and each bf16 weight gradient to the
  // fp32 .grad (four matrices each way); a bf16 model has none (FSDP casts its fp32 shard,
  // 1/N of the block, before the all-gather: not counted).
  const double casts = bf16_model ? 0.0 : m_price.mem_n_s(4, c::kEagerCastBytesPerParam * w_block);
  EagerCosts e;
  // forward: the elementwise kernels, the MLP activation, RoPE, the weight casts
  e.layer_fwd = m_price.mem_n_s(fwd_n, fwd_th * th) + act_fwd + rope_fwd + casts;
  // backward: the elementwise kernels, the activation's backward, RoPE's, the gradient casts
  e.layer_bwd = m_price.mem_n_s(bwd_n, bwd_th * th) + act_bwd + rope_bwd + casts;
  // head: fp32 cross-entropy over T x V logits, embeddings and final LN, LM head casts
  const double head_params = md.tied_embeddings || bf16_model ? 0.0 : V * h;
  e.head = m_price.mem_n_s(c::kEagerXentKernels, c::kEagerXentBytesPerLogit * T * V) +
           m_price.mem_n_s(c::kEagerEmbedKernels, c::kEagerEmbedBytesPerTh * th + 4 * V * h) +
           (head_params > 0 ? m_price.mem_n_s(2, 2 * c::kEagerCastBytesPerParam * head_params) : 0.0);
  return e;
}

} // namespace scalefit::estimator

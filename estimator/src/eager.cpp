// PyTorch eager (Framework::pytorch): the memory-bound kernels of pytorch_gpt_step.py's step, by
// the byte and kernel counts of constants.hpp, priced by the memory-bound model in use.
#include "scalefit/estimator/constants.hpp"
#include "scalefit/estimator/estimator.hpp"

namespace scalefit::estimator {

Estimator::EagerCosts Estimator::eager_costs(double micro_batch) const noexcept {
  namespace c = constants;
  const ModelConfig &md = m_model;
  const double h = md.hidden, f = md.ffn_size(), V = md.vocabulary;
  const double T = micro_batch * md.sequence; // tokens
  // A gated MLP's element-wise kernel moves 6 B per inner element where GeLU moves 4
  // (architecture.cpp): the same byte counts at 1.5x the elements.
  const double th = T * h, tf = T * f * (mlp_gated(md.mlp) ? 1.5 : 1.0);
  // matrix parameters of one block
  const double w_block = m_ops.block_matrix_params + m_ops.block_matrix_params_replicated;
  EagerCosts e;
  // forward: the elementwise kernels, GELU, four weight casts
  e.layer_fwd = m_price.mem_n_s(c::kEagerFwdKernels - 1, c::kEagerFwdBytesPerTh * th) +
                m_price.mem_s(c::kEagerGeluBytes * tf) + m_price.mem_n_s(4, c::kEagerCastBytesPerParam * w_block);
  // backward: the elementwise kernels, GELU backward, four gradient casts to the fp32 .grad
  e.layer_bwd = m_price.mem_n_s(c::kEagerBwdKernels - 1, c::kEagerBwdBytesPerTh * th) +
                m_price.mem_s(c::kEagerGeluBwdBytes * tf) +
                m_price.mem_n_s(4, c::kEagerCastBytesPerParam * w_block);
  // head: fp32 cross-entropy over T x V logits, embeddings and final LN, LM head casts
  const double head_params = md.tied_embeddings ? 0.0 : V * h;
  e.head = m_price.mem_n_s(c::kEagerXentKernels, c::kEagerXentBytesPerLogit * T * V) +
           m_price.mem_n_s(c::kEagerEmbedKernels, c::kEagerEmbedBytesPerTh * th + 4 * V * h) +
           (head_params > 0 ? m_price.mem_n_s(2, 2 * c::kEagerCastBytesPerParam * head_params) : 0.0);
  return e;
}

} // namespace scalefit::estimator

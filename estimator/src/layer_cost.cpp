// Steps 2 and 3 for one block: the layout's shapes of each operation (TP splits, SP, CP tokens)
// priced on one GPU (estimator.hpp, detail.hpp LayerCost).
#include "detail.hpp"

#include "scalefit/estimator/constants.hpp"

#include <cmath>

namespace scalefit::estimator {

LayerCost Estimator::layer_cost(const Strategy &st, double T) const noexcept {
  const ModelOps &o = m_ops;
  const ComputePricer &P = m_price;
  const double t = st.tp, s = m_model.sequence, b = st.micro_batch, cp = st.cp;
  const bool sp = st.sp && st.tp > 1;
  const double k = m_el / 2.0; // byte counts are for 16-bit elements
  const bool fp8 = m_model.fp8;
  LayerCost c;
  // Linear layers: forward (T, n', k'); backward the data gradient (T, k', n') and the weight
  // gradient (k', n', T) at their own shapes (a weight gradient's k is the token count).
  for (int i = 0; i < 4; ++i) {
    const LinearOp &l = o.linear[i];
    const double n = l.split == TpSplit::column ? l.n / t : l.n;
    const double kk = l.split == TpSplit::row ? l.k / t : l.k;
    c.lin_fwd[i] = P.gemm_s(T, n, kk, 1, fp8);
    c.lin_bwd[i] = P.gemm_s(T, kk, n, 1, fp8) + P.gemm_s(kk, n, T, 1, fp8);
    c.gemm_fwd += c.lin_fwd[i];
    c.gemm_bwd += c.lin_bwd[i];
  }
  // Attention core over the rank's a/t query heads and T = b s / cp query tokens against all s
  // keys (ring attention passes the other ranks' keys by, cp.cpp messages).
  const double heads = o.q_heads / t, d = o.head_dim;
  if (m_model.attention == Attention::fused) {
    // One kernel each way, causal half of 4 T s d (a/t) FLOPs forward, 2.5x backward (Dao et
    // al. 2022). Megatron's ring splits it into cp chunk pairs of s / cp keys each (load-balanced:
    // every rank gets the same causal work). A kernel works at the head dimension it was built
    // for (FlashAttention's multiples of 32).
    const double d_kernel =
        std::ceil(d / constants::kFlashHeadDimStep) * constants::kFlashHeadDimStep;
    const double fl = constants::kCausalFraction * 4 * T * s * heads * d_kernel;
    const bool table = st.framework == Framework::megatron;
    const double seq = s / cp;
    c.attn_fwd = P.attention_s(fl, seq, false, table);
    c.attn_bwd = P.attention_s(constants::kFlashBackwardFactor * fl, seq, true, table);
  } else {
    // Megatron 2022: scores and context batched GEMMs; softmax (and dropout) through HBM.
    const double S = b * heads * (s / cp) * s; // score elements
    const double g_attn = 2 * P.bgemm_s(s / cp, s, d, b * heads);
    const double drop = m_model.dropout ? 1.0 : 0.0;
    c.attn_fwd = g_attn + P.mem_s(k * 4 * S) + drop * P.mem_s(k * 5 * S);
    c.attn_bwd = 2 * g_attn + P.mem_s(k * 6 * S) + drop * P.mem_s(k * 5 * S);
  }
  if (st.framework == Framework::pytorch) {
    const EagerCosts ec = eager_costs(T / s);
    c.mem_fwd = ec.layer_fwd;
    c.mem_bwd = ec.layer_bwd;
    return c;
  }
  for (int i = 0; i < o.n_elementwise; ++i) {
    const ElementwiseOp &op = o.elementwise[i];
    const double tokens = op.region == Region::inner ? T / t : (sp ? T / t : T);
    if (op.fwd_bytes > 0)
      c.mem_fwd += P.mem_s(k * op.fwd_bytes * tokens);
    if (op.bwd_bytes > 0)
      c.mem_bwd += P.mem_s(k * op.bwd_bytes * tokens);
  }
  return c;
}

} // namespace scalefit::estimator

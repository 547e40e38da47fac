// Steps 2 and 3 for one block: the layout's shapes of each operation (TP splits, SP, CP tokens)
// priced on one GPU (estimator.hpp, detail.hpp LayerCost).
#include "detail.hpp"

#include "scalefit/estimator/constants.hpp"

#include <cmath>

namespace scalefit::estimator {

// Reads of the layout only what LayerCostKey (detail.hpp) holds: tp, sp, micro_batch, cp (and T),
// the active recompute modules, ep, the expert TP degree, moe_imbalance, framework, the
// attention backend, the FP8 recipe, eager_bf16_model, moe_fused_grouped_mlp and the MoE
// dispatcher. A new read must join the key, or search's cache prices layouts with a stale block.
LayerCost Estimator::layer_cost(const Strategy &st, double T) const noexcept {
  const ModelOps &o = m_ops;
  const ComputePricer &P = m_price;
  const double t = st.tp, s = m_model.sequence, b = st.micro_batch, cp = st.cp;
  const bool sp = st.sp && st.tp > 1;
  const double k = m_el / 2.0; // byte counts are for 16-bit elements
  const bool fp8 = m_model.fp8;
  // The model dtype's GEMMs (FP8 ones under --dtype fp8); MXFP8's take 1 /
  // mxfp8_relative_efficiency as long as per-tensor FP8's (config.hpp)
  const double g8 = mxfp8_gemm_factor(m_system, st.mxfp8(fp8));
  auto gemm = [&](double m, double n, double kk) { return g8 * P.gemm_s(m, n, kk, 1, fp8); };
  const bool fused_mlp = st.fused_grouped_mlp(fp8); // Transformer Engine's fused grouped MLP
  auto grouped = [&](double m, double n, double kk, double groups) {
    return g8 * P.grouped_gemm_s(m, n, kk, groups, fp8, fused_mlp);
  };
  LayerCost c;
  // Linear layers: forward (T, n', k'); backward the data gradient (T, k', n') and the weight
  // gradient (k', n', T) at their own shapes (a weight gradient's k is the token count).
  // A replicated layer (MLA's down projections) is whole on every rank and runs on the rank's
  // own tokens: T / t with SP, all T without (each TP rank repeats it).
  const double phi = o.moe.fraction; // share of MoE blocks; their MLP is priced below
  for (int i = 0; i < o.n_linear; ++i) {
    const LinearOp &l = o.linear[i];
    const double n = l.split == TpSplit::column ? l.n / t : l.n;
    const double kk = l.split == TpSplit::row ? l.k / t : l.k;
    const double rows = l.split == TpSplit::replicated && sp ? T / t : T;
    const double share = l.mlp ? 1 - phi : 1.0;
    c.lin_fwd[i] = share * gemm(rows, n, kk);
    c.lin_bwd[i] = share * (gemm(rows, kk, n) + gemm(kk, n, rows));
    c.gemm_fwd += c.lin_fwd[i];
    c.gemm_bwd += c.lin_bwd[i];
  }
  const unsigned mods = st.active_recompute_modules(); // --recompute-modules, priced below
  if (phi > 0) {
    // MoE MLP (Megatron-Core MoE layer): the router GEMM on the rank's tokens (T / t with SP),
    // then the rank's E / ep experts as grouped GEMMs over the k-fold routed tokens it receives
    // (balanced: k T/t per rank, times the load imbalance; expert TP etp splits the expert width
    // and gathers its tokens), and the shared experts as a dense TP-split MLP.
    const MoeOps &e = o.moe;
    const double T_tok = st.tp > 1 ? T / t : T;
    const double et = st.expert_tp(), ep = st.ep;
    const double local = e.experts / ep;
    // per local expert; a capacity factor caps (or, padded, fixes) the busiest rank's rows
    const double rows = e.top_k * T_tok * et * e.load(st.moe_imbalance) / local;
    const double h = m_model.hidden;
    double f = P.gemm_s(T_tok, e.experts, h, 1);
    double b = P.gemm_s(T_tok, h, e.experts, 1) + P.gemm_s(h, e.experts, T_tok, 1);
    // grouped GEMMs of `local` experts (the grouped_gemm fit when measured: pricing.hpp)
    f += grouped(rows, e.up_n / et, h, local) + grouped(rows, h, e.f_e / et, local);
    b += grouped(rows, h, e.up_n / et, local) + grouped(h, e.up_n / et, rows, local) +
         grouped(rows, e.f_e / et, h, local) + grouped(e.f_e / et, h, rows, local);
    if (e.f_shared > 0) {
      const double su = (e.up_n / e.f_e) * e.f_shared / t, sd = e.f_shared / t;
      const double shared_fwd = gemm(T, su, h) + gemm(T, h, sd);
      f += shared_fwd;
      b += gemm(T, h, su) + gemm(h, su, T) + gemm(T, sd, h) + gemm(sd, h, T);
      if ((mods & kRecomputeSharedExperts) && !(mods & kRecomputeMoe))
        c.rec_mod_gemm += phi * shared_fwd;
    }
    c.gemm_fwd += phi * f;
    c.gemm_bwd += phi * b;
    // Megatron-Core's all-to-all dispatcher sorts the received rows by local expert after the
    // dispatch and back before the combine (token_dispatcher.py, MoEAlltoAllTokenDispatcher:
    // sort_chunks_by_idxs in dispatch_postprocess and combine_preprocess, when the rank holds
    // more than one expert; with drop-and-pad a transposing copy): two kernels each reading and
    // writing the rank's routed rows (after the expert-TP gather), forward, and their mirror in
    // backward. The flex dispatchers (DeepEP, HybridEP) and the all-gather one hand the experts
    // their rows from one permutation, the block's element-wise "MoE permute" kernels.
    double sort = 0;
    if (st.moe_dispatcher == MoeDispatcher::alltoall && local > 1) {
      sort = P.mem_n_s(2, k * 4 * h * rows * local * 2);
      c.mem_fwd += phi * sort;
      c.mem_bwd += phi * sort;
    }
    if (mods & kRecomputeMoe) {
      // the whole layer's forward again (Megatron-Core's MoELayer checkpoint): router, experts,
      // shared experts, and its memory-bound kernels; the all-to-alls in stage_comm.cpp
      c.rec_mod_gemm += phi * f;
      c.rec_mod_mem += P.mem_s(k * e.mem_fwd * T / t) + phi * sort;
    } else if (mods & kRecomputeMoeAct) { // the activation again: read the up output, write
                                          // its input
      c.rec_mod_mem += phi * P.mem_s(k * 2 * (e.up_n + e.f_e) * rows * local / et);
    }
  }
  // Megatron-Core's selective --recompute-modules: each module's forward once more in backward.
  for (int i = 0; i < o.n_linear; ++i) {
    const LinearOp &l = o.linear[i];
    if (((mods & kRecomputeMlaUpProj) && l.mla_up) || ((mods & kRecomputeMlp) && l.mlp))
      c.rec_mod_gemm += c.lin_fwd[i];
  }
  if (mods & kRecomputeLayernorm) { // MLA's input norm, the MoE blocks' pre-MLP norm
    const double norms = (m_model.mla() ? 1.0 : 0.0) + phi;
    c.rec_mod_mem += norms * P.mem_s(k * 4 * m_model.hidden * (sp ? T / t : T));
  }
  // Attention core over the rank's a/t query heads and T = b s / cp query tokens against all s
  // keys (ring attention passes the other ranks' keys by, cp.cpp messages).
  // Multi-head latent attention: queries and keys of d = nope + rope, values of d_v; the
  // FLOPs are 2 T s (d + d_v) per head (QK^T and AV), priced at the kernel's head dimension d.
  const double heads = o.q_heads / t, d = o.head_dim, dv_ratio = 0.5 * (1 + o.v_head_dim / d);
  if (m_model.attention == Attention::fused) {
    // One kernel each way, causal half of 4 T s d (a/t) FLOPs forward, 2.5x backward (Dao et
    // al. 2022). Megatron's ring splits it into cp chunk pairs of s / cp keys each (load-balanced:
    // every rank gets the same causal work). A kernel works at the head dimension it was built
    // for (FlashAttention's multiples of 32).
    const double d_kernel =
        std::ceil(d / constants::kFlashHeadDimStep) * constants::kFlashHeadDimStep;
    // Sliding windows on a fraction w of the blocks: a windowed block's kernel skips the key
    // tiles outside its window and runs at the window's kernel rate; the terms here are the
    // average block's, (1 - w) full blocks + w windowed ones.
    const double full = constants::kCausalFraction * 4 * T * s * heads * d_kernel * dv_ratio;
    const double w =
        m_model.sliding_window > 0 ? double(m_model.windowed_layers()) / m_model.layers : 0.0;
    const double fl = full * (w < 1 ? (o.attention_work - o.window_attention_work) / (1 - w) : 0.0);
    const double fl_win = w > 0 ? full * o.window_attention_work / w : 0.0;
    // Transformer Engine's kernels under Megatron-Core; PyTorch SDPA's flash backend otherwise
    const AttentionKernel kind = attention_kernel(st);
    const double seq = s / cp;
    // Ring attention (cp > 1, Transformer Engine's AttnFuncWithCP with load-balanced chunk pairs):
    // the step on the rank's own K,V runs the causal kernel over 1/cp of its work; each of the
    // cp - 1 steps on another rank's K,V is unmasked (all Q against the pair's first chunk, or
    // the second half of Q against both), the rest. Backward: the tables' backward row is the
    // unmasked figure already (the FlashAttention-3 paper's Fig. 6 has no causal bars).
    // One call per ring step each way, 1/cp of the work each.
    const double step = fl / cp;
    // FP8 attention (fp8_dot_product_attention): the FP8 or MXFP8 rows, where the device has them
    const bool a8 = st.fp8_attention_kernel(fp8), amx = st.mxfp8(fp8);
    if (w < 1) {
      c.attn_fwd = (1 - w) * (P.attention_s(step, seq, false, kind, false, a8, amx) +
                              (cp - 1) * P.attention_s(step, seq, false, kind, true, a8, amx));
      c.attn_bwd =
          (1 - w) * cp *
          P.attention_s(constants::kFlashBackwardFactor * step, seq, true, kind, false, a8, amx);
    }
    if (w > 0) { // no windows with cp > 1 (Estimator refuses them)
      const double W = m_model.sliding_window;
      c.attn_fwd += w * P.window_attention_s(fl_win, W, seq, false, kind, a8, amx);
      c.attn_bwd += w * P.window_attention_s(constants::kFlashBackwardFactor * fl_win, W, seq, true,
                                             kind, a8, amx);
    }
  } else {
    // Megatron 2022: scores and context batched GEMMs; softmax (and dropout) through HBM.
    const double S = b * heads * (s / cp) * s; // score elements
    // scores (s/cp x s x d) and context (s/cp x d_v x s), the latter priced at the scores' shape
    const double g_attn = 2 * dv_ratio * P.bgemm_s(s / cp, s, d, b * heads);
    const double drop = m_model.dropout ? 1.0 : 0.0;
    c.attn_fwd = g_attn + P.mem_s(k * 4 * S) + drop * P.mem_s(k * 5 * S);
    c.attn_bwd = 2 * g_attn + P.mem_s(k * 6 * S) + drop * P.mem_s(k * 5 * S);
  }
  if (st.framework == Framework::pytorch) {
    const EagerCosts ec = eager_costs(T / s, eager_bf16_model(st));
    c.mem_fwd = ec.layer_fwd;
    c.mem_bwd = ec.layer_bwd;
    return c;
  }
  for (int i = 0; i < o.n_elementwise; ++i) {
    const ElementwiseOp &op = o.elementwise[i];
    const double tokens = op.region == Region::inner ? T / t : (sp ? T / t : T);
    const double fwd = op.fwd_bytes - (fused_mlp ? op.fused_mlp_fwd : 0.0);
    const double bwd = op.bwd_bytes - (fused_mlp ? op.fused_mlp_bwd : 0.0);
    if (fwd > 0)
      c.mem_fwd += P.mem_s(k * fwd * tokens);
    if (bwd > 0)
      c.mem_bwd += P.mem_s(k * bwd * tokens);
  }
  return c;
}

} // namespace scalefit::estimator

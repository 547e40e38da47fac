// Steps 2 and 4 of one layout around its messages (schedule.cpp runs them in order): the
// layout's sizes, its pipeline stages and their shards, the model's ends (embedding, logits,
// loss), the slowest stage's compute terms, and the iteration's FLOPs and throughput.
#include "detail.hpp"

#include <algorithm>
#include <cstdint>

namespace scalefit::estimator {

LayoutSizes Estimator::layout_sizes(const Strategy &st) const noexcept {
  const ModelConfig &md = m_model;
  LayoutSizes z;
  z.s = md.sequence;
  z.h = md.hidden;
  z.b = st.micro_batch;
  z.t = st.tp;
  z.v = st.interleave;
  z.cp = st.cp;
  z.el = m_el;
  z.k = m_el / 2.0;
  z.T = z.b * z.s / z.cp;
  z.m = static_cast<int>(st.batch() / (std::int64_t{st.dp} * st.micro_batch));
  z.p = st.pp;
  z.sp = st.sp && st.tp > 1;
  z.gpn = m_system.gpus_per_node;
  z.eager = st.framework == Framework::pytorch;
  z.full = st.recompute == Recompute::full;
  z.fused = md.attention == Attention::fused;
  // Megatron-Core checkpoints the attention core under selective granularity whatever its
  // backend (attention.py: checkpoint_core_attention -> _checkpointed_attention_forward): a
  // fused or flash kernel's forward runs again in backward as the unfused core's does.
  z.selective = st.recompute_core_attn();
  // Megatron pads the vocabulary to a multiple of 128 t (make-vocab-size-divisible-by).
  z.Vp = padded_vocabulary(md.vocabulary, z.eager ? 1 : 128, st.tp);
  z.T_h = z.sp ? z.T / z.t : z.T;
  return z;
}

int Estimator::shape_stages(const Strategy &st, const LayoutSizes &z, StageCost *stages,
                            int *layers) const noexcept {
  const ModelConfig &md = m_model;
  const ModelOps &o = m_ops;
  const double s = z.s, h = z.h, t = z.t, v = z.v, Vp = z.Vp;
  int &Lf = layers[0], &Lm = layers[1], &Ll = layers[2];
  Lf = Lm = Ll = 0;
  stage_layers(md.layers, st, Lf, Lm, Ll);
  const int p = st.pp;
  const int mtp_blocks = md.mtp_layers; // the MTP modules' blocks run on the last stage
  auto shape_stage = [&](int index, int n_layers, bool first, bool last) {
    StageCost c;
    c.index = index;
    c.layers = n_layers;
    // --recompute-layers N recomputes N blocks of each of the stage's v chunks
    c.recomputed = z.full ? (st.recompute_layers > 0
                                 ? std::min<double>(n_layers, double(st.recompute_layers) * v)
                                 : n_layers)
                          : 0.0;
    if (first) // vocab-parallel embedding (padded V / t rows) and learned positions
      c.params += Vp * h / t + (md.position == Position::learned ? s * h : 0.0);
    if (last) {
      c.params += o.norm_params;
      if (!md.tied_embeddings || !first) // untied head, or the tied copy on the last stage
        c.params += Vp * h / t;
      if (md.mtp_layers > 0) { // the MTP modules' projections and norms (priced below)
        c.params += md.mtp_layers * (2 * h * h / t + 3 * o.norm_params);
        if (!first) // the modules' embedding lookup: the last stage keeps a copy of the table
          c.params += Vp * h / t;
      }
    }
    c.params += n_layers * (o.block_params_split / t + o.block_params_replicated);
    c.matrix_params = n_layers * (o.block_matrix_params / t + o.block_matrix_params_replicated);
    c.expert_params = n_layers * o.block_expert_params / (double(st.ep) * st.expert_tp());
    return c;
  };
  int n = 0;
  if (p == 1) {
    stages[n++] = shape_stage(0, Lf + mtp_blocks, true, true);
  } else {
    stages[n++] = shape_stage(0, Lf, true, false);
    if (p > 2)
      stages[n++] = shape_stage(1, Lm, false, false);
    stages[n++] = shape_stage(p - 1, Ll + mtp_blocks, false, true);
  }
  return n;
}

EndsCost Estimator::ends_cost(const Strategy &st, const LayoutSizes &z) const noexcept {
  const ComputePricer &P = m_price;
  const double T = z.T, h = z.h, t = z.t, Vp = z.Vp, k = z.k, T_h = z.T_h;
  const EagerCosts ec = z.eager ? eager_costs(T / z.s, eager_bf16_model(st)) : EagerCosts{};
  EndsCost r;
  // Logits (the output layer stays in 16-bit under FP8, as Megatron-Core's output_layer, unless
  // fp8_output_proj runs it under MXFP8, priced as the blocks' MXFP8 GEMMs) and the loss:
  // unfused vocab-parallel cross-entropy passes over fp32 logits (12 B per logit forward and
  // backward together, two kernels); fused reads bf16 logits once each way (4 B).
  const bool head8 = st.mxfp8_lm_head(m_model.fp8);
  const double g8 = mxfp8_gemm_factor(m_system, head8);
  r.logits_gemm = g8 * (P.gemm_s(T, Vp / t, h, 1, head8) + P.gemm_s(T, h, Vp / t, 1, head8) +
                        P.gemm_s(h, Vp / t, T, 1, head8));
  const double logit_el = T * Vp / t;
  r.xent =
      z.eager ? ec.head : (st.fused_ce ? 2 * P.mem_s(4 * logit_el) : 2 * P.mem_s(4 * 3 * logit_el));
  // Embedding lookup and its gradient scatter, final norm (megatron; eager prices them in head).
  r.embed = z.eager ? 0.0 : P.mem_s(k * 4 * h * T_h) + P.mem_s(4 * 2 * h * T_h);
  r.fnorm = z.eager ? 0.0 : P.mem_s(k * 4 * h * T_h) + P.mem_s(k * 6 * h * T_h);
  // Multi-token prediction's 2h x h projection (forward, data and weight gradient) per module.
  r.mtp_proj = m_model.mtp_layers > 0
                   ? P.gemm_s(T, h / t, 2 * h, 1) + P.gemm_s(T, 2 * h, h / t, 1) +
                         P.gemm_s(2 * h, h / t, T, 1)
                   : 0.0;
  return r;
}

void Estimator::compute_terms(const Strategy &st, const LayoutSizes &z, const StageCost &c,
                              const LayerCost &lc, const EndsCost &ends, double optimizer_s,
                              Estimate &e) const noexcept {
  const ModelConfig &md = m_model;
  const ComputePricer &P = m_price;
  const int m = z.m;
  const double rec = c.recomputed;
  const double rec_sel = z.selective ? lc.attn_fwd : 0.0;
  const bool first = c.index == 0, last = c.index == z.p - 1;
  const double nL = c.layers;
  e.terms[0] = {"layer GEMMs",
                m * (nL * (lc.gemm_fwd + lc.gemm_bwd + lc.rec_mod_gemm) + rec * lc.gemm_fwd),
                st.mxfp8(md.fp8) ? P.src_gemm8_mx.c_str() : gemm_source().c_str()};
  e.terms[1] = {!z.fused                                         ? "attention (unfused)"
                : attention_kernel(st) == AttentionKernel::flash ? "attention (flash)"
                                                                 : "attention (fused)",
                m * (nL * (lc.attn_fwd + lc.attn_bwd + rec_sel) + rec * lc.attn_fwd),
                z.fused ? P.attention_source(attention_kernel(st), st.fp8_attention_kernel(md.fp8),
                                             st.mxfp8(md.fp8))
                              .c_str()
                        : P.src_attn.c_str()};
  e.terms[2] = {"memory-bound (layers)",
                m * (nL * (lc.mem_fwd + lc.mem_bwd + lc.rec_mod_mem) + rec * lc.mem_fwd),
                P.src_mem.c_str()};
  const double heads = 1.0 + md.mtp_layers; // output heads and losses on the last stage
  e.terms[3] = {md.mtp_layers ? "logits GEMMs, MTP projections" : "logits GEMMs",
                last ? m * (heads * ends.logits_gemm + md.mtp_layers * ends.mtp_proj) : 0.0,
                st.mxfp8_lm_head(md.fp8) ? P.src_gemm8_mx.c_str() : P.src_gemm.c_str()};
  e.terms[4] = {z.eager ? "cross-entropy, embeddings" : "cross-entropy",
                last ? m * heads * ends.xent : 0.0, P.src_mem.c_str()};
  e.terms[5] = {md.fp8 ? "optimizer, FP8 weight casts" : "optimizer", optimizer_s,
                P.src_mem.c_str()};
  e.terms[6] = {"embedding, final norm",
                m * ((first ? ends.embed : 0.0) +
                     (last ? ends.fnorm + md.mtp_layers * (2 * ends.fnorm + ends.embed) : 0.0)),
                P.src_mem.c_str()};
}

void Estimator::throughput(const Strategy &st, const LayoutSizes &z, const StageCost *stages,
                           int n_stages, Estimate &e) const noexcept {
  const ModelConfig &md = m_model;
  const ModelOps &o = m_ops;
  const ComputePricer &P = m_price;
  const double n_gpus = static_cast<double>(st.gpus());
  const double B = static_cast<double>(st.batch());
  const double frac =
      z.full && st.recompute_layers > 0
          ? std::min(1.0, double(st.recompute_layers) * z.v * z.p / double(md.layers))
          : 1.0;
  const IterationFlops fl =
      iteration_flops(m_ops, md, B, z.Vp, z.full, st.recompute_core_attn(), frac);
  e.params = m_params;
  e.active_params = m_active_params;
  e.params_per_gpu = 0;
  for (int i = 0; i < n_stages; ++i)
    e.params_per_gpu = std::max(e.params_per_gpu, stages[i].params + stages[i].expert_params);
  e.vocab_padded = z.Vp;
  e.model_flops = fl.megatron;
  e.model_flops_causal = fl.causal;
  e.hardware_flops = fl.hardware;
  // Selective --recompute-modules: the recomputed modules' GEMMs once more per token and block
  // (2 n k per token of each linear; the MLP's for the dense blocks' share, the shared experts'
  // for the MoE blocks').
  if (const unsigned mods = st.active_recompute_modules()) {
    double per_token = 0;
    for (int i = 0; i < o.n_linear; ++i) {
      const LinearOp &l = o.linear[i];
      if ((mods & kRecomputeMlaUpProj) && l.mla_up)
        per_token += 2 * l.n * l.k;
      if ((mods & kRecomputeMlp) && l.mlp)
        per_token += (1 - o.moe.fraction) * 2 * l.n * l.k;
    }
    const double shared_fwd =
        o.moe.f_shared > 0 ? 2 * md.hidden * o.moe.f_shared * (o.moe.up_n / o.moe.f_e + 1) : 0.0;
    if (mods & kRecomputeMoe) // router, k routed experts and the shared ones again
      per_token +=
          o.moe.fraction * (2 * md.hidden * o.moe.experts +
                            2 * o.moe.top_k * (o.moe.up_n + o.moe.f_e) * md.hidden + shared_fwd);
    else if (mods & kRecomputeSharedExperts)
      per_token += o.moe.fraction * shared_fwd;
    e.hardware_flops += per_token * B * md.sequence * md.layers;
  }
  const double it = e.time_s.iteration;
  e.tflops_per_gpu = e.hardware_flops / (n_gpus * it) * 1e-12;
  // MFU over the peak of the GEMMs' precision: the FP8 peak under FP8, as NVIDIA's DGX Cloud
  // benchmarking tables state (tests/data/published-runs).
  e.mfu = e.model_flops / (n_gpus * it * (md.fp8 && P.peak_fp8() > 0 ? P.peak_fp8() : P.peak()));
  e.samples_per_s = B / it;
}

} // namespace scalefit::estimator

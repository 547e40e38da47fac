// The per-micro-batch messages of a pipeline stage: TP (with SP), CP (ring attention), PP,
// EP (MoE token dispatch) and activation offloading, and the part compute hides (messages.hpp).
#include "messages.hpp"

#include "detail.hpp"

#include <algorithm>
#include <cmath>

namespace scalefit::estimator {

StageComm::StageComm(MessageSink &sink_, const Strategy &st_, const LayoutSizes &z,
                     const ModelConfig &md, const ModelOps &o_, const LayerCost &lc_,
                     const ComputePricer &P, const SystemConfig &sys)
    : sink(sink_), st(st_), o(o_), lc(lc_), sp(z.sp), m(z.m), p(z.p), v(z.v), cp(z.cp) {
  const double T = z.T, h = z.h, t = z.t, el = z.el;
  const int gpn = z.gpn;
  g_tp = group_shape(st.tp, 1, gpn);
  g_cp = group_shape(st.cp, st.tp, gpn);
  // A stage boundary: two ranks stride tp cp dp apart. When the pp stages do not fit in one
  // node (NVLink domain) together, some boundaries cross nodes, and the stage sending over the
  // NICs paces the whole pipeline (every micro-batch crosses every boundary): price every
  // boundary so.
  const int pp_stride = st.tp * st.cp * st.dp;
  g_pp = std::int64_t{pp_stride} * st.pp > gpn ? group_shape(2, std::max(pp_stride, gpn), gpn)
                                               : group_shape(2, pp_stride, gpn);
  tp_bytes = T * h * el;
  // (MLA: the per-head keys of nope + rope and values of v_dim, as Megatron-Core's ring
  // attention passes them; not the latents)
  kv_bytes = T * std::max(1.0, o.kv_heads / t) * (o.head_dim + o.v_head_dim) * el;
  pp_bytes = T * h * el / (st.pp_scatter_gather && st.tp > 1 ? t : 1.0);
  // Ring attention (Megatron-Core's p2p context parallelism; Liu et al. 2023): cp - 1 exchanges
  // of the K,V chunk forward and of K,V and their gradients backward, each behind one chunk of
  // attention compute.
  cp_f = sink.one(Op::sendrecv, g_cp, kv_bytes);
  cp_b = sink.one(Op::sendrecv, g_cp, 2 * kv_bytes);
  cp_hidden_f = std::min(cp_f, lc.attn_fwd / cp);
  // Fraction of an overlapped collective that compute really hides (the system's
  // communication.overlap_efficiency; collectives running beside GEMMs share SMs and HBM). Not
  // applied to the ring's send/recv, hidden whole up to the attention step beside it
  // (config.hpp, SystemConfig::overlap_efficiency).
  ov = sys.overlap_efficiency;
  // One block collective of TP (AllGather or ReduceScatter with SP; AllReduce without).
  const double tp_unit =
      st.tp > 1 ? sink.one(sp ? Op::allgather : Op::allreduce, g_tp, tp_bytes) : 0.0;
  cp_hidden_b = std::min(cp_b, lc.attn_bwd / cp);
  // TP overlap (Transformer Engine's userbuffers, --tp-comm-overlap): each block collective is
  // split into chunks pipelined with the GEMM it feeds or follows (all-gather with QKV and MLP
  // up, reduce-scatter with the projection and MLP down; backward the same pairs with the data
  // and weight gradients), so it hides behind that GEMM and no more. Per block, and per
  // recomputed block (its forward again).
  if (st.overlap_tp && st.tp > 1) {
    for (int i = 0; i < o.n_linear; ++i) {
      // backward of a column-parallel layer: ReduceScatter of the data gradient and (SP) the
      // input re-gather; of a row-parallel layer: the AllGather of the output gradient; a
      // replicated layer (MLA's down projections) has no TP collective of its own
      if (o.linear[i].split == TpSplit::replicated)
        continue;
      const bool column = o.linear[i].split == TpSplit::column;
      const double bwd_units = column && sp ? 2.0 : 1.0;
      tp_hide_block +=
          std::min(tp_unit, lc.lin_fwd[i]) + std::min(bwd_units * tp_unit, lc.lin_bwd[i]);
      tp_hide_rec += std::min(tp_unit, lc.lin_fwd[i]);
    }
    if (!sp) // only the two row-parallel AllReduces per direction exist (half the pairs)
      tp_hide_block *= 0.5;
  }
  // Unit prices of one operation of each kind [s] (the same on every stage).
  u_ag = st.tp > 1 && sp ? sink.one(Op::allgather, g_tp, tp_bytes) : 0.0;
  u_rs = st.tp > 1 && sp ? sink.one(Op::reducescatter, g_tp, tp_bytes) : 0.0;
  u_ar = st.tp > 1 && !sp ? sink.one(Op::allreduce, g_tp, tp_bytes) : 0.0;
  u_pp = st.pp > 1 ? sink.one(Op::sendrecv, g_pp, pp_bytes) : 0.0;
  g_ep = group_shape(st.ep, st.expert_tp(), gpn);
  // (the busiest rank's share: imbalance, capped by a capacity factor or padded to it)
  // DeepEP and HybridEP send a token to another node once, however many of its k experts live
  // there, and forward it over NVLink (DeepEP's README: NVLink and RDMA forwarding; HybridEP the
  // same): the inter-node bytes of the all-to-all shrink by the node dedup ratio.
  const bool node_dedup =
      st.moe_dispatcher == MoeDispatcher::deepep || st.moe_dispatcher == MoeDispatcher::hybridep;
  ep_bytes =
      md.moe() && st.ep > 1
          ? o.moe.top_k * (st.tp > 1 ? T / t : T) * h * el * o.moe.load(st.moe_imbalance) *
                (node_dedup ? node_dedup_ratio(o.moe.experts, o.moe.top_k, g_ep.nnodes) : 1.0)
          : 0.0;
  u_ep = ep_bytes > 0 ? sink.one(Op::alltoall, g_ep, ep_bytes) : 0.0;
  // The all-gather dispatcher (Megatron-Core MoEAllGatherTokenDispatcher): per MoE block and
  // direction one AllGather of the hidden states of the ep x etp ranks (every rank then holds the
  // group's tokens, each once: no factor k) and one ReduceScatter of the experts' outputs; the
  // whole gathered buffer is nccl-tests' size. Not hidden behind the shared experts (Megatron-Core
  // overlaps them with the all-to-all dispatcher only).
  const bool ag_dispatch = st.moe_dispatcher == MoeDispatcher::allgather;
  g_epg = group_shape(st.ep * st.expert_tp(), 1, gpn);
  ag_bytes = ag_dispatch && ep_bytes > 0
                 ? double(st.ep) * st.expert_tp() * (st.tp > 1 ? T / t : T) * h * el
                 : 0.0;
  u_agd = ag_bytes > 0 ? sink.one(Op::allgather, g_epg, ag_bytes) : 0.0;
  u_rsd = ag_bytes > 0 ? sink.one(Op::reducescatter, g_epg, ag_bytes) : 0.0;
  // Which frameworks hide the dispatch/combine behind compute: Megatron-Core's
  // --moe-shared-expert-overlap (shared_experts.py: the shared expert's fc1 runs on its own
  // stream while the dispatch all-to-all moves the routed tokens, its fc2 while the combine
  // does, forward and backward; off by default) is modeled here (Strategy::
  // moe_shared_expert_overlap): per MoE block and direction the two all-to-alls hide behind the
  // shared expert's GEMMs and no more. Megatron-Core's --overlap-moe-expert-parallel-comm
  // (Strategy::moe_a2a_overlap; MoE README "EP A2A Overlap": the forward and backward passes of
  // adjacent micro-batches merged, one's dispatch and combine behind the other's compute) hides
  // them behind the stage's block compute of a micro-batch, forward and backward, and no more
  // (price below). Not modeled: DeepSeek's DualPipe (forward and backward chunks of two
  // micro-batches interleaved so that all-to-all and PP traffic hide behind compute; DeepSeek-V3,
  // arXiv 2412.19437, Sec. 3.2.1).
  if (u_ep > 0 && !ag_dispatch && st.moe_shared_expert_overlap && o.moe.f_shared > 0) {
    const bool fp8 = md.fp8;
    const double su = (o.moe.up_n / o.moe.f_e) * o.moe.f_shared / t, sd = o.moe.f_shared / t;
    // the shared experts' GEMMs as layer_cost prices them (a TP-split dense MLP on T tokens)
    const double sh_f = P.gemm_s(T, su, h, 1, fp8) + P.gemm_s(T, h, sd, 1, fp8);
    const double sh_b = P.gemm_s(T, h, su, 1, fp8) + P.gemm_s(h, su, T, 1, fp8) +
                        P.gemm_s(T, sd, h, 1, fp8) + P.gemm_s(sd, h, T, 1, fp8);
    ep_hide_f = std::min(2 * u_ep, sh_f);
    ep_hide_b = std::min(2 * u_ep, sh_b);
  }
  // Activation CPU offloading (Megatron-Core --cpu-offloading-num-layers, Transformer Engine's
  // cpu_offload with its double buffer): an offloaded block's saved activations leave for host
  // memory on a copy stream while the next block runs forward, and come back while the block
  // after it (in backward order) runs backward; what a copy takes beyond that compute is exposed.
  // One copy each way per offloaded block and micro-batch over the GPU's host link.
  // FP8 delayed scaling (Transformer Engine's DelayedScaling): Megatron-Core runs each model
  // chunk's blocks in one fp8_autocast whose fp8_group is get_amax_reduction_group(with CP), the
  // TP x DP x CP ranks of the stage (contiguous in Megatron's order: stride 1). When the chunk's
  // forward leaves the autocast, and when its backward finishes the first FP8 module, the chunk's
  // amaxes are all-reduced (MAX) with async_op=False on the compute stream (TE v1.10 fp8.py
  // reduce_and_update_fp8_tensors): latency-bound messages on the critical path, never hidden.
  // Current scaling, MXFP8 and blockwise scaling reduce no amax history.
  amax_reduce = md.fp8 && st.fp8_recipe == Fp8Recipe::delayed;
  if (amax_reduce)
    g_amax = group_shape(st.tp * st.cp * st.dp, 1, gpn);
  if (st.offload_layers > 0 && sys.host.bandwidth_gbps > 0) {
    const CommTier &hl = sys.host;
    const double bytes = activation_bytes_per_layer(o, md, st.micro_batch, st.tp, sp,
                                                    Recompute::none, st.cp, st.moe_imbalance);
    off_xfer = hl.latency_us * 1e-6 + bytes / (hl.bandwidth_gbps * 1e9 * hl.efficiency);
  }
}

void StageComm::price(StageCost &c, bool record) {
  sink.record = record;
  const double rec = c.recomputed;
  double tp = 0, cpc = 0, cph = 0, ppc = 0;
  const bool first = c.index == 0, last = c.index == p - 1;
  const double ends = (first ? 1.0 : 0.0) + (last ? 1.0 : 0.0);
  // TP: per block and micro-batch 2 forward + 2 backward AllReduce of b s h (Megatron), or
  // ReduceScatter + AllGather pairs with SP; recomputed blocks repeat the forward ones; the
  // embedding output and the logits' input gradient add one each on their stages. With SP the
  // column-parallel layers keep their input sharded and all-gather it again in backward for
  // the weight gradient (Korthikanti et al. 2022, Sec. 4.2.2): 6 AllGathers and 4
  // ReduceScatters per block.
  const double n = 4 * c.layers + 2 * rec;
  if (st.tp > 1 && !record) {
    tp = sp ? (n + 2 * c.layers) * u_ag + (n + ends) * u_rs : (n + ends) * u_ar;
  } else if (st.tp > 1) {
    if (sp) {
      tp += sink.add(Op::allgather, Parallelism::tp, "layer activations (SP)", tp_bytes, g_tp,
                     m * (n + 2 * c.layers)) /
            m;
      tp += sink.add(Op::reducescatter, Parallelism::tp, "layer activations (SP)", tp_bytes, g_tp,
                     m * n) /
            m;
    } else {
      tp +=
          sink.add(Op::allreduce, Parallelism::tp, "layer activations", tp_bytes, g_tp, m * n) / m;
    }
    tp += sink.add(sp ? Op::reducescatter : Op::allreduce, Parallelism::tp, "embedding/logits",
                   tp_bytes, g_tp, m * ends) /
          m;
  }
  if (st.cp > 1) {
    const double steps = cp - 1;
    const double nf = (c.layers + rec) * steps, nb = c.layers * steps;
    if (record) {
      cpc += sink.add(Op::sendrecv, Parallelism::cp, "K,V chunks (ring, forward)", kv_bytes, g_cp,
                      m * nf) /
             m;
      cpc += sink.add(Op::sendrecv, Parallelism::cp, "K,V and gradients (ring, backward)",
                      2 * kv_bytes, g_cp, m * nb) /
             m;
    } else {
      cpc = nf * cp_f + nb * cp_b;
    }
    cph = nf * cp_hidden_f + nb * cp_hidden_b;
  }
  if (st.pp > 1)
    ppc = record ? sink.add(Op::sendrecv, Parallelism::pp, "stage boundary (fwd+bwd)", pp_bytes,
                            g_pp, 2 * v * m) /
                       m
                 : 2 * v * u_pp;
  // Megatron-Core's interleaved schedule with overlap_p2p_comm (schedules.py,
  // forward_backward_pipelining_with_interleaving): in the steady state each chunk's send/recv is
  // posted asynchronously and waited on only before the chunk that needs it, so it runs beside
  // compute; the warmup's forward transfers and the flush's backward ones wait
  // (overlap_p2p_comm_warmup_flush off). Stage r warms up with (pp - r - 1) 2 + (v - 1) pp of its
  // v m chunk passes; the same share of the backward ones is in the flush.
  double pp_hidden = 0;
  if (st.pp > 1 && v > 1 && st.overlap_p2p_comm) {
    const double chunks = double(v) * m;
    const double warmup = std::min(chunks, 2.0 * (p - c.index - 1) + double(v - 1) * p);
    pp_hidden = std::min(ppc * (1.0 - warmup / chunks), c.fwd + c.bwd);
  }
  // EP: Megatron-Core's all-to-all token dispatcher, per MoE block and micro-batch a dispatch
  // and a combine of the rank's k routed tokens (k T/t h elements) forward, the same two
  // backward, and again for a recomputed block; hidden only behind the shared expert with
  // --moe-shared-expert-overlap (above).
  double epc = 0, ep_hidden = 0;
  // the "moe" recompute module runs each MoE layer's dispatch and combine again in backward
  const double moe_rec = (st.active_recompute_modules() & kRecomputeMoe) ? c.layers : 0.0;
  if (ag_bytes > 0) {
    const double n_each = o.moe.fraction * (2 * c.layers + rec + moe_rec);
    epc = record ? (sink.add(Op::allgather, Parallelism::ep, "token dispatch (all-gather)",
                             ag_bytes, g_epg, m * n_each) +
                    sink.add(Op::reducescatter, Parallelism::ep, "token combine (reduce-scatter)",
                             ag_bytes, g_epg, m * n_each)) /
                       m
                 : n_each * (u_agd + u_rsd);
  } else if (ep_bytes > 0) {
    const double n_a2a = o.moe.fraction * (4 * c.layers + 2 * (rec + moe_rec));
    epc = record ? sink.add(Op::alltoall, Parallelism::ep, "token dispatch/combine", ep_bytes, g_ep,
                            m * n_a2a) /
                       m
                 : n_a2a * u_ep;
    ep_hidden =
        std::min(epc, o.moe.fraction * ((c.layers + rec) * ep_hide_f + c.layers * ep_hide_b));
    if (st.moe_a2a_overlap) {
      // Megatron-Core's combined 1F1B (a2a_pairs_hidden, detail.hpp). Attention: the core and
      // the non-MLP linear layers; MLP: the rest of the block (the MoE layer, norms and
      // element-wise kernels).
      double attn_f = lc.attn_fwd, attn_b = lc.attn_bwd;
      for (int i = 0; i < o.n_linear; ++i)
        if (!o.linear[i].mlp) {
          attn_f += lc.lin_fwd[i];
          attn_b += lc.lin_bwd[i];
        }
      const double mlp_f = std::max(0.0, lc.fwd() - attn_f);
      const double mlp_b = std::max(0.0, lc.bwd() - attn_b);
      ep_hidden = std::min(epc, o.moe.fraction * c.layers *
                                    a2a_pairs_hidden(u_ep, attn_f, attn_b, mlp_f, mlp_b));
    }
  }
  // FP8 amax all-reduces: one each way per model chunk (v per stage) and micro-batch, of the
  // chunk's amaxes in fp32: 3 per GEMM forward (input, weight, output), 2 backward (the output
  // and input gradients), for the block's linear layers (TE fp8_meta scaling_fwd / scaling_bwd).
  double amax = 0;
  if (amax_reduce && g_amax.nranks > 1 && c.layers > 0) {
    const double blocks = c.layers / v; // per model chunk
    const double bf = 4.0 * 3 * o.n_linear * blocks, bb = 4.0 * 2 * o.n_linear * blocks;
    if (record) {
      amax += sink.add(Op::allreduce, Parallelism::dp, "FP8 amax (delayed scaling, forward)", bf,
                       g_amax, m * v) /
              m;
      amax += sink.add(Op::allreduce, Parallelism::dp, "FP8 amax (delayed scaling, backward)", bb,
                       g_amax, m * v) /
              m;
    } else {
      amax = v * (sink.one(Op::allreduce, g_amax, bf) + sink.one(Op::allreduce, g_amax, bb));
    }
  }
  const double n_off = std::min<double>(st.offload_layers, c.layers);
  const double offc = 2 * n_off * off_xfer;
  // copy engines, not SMs: hidden up to the compute beside them
  const double off_hidden = n_off * (std::min(off_xfer, lc.fwd()) + std::min(off_xfer, lc.bwd()));
  c.comm = tp + cpc + ppc + epc + offc + amax;
  c.amax = amax;
  sink.e.comm_ep_s = epc * m;
  sink.e.comm_offload_s = offc * m;
  const double tp_hidden = std::min(tp, c.layers * tp_hide_block + rec * tp_hide_rec);
  c.comm_hidden = ov * (tp_hidden + ep_hidden + pp_hidden) + cph + off_hidden;
  sink.e.comm_tp_s = tp * m;
  sink.e.comm_cp_s = cpc * m;
  sink.e.comm_pp_s = ppc * m;
}

} // namespace scalefit::estimator

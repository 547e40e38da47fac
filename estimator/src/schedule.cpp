// Steps 2-4 for one layout: pipeline stages, the messages of TP, CP, PP and DP/ZeRO/FSDP
// (Megatron placement: TP innermost, then CP, then DP, then PP), and the schedule that turns
// priced terms into Lu et al.'s T_cp, T_cm, T_ol, T_sd.
#include "detail.hpp"
#include "messages.hpp"

#include "scalefit/estimator/constants.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace scalefit::estimator {

void Estimator::evaluate(const Strategy &st, Estimate &e, bool messages) const noexcept {
  evaluate_impl(st, e, messages, false, nullptr);
}

bool Estimator::evaluate_fitting(const Strategy &st, Estimate &e,
                                 LayerCostCache *cache) const noexcept {
  evaluate_impl(st, e, false, true, cache);
  return e.fits_memory;
}

namespace {
/// The block's pricing of `st` at `T` tokens from `cache` when priced before, else `price()`
/// kept in its slot (replacing the block there).
template <class Price>
LayerCost cached_layer_cost(const Strategy &st, double T, LayerCostCache &cache, Price &&price) {
  LayerCostKey key;
  key.tp = st.tp;
  key.micro_batch = st.micro_batch;
  key.cp = st.cp;
  key.ep = st.ep;
  key.expert_tp = st.expert_tp();
  key.sp = st.sp && st.tp > 1;
  key.recompute_modules = st.active_recompute_modules();
  key.moe_imbalance = st.moe_imbalance;
  key.tokens = T;
  key.framework = st.framework;
  std::uint64_t hash = 1469598103934665603ull; // FNV-1a over the integer fields
  for (const std::uint64_t v :
       {std::uint64_t(key.tp), std::uint64_t(key.micro_batch), std::uint64_t(key.cp),
        std::uint64_t(key.ep), std::uint64_t(key.expert_tp), std::uint64_t(key.sp),
        std::uint64_t(key.recompute_modules), std::uint64_t(key.framework)})
    hash = (hash ^ v) * 1099511628211ull;
  LayerCostCache::Slot &slot = cache.slots[hash % LayerCostCache::kSlots];
  if (slot.used && slot.key == key) {
    ++cache.hits;
    return slot.cost;
  }
  ++cache.misses;
  slot.used = true;
  slot.key = key;
  slot.cost = price();
  return slot.cost;
}
} // namespace

void Estimator::evaluate_impl(const Strategy &st, Estimate &e, bool messages, bool memory_first,
                              LayerCostCache *cache) const noexcept {
  const ModelConfig &md = m_model;
  const ComputePricer &P = m_price;
  const double s = md.sequence, h = md.hidden;
  const double b = st.micro_batch, t = st.tp, v = st.interleave, cp = st.cp;
  const double el = m_el, k = el / 2.0;
  const double T = b * s / cp; // tokens of a micro-batch on one rank
  const int m = static_cast<int>(st.batch() / (std::int64_t{st.dp} * st.micro_batch));
  const bool sp = st.sp && st.tp > 1;
  const int gpn = m_system.gpus_per_node;
  const bool eager = st.framework == Framework::pytorch;
  const bool full = st.recompute == Recompute::full;
  const bool fused = md.attention == Attention::fused;
  const bool selective = st.recompute_core_attn() && !fused;
  // Megatron pads the vocabulary to a multiple of 128 t (make-vocab-size-divisible-by).
  const double Vp = padded_vocabulary(md.vocabulary, eager ? 1 : 128, st.tp);
  const ModelOps &o = m_ops;

  // --- Stages: first, one middle, last (step 2): their shards, which memory needs ---
  int Lf = 0, Lm = 0, Ll = 0;
  stage_layers(md.layers, st, Lf, Lm, Ll);
  const int p = st.pp;
  const int mtp_blocks = md.mtp_layers; // the MTP modules' blocks run on the last stage
  StageCost stages[3];
  int n_stages = 0;
  auto shape_stage = [&](int index, int layers, bool first, bool last) {
    StageCost c;
    c.index = index;
    c.layers = layers;
    // --recompute-layers N recomputes N blocks of each of the stage's v chunks
    c.recomputed =
        full ? (st.recompute_layers > 0 ? std::min<double>(layers, double(st.recompute_layers) * v)
                                        : layers)
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
    c.params += layers * (o.block_params_split / t + o.block_params_replicated);
    c.matrix_params = layers * (o.block_matrix_params / t + o.block_matrix_params_replicated);
    c.expert_params = layers * o.block_expert_params / (double(st.ep) * st.expert_tp());
    return c;
  };
  if (p == 1) {
    stages[n_stages++] = shape_stage(0, Lf + mtp_blocks, true, true);
  } else {
    stages[n_stages++] = shape_stage(0, Lf, true, false);
    if (p > 2)
      stages[n_stages++] = shape_stage(1, Lm, false, false);
    stages[n_stages++] = shape_stage(p - 1, Ll + mtp_blocks, false, true);
  }
  e.micro_batches = m;
  if (memory_first) { // --- Memory (memory.cpp) before any pricing: search skips the rest ---
    memory(st, stages, n_stages, T, Vp, e);
    if (!e.fits_memory) {
      e.n_messages = 0;
      e.time_s = {};
      e.time_s.iteration = std::numeric_limits<double>::quiet_NaN();
      return;
    }
  }

  // --- One block, one micro-batch (steps 2-3) ---
  const LayerCost lc = cache ? cached_layer_cost(st, T, *cache, [&] { return layer_cost(st, T); })
                             : layer_cost(st, T);
  const double rec_sel = selective ? lc.attn_fwd : 0.0;
  const double rec_mod = lc.rec_mod_gemm + lc.rec_mod_mem; // selective recompute modules

  // --- The model's ends ---
  const EagerCosts ec = eager ? eager_costs(T / s) : EagerCosts{};
  const double T_h = sp ? T / t : T; // tokens of the hidden region on a rank
  // Logits (the output layer stays in 16-bit under FP8, as Megatron-Core's output_layer) and the
  // loss: unfused vocab-parallel cross-entropy passes over fp32 logits (12 B per logit forward
  // and backward together, two kernels); fused reads bf16 logits once each way (4 B).
  const double logits_gemm =
      P.gemm_s(T, Vp / t, h, 1) + P.gemm_s(T, h, Vp / t, 1) + P.gemm_s(h, Vp / t, T, 1);
  const double logit_el = T * Vp / t;
  const double xent = eager ? ec.head
                            : (st.fused_ce ? 2 * P.mem_s(4 * logit_el)
                                           : 2 * P.mem_s(4 * 3 * logit_el));
  // Embedding lookup and its gradient scatter, final norm (megatron; eager prices them in head).
  const double embed = eager ? 0.0 : P.mem_s(k * 4 * h * T_h) + P.mem_s(4 * 2 * h * T_h);
  const double fnorm = eager ? 0.0 : P.mem_s(k * 4 * h * T_h) + P.mem_s(k * 6 * h * T_h);

  // Multi-token prediction's 2h x h projection (forward, data and weight gradient) per module.
  const double mtp_proj = md.mtp_layers > 0 ? P.gemm_s(T, h / t, 2 * h, 1) +
                                                  P.gemm_s(T, 2 * h, h / t, 1) +
                                                  P.gemm_s(2 * h, h / t, T, 1)
                                            : 0.0;

  // --- Stages' compute of a micro-batch ---
  for (int i = 0; i < n_stages; ++i) {
    StageCost &c = stages[i];
    const bool first = c.index == 0, last = c.index == p - 1;
    c.fwd = c.layers * lc.fwd();
    c.bwd = c.layers * (lc.bwd() + rec_sel + rec_mod) + c.recomputed * lc.fwd();
    if (first)
      c.extra_cp += embed;
    if (last) {
      c.extra_cp += logits_gemm + xent + fnorm;
      // Multi-token prediction (DeepSeek-V3 Sec. 2.2) on the last stage, with the loss (as
      // Megatron-Core places it): per module the embedding of the shifted tokens, two norms, the
      // 2h x h projection (column-parallel), its block (counted in `layers`: an average block's
      // time and activations), the final norm and a second head and loss.
      if (md.mtp_layers > 0)
        c.extra_cp += md.mtp_layers * (mtp_proj + logits_gemm + xent + 2 * fnorm + embed);
    }
    c.fwd += c.extra_cp / 3; // the ends' split between the passes matters only to overlap
    c.bwd += c.extra_cp * 2 / 3;
  }

  // --- Per-micro-batch communication of each stage: TP, CP, PP ---
  e.n_messages = 0;
  MessageSink sink{*m_comm, e};
  const CommGroup g_tp = group_shape(st.tp, 1, gpn);
  const CommGroup g_cp = group_shape(st.cp, st.tp, gpn);
  const CommGroup g_pp = group_shape(2, st.tp * st.cp * st.dp, gpn);
  const double tp_bytes = T * h * el;
  // (MLA: the per-head keys of nope + rope and values of v_dim, as Megatron-Core's ring
  // attention passes them; not the latents)
  const double kv_bytes = T * std::max(1.0, o.kv_heads / t) * (o.head_dim + o.v_head_dim) * el;
  const double pp_bytes = T * h * el / (st.pp_scatter_gather && st.tp > 1 ? t : 1.0);
  // Ring attention (Megatron-Core's p2p context parallelism; Liu et al. 2023): cp - 1 exchanges
  // of the K,V chunk forward and of K,V and their gradients backward, each behind one chunk of
  // attention compute.
  const double cp_f = sink.one(Op::sendrecv, g_cp, kv_bytes);
  const double cp_b = sink.one(Op::sendrecv, g_cp, 2 * kv_bytes);
  const double cp_hidden_f = std::min(cp_f, lc.attn_fwd / cp);
  // Fraction of an overlapped collective that compute really hides (the system's
  // communication.overlap_efficiency; collectives running beside GEMMs share SMs and HBM).
  const double ov = m_system.overlap_efficiency;
  // One block collective of TP (AllGather or ReduceScatter with SP; AllReduce without).
  const double tp_unit =
      st.tp > 1 ? sink.one(sp ? Op::allgather : Op::allreduce, g_tp, tp_bytes) : 0.0;
  const double cp_hidden_b = std::min(cp_b, lc.attn_bwd / cp);
  // TP overlap (Transformer Engine's userbuffers, --tp-comm-overlap): each block collective is
  // split into chunks pipelined with the GEMM it feeds or follows (all-gather with QKV and MLP
  // up, reduce-scatter with the projection and MLP down; backward the same pairs with the data
  // and weight gradients), so it hides behind that GEMM and no more. Per block, and per
  // recomputed block (its forward again).
  double tp_hide_block = 0, tp_hide_rec = 0;
  if (st.overlap_tp && st.tp > 1) {
    for (int i = 0; i < m_ops.n_linear; ++i) {
      // backward of a column-parallel layer: ReduceScatter of the data gradient and (SP) the
      // input re-gather; of a row-parallel layer: the AllGather of the output gradient; a
      // replicated layer (MLA's down projections) has no TP collective of its own
      if (m_ops.linear[i].split == TpSplit::replicated)
        continue;
      const bool column = m_ops.linear[i].split == TpSplit::column;
      const double bwd_units = column && sp ? 2.0 : 1.0;
      tp_hide_block +=
          std::min(tp_unit, lc.lin_fwd[i]) + std::min(bwd_units * tp_unit, lc.lin_bwd[i]);
      tp_hide_rec += std::min(tp_unit, lc.lin_fwd[i]);
    }
    if (!sp) // only the two row-parallel AllReduces per direction exist (half the pairs)
      tp_hide_block *= 0.5;
  }
  // Unit prices of one operation of each kind [s] (the same on every stage).
  const double u_ag = st.tp > 1 && sp ? sink.one(Op::allgather, g_tp, tp_bytes) : 0.0;
  const double u_rs = st.tp > 1 && sp ? sink.one(Op::reducescatter, g_tp, tp_bytes) : 0.0;
  const double u_ar = st.tp > 1 && !sp ? sink.one(Op::allreduce, g_tp, tp_bytes) : 0.0;
  const double u_pp = st.pp > 1 ? sink.one(Op::sendrecv, g_pp, pp_bytes) : 0.0;
  const CommGroup g_ep = group_shape(st.ep, st.expert_tp(), gpn);
  // (the busiest rank's share: imbalance, capped by a capacity factor or padded to it)
  // DeepEP and HybridEP send a token to another node once, however many of its k experts live
  // there, and forward it over NVLink (DeepEP's README: NVLink and RDMA forwarding; HybridEP the
  // same): the inter-node bytes of the all-to-all shrink by the node dedup ratio.
  const bool node_dedup =
      st.moe_dispatcher == MoeDispatcher::deepep || st.moe_dispatcher == MoeDispatcher::hybridep;
  const double ep_bytes =
      md.moe() && st.ep > 1
          ? o.moe.top_k * (st.tp > 1 ? T / t : T) * h * el * o.moe.load(st.moe_imbalance) *
                (node_dedup ? node_dedup_ratio(o.moe.experts, o.moe.top_k, g_ep.nnodes) : 1.0)
          : 0.0;
  const double u_ep = ep_bytes > 0 ? sink.one(Op::alltoall, g_ep, ep_bytes) : 0.0;
  // The all-gather dispatcher (Megatron-Core MoEAllGatherTokenDispatcher): per MoE block and
  // direction one AllGather of the hidden states of the ep x etp ranks (every rank then holds the
  // group's tokens, each once: no factor k) and one ReduceScatter of the experts' outputs; the
  // whole gathered buffer is nccl-tests' size. Not hidden behind the shared experts (Megatron-Core
  // overlaps them with the all-to-all dispatcher only).
  const bool ag_dispatch = st.moe_dispatcher == MoeDispatcher::allgather;
  const CommGroup g_epg = group_shape(st.ep * st.expert_tp(), 1, gpn);
  const double ag_bytes = ag_dispatch && ep_bytes > 0
                              ? double(st.ep) * st.expert_tp() * (st.tp > 1 ? T / t : T) * h * el
                              : 0.0;
  const double u_agd = ag_bytes > 0 ? sink.one(Op::allgather, g_epg, ag_bytes) : 0.0;
  const double u_rsd = ag_bytes > 0 ? sink.one(Op::reducescatter, g_epg, ag_bytes) : 0.0;
  // Which frameworks hide the dispatch/combine behind compute: Megatron-Core's
  // --moe-shared-expert-overlap (shared_experts.py: the shared expert's fc1 runs on its own
  // stream while the dispatch all-to-all moves the routed tokens, its fc2 while the combine
  // does, forward and backward; off by default) is modeled here (Strategy::
  // moe_shared_expert_overlap): per MoE block and direction the two all-to-alls hide behind the
  // shared expert's GEMMs and no more. Megatron-Core's --overlap-moe-expert-parallel-comm
  // (Strategy::moe_a2a_overlap; MoE README "EP A2A Overlap": the forward and backward passes of
  // adjacent micro-batches merged, one's dispatch and combine behind the other's compute) hides
  // them behind the stage's block compute of a micro-batch, forward and backward, and no more
  // (stage_comm below). Not modeled: DeepSeek's DualPipe (forward and backward chunks of two
  // micro-batches interleaved so that all-to-all and PP traffic hide behind compute; DeepSeek-V3,
  // arXiv 2412.19437, Sec. 3.2.1).
  double ep_hide_f = 0, ep_hide_b = 0;
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
  double off_xfer = 0;
  if (st.offload_layers > 0 && m_system.host.bandwidth_gbps > 0) {
    const CommTier &hl = m_system.host;
    const double bytes = activation_bytes_per_layer(o, md, st.micro_batch, st.tp, sp,
                                                    Recompute::none, st.cp, st.moe_imbalance);
    off_xfer = hl.latency_us * 1e-6 + bytes / (hl.bandwidth_gbps * 1e9 * hl.efficiency);
  }
  auto stage_comm = [&](StageCost &c, bool record) {
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
                       m * (n + 2 * c.layers)) / m;
        tp += sink.add(Op::reducescatter, Parallelism::tp, "layer activations (SP)", tp_bytes,
                       g_tp, m * n) / m;
      } else {
        tp += sink.add(Op::allreduce, Parallelism::tp, "layer activations", tp_bytes, g_tp,
                       m * n) / m;
      }
      tp += sink.add(sp ? Op::reducescatter : Op::allreduce, Parallelism::tp, "embedding/logits",
                     tp_bytes, g_tp, m * ends) / m;
    }
    if (st.cp > 1) {
      const double steps = cp - 1;
      const double nf = (c.layers + rec) * steps, nb = c.layers * steps;
      if (record) {
        cpc += sink.add(Op::sendrecv, Parallelism::cp, "K,V chunks (ring, forward)", kv_bytes,
                        g_cp, m * nf) / m;
        cpc += sink.add(Op::sendrecv, Parallelism::cp, "K,V and gradients (ring, backward)",
                        2 * kv_bytes, g_cp, m * nb) / m;
      } else {
        cpc = nf * cp_f + nb * cp_b;
      }
      cph = nf * cp_hidden_f + nb * cp_hidden_b;
    }
    if (st.pp > 1)
      ppc = record ? sink.add(Op::sendrecv, Parallelism::pp, "stage boundary (fwd+bwd)", pp_bytes,
                              g_pp, 2 * v * m) / m
                   : 2 * v * u_pp;
    // EP: Megatron-Core's all-to-all token dispatcher, per MoE block and micro-batch a dispatch
    // and a combine of the rank's k routed tokens (k T/t h elements) forward, the same two
    // backward, and again for a recomputed block; hidden only behind the shared expert with
    // --moe-shared-expert-overlap (above).
    double epc = 0, ep_hidden = 0;
    if (ag_bytes > 0) {
      const double n_each = o.moe.fraction * (2 * c.layers + rec);
      epc = record ? (sink.add(Op::allgather, Parallelism::ep, "token dispatch (all-gather)",
                               ag_bytes, g_epg, m * n_each) +
                      sink.add(Op::reducescatter, Parallelism::ep, "token combine (reduce-scatter)",
                               ag_bytes, g_epg, m * n_each)) /
                         m
                   : n_each * (u_agd + u_rsd);
    } else if (ep_bytes > 0) {
      const double n_a2a = o.moe.fraction * (4 * c.layers + 2 * rec);
      epc = record ? sink.add(Op::alltoall, Parallelism::ep, "token dispatch/combine", ep_bytes,
                              g_ep, m * n_a2a) / m
                   : n_a2a * u_ep;
      ep_hidden = std::min(epc, o.moe.fraction * ((c.layers + rec) * ep_hide_f +
                                                  c.layers * ep_hide_b));
      if (st.moe_a2a_overlap) // behind the adjacent micro-batch's blocks, both passes
        ep_hidden = std::min(epc, c.layers * (lc.fwd() + lc.bwd()) + rec * lc.fwd());
    }
    const double n_off = std::min<double>(st.offload_layers, c.layers);
    const double offc = 2 * n_off * off_xfer;
    // copy engines, not SMs: hidden up to the compute beside them
    const double off_hidden = n_off * (std::min(off_xfer, lc.fwd()) + std::min(off_xfer, lc.bwd()));
    c.comm = tp + cpc + ppc + epc + offc;
    e.comm_ep_s = epc * m;
    e.comm_offload_s = offc * m;
    const double tp_hidden = std::min(tp, c.layers * tp_hide_block + rec * tp_hide_rec);
    c.comm_hidden = ov * (cph + tp_hidden + ep_hidden) + off_hidden;
    e.comm_tp_s = tp * m;
    e.comm_cp_s = cpc * m;
    e.comm_pp_s = ppc * m;
  };
  for (int i = 0; i < n_stages; ++i)
    stage_comm(stages[i], false);

  // --- DP / ZeRO / FSDP and the optimizer step, per stage ---
  DpGroups dpg, edpg;
  {
    const int ranks = st.dp * st.cp;
    const int shard = st.zero >= 1 ? st.shard_ranks() : ranks;
    dpg.all = group_shape(ranks, st.tp, gpn);
    dpg.shard = group_shape(shard, st.tp, gpn);
    dpg.replicas = group_shape(ranks / shard, st.tp * shard, gpn);
    dpg.ranks = ranks;
    dpg.shard_ranks = shard;
    // Experts: their gradients meet over the expert-data-parallel ranks (stride etp x ep), and
    // ZeRO shards their states there (Megatron-Core's expert mesh).
    const int edp = st.expert_dp();
    edpg.all = edpg.shard = group_shape(edp, st.expert_tp() * st.ep, gpn);
    edpg.ranks = edpg.shard_ranks = edp;
  }
  // Bytes per parameter the ZeRO / FSDP parameter all-gathers move: the weight matrices in FP8
  // with --fp8-param-gather (1 B), the rest in the model's dtype.
  const bool fp8_params = md.fp8 && st.fp8_param_gather;
  auto gather_el = [&](const StageCost &c) {
    return fp8_params && c.params > 0
               ? (c.matrix_params + (c.params - c.matrix_params) * el) / c.params
               : el;
  };
  const double expert_el = fp8_params ? 1.0 : el;
  DpCost dp[3];
  double opt[3] = {0, 0, 0};
  for (int i = 0; i < n_stages; ++i) {
    const StageCost &c = stages[i];
    const double fwd_mb = c.fwd, bwd_mb = c.bwd;
    dp[i] = dp_cost(sink, st, dpg, c.params, el, gather_el(c), c.layers, m, fwd_mb, bwd_mb);
    if (c.expert_params > 0) {
      const DpCost x =
          dp_cost(sink, st, edpg, c.expert_params, el, expert_el, c.layers, m, fwd_mb, bwd_mb);
      dp[i].total += x.total;
      dp[i].hidden += x.hidden;
    }
    dp[i].hidden = ov * std::max(0.0, dp[i].hidden);
    // Adam over the local shard, memory-bound (read 16 B, write 16 B per parameter); FP8 casts
    // each weight matrix once per iteration (read 2, write FP8 and its transpose: 4 B).
    const double p_opt = c.params / (st.zero >= 1 ? st.shard_ranks() : 1.0) +
                         c.expert_params / (st.zero >= 1 ? st.expert_dp() : 1.0);
    opt[i] = eager ? P.mem_n_s(std::ceil(p_opt / constants::kAdamWElementsPerLaunch),
                               constants::kAdamWBytesPerParam * p_opt)
                   : P.mem_s(32 * p_opt);
    if (md.fp8)
      opt[i] += P.mem_s(4 * (c.matrix_params + c.expert_params));
  }

  // --- Schedule (step 4): 1F1B, the slowest stage sets the pace ---
  double t_max = 0, t_sum = 0;
  int slow = 0;
  for (int i = 0; i < n_stages; ++i) {
    const double ti = stages[i].time();
    const double copies = (p > 2 && i == 1) ? p - 2 : 1;
    t_sum += copies * ti;
    if (ti > t_max) {
      t_max = ti;
      slow = i;
    }
  }
  // Fill and drain pass every stage once: (m - 1) t_max + sum_i t_i for 1F1B; interleaving
  // divides the fill and drain by v (Narayanan et al. 2021, Sec. 2.2).
  const double pipeline = m * t_max + (t_sum - t_max) / v;
  double tail = 0;
  for (int i = 0; i < n_stages; ++i)
    tail = std::max(tail, dp[i].total - dp[i].hidden + opt[i]);
  const StageCost &c = stages[slow];
  // Record the slowest stage's messages.
  e.n_messages = 0;
  if (messages) {
    stage_comm(stages[slow], true);
    sink.record = true;
    dp_cost(sink, st, dpg, c.params, el, gather_el(c), c.layers, m, c.fwd, c.bwd);
    if (c.expert_params > 0)
      dp_cost(sink, st, edpg, c.expert_params, el, expert_el, c.layers, m, c.fwd, c.bwd);
  } else {
    stage_comm(stages[slow], false); // the per-parallelism totals of the slowest stage
  }
  e.comm_dp_s = dp[slow].total;

  e.time_s.compute = m * (c.fwd + c.bwd) + opt[slow];
  e.time_s.communication = m * c.comm + dp[slow].total;
  e.time_s.overlap = m * c.comm_hidden + dp[slow].hidden;
  e.time_s.iteration = pipeline + tail;
  e.time_s.bubble = std::max(
      0.0, e.time_s.iteration - (e.time_s.compute + e.time_s.communication - e.time_s.overlap));
  e.slowest_stage = c.index;
  e.stage_layers[0] = Lf;
  e.stage_layers[1] = p > 2 ? Lm : 0;
  e.stage_layers[2] = p > 1 ? Ll : 0;

  // --- Compute terms of the slowest stage ---
  const double rec = c.recomputed;
  const bool first = c.index == 0, last = c.index == p - 1;
  const double nL = c.layers;
  e.terms[0] = {"layer GEMMs",
                m * (nL * (lc.gemm_fwd + lc.gemm_bwd + lc.rec_mod_gemm) + rec * lc.gemm_fwd),
                gemm_source().c_str()};
  e.terms[1] = {fused ? "attention (fused)" : "attention (unfused)",
                m * (nL * (lc.attn_fwd + lc.attn_bwd + rec_sel) + rec * lc.attn_fwd),
                fused ? P.fused_source(st.framework == Framework::pytorch).c_str()
                      : P.src_attn.c_str()};
  e.terms[2] = {"memory-bound (layers)",
                m * (nL * (lc.mem_fwd + lc.mem_bwd + lc.rec_mod_mem) + rec * lc.mem_fwd),
                P.src_mem.c_str()};
  const double heads = 1.0 + md.mtp_layers; // output heads and losses on the last stage
  e.terms[3] = {md.mtp_layers ? "logits GEMMs, MTP projections" : "logits GEMMs",
                last ? m * (heads * logits_gemm + md.mtp_layers * mtp_proj) : 0.0,
                P.src_gemm.c_str()};
  e.terms[4] = {eager ? "cross-entropy, embeddings" : "cross-entropy",
                last ? m * heads * xent : 0.0, P.src_mem.c_str()};
  e.terms[5] = {md.fp8 ? "optimizer, FP8 weight casts" : "optimizer", opt[slow],
                P.src_mem.c_str()};
  e.terms[6] = {
      "embedding, final norm",
      m * ((first ? embed : 0.0) + (last ? fnorm + md.mtp_layers * (2 * fnorm + embed) : 0.0)),
      P.src_mem.c_str()};

  // --- Memory (memory.cpp), unless it came first ---
  if (!memory_first)
    memory(st, stages, n_stages, T, Vp, e);

  // --- Throughput ---
  const double n_gpus = static_cast<double>(st.gpus());
  const double B = static_cast<double>(st.batch());
  const double frac =
      full && st.recompute_layers > 0
          ? std::min(1.0, double(st.recompute_layers) * v * p / double(md.layers))
          : 1.0;
  const IterationFlops fl = iteration_flops(m_ops, md, B, Vp, full, st.recompute_core_attn(), frac);
  e.params = m_params;
  e.active_params = m_active_params;
  e.params_per_gpu = 0;
  for (int i = 0; i < n_stages; ++i)
    e.params_per_gpu = std::max(e.params_per_gpu, stages[i].params + stages[i].expert_params);
  e.vocab_padded = Vp;
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
    if ((mods & kRecomputeSharedExperts) && o.moe.f_shared > 0)
      per_token += o.moe.fraction * 2 * md.hidden * o.moe.f_shared * (o.moe.up_n / o.moe.f_e + 1);
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

// Steps 2-4 for one layout, in order: its stages and their shards (stages.cpp), memory first
// when searching (memory.cpp), one block priced (layer_cost.cpp) and the model's ends, each
// stage's compute, its per-micro-batch messages of TP, CP, PP and EP (stage_comm.cpp) and of
// DP/ZeRO/FSDP (dp_cost.cpp) (Megatron placement: TP innermost, then CP, then DP, then PP), and
// the pipeline schedule that turns priced terms into Lu et al.'s T_cp, T_cm, T_ol, T_sd.
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
  key.attention_backend = st.attention_backend;
  key.fp8_recipe = st.fp8_recipe;
  key.eager_bf16 = eager_bf16_model(st);
  key.moe_fused_grouped_mlp = st.moe_fused_grouped_mlp;
  key.fp8_attention = st.fp8_attention;
  key.moe_dispatcher = st.moe_dispatcher;
  std::uint64_t hash = 1469598103934665603ull; // FNV-1a over the integer fields
  for (const std::uint64_t v :
       {std::uint64_t(key.tp), std::uint64_t(key.micro_batch), std::uint64_t(key.cp),
        std::uint64_t(key.ep), std::uint64_t(key.expert_tp), std::uint64_t(key.sp),
        std::uint64_t(key.recompute_modules), std::uint64_t(key.framework),
        std::uint64_t(key.attention_backend), std::uint64_t(key.fp8_recipe),
        std::uint64_t(key.eager_bf16), std::uint64_t(key.moe_fused_grouped_mlp),
        std::uint64_t(key.fp8_attention), std::uint64_t(key.moe_dispatcher)})
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
  const LayoutSizes z = layout_sizes(st);
  const int m = z.m, p = z.p;

  // --- Stages: first, one middle, last (step 2): their shards, which memory needs ---
  StageCost stages[3];
  int layers[3] = {0, 0, 0};
  const int n_stages = shape_stages(st, z, stages, layers);
  e.micro_batches = m;
  if (memory_first) { // --- Memory (memory.cpp) before any pricing: search skips the rest ---
    memory(st, stages, n_stages, z.T, z.Vp, e);
    if (!e.fits_memory) {
      e.n_messages = 0;
      e.time_s = {};
      e.time_s.iteration = std::numeric_limits<double>::quiet_NaN();
      return;
    }
  }

  // --- One block and the model's ends, one micro-batch (steps 2-3) ---
  const LayerCost lc = cache
                           ? cached_layer_cost(st, z.T, *cache, [&] { return layer_cost(st, z.T); })
                           : layer_cost(st, z.T);
  const double rec_sel = z.selective ? lc.attn_fwd : 0.0;
  const double rec_mod = lc.rec_mod_gemm + lc.rec_mod_mem; // selective recompute modules
  const EndsCost ends = ends_cost(st, z);

  // --- Stages' compute of a micro-batch ---
  for (int i = 0; i < n_stages; ++i) {
    StageCost &c = stages[i];
    const bool first = c.index == 0, last = c.index == p - 1;
    c.fwd = c.layers * lc.fwd();
    c.bwd = c.layers * (lc.bwd() + rec_sel + rec_mod) + c.recomputed * lc.fwd();
    if (first)
      c.extra_cp += ends.embed;
    if (last) {
      c.extra_cp += ends.logits_gemm + ends.xent + ends.fnorm;
      // Multi-token prediction (DeepSeek-V3 Sec. 2.2) on the last stage, with the loss (as
      // Megatron-Core places it): per module the embedding of the shifted tokens, two norms, the
      // 2h x h projection (column-parallel), its block (counted in `layers`: an average block's
      // time and activations), the final norm and a second head and loss.
      if (md.mtp_layers > 0)
        c.extra_cp += md.mtp_layers *
                      (ends.mtp_proj + ends.logits_gemm + ends.xent + 2 * ends.fnorm + ends.embed);
    }
    c.fwd += c.extra_cp / 3; // the ends' split between the passes matters only to overlap
    c.bwd += c.extra_cp * 2 / 3;
  }

  // --- Per-micro-batch communication of each stage: TP, CP, PP, EP, offload (stage_comm.cpp) ---
  e.n_messages = 0;
  MessageSink sink{*m_comm, e};
  StageComm comm(sink, st, z, md, m_ops, lc, P, m_system);
  for (int i = 0; i < n_stages; ++i)
    comm.price(stages[i], false);

  // --- DP / ZeRO / FSDP (dp_cost.cpp) and the optimizer step, per stage ---
  const DataParallel dp_groups(st, md, z.gpn, z.el);
  const double ov = m_system.overlap_efficiency;
  DpCost dp[3];
  double opt[3] = {0, 0, 0};
  for (int i = 0; i < n_stages; ++i) {
    const StageCost &c = stages[i];
    dp[i] = dp_groups.stage(sink, c, m, ov);
    // Adam over the local shard, memory-bound (read 16 B, write 16 B per parameter: the state,
    // the gradient and the bf16 weight; less by what the precision-aware optimizer saves of its
    // state, both ways); FP8 casts each weight matrix once per iteration (read 2, write FP8 and
    // its transpose: 4 B).
    const double p_opt = c.params / (st.zero >= 1 ? st.shard_ranks() : 1.0) +
                         c.expert_params / (st.zero >= 1 ? st.expert_dp() : 1.0);
    opt[i] = z.eager ? P.mem_n_s(std::ceil(p_opt / constants::kAdamWElementsPerLaunch),
                                 constants::kAdamWBytesPerParam * p_opt)
                     : P.mem_s((32 - 2 * (12 - adam_state_bytes(st, md))) * p_opt);
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
  const double pipeline = m * t_max + (t_sum - t_max) / z.v;
  double tail = 0;
  for (int i = 0; i < n_stages; ++i)
    tail = std::max(tail, dp[i].total - dp[i].hidden + opt[i]);
  const StageCost &c = stages[slow];
  // The slowest stage's messages, recorded; else its per-parallelism totals.
  e.n_messages = 0;
  comm.price(stages[slow], messages);
  if (messages) {
    sink.record = true;
    dp_groups.stage(sink, c, m, ov);
  }
  e.comm_dp_s = dp[slow].total + m * c.amax; // the amax all-reduces span TP x DP x CP

  e.time_s.compute = m * (c.fwd + c.bwd) + opt[slow];
  e.time_s.communication = m * c.comm + dp[slow].total;
  e.time_s.overlap = m * c.comm_hidden + dp[slow].hidden;
  e.time_s.iteration = pipeline + tail;
  e.time_s.bubble = std::max(
      0.0, e.time_s.iteration - (e.time_s.compute + e.time_s.communication - e.time_s.overlap));
  e.slowest_stage = c.index;
  e.stage_layers[0] = layers[0];
  e.stage_layers[1] = p > 2 ? layers[1] : 0;
  e.stage_layers[2] = p > 1 ? layers[2] : 0;

  compute_terms(st, z, c, lc, ends, opt[slow], e);
  if (!memory_first) // --- Memory (memory.cpp), unless it came first ---
    memory(st, stages, n_stages, z.T, z.Vp, e);
  throughput(st, z, stages, n_stages, e);
}

} // namespace scalefit::estimator

// Internal types shared by the estimator's steps (layer_cost.cpp, estimator.cpp, memory.cpp).
#pragma once

#include "scalefit/estimator/estimator.hpp"

namespace scalefit::estimator {

/// One block's compute for one micro-batch on one rank [s]: the layout's shapes (step 2) priced
/// (step 3).
struct LayerCost {
  double gemm_fwd = 0, gemm_bwd = 0; ///< the four linear layers
  double attn_fwd = 0, attn_bwd = 0; ///< attention core (fused kernel or unfused GEMMs+softmax)
  double mem_fwd = 0, mem_bwd = 0;   ///< element-wise kernels
  double lin_fwd[kMaxLinear] = {};  ///< each linear layer's forward GEMM
  double lin_bwd[kMaxLinear] = {};  ///< each linear layer's data + weight gradient GEMMs
  /// Selective --recompute-modules: the GEMMs and element-wise kernels run again in backward.
  double rec_mod_gemm = 0, rec_mod_mem = 0;
  double fwd() const { return gemm_fwd + attn_fwd + mem_fwd; }
  double bwd() const { return gemm_bwd + attn_bwd + mem_bwd; }
};

/// All-to-all time [s] one MoE block hides under Megatron-Core's EP A2A overlap
/// (--overlap-moe-expert-parallel-comm; the combined 1F1B of
/// models/common/model_chunk_schedule_plan.py, schedule_layer_1f1b): the forward of one
/// micro-batch and the backward of the other are merged block by block, and each all-to-all (of
/// `a2a` s) runs on the communication stream beside one compute step of the other micro-batch:
/// the backward combine beside the forward attention (`attn_f` s), the forward dispatch beside
/// the backward MLP (`mlp_b`), the backward dispatch beside the forward MLP (`mlp_f`), the
/// forward combine beside the backward attention (`attn_b`). Each hides behind its partner and no
/// more. All inputs >= 0.
inline double a2a_pairs_hidden(double a2a, double attn_f, double attn_b, double mlp_f,
                               double mlp_b) noexcept {
  auto hide = [a2a](double beside) { return a2a < beside ? a2a : beside; };
  return hide(attn_f) + hide(mlp_b) + hide(mlp_f) + hide(attn_b);
}

/// Everything Estimator::layer_cost reads of a layout (layer_cost.cpp: keep the two in step):
/// equal keys price one block identically.
struct LayerCostKey {
  int tp = 0, micro_batch = 0, cp = 0, ep = 0, expert_tp = 0;
  bool sp = false;                // effective: sp and tp > 1
  unsigned recompute_modules = 0; // active ones (Strategy::active_recompute_modules)
  double moe_imbalance = 0, tokens = 0;
  Framework framework = Framework::megatron;
  AttentionBackend attention_backend = AttentionBackend::fused;
  Fp8Recipe fp8_recipe = Fp8Recipe::delayed;
  bool eager_bf16 = false; // eager_bf16_model(st)
  bool moe_fused_grouped_mlp = false;
  bool fp8_attention = false;
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  bool operator==(const LayerCostKey &) const = default;
};

/// PyTorch eager runs the whole model in bf16 (no autocast, a bf16 residual stream) under pure
/// bf16 and under FSDP / ZeRO with MixedPrecision(param_dtype=bf16) (torch.distributed.fsdp
/// MixedPrecision); else bf16 autocast over fp32 weights (pytorch_gpt_step.py). Time
/// (eager_costs) and memory (memory.cpp) follow the same rule.
inline bool eager_bf16_model(const Strategy &st) {
  return st.pure_bf16 || st.zero >= 1;
}

/// The time factor of MXFP8 GEMMs over per-tensor FP8 ones on `sys`: 1 / the device's
/// mxfp8_relative_efficiency when `mxfp8` (Strategy::mxfp8) and the device has the key, else 1
/// (config.hpp, DeviceConfig::mxfp8_relative_efficiency).
inline double mxfp8_gemm_factor(const SystemConfig &sys, bool mxfp8) {
  return mxfp8 && sys.device.mxfp8_relative_efficiency > 0
             ? 1 / sys.device.mxfp8_relative_efficiency
             : 1.0;
}

/// Adam's state per parameter in the (distributed) optimizer [B]: fp32 master weights and two
/// fp32 moments, 12 B (Rajbhandari et al. 2020, K = 12); under Megatron-Core's precision-aware
/// optimizer the master weights take 2 B where Transformer Engine's FusedAdam owns them and
/// stores only the remainder bits of bf16 parameters (bf16 models, FP8 only with delayed
/// scaling; Megatron-Core optimizer_config.py use_precision_aware_optimizer_no_fp8_or_ds_fp8 and
/// store_param_remainders = True), else 4; the moments 2 + 2 B with bf16_moments.
inline double adam_state_bytes(const Strategy &st, const ModelConfig &md) {
  if (!(st.precision_aware_optimizer || st.bf16_moments))
    return 12.0;
  const bool te_master =
      md.dtype == DType::bfloat16 && (!md.fp8 || st.fp8_recipe == Fp8Recipe::delayed);
  return (te_master ? 2.0 : 4.0) + (st.bf16_moments ? 4.0 : 8.0);
}

/// The attention kernels `st` runs: PyTorch's SDPA under Framework::pytorch, else Transformer
/// Engine's backend as --attention-backend selects it.
inline AttentionKernel attention_kernel(const Strategy &st) {
  if (st.framework == Framework::pytorch)
    return AttentionKernel::sdpa;
  return st.attention_backend == AttentionBackend::flash ? AttentionKernel::flash
                                                         : AttentionKernel::fused;
}

/// A direct-mapped table of priced blocks for search: layouts that differ only in dp, pp, v,
/// ZeRO, ... share one block's pricing. Allocation-free once made; not thread-safe.
struct LayerCostCache {
  static constexpr std::size_t kSlots = 128;
  struct Slot {
    bool used = false;
    LayerCostKey key;
    LayerCost cost;
  };
  Slot slots[kSlots];
  long hits = 0, misses = 0;
};

/// The sizes of one layout that every step of its evaluation reads (Estimator::layout_sizes,
/// schedule.cpp). Degrees as doubles where formulas divide by them.
struct LayoutSizes {
  double s = 0, h = 0;                ///< sequence length, hidden size
  double b = 1, t = 1, v = 1, cp = 1; ///< micro-batch, TP, interleave, CP
  double el = 2, k = 1;               ///< bytes per activation element, el / 2
  double T = 0;                       ///< tokens of a micro-batch on one rank: b s / cp
  double T_h = 0;         ///< tokens of the hidden region on one rank: T / t with SP, else T
  double Vp = 0;          ///< vocabulary padded as the framework pads it
  int m = 0;              ///< micro-batches per iteration on one DP replica
  int p = 1;              ///< pipeline stages
  int gpn = 1;            ///< GPUs per node
  bool sp = false;        ///< sequence parallelism in effect (sp and tp > 1)
  bool eager = false;     ///< PyTorch eager (Framework::pytorch)
  bool full = false;      ///< full recompute
  bool fused = false;     ///< fused (flash) attention
  bool selective = false; ///< selective recompute of the attention core (any backend)
};

/// The model's ends for one micro-batch on the stage holding them [s] (Estimator::ends_cost).
struct EndsCost {
  double logits_gemm = 0; ///< the output layer's forward, data and weight gradient GEMMs
  double xent = 0;        ///< cross-entropy forward and backward (eager: the whole head)
  double embed = 0;       ///< embedding lookup and its gradient scatter
  double fnorm = 0;       ///< final norm forward and backward
  double mtp_proj = 0;    ///< one multi-token-prediction module's 2h x h projection GEMMs
};

/// One pipeline stage kind (first, middle, last) for one micro-batch [s] and its state.
struct StageCost {
  int index = 0;         ///< stage number (0 first, pp-1 last)
  double layers = 0;     ///< blocks
  double recomputed = 0; ///< blocks fully recomputed in backward (full recompute)
  double fwd = 0;        ///< forward compute of a micro-batch, blocks and ends
  double bwd = 0;        ///< backward compute, with recomputation
  double extra_cp = 0;   ///< ends' compute (embedding, logits, loss) inside fwd+bwd
  double comm = 0;       ///< TP + CP + PP communication of a micro-batch
  double comm_hidden = 0; ///< of which hidden behind compute
  double amax = 0;        ///< FP8 delayed scaling's amax all-reduces of a micro-batch, in comm
  double params = 0;     ///< dense parameters held by one TP rank
  double expert_params = 0; ///< expert parameters held by one EP x ETP rank
  double matrix_params = 0; ///< weight-matrix parameters (FP8 copies)
  double time() const { return fwd + bwd + comm - comm_hidden; }
};

} // namespace scalefit::estimator

namespace scalefit::estimator {
/// Inter-node traffic of a node-deduplicating MoE dispatcher (DeepEP, HybridEP) over that of the
/// all-to-all of the k routed copies, for `experts` spread evenly over `nodes` nodes and a token
/// routed to `top_k` distinct experts uniformly at random (balanced routing): the expected
/// number of other nodes holding at least one of its experts, (N - 1) (1 - C(E - E/N, k) /
/// C(E, k)), over the k (N - 1) / N copies the all-to-all sends across. 1 for one node (no
/// inter-node traffic to shrink) or k = 1. Pure combinatorics; no source beyond the dispatchers'
/// design (a token crosses to a node once).
double node_dedup_ratio(double experts, double top_k, int nodes);

/// Blocks on the first, a middle and the last pipeline stage of `s` (pp 1: all on `first`);
/// false when the layers do not split that way (Megatron: the middle stages share the rest
/// evenly; each stage's count divisible by the interleave).
bool stage_layers(int layers, const Strategy &s, int &first, int &middle, int &last);
} // namespace scalefit::estimator

namespace scalefit::estimator {
/// activation_bytes_per_layer with the model's operations already described (no allocation).
double activation_bytes_per_layer(const ModelOps &o, const ModelConfig &m, int micro_batch, int tp,
                                  bool sp, Recompute recompute, int cp, double moe_imbalance = 1.0,
                                  unsigned modules = 0) noexcept;
} // namespace scalefit::estimator

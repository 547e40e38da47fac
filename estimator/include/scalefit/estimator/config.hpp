/// \file config.hpp
/// Inputs of the training estimator: the system (topology, device,
/// spec-derived communication tiers) and the parallel strategy; the system YAML loader. The model
/// config (ModelConfig, load_model) is scalefit/core/model.hpp.
#pragma once

#include "scalefit/core/collectives.hpp"
#include "scalefit/core/model.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace scalefit::estimator {

// The model config lives in core (kernels, fitting and the estimator read it).
using scalefit::Attention;
using scalefit::ModelConfig;
using scalefit::ModelOverrides;
using scalefit::build_model;
using scalefit::load_model;
using scalefit::validate_model;

/// One row of a step efficiency table: sizes at or above `min_size` run at `efficiency`.
struct EfficiencyStep {
  double min_size = 0;   ///< GFLOP for compute tables, MB (1e6 B) for memory tables
  double efficiency = 1; ///< fraction of peak in (0, 1]
};

/// Step efficiency table as Calculon writes it (papers README): the first row (sorted by
/// descending min_size) whose min_size <= size gives the efficiency; below all rows, the last.
struct EfficiencyTable {
  std::vector<EfficiencyStep> steps; ///< sorted by descending min_size
  /// Efficiency for an operation of `size` (GFLOP or MB, matching the table's unit).
  double at(double size) const {
    for (const auto &s : steps)
      if (size >= s.min_size)
        return s.efficiency;
    return steps.empty() ? 1.0 : steps.back().efficiency;
  }
};

/// A network tier priced by the alpha-beta (Hockney) model as Calculon writes it:
/// time = latency + size * factor / (bandwidth * efficiency).
struct CommTier {
  double latency_us = 0;     ///< per-operation latency [us]
  double bandwidth_gbps = 0; ///< intra: GPU-to-GPU P2P per GPU; inter: NIC per node [GB/s]
  double efficiency = 1;     ///< achievable fraction of bandwidth_gbps as nccl-tests busbw
};

/// The accelerator: peak rates, HBM, and the compute efficiency model.
struct DeviceConfig {
  std::string name;                ///< e.g. "A100-SXM4-80GB"
  double memory_gib = 0;           ///< HBM capacity [GiB]
  double hbm_gbps = 0;             ///< HBM bandwidth [GB/s]
  double matrix_tflops_16 = 0;     ///< dense fp16/bf16 tensor-core peak [TFLOP/s]
  double matrix_tflops_32 = 0;     ///< fp32 (tf32 where the device uses it) peak [TFLOP/s]
  double matrix_tflops_8 = 0;      ///< dense FP8 (E4M3) tensor-core peak [TFLOP/s]; 0: no FP8
  std::string vendor = "nvidia";   ///< "nvidia" or "amd" (collectives by NCCL or RCCL)
  double vector_tflops = 0;        ///< non-tensor-core peak [TFLOP/s]
  EfficiencyTable gemm_efficiency; ///< by GFLOP of one GEMM
  EfficiencyTable hbm_efficiency;  ///< by MB moved by one memory-bound kernel
  /// FP8 GEMMs, by GFLOP of one GEMM (fraction of the FP8 peak); empty: gemm_efficiency scaled
  /// by fp8_relative_efficiency.
  EfficiencyTable gemm_efficiency_fp8;
  /// Without gemm_efficiency_fp8: FP8 GEMMs reach this fraction of the 16-bit table's efficiency
  /// at the FP8 peak (1: none derived). Derived from ONE published FP8 step per system.
  double fp8_relative_efficiency = 1;
  /// MXFP8 (Fp8Recipe::mxfp8: E4M3 with one E8M0 scale per 32 elements, Blackwell block-scaled
  /// tensor cores) GEMM time relative to per-tensor FP8: an mxfp8 step's FP8 GEMMs (measured or
  /// spec-priced) take 1 / this as long. It lumps what MXFP8 adds per GEMM (scale-factor
  /// loads, Transformer Engine's scale swizzles, the row- and column-wise block quantization of
  /// the inputs). 0 (absent from the system YAML): the device has no MXFP8 tensor cores and an
  /// mxfp8 estimate is refused (MXFP8 needs sm_100 or newer; Transformer Engine refuses it on
  /// Hopper). Derived from ONE published MXFP8 step per system (dgx-b200.yaml says which).
  double mxfp8_relative_efficiency = 0;
  /// Fused attention (cuDNN / FlashAttention kernels Transformer Engine runs), fraction of the
  /// 16-bit peak by sequence length of one attention call (the `min_size` column holds tokens),
  /// forward (causal FLOPs) and backward; empty: constants::kFusedAttentionEfficiency.
  EfficiencyTable attention_fwd_efficiency, attention_bwd_efficiency;
  /// The same kernels' forward without a causal mask (optional `forward_noncausal` row; fraction
  /// of the 16-bit peak by sequence length of one call, all FLOPs executed; dgx-h100: the
  /// FlashAttention-3 paper's Fig. 5 non-causal cuDNN bars), which prices the cp - 1 unmasked
  /// steps of ring attention (ComputePricer::attention_s); empty: the causal forward row.
  EfficiencyTable attention_fwd_noncausal_efficiency;
  /// The same kernels over a sliding window (optional `forward_window` / `backward_window` rows):
  /// fraction of the 16-bit peak by window size W in tokens (the `min_size` column), FLOPs of the
  /// mask's non-zeros. A windowed kernel touches W keys per query whatever the sequence, so it
  /// runs far below the full-sequence rate (cuDNN 9.22 on GB200, W = 128, head dim 64: 0.064 of
  /// peak forward where full causal attention at 4k runs 0.563). Empty: the causal rows at the
  /// call's sequence length (ComputePricer::window_attention_s).
  EfficiencyTable attention_fwd_window_efficiency, attention_bwd_window_efficiency;
  /// The same kernels in FP8 (Transformer Engine's fp8_dpa: Megatron-Core
  /// fp8_dot_product_attention), causal, fraction of the device's FP8 peak by sequence length,
  /// forward and backward: `forward_fp8` / `backward_fp8` under per-tensor scaling (delayed or
  /// current), `forward_mxfp8` / `backward_mxfp8` under fp8_recipe mxfp8 (cuDNN's MXFP8 SDPA,
  /// SM 10.x, cuDNN >= 9.21: Transformer Engine's backend filter). Empty: the step's attention
  /// is priced at the 16-bit rows (ComputePricer::attention_s, `fp8`).
  EfficiencyTable attention_fwd_fp8_efficiency, attention_bwd_fp8_efficiency;
  EfficiencyTable attention_fwd_mxfp8_efficiency, attention_bwd_mxfp8_efficiency;
  /// The windowed kernels in FP8 (optional `forward_window_fp8` / `backward_window_fp8`,
  /// `forward_window_mxfp8` / `backward_window_mxfp8` rows): fraction of the FP8 peak over the
  /// mask's non-zeros, keyed by the SEQUENCE length (the `min_size` column), not by W: cuDNN
  /// 9.22's FP8 windowed backward does not skip the tiles outside the window (NVIDIA's gpt_oss
  /// benchmark on GB200, W = 128: 0.54 ms at 2k tokens to 90 ms at 32k, x3.2-3.9 per doubling),
  /// so its rate falls with the sequence (0.0081 of the FP8 peak at 4k under MXFP8, 4.5x slower
  /// than the 16-bit window kernel). Empty: an FP8 window kernel at the 16-bit window rows.
  EfficiencyTable attention_fwd_window_fp8_efficiency, attention_bwd_window_fp8_efficiency;
  EfficiencyTable attention_fwd_window_mxfp8_efficiency, attention_bwd_window_mxfp8_efficiency;
  /// Fused attention as PyTorch's scaled_dot_product_attention runs it (its flash backend:
  /// FlashAttention-2 kernels), same units; the tables Framework::pytorch prices with. Empty:
  /// constants::kFusedAttentionEfficiency (a PyTorch step measured on H100).
  EfficiencyTable sdpa_fwd_efficiency, sdpa_bwd_efficiency;
  /// FlashAttention-2 kernels as Transformer Engine runs them under Megatron-Core's
  /// --attention-backend flash (or NVTE_FUSED_ATTN=0): fraction of the 16-bit peak by sequence
  /// length of one call, forward (causal FLOPs) and backward, as the fused tables (dgx-h100: the
  /// FlashAttention-3 paper's FA2 rates, Shah et al. 2024 Fig. 5(d)). Empty: the fused tables.
  EfficiencyTable flash_fwd_efficiency, flash_bwd_efficiency;
  /// FlashAttention-2's forward without a causal mask (`forward_noncausal`; same units; dgx-h100:
  /// Fig. 5's non-causal FA2 bars); empty: the causal row.
  EfficiencyTable flash_fwd_noncausal_efficiency;
  double kernel_launch_us = 0; ///< fixed cost per kernel (Cheng et al.'s k1 dispatch share)
  /// Fraction of the isolated-kernel rates a device sustains inside a training step (clocks under
  /// sustained power, kernels sharing the GPU with communication): multiplies the spec-table
  /// rates of GEMMs and memory-bound kernels; 1 when not derived. Derived from ONE published step
  /// per system (scripts/derive_sustained_efficiency.py), as the A100 tables are. Attention
  /// kernels keep their tables' isolated rates: a flash or cuDNN attention kernel runs its tensor
  /// cores at 30-60% of peak (the FlashAttention-3 paper's Fig. 5), below the board power at
  /// which a GEMM-bound step clocks down, and its long calls have no launch gaps to lose. (With
  /// the derate on attention, the NeMo long-sequence runs, 4k-1M tokens, were 3-28% slow, worse
  /// the longer the sequence; without it, within 5%.)
  double sustained_efficiency = 1;
};

/// A cluster: nodes of identical devices, an intra-node and an inter-node tier.
struct SystemConfig {
  std::string name;      ///< label ("dgx-a100")
  int gpus_per_node = 1; ///< GPUs per node
  DeviceConfig device;   ///< the accelerator
  CommTier intra;        ///< NVLink / NVSwitch
  CommTier inter;        ///< NICs of a node together
  /// One GPU's link to host memory, per direction (PCIe, or NVLink-C2C on Grace systems): what
  /// activation CPU offloading moves over. bandwidth_gbps 0 = not given (offloading refused).
  CommTier host;
  /// Fraction of a collective's time that the compute it overlaps with really hides (TP
  /// userbuffer overlap, DP buckets, MoE all-to-alls): collectives beside GEMMs share SMs and
  /// HBM. 1 when not derived; derived from ONE published step with TP
  /// (scripts/derive_sustained_efficiency.py --key overlap_efficiency). Ring attention's
  /// point-to-point K,V exchanges are hidden whole up to the attention step beside them: a
  /// send/recv pair moves one peer's chunk on one or two NCCL channels, not the many SMs and
  /// the HBM traffic of a collective.
  double overlap_efficiency = 1;
  /// Bytes of HBM per GPU.
  double memory_bytes() const;
};

/// Activation recomputation (Korthikanti et al. 2022).
enum class Recompute { none, selective, full };

/// How an MoE block moves tokens to its experts (Megatron-Core --moe-token-dispatcher-type):
/// alltoall (dispatch and combine all-to-alls of the k routed copies), allgather (the hidden
/// states of the EP x ETP ranks all-gathered, the expert outputs reduce-scattered back; Megatron
/// offers it for small EP), or the flex dispatcher with one of its backends, deepep (DeepEP) or
/// hybridep (NVIDIA's HybridEP): all-to-all traffic in which a token crosses to another node
/// once, however many of its k experts live there, and is forwarded over NVLink.
enum class MoeDispatcher { alltoall, allgather, deepep, hybridep };
/// "alltoall", "allgather", "deepep", "hybridep".
const char *moe_dispatcher_name(MoeDispatcher d);
/// The dispatcher named `name` (as moe_dispatcher_name prints it), or nullopt.
std::optional<MoeDispatcher> parse_moe_dispatcher(const std::string &name);

/// How FP8 GEMM inputs are scaled (Megatron-Core --fp8-recipe, Transformer Engine's recipes):
/// delayed (DelayedScaling: per-tensor scales from an amax history, the amaxes of a model chunk
/// all-reduced (MAX) at the end of its forward and of its backward over the TP x DP x CP ranks of
/// its stage: Transformer Engine fp8.py reduce_and_update_fp8_tensors, Megatron-Core
/// get_amax_reduction_group; Megatron-Core's default and NeMo 1.x/2's before 2025), tensorwise
/// (Float8CurrentScaling: each tensor's own amax as it is cast; Megatron-Bridge's "FP8-CS"),
/// mxfp8 (MXFP8BlockScaling on Blackwell; "FP8-MX"), blockwise (Float8BlockScaling).
enum class Fp8Recipe { delayed, tensorwise, mxfp8, blockwise };
/// "delayed", "tensorwise", "mxfp8", "blockwise" (Megatron-Core's names).
const char *fp8_recipe_name(Fp8Recipe r);
/// The recipe named `name` (as fp8_recipe_name prints it), or nullopt.
std::optional<Fp8Recipe> parse_fp8_recipe(const std::string &name);
/// Which kernels run the attention core under Megatron-Core (--attention-backend; Transformer
/// Engine's DotProductAttention): fused (cuDNN's fused attention, what TE selects on Hopper and
/// newer by default) or flash (the flash-attn package's FlashAttention-2 kernels, also what TE
/// runs when NVTE_FUSED_ATTN=0). PyTorch (Framework::pytorch) runs its own SDPA either way.
enum class AttentionBackend { fused, flash };
/// "fused" or "flash" (Megatron-Core's names).
const char *attention_backend_name(AttentionBackend b);
/// The backend named `name` (as attention_backend_name prints it), or nullopt.
std::optional<AttentionBackend> parse_attention_backend(const std::string &name);

/// "none", "selective", "full".
const char *recompute_name(Recompute r);

/// Megatron-Core's --recompute-modules (TransformerConfig.recompute_modules; only read with
/// selective granularity), as bit flags: the modules whose forward is run again in backward
/// instead of keeping its outputs.
enum RecomputeModule : unsigned {
  kRecomputeCoreAttn = 1u << 0,      ///< "core_attn": the attention core (the default list)
  kRecomputeLayernorm = 1u << 1,     ///< "layernorm": norms that are modules of their own
  kRecomputeMlaUpProj = 1u << 2,     ///< "mla_up_proj": MLA's q and kv up projections (+ RoPE)
  kRecomputeMlp = 1u << 3,           ///< "mlp": the dense MLP
  kRecomputeMoeAct = 1u << 4,        ///< "moe_act": the routed experts' activation function
  kRecomputeSharedExperts = 1u << 5, ///< "shared_experts": the MoE blocks' shared experts
  kRecomputeMoe = 1u << 6            ///< "moe": the whole MoE layer (router, dispatch and combine
                          ///< all-to-alls, routed and shared experts; Megatron-Core's MoELayer
                          ///< checkpoints its forward, moe_layer.py moe_layer_recompute)
};
/// Flags of a comma-separated list of those names ("mla_up_proj,mlp"); false with `bad` set to
/// the first name that is not one.
bool parse_recompute_modules(const std::string &list, unsigned &flags, std::string &bad);
/// The names of `flags`, comma-separated, in a fixed order (core_attn, layernorm, mla_up_proj,
/// mlp, moe_act, shared_experts, moe); "" for 0, every name for ~0u.
std::string recompute_modules_name(unsigned flags);

/// Largest GPU count (dp * tp * pp) and parallel degree the estimator accepts: 2^24, far beyond
/// any cluster, and small enough that every layout product stays exact in 64 bits.
inline constexpr int kMaxGpus = 1 << 24;

/// The training framework whose kernels and memory the estimate models.
enum class Framework {
  megatron, ///< Megatron-LM (2022 papers): fp16/bf16 weights and fused kernels, K = 12 optimizer
  pytorch,  ///< PyTorch eager with bf16 autocast over fp32 weights, fused AdamW (constants.hpp)
};
/// "megatron" or "pytorch".
const char *framework_name(Framework f);

/// A parallel layout and its training options (Megatron-LM, ZeRO and PyTorch FSDP terms). Rank
/// order as Megatron-Core builds its groups: TP innermost, then CP, then DP, then PP.
struct Strategy {
  int dp = 1;                            ///< data-parallel degree d
  int tp = 1;                            ///< tensor-parallel degree t
  int pp = 1;                            ///< pipeline-parallel degree p
  int cp = 1;                            ///< context-parallel degree (ring attention over s)
  /// Expert-parallel degree: the E experts of an MoE block sharded over ep ranks carved from the
  /// tp x cp x dp ranks (Megatron-Core's expert mesh etp x ep x edp); 1 for dense models.
  int ep = 1;
  int etp = 0;        ///< expert tensor-parallel degree; 0 = tp (Megatron-Core's default)
  /// Tokens the busiest expert rank receives over the balanced share (router load imbalance);
  /// 1 = balanced (auxiliary-loss or loss-free balancing as trained), settable.
  double moe_imbalance = 1.0;
  /// Megatron-Core's --moe-shared-expert-overlap: the shared experts' GEMMs run beside the
  /// token dispatch/combine all-to-alls (off by default, as in Megatron-Core).
  bool moe_shared_expert_overlap = false;
  /// Megatron-Core's --overlap-moe-expert-parallel-comm (with --delay-wgrad-compute; the
  /// recipes' moe_a2a_overlap): the forward and backward of adjacent micro-batches are merged so
  /// that one's dispatch/combine all-to-alls run behind the other's compute (MoE README, "EP A2A
  /// Overlap"). Off by default.
  bool moe_a2a_overlap = false;
  /// Transformer Engine's fused grouped expert MLP (NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 with
  /// Megatron-Core's use_transformer_engine_op_fuser; ops/fused/grouped_mlp.py): under MXFP8 (or
  /// NVFP4) on SM 10.x, fc1, the gated activation scaled by the routing probabilities, the
  /// quantization of its output and fc2 run as CuTe DSL grouped-GEMM kernels: each GEMM pass is
  /// one kernel over all local experts, the activation and its backward run in the GEMMs'
  /// epilogues, and so do the casts of fc2's input and of fc1's output gradient. Priced only
  /// with FP8 GEMMs under fp8_recipe mxfp8, where Transformer Engine fuses; elsewhere no effect.
  bool moe_fused_grouped_mlp = false;
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall; ///< the token dispatcher
  int zero = 0;                          ///< ZeRO stage 0..3 (3 = FSDP full shard)
  /// Ranks one shard group spans (hybrid sharding, HSDP / DeepSpeed's hpZ): model states are
  /// sharded over zero_shard ranks and replicated across the dp*cp/zero_shard groups; 0 = the
  /// whole dp*cp group (plain ZeRO / FSDP full shard).
  int zero_shard = 0;
  Recompute recompute = Recompute::none; ///< activation recomputation
  /// With recompute = selective: RecomputeModule flags (Megatron-Core's --recompute-modules);
  /// 0 = core_attn, Megatron-Core's default list.
  unsigned recompute_modules = 0;
  /// The recompute modules in effect: recompute_modules under selective recompute, else none
  /// (Megatron-Core reads the list only with selective granularity).
  unsigned active_recompute_modules() const {
    return recompute == Recompute::selective ? recompute_modules : 0u;
  }
  /// The attention core is recomputed (selective with core_attn, or the default list).
  bool recompute_core_attn() const {
    return recompute == Recompute::selective &&
           (recompute_modules == 0 || (recompute_modules & kRecomputeCoreAttn) != 0);
  }
  /// Blocks per stage (per model chunk) fully recomputed (Megatron's --recompute-num-layers with
  /// the block method); 0 = all of them. Only with recompute = full.
  int recompute_layers = 0;
  bool sp = false;                       ///< sequence parallelism (needs tp > 1 to matter)
  int micro_batch = 1;                   ///< b [samples]
  int global_batch = 0;                  ///< B [samples]; 0 = dp * micro_batch (one micro-batch)
  int interleave = 1;                    ///< v, model chunks per pipeline stage (interleaved 1F1B)
  /// Blocks on the first / last pipeline stage (Megatron's --decoder-first/last-pipeline-num-
  /// layers); 0 = an even share. The other stages split the rest evenly.
  int first_stage_layers = 0, last_stage_layers = 0;
  double bucket_bytes = 25.0 * 1024 * 1024; ///< DP gradient bucket [bytes]
  bool fp32_grads = false;       ///< keep and reduce fp32 gradients (Megatron: 18 B/parameter)
  bool overlap_dp = true;        ///< hide DP bucket reductions and ZeRO-3 prefetch behind compute
  /// Megatron's --overlap-param-gather: the distributed optimizer's parameter all-gather runs
  /// bucket by bucket behind the next iteration's first forward (all but the first bucket hidden).
  bool overlap_param_gather = false;
  bool overlap_tp = false;       ///< hide TP collectives behind compute (not by default)
  /// Megatron's overlap_p2p_comm: in the interleaved schedule (v > 1) each chunk's stage-boundary
  /// send/recv runs beside the next chunk's compute in the steady state. Megatron-LM, NeMo and
  /// Megatron-Bridge turn it on whenever v > 1; the estimate keeps the transfers exposed unless
  /// asked (`--overlap-p2p-comm`): hiding them made the published runs that set it worse
  /// (docs/estimator.md, "Pipeline send/recv overlap").
  bool overlap_p2p_comm = false;
  bool pp_scatter_gather = true; ///< send b s h / t per boundary when tp > 1 (Narayanan et al.)
  /// Fused cross-entropy (Megatron's --cross-entropy-loss-fusion, Liger): the loss never keeps
  /// the fp32 logits; unfused keeps fp32 softmax and bf16 logits gradient (6 B per logit).
  bool fused_ce = false;
  /// Megatron-Core's --cpu-offloading-num-layers (activations only, as Megatron-Bridge's
  /// performance recipes set it: cpu_offloading_weights false): the saved activations of the
  /// first N blocks go to host memory after their forward and come back before their backward,
  /// on copy streams behind the neighbouring blocks' compute (Transformer Engine's
  /// cpu_offload); 0 = off. Megatron-Core refuses it with pp > 1 or any recompute, and wants
  /// N < layers.
  int offload_layers = 0;
  /// Megatron-Core's --fp8-param-gather (Megatron-Bridge's FP8 recipes set it, mixed_precision.py
  /// at v0.2.0): the weight matrices are kept in FP8 (with the fp32 master copy in the
  /// distributed optimizer) instead of bf16 plus an FP8 copy, and are all-gathered in FP8.
  /// Only with FP8 GEMMs.
  bool fp8_param_gather = false;
  /// Megatron-Core's fp8_output_proj (transformer_config.py): the LM head's logits GEMMs run under
  /// the MXFP8 autocast (TELMHeadColumnParallelLinear) instead of in 16 bits. Megatron-Core
  /// activates it only with FP8 GEMMs and fp8_recipe mxfp8; elsewhere it changes nothing.
  bool fp8_output_proj = false;
  /// Megatron-Core's fp8_dot_product_attention (--fp8-dot-product-attention; Transformer Engine's
  /// fp8_dpa): the attention core's fused kernels run in FP8 (MXFP8 under fp8_recipe mxfp8),
  /// priced by the system's FP8 attention rows. Only with FP8 GEMMs (Megatron-Core enables it
  /// inside the FP8 autocast); elsewhere it changes nothing.
  bool fp8_attention = false;
  /// FP8 scaling recipe (Megatron-Core --fp8-recipe, default delayed). Only with FP8 GEMMs; under
  /// delayed scaling each model chunk's forward and backward end in a blocking amax all-reduce
  /// over its stage's TP x DP x CP ranks (StageComm).
  Fp8Recipe fp8_recipe = Fp8Recipe::delayed;
  /// The attention core's kernels under Megatron-Core (priced by the system's flash or fused
  /// attention tables); ignored for Framework::pytorch (SDPA).
  AttentionBackend attention_backend = AttentionBackend::fused;
  /// PyTorch "pure bf16" (model.to(bfloat16), no fp32 master weights): parameters, gradients and
  /// AdamW moments in bf16, 8 B per parameter (llama-recipes' pure_bf16); else mixed precision.
  bool pure_bf16 = false;
  /// Megatron-Core's precision-aware optimizer (--use-precision-aware-optimizer; Megatron-Bridge's
  /// performance scripts set it for bf16 Adam): Transformer Engine's FusedAdam updates the
  /// distributed optimizer's shard. Where it owns the fp32 master weights (no FP8, or FP8 with
  /// delayed scaling: OptimizerConfig.use_precision_aware_optimizer_no_fp8_or_ds_fp8) and the
  /// parameters are bf16, it keeps only their low 16 bits (store_param_remainders, Megatron-Core's
  /// default): 2 B per parameter instead of 4 (adam_state_bytes). Megatron with the distributed
  /// optimizer (zero >= 1) only; Estimator::check refuses it otherwise.
  bool precision_aware_optimizer = false;
  /// With the precision-aware optimizer, the Adam moments in bf16 (--exp-avg-dtype bf16
  /// --exp-avg-sq-dtype bf16; Megatron-Bridge's DeepSeek-V3 and Moonlight recipes): 2 + 2 B per
  /// parameter instead of 4 + 4. Implies precision_aware_optimizer.
  bool bf16_moments = false;
  Framework framework = Framework::megatron; ///< whose kernels and memory layout
  /// Number of GPUs dp * tp * pp * cp in 64 bits, saturated at INT64_MAX (any int degrees: no
  /// overflow); Estimator::check refuses products above kMaxGpus.
  std::int64_t gpus() const {
    std::int64_t g = 0, g2 = 0;
    if (__builtin_mul_overflow(std::int64_t{dp} * tp, std::int64_t{pp}, &g) ||
        __builtin_mul_overflow(g, std::int64_t{cp}, &g2))
      return INT64_MAX;
    return g2;
  }
  /// Effective global batch: global_batch, or dp * micro_batch when unset (64-bit).
  std::int64_t batch() const {
    return global_batch > 0 ? global_batch : std::int64_t{dp} * micro_batch;
  }
  /// Ranks of one shard group: zero_shard, or dp * cp.
  int shard_ranks() const { return zero_shard > 0 ? zero_shard : dp * cp; }
  /// Expert tensor-parallel degree in use.
  int expert_tp() const { return etp > 0 ? etp : tp; }
  /// True when the step's GEMMs run in MXFP8: FP8 GEMMs (`fp8_gemms`, ModelConfig::fp8) under
  /// fp8_recipe mxfp8. Throws nothing.
  bool mxfp8(bool fp8_gemms) const { return fp8_gemms && fp8_recipe == Fp8Recipe::mxfp8; }
  /// fp8_output_proj as Megatron-Core applies it: only with MXFP8 GEMMs (transformer_config.py).
  bool mxfp8_lm_head(bool fp8_gemms) const { return fp8_output_proj && mxfp8(fp8_gemms); }
  /// fp8_dot_product_attention as Megatron-Core applies it: only with FP8 GEMMs, and only on
  /// the fused backend (Transformer Engine runs FP8 attention through cuDNN alone).
  bool fp8_attention_kernel(bool fp8_gemms) const {
    return fp8_attention && fp8_gemms && attention_backend == AttentionBackend::fused &&
           framework == Framework::megatron;
  }
  /// moe_fused_grouped_mlp as Transformer Engine applies it: only with MXFP8 GEMMs
  /// (ops/fused/grouped_mlp.py fuses block-scaled recipes; NVFP4 is not an fp8_recipe here).
  bool fused_grouped_mlp(bool fp8_gemms) const { return moe_fused_grouped_mlp && mxfp8(fp8_gemms); }
  /// Expert-data-parallel degree: tp cp dp / (etp ep), the ranks holding the same experts.
  int expert_dp() const { return static_cast<int>(std::int64_t{tp} * cp * dp / (std::int64_t{expert_tp()} * ep)); }
};

/// Loads a system YAML (name, gpus_per_node, device{...}, communication{intra, inter}); see
/// docs/estimator.md. \throws InputError naming the file, line and field.
SystemConfig load_system(const std::string &path);

/// `system` with its NVLink domains cut to `domain` GPUs (domain < gpus_per_node): a rack
/// scheduled in smaller blocks, e.g. a GB200 NVL72 rack used as 64-GPU domains by Slurm's
/// `--segment=16` (16 of its 18 compute trays, NVIDIA DGX Cloud benchmarking's launchers). The
/// NICs are per GPU, so the inter-node bandwidth of a "node" (one domain) scales by domain /
/// gpus_per_node; device and links are unchanged. \throws InputError (field "nvlink_domain")
/// unless 1 <= domain <= gpus_per_node.
SystemConfig with_nvlink_domain(const SystemConfig &system, int domain);

}  // namespace scalefit::estimator

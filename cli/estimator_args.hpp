// Options of the estimator commands (estimate, search, compare, validate): the model file with
// its per-field overrides and the layout/strategy flags, parsed into estimator types.
#pragma once

#include "commands.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/model.hpp"
#include "scalefit/core/units.hpp"
#include "scalefit/estimator/estimator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace scalefit::cli {
namespace est = scalefit::estimator;

/// Model file plus per-field overrides (--layers ... --ffn, --dtype, --attention).
struct ModelArgs {
  std::string path;
  ModelOverrides o;
  void add(CLI::App *c) {
    c->add_option("--model", path, "model YAML (configs/models/...)");
    // Ranges as validate_model's: a 0 would otherwise read as "not given" and be ignored.
    c->add_option("--layers", o.layers, "override or give: transformer layers l")
        ->check(CLI::Range(1, 1 << 16));
    c->add_option("--hidden", o.hidden, "override or give: hidden size h")
        ->check(CLI::Range(1, 1 << 20));
    c->add_option("--heads", o.heads, "override or give: attention heads a")
        ->check(CLI::Range(1, 1 << 16));
    c->add_option("--seq", o.sequence, "override or give: sequence length s")
        ->check(CLI::Range(1, 1 << 24));
    c->add_option("--vocab", o.vocabulary, "override or give: vocabulary V")
        ->check(CLI::Range(1, 1 << 24));
    c->add_option("--ffn", o.ffn, "override or give: MLP inner size (default 4h)")
        ->check(CLI::Range(1, 1 << 22));
    c->add_option("--dtype", o.dtype,
                  "override: fp16, bf16, fp32, or fp8 (Transformer Engine: FP8 GEMM inputs, bf16 "
                  "elsewhere)");
    c->add_option("--kv-heads", o.kv_heads, "override: key/value heads (GQA; default = heads)")
        ->check(CLI::Range(1, 1 << 16));
    c->add_option("--mlp", o.mlp, "override: gelu | relu2 | swiglu | geglu")
        ->check(CLI::IsMember({"gelu", "relu2", "swiglu", "geglu"}));
    c->add_option("--norm", o.norm, "override: layernorm | rmsnorm")
        ->check(CLI::IsMember({"layernorm", "rmsnorm"}));
    c->add_option("--position", o.position, "override: learned | rope")
        ->check(CLI::IsMember({"learned", "rope"}));
    c->add_option("--softmax-type", o.softmax,
                  "override: attention softmax vanilla | off-by-one | learnable (gpt-oss's "
                  "attention sinks: one learned logit per head)")
        ->check(CLI::IsMember({"vanilla", "off-by-one", "learnable"}));
    c->add_flag("--no-bias", no_bias, "linear layers without biases (Llama)");
    c->add_option("--head-dim", o.head_dim, "override: head dimension d (default h / heads)")
        ->check(CLI::Range(1, 1 << 16));
    c->add_option("--experts", o.experts, "override: routed experts E (mixture of experts)")
        ->check(CLI::Range(1, 1 << 16));
    c->add_option("--top-k", o.top_k, "override: experts per token k")
        ->check(CLI::Range(1, 1 << 16));
    c->add_option("--moe-ffn", o.moe_ffn, "override: expert MLP inner size")
        ->check(CLI::Range(1, 1 << 22));
    c->add_option("--shared-experts", o.shared_experts, "override: shared experts")
        ->check(CLI::Range(0, 1 << 10));
    c->add_option("--capacity-factor", o.capacity_factor,
                  "override: expert capacity factor (Megatron --moe-expert-capacity-factor; 0 = "
                  "dropless)")
        ->check(finite_range(0.0, 1024.0));
    c->add_flag("--pad-to-capacity", pad_to_capacity,
                "pad every expert's input to its capacity (Megatron "
                "--moe-pad-expert-input-to-capacity)");
    c->add_option("--mtp-num-layers", o.mtp_layers,
                  "override: multi-token prediction modules on the last stage (Megatron-Core "
                  "--mtp-num-layers; DeepSeek-V3: 1; 0 = none)")
        ->check(CLI::Range(0, 64));
    c->add_option("--sliding-window", o.sliding_window,
                  "override: sliding-window attention, keys before each query (Megatron-Core "
                  "--window-size W,0; 0 = full causal attention)")
        ->check(CLI::Range(0, 1 << 30));
    c->add_option("--window-attn-skip-freq", o.window_skip_freq,
                  "override: every n-th block keeps full attention (Megatron-Core "
                  "--window-attn-skip-freq; gpt-oss: 2; 0 = every block windowed)")
        ->check(CLI::Range(0, 1 << 16));
    c->add_option("--q-lora-rank", o.q_lora_rank,
                  "override: MLA query latent rank (0 = no query compression)")
        ->check(CLI::Range(0, 1 << 20));
    c->add_option("--kv-lora-rank", o.kv_lora_rank,
                  "override: MLA key/value latent rank (multi-head latent attention, DeepSeek)")
        ->check(CLI::Range(1, 1 << 20));
    c->add_option("--qk-nope-head-dim", o.qk_nope_head_dim,
                  "override: MLA query/key head dimension without RoPE")
        ->check(CLI::Range(1, 1 << 16));
    c->add_option("--qk-rope-head-dim", o.qk_rope_head_dim,
                  "override: MLA decoupled RoPE head dimension")
        ->check(CLI::Range(1, 1 << 16));
    c->add_option("--v-head-dim", o.v_head_dim, "override: MLA value head dimension")
        ->check(CLI::Range(1, 1 << 16));
    c->add_option("--attention", o.attention,
                  "override: fused (flash, the default) or unfused (Megatron 2022: s x s scores "
                  "stored)");
    c->add_flag("--untied", untied, "the LM head has its own V x h weights (not tied)");
  }
  bool untied = false;
  bool no_bias = false;
  bool pad_to_capacity = false;
  est::ModelConfig build() {
    if (no_bias)
      o.bias = false;
    if (pad_to_capacity)
      o.pad_to_capacity = true;
    est::ModelConfig m = build_model(path, o);
    if (untied)
      m.tied_embeddings = false;
    return m;
  }
};

/// DP gradient bucket range [B]: below 1 KiB the bucket count (and the latency paid per bucket)
/// is absurd; 0 used to read as 1 B.
inline constexpr std::uint64_t kMinBucket = 1024, kMaxBucket = std::uint64_t{1} << 40;

/// Strategy options shared by estimate and compare.
struct StrategyArgs {
  est::Strategy s;
  std::string recompute = "none";
  std::string recompute_modules; // --recompute-modules, comma-separated
  CLI::Option *recompute_modules_opt = nullptr;
  std::string framework = "megatron";
  std::string bucket = "25M";
  bool no_overlap = false;
  bool no_scatter_gather = false;
  std::string pp_layers;
  std::string a2a_matrix = "uniform";
  std::string moe_dispatcher = "alltoall";
  std::string fp8_recipe = "delayed";
  std::string attention_backend = "fused";
  est::AlltoallMatrix matrix() const {
    return a2a_matrix == "skewed" ? est::AlltoallMatrix::skewed : est::AlltoallMatrix::uniform;
  }
  void add(CLI::App *c, bool layout) {
    c->add_option("--cp", s.cp, "context-parallel degree (ring attention over the sequence)")
        ->check(CLI::Range(1, est::kMaxGpus));
    c->add_option("--ep", s.ep, "expert-parallel degree (MoE; ranks from tp x cp x dp)")
        ->check(CLI::Range(1, est::kMaxGpus));
    c->add_option("--etp", s.etp, "expert tensor-parallel degree (default: tp)")
        ->check(CLI::Range(1, est::kMaxGpus));
    c->add_option("--moe-imbalance", s.moe_imbalance,
                  "tokens of the busiest expert rank over the balanced share (default 1)")
        ->check(finite_range(1.0, 64.0));
    c->add_flag("--moe-a2a-overlap", s.moe_a2a_overlap,
                "hide the token dispatch/combine all-to-alls behind the compute of the adjacent "
                "micro-batch (Megatron-Core --overlap-moe-expert-parallel-comm)");
    c->add_flag("--moe-fused-grouped-mlp", s.moe_fused_grouped_mlp,
                "with --dtype fp8 --fp8-recipe mxfp8: Transformer Engine's fused grouped expert "
                "MLP (NVTE_CUTEDSL_FUSED_GROUPED_MLP=1, SM 10.x): one kernel per expert GEMM "
                "pass, the activation and casts in the GEMMs' epilogues");
    c->add_flag("--moe-shared-expert-overlap", s.moe_shared_expert_overlap,
                "hide the token dispatch/combine all-to-alls behind the shared experts' GEMMs "
                "(Megatron-Core)");
    c->add_option(
         "--moe-dispatcher", moe_dispatcher,
         "MoE token dispatcher (Megatron-Core --moe-token-dispatcher-type, the flex "
         "dispatcher by its backend): alltoall (default), allgather (all-gather/"
         "reduce-scatter over the ep x etp ranks), deepep or hybridep (flex: a token crosses "
         "to another node once, not once per routed copy)")
        ->check(CLI::IsMember({"alltoall", "allgather", "deepep", "hybridep"}))
        ->each([this](const std::string &v) { s.moe_dispatcher = *est::parse_moe_dispatcher(v); });
    c->add_option("--attention-backend", attention_backend,
                  "attention kernels under Megatron-Core (--attention-backend): fused (cuDNN, "
                  "Transformer Engine's default on Hopper; default) or flash (FlashAttention-2, "
                  "also what NVTE_FUSED_ATTN=0 runs); priced by the system's "
                  "fused_attention_efficiency or flash_attention_efficiency table")
        ->check(CLI::IsMember({"fused", "flash"}))
        ->each([this](const std::string &v) {
          s.attention_backend = *est::parse_attention_backend(v);
        });
    c->add_option("--alltoallv-matrix", a2a_matrix,
                  "with --fit: the measured alltoallv count matrix that prices the MoE "
                  "dispatch/combine, uniform or skewed (default uniform; then alltoall, then "
                  "the spec)")
        ->check(CLI::IsMember({"uniform", "skewed"}));
    c->add_option("--zero-shard", s.zero_shard,
                  "shard model states over groups of this many DP ranks and replicate across "
                  "them (HSDP; default: the whole DP group)")
        ->check(CLI::Range(1, est::kMaxGpus));
    recompute_modules_opt =
        c->add_option("--recompute-modules", recompute_modules,
                      "with --recompute selective: the modules recomputed, comma-separated "
                      "(Megatron-Core's names: " +
                          est::recompute_modules_name(~0u) + "; default core_attn)");
    c->add_option("--recompute-layers", s.recompute_layers,
                  "with --recompute full: blocks per stage recomputed (default all)")
        ->check(CLI::Range(1, 1 << 16));
    c->add_flag("--overlap-p2p-comm", s.overlap_p2p_comm,
                "interleaved pipeline (--interleave > 1): hide the steady state's stage-boundary "
                "send/recv behind the next chunk's compute (Megatron's overlap_p2p_comm; off: "
                "docs/estimator.md)");
    c->add_flag("--overlap-param-gather", s.overlap_param_gather,
                "hide the distributed optimizer's parameter all-gather behind the next forward "
                "(Megatron)");
    c->add_flag("--pure-bf16", s.pure_bf16,
                "PyTorch without fp32 master weights: parameters, gradients and AdamW moments in "
                "bf16 (8 B/parameter)");
    c->add_flag("--precision-aware-optimizer", s.precision_aware_optimizer,
                "Megatron-Core's --use-precision-aware-optimizer: Transformer Engine's FusedAdam "
                "keeps only the remainder bits of the fp32 master weights of bf16 parameters "
                "(2 B instead of 4; not under FP8 other than delayed scaling); needs --zero 1..3");
    c->add_flag("--bf16-moments", s.bf16_moments,
                "with the precision-aware optimizer (implied), the Adam moments in bf16 "
                "(--exp-avg-dtype bf16 --exp-avg-sq-dtype bf16): 4 B instead of 8");
    c->add_flag("--fused-ce", s.fused_ce,
                "fused cross-entropy: no fp32 logits kept (Megatron --cross-entropy-loss-fusion)");
    c->add_option("--cpu-offloading-num-layers", s.offload_layers,
                  "offload the activations of the first N blocks to host memory (Megatron-Core; "
                  "pp 1, no recompute; priced by the system's communication.host link)")
        ->check(CLI::Range(0, 1 << 16));
    c->add_flag("--fp8-param-gather", s.fp8_param_gather,
                "with --dtype fp8: weight matrices kept and all-gathered in FP8 (Megatron-Core; "
                "Megatron-Bridge's FP8 recipes)");
    c->add_flag("--fp8-dot-product-attention", s.fp8_attention,
                "with --dtype fp8: the attention core's fused kernels in FP8 (MXFP8 under "
                "--fp8-recipe mxfp8), priced by the system's FP8 attention rows (Megatron-Core "
                "fp8_dot_product_attention)");
    c->add_flag("--fp8-output-proj", s.fp8_output_proj,
                "with --dtype fp8 --fp8-recipe mxfp8: the LM head's logits GEMMs in MXFP8 "
                "(Megatron-Core fp8_output_proj)");
    c->add_option("--fp8-recipe", fp8_recipe,
                  "with --dtype fp8, Megatron-Core --fp8-recipe: delayed (default: each model "
                  "chunk's forward and backward end in an amax all-reduce over its stage's "
                  "TP x DP x CP ranks), tensorwise (current scaling, Megatron-Bridge FP8-CS), "
                  "mxfp8 (FP8-MX) or blockwise")
        ->check(CLI::IsMember({"delayed", "tensorwise", "mxfp8", "blockwise"}))
        ->each([this](const std::string &v) { s.fp8_recipe = *est::parse_fp8_recipe(v); });
    if (layout) {
      c->add_option("--dp", s.dp, "data-parallel degree")->check(CLI::Range(1, est::kMaxGpus));
      c->add_option("--tp", s.tp, "tensor-parallel degree")->check(CLI::Range(1, est::kMaxGpus));
      c->add_option("--pp", s.pp, "pipeline-parallel degree")->check(CLI::Range(1, est::kMaxGpus));
      c->add_option("--zero", s.zero, "ZeRO stage 0..3")->check(CLI::Range(0, 3));
      c->add_option("--recompute", recompute, "none | selective | full")
          ->check(CLI::IsMember({"none", "selective", "full"}));
      c->add_flag("--sp", s.sp, "sequence parallelism");
      c->add_option("--micro-batch", s.micro_batch, "micro-batch size b")
          ->check(CLI::Range(1, 1 << 30));
      c->add_option("--interleave", s.interleave, "model chunks per stage v (interleaved 1F1B)")
          ->check(CLI::Range(1, 1 << 16));
      c->add_option("--pp-layers", pp_layers,
                    "blocks per pipeline stage, comma-separated (e.g. 7,8,...,8,7); the middle "
                    "stages must be equal, as Megatron's first/last-stage options make them");
      c->add_option("--first-stage-layers", s.first_stage_layers,
                    "blocks on the first stage (Megatron --decoder-first-pipeline-num-layers)")
          ->check(CLI::Range(0, 1 << 16));
      c->add_option("--last-stage-layers", s.last_stage_layers,
                    "blocks on the last stage (Megatron --decoder-last-pipeline-num-layers)")
          ->check(CLI::Range(0, 1 << 16));
    }
    c->add_option("--framework", framework,
                  "megatron (fp16 weights, fused kernels) or pytorch (eager, bf16 autocast over "
                  "fp32 weights, fused AdamW: pytorch_gpt_step.py)")
        ->check(CLI::IsMember({"megatron", "pytorch"}));
    c->add_option("--bucket", bucket, "DP gradient bucket size (K/M/G, 1024-based)");
    c->add_flag("--fp32-grads", s.fp32_grads, "fp32 gradients as Megatron keeps them (18 B/param)");
    c->add_flag("--no-overlap", no_overlap, "do not hide DP/ZeRO communication behind compute");
    c->add_flag("--overlap-tp", s.overlap_tp, "hide TP collectives behind compute");
    c->add_flag("--no-scatter-gather", no_scatter_gather, "PP sends b s h, not b s h / t");
  }
  est::Strategy build() {
    if (!pp_layers.empty())
      parse_pp_layers();
    s.recompute = recompute == "full"        ? est::Recompute::full
                  : recompute == "selective" ? est::Recompute::selective
                                             : est::Recompute::none;
    if (recompute_modules_opt && recompute_modules_opt->count() > 0) {
      std::string bad;
      if (!est::parse_recompute_modules(recompute_modules, s.recompute_modules, bad))
        throw InputError("unknown module '" + bad + "' (expected some of " +
                             est::recompute_modules_name(~0u) + ")",
                         "", 0, "--recompute-modules");
    }
    const std::uint64_t bucket_bytes = parse_bytes(bucket, "--bucket");
    if (bucket_bytes < kMinBucket || bucket_bytes > kMaxBucket)
      throw InputError("expected a bucket size in [1K, 1T], got '" + bucket + "'", "", 0,
                       "--bucket");
    s.bucket_bytes = static_cast<double>(bucket_bytes);
    s.overlap_dp = !no_overlap;
    s.framework = framework == "pytorch" ? est::Framework::pytorch : est::Framework::megatron;
    s.pp_scatter_gather = !no_scatter_gather;
    return s;
  }
  /// --pp-layers a,b,...,z: pp counts whose middle entries are equal -> first/last stage layers.
  void parse_pp_layers() {
    std::vector<int> n;
    std::size_t pos = 0;
    while (pos <= pp_layers.size()) {
      const std::size_t comma = std::min(pp_layers.find(',', pos), pp_layers.size());
      const std::string item = pp_layers.substr(pos, comma - pos);
      char *end = nullptr;
      const long v = std::strtol(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || v < 0 || v > (1 << 16))
        throw InputError("expected comma-separated block counts in [0, 65536], got '" + item + "'",
                         "", 0, "--pp-layers");
      n.push_back(static_cast<int>(v));
      pos = comma + 1;
    }
    if (static_cast<int>(n.size()) != s.pp)
      throw InputError("gives " + std::to_string(n.size()) + " stages but --pp is " +
                           std::to_string(s.pp),
                       "", 0, "--pp-layers");
    for (std::size_t i = 2; i + 1 < n.size(); ++i)
      if (n[i] != n[1])
        throw InputError("the middle stages must hold equal block counts (Megatron's first/last "
                         "stage layout)",
                         "", 0, "--pp-layers");
    s.first_stage_layers = n.front();
    s.last_stage_layers = n.size() > 1 ? n.back() : 0;
    if (n.size() == 1)
      s.first_stage_layers = 0;
  }
};

/// --nvlink-domain N on `c` into `domain` [GPUs per NVLink domain]: a rack scheduled in smaller
/// blocks than the system's gpus_per_node (estimator::with_nvlink_domain).
inline void add_nvlink_domain(CLI::App *c, int &domain) {
  c->add_option("--nvlink-domain", domain,
                "GPUs per NVLink domain as the job is scheduled, when fewer than the system's "
                "gpus_per_node (a GB200 NVL72 rack in 64-GPU blocks: --segment=16 trays); the "
                "inter-node bandwidth per domain scales with it")
      ->check(CLI::Range(1, est::kMaxGpus));
}

} // namespace scalefit::cli

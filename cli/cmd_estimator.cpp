// `scalefit estimate | search | compare`: the training estimator (estimator/).
#include "commands.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/records.hpp"
#include "scalefit/core/units.hpp"
#include "scalefit/estimator/published.hpp"
#include "scalefit/estimator/report.hpp"
#include "scalefit/fitting/fit_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <cstdlib>
#include <string>
#include <vector>

namespace scalefit::cli {
namespace {
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
    c->add_flag("--no-bias", no_bias, "linear layers without biases (Llama)");
    c->add_option("--head-dim", o.head_dim, "override: head dimension d (default h / heads)")
        ->check(CLI::Range(1, 1 << 16));
    c->add_option("--experts", o.experts, "override: routed experts E (mixture of experts)")
        ->check(CLI::Range(1, 1 << 16));
    c->add_option("--top-k", o.top_k, "override: experts per token k")->check(CLI::Range(1, 1 << 16));
    c->add_option("--moe-ffn", o.moe_ffn, "override: expert MLP inner size")
        ->check(CLI::Range(1, 1 << 22));
    c->add_option("--shared-experts", o.shared_experts, "override: shared experts")
        ->check(CLI::Range(0, 1 << 10));
    c->add_option("--capacity-factor", o.capacity_factor,
                  "override: expert capacity factor (Megatron --moe-expert-capacity-factor; 0 = "
                  "dropless)")
        ->check(CLI::Range(0.0, 1024.0));
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
constexpr std::uint64_t kMinBucket = 1024, kMaxBucket = std::uint64_t{1} << 40;

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
        ->check(CLI::Range(1.0, 64.0));
    c->add_flag("--moe-a2a-overlap", s.moe_a2a_overlap,
                "hide the token dispatch/combine all-to-alls behind the compute of the adjacent "
                "micro-batch (Megatron-Core --overlap-moe-expert-parallel-comm)");
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
    c->add_flag("--overlap-param-gather", s.overlap_param_gather,
                "hide the distributed optimizer's parameter all-gather behind the next forward "
                "(Megatron)");
    c->add_flag("--pure-bf16", s.pure_bf16,
                "PyTorch without fp32 master weights: parameters, gradients and AdamW moments in "
                "bf16 (8 B/parameter)");
    c->add_flag("--fused-ce", s.fused_ce,
                "fused cross-entropy: no fp32 logits kept (Megatron --cross-entropy-loss-fusion)");
    c->add_option("--cpu-offloading-num-layers", s.offload_layers,
                  "offload the activations of the first N blocks to host memory (Megatron-Core; "
                  "pp 1, no recompute; priced by the system's communication.host link)")
        ->check(CLI::Range(0, 1 << 16));
    c->add_flag("--fp8-param-gather", s.fp8_param_gather,
                "with --dtype fp8: weight matrices kept and all-gathered in FP8 (Megatron-Core; "
                "Megatron-Bridge's FP8 recipes)");
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

est::Estimator make_estimator(const std::string &system_path, const std::string &fit_path,
                              const est::ModelConfig &model,
                              est::AlltoallMatrix matrix = est::AlltoallMatrix::uniform,
                              int nvlink_domain = 0) {
  est::SystemConfig sys = est::load_system(system_path);
  if (nvlink_domain > 0) {
    if (nvlink_domain > sys.gpus_per_node)
      throw InputError("an NVLink domain of " + std::to_string(nvlink_domain) +
                           " GPUs: at most the system's gpus_per_node, " +
                           std::to_string(sys.gpus_per_node),
                       system_path, 0, "--nvlink-domain");
    sys = est::with_nvlink_domain(sys, nvlink_domain);
  }
  std::shared_ptr<const est::CommModel> comm = std::make_shared<est::SpecCommModel>(sys);
  fitting::FitFilePtr fit;
  if (!fit_path.empty()) {
    fit = fitting::load_fit_file(fit_path);
    // A file with only compute/framework sections prices no message: keep the spec tiers.
    if (!fit->entries.empty())
      comm = est::make_fit_comm_model(fit_path, comm, model.dtype, matrix);
  }
  est::Estimator e(model, std::move(sys), comm);
  if (fit)
    e.use_compute(fit->compute);
  return e;
}

void print(const std::string &s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
}

struct EstimateCmd {
  std::string system, fit;
  ModelArgs model;
  StrategyArgs strat;
  int gpus = 0;
  int global_batch = 0;
  int scale_to = 0;
  int nvlink_domain = 0;
  bool json = false;
  void run() {
    const est::ModelConfig m = model.build();
    est::Estimator e = make_estimator(system, fit, m, strat.matrix(), nvlink_domain);
    est::Strategy s = strat.build();
    s.global_batch = global_batch > 0 ? global_batch : m.global_batch;
    e.validate(s, gpus);
    est::Estimate r;
    e.evaluate(s, r);
    std::optional<est::Scaling> sc;
    if (scale_to > 0)
      sc = est::scale_layout(e, s, r, scale_to);
    if (json) {
      nlohmann::json j = est::estimate_json(e, s, r);
      if (sc)
        j["scaling"] = est::scaling_json(*sc);
      print(dump_json(j, 2) + "\n");
    } else {
      print(est::estimate_table(e, s, r));
      if (sc)
        print(est::scaling_table(*sc));
    }
  }
};

struct SearchCmd {
  std::string system, fit;
  ModelArgs model;
  StrategyArgs strat;
  int gpus = 0, global_batch = 0, top = 10, max_tp = 0, max_cp = 8, max_ep = 64;
  int nvlink_domain = 0;
  bool json = false;
  void run() {
    const est::ModelConfig m = model.build();
    est::Estimator e = make_estimator(system, fit, m, strat.matrix(), nvlink_domain);
    est::SearchSpace space;
    space.base = strat.build();
    space.gpus = gpus;
    space.global_batch = global_batch > 0 ? global_batch : m.global_batch;
    space.max_tp = max_tp;
    space.max_cp = max_cp;
    space.max_ep = max_ep;
    const est::SearchResult r = est::search(e, space, top);
    if (json)
      print(dump_json(est::search_json(e, r), 2) + "\n");
    else
      print(est::search_table(e, r));
  }
};

struct CompareCmd {
  std::string system_a, system_b, fit_a, fit_b;
  ModelArgs model;
  StrategyArgs strat;
  int gpus = 0, global_batch = 0;
  bool json = false;
  CLI::App *app = nullptr;
  void run() {
    const est::ModelConfig m = model.build();
    est::Estimator a = make_estimator(system_a, fit_a, m, strat.matrix());
    est::Estimator b = make_estimator(system_b, fit_b, m, strat.matrix());
    est::SearchSpace space;
    space.base = strat.build();
    space.gpus = gpus;
    space.global_batch = global_batch > 0 ? global_batch : m.global_batch;
    std::optional<est::Strategy> s;
    if (app->count("--dp") || app->count("--tp") || app->count("--pp")) {
      est::Strategy st = space.base;
      st.global_batch = space.global_batch;
      s = st;
    }
    const est::Comparison c = est::compare(a, b, s, space);
    if (json)
      print(dump_json(est::comparison_json(a, b, c), 2) + "\n");
    else
      print(est::comparison_table(a, b, c));
  }
};

/// `scalefit validate RUNS.jsonl...`: published runs estimated with their own configuration.
struct ValidateCmd {
  std::vector<std::string> files;
  std::string root = ".";
  std::string fit_path, fit_system;
  std::string explain; ///< --explain ID: print that run's full estimate
  bool json = false;
  bool verbose = false;
  void run() {
    fitting::FitFilePtr fit;
    if (!fit_path.empty()) {
      if (fit_system.empty())
        throw InputError("--fit needs --fit-system (the system path the fit was measured on)", "",
                         0, "--fit-system");
      fit = fitting::load_fit_file(fit_path);
    }
    std::vector<std::vector<est::PublishedRun>> all;
    for (const std::string &f : files)
      all.push_back(est::load_published_runs(f, root));
    nlohmann::json j = nlohmann::json::array();
    std::string o, explained_report;
    bool explained = false;
    for (const auto &runs : all) {
      const std::vector<est::RunComparison> rows =
          est::compare_published(runs, root, fit ? &fit->compute : nullptr, fit_system, explain);
      for (const est::RunComparison &c : rows) {
        if (!explain.empty() && c.run->id == explain) {
          explained = true;
          if (!c.skipped.empty())
            throw InputError("run '" + explain + "' is not estimated: " + c.skipped, "", 0,
                             "--explain");
          std::string head = fmt::format(
              "{}: published {:.3f} s, estimated {:.3f} s ({:+.1f}%)\n{}\n", c.run->id,
              c.run->iteration_s, c.estimated_s, 100 * c.time_error, c.run->source);
          if (!json)
            o += head + c.report + "\n";
          else
            explained_report = head + c.report;
        }
        nlohmann::json r = {{"id", c.run->id},
                            {"source", c.run->source},
                            {"published_s", c.run->iteration_s}};
        if (!c.skipped.empty()) {
          r["skipped"] = c.skipped;
        } else {
          r["estimated_s"] = c.estimated_s;
          r["time_error"] = c.time_error;
          r["estimated_gib"] = c.estimated_gib;
          r["fits_memory"] = c.fits;
          r["calibration"] = c.run->held_for_calibration;
          if (c.run->memory_gib > 0) {
            r["published_gib"] = c.run->memory_gib;
            r["memory_error"] = c.memory_error;
          }
        }
        if (json)
          j.push_back(r);
        if (!verbose || json)
          continue;
        if (!c.skipped.empty()) {
          o += fmt::format("  {:<48} skipped: {}\n", c.run->id, c.skipped);
          continue;
        }
        o += fmt::format("  {:<48} {:9.3f} s  est {:9.3f} s  {:+6.1f}%  {:6.1f} GiB", c.run->id,
                         c.run->iteration_s, c.estimated_s, 100 * c.time_error, c.estimated_gib);
        if (c.run->memory_gib > 0)
          o += fmt::format(" (published {:.1f}, {:+.1f}%)", c.run->memory_gib,
                           100 * c.memory_error);
        o += fmt::format("{}{}{}\n", c.fits ? "" : " DOES NOT FIT",
                         c.run->held_for_calibration ? " (calibration run: in sample)" : "",
                         c.run->no_time ? " (memory only)" : "");
      }
      const est::SourceSummary sm = est::summarize_published(rows);
      if (sm.runs == 0)
        continue;
      o += fmt::format("{:<44} runs {:3}  out of sample {:3}: mean |time error| {:5.1f}%  max "
                       "{:5.1f}%",
                       sm.source, sm.runs, sm.estimated, 100 * sm.mean_abs_time,
                       100 * sm.max_abs_time);
      if (sm.memory_runs)
        o += fmt::format("; memory ({} runs) mean {:.1f}% max {:.1f}%", sm.memory_runs,
                         100 * sm.mean_abs_memory, 100 * sm.max_abs_memory);
      if (sm.calibration)
        o += fmt::format("; {} calibration", sm.calibration);
      if (sm.skipped)
        o += fmt::format("; {} not expressible", sm.skipped);
      if (sm.not_fitting)
        o += fmt::format("; {} estimated not to fit (not counted)", sm.not_fitting);
      o += "\n";
    }
    if (!explain.empty() && !explained)
      throw InputError("no run with id '" + explain + "' in the given files", "", 0, "--explain");
    if (json && !explained_report.empty()) // the table goes to stderr beside the JSON
      std::fprintf(stderr, "%s\n", explained_report.c_str());
    print(json ? dump_json(j, 2) + "\n" : o);
  }
};

} // namespace

void add_estimator_commands(CLI::App &app) {
  auto val = std::make_shared<ValidateCmd>();
  CLI::App *cv = app.add_subcommand(
      "validate", "estimate published training runs (JSONL) with their own configuration and "
                  "report the error per source");
  cv->add_option("runs", val->files, "published-runs JSONL files (tests/data/published-runs)")
      ->required()
      ->check(CLI::ExistingFile);
  cv->add_option("--root", val->root,
                 "directory the runs' system paths are relative to (default: .)")
      ->check(CLI::ExistingDirectory);
  cv->add_option("--fit", val->fit_path,
                 "fit file whose compute section prices the runs on --fit-system");
  cv->add_option("--fit-system", val->fit_system,
                 "system path (as the runs name it) the --fit was measured on");
  cv->add_flag("--runs-table,-v", val->verbose, "print every run");
  cv->add_flag("--json", val->json, "print JSON");
  cv->add_option("--explain", val->explain,
                 "also print this run's whole estimate (time and memory terms, every message and "
                 "what priced it) under its published time, to see where an error comes from "
                 "(with --json: on stderr)");
  cv->callback([val] { val->run(); });

  auto estimate = std::make_shared<EstimateCmd>();
  CLI::App *ce =
      app.add_subcommand("estimate", "estimate one training layout: time, memory, messages");
  ce->add_option("--system", estimate->system, "system YAML (configs/systems/...)")->required();
  ce->add_option("--fit", estimate->fit, "fit file pricing the ops and group shapes it covers");
  estimate->model.add(ce);
  estimate->strat.add(ce, true);
  ce->add_option("--global-batch", estimate->global_batch,
                 "global batch B (default: the model's, else dp*b)")
      ->check(CLI::Range(1, 1 << 30));
  ce->add_option("--gpus", estimate->gpus, "check dp*tp*pp against this GPU count")
      ->check(CLI::Range(1, est::kMaxGpus));
  ce->add_option("--scale-to", estimate->scale_to,
                 "also scale the layout to this many GPUs by growing dp (Cheng et al.)")
      ->check(CLI::Range(1, est::kMaxGpus));
  ce->add_option("--nvlink-domain", estimate->nvlink_domain,
                 "GPUs per NVLink domain as the job is scheduled, when fewer than the system's "
                 "gpus_per_node (a GB200 NVL72 rack in 64-GPU blocks: --segment=16 trays); the "
                 "inter-node bandwidth per domain scales with it")
      ->check(CLI::Range(1, est::kMaxGpus));
  ce->add_flag("--json", estimate->json, "print JSON instead of a table");
  ce->callback([estimate] { estimate->run(); });

  auto srch = std::make_shared<SearchCmd>();
  CLI::App *cs =
      app.add_subcommand("search", "rank DP x TP x PP / ZeRO / recompute / SP / b / v layouts");
  cs->add_option("--system", srch->system, "system YAML")->required();
  cs->add_option("--fit", srch->fit, "fit file");
  srch->model.add(cs);
  srch->strat.add(cs, false);
  cs->add_option("--gpus", srch->gpus, "GPU count N")
      ->required()
      ->check(CLI::Range(1, est::kMaxGpus));
  cs->add_option("--global-batch", srch->global_batch, "global batch B (default: the model's)")
      ->check(CLI::Range(1, 1 << 30));
  cs->add_option("--top", srch->top, "how many layouts to print")->check(CLI::Range(1, 1 << 20));
  cs->add_option("--nvlink-domain", srch->nvlink_domain,
                 "GPUs per NVLink domain as the job is scheduled, when fewer than the system's "
                 "gpus_per_node (a GB200 NVL72 rack in 64-GPU blocks: --segment=16 trays); the "
                 "inter-node bandwidth per domain scales with it")
      ->check(CLI::Range(1, est::kMaxGpus));
  cs->add_option("--max-cp", srch->max_cp, "largest CP degree to try (powers of 2; 1 = none)")
      ->check(CLI::Range(1, 1 << 16));
  cs->add_option("--max-ep", srch->max_ep,
                 "MoE models: largest expert-parallel degree to try (powers of 2)")
      ->check(CLI::Range(1, 1 << 16));
  cs->add_option("--max-tp", srch->max_tp, "largest TP degree to try (0 = any)")
      ->check(CLI::Range(0, est::kMaxGpus));
  cs->add_flag("--json", srch->json, "print JSON");
  cs->callback([srch] { srch->run(); });

  auto cmp = std::make_shared<CompareCmd>();
  CLI::App *cc =
      app.add_subcommand("compare", "one model on two systems side by side (Cheng et al.)");
  cc->add_option("system_a", cmp->system_a, "system A YAML")->required();
  cc->add_option("system_b", cmp->system_b, "system B YAML")->required();
  cc->add_option("--fit-a", cmp->fit_a, "fit file for system A");
  cc->add_option("--fit-b", cmp->fit_b, "fit file for system B");
  cmp->model.add(cc);
  cmp->strat.add(cc, true);
  cc->add_option("--gpus", cmp->gpus, "GPU count N")
      ->required()
      ->check(CLI::Range(1, est::kMaxGpus));
  cc->add_option("--global-batch", cmp->global_batch, "global batch B (default: the model's)")
      ->check(CLI::Range(1, 1 << 30));
  cc->add_flag("--json", cmp->json, "print JSON");
  cmp->app = cc;
  cc->callback([cmp] { cmp->run(); });
}

} // namespace scalefit::cli

// Published runs: JSONL -> model + layout -> estimate -> error (published.hpp).
#include "scalefit/estimator/published.hpp"
#include "scalefit/estimator/report.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/jsonl.hpp"
#include "scalefit/core/units.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <type_traits>

namespace scalefit::estimator {
namespace {

using nlohmann::json;

/// A field of `j` as T, `fallback` when absent or null; InputError naming file, line and field.
/// Numbers are checked before any conversion: doubles finite, ints whole and in [0, 2^24]
/// (degrees, sizes, batches: a 1e20 must not reach an int).
template <class T>
T field(const json &j, const char *key, const T &fallback, const std::string &file, long line) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return fallback;
  if constexpr (std::is_same_v<T, int> || std::is_same_v<T, double>) {
    if (!it->is_number() || !std::isfinite(it->get<double>()))
      throw InputError("expected a finite number, got " + it->dump(), file, line, key);
    const double v = it->get<double>();
    if constexpr (std::is_same_v<T, int>) {
      if (!(v >= 0 && v <= (1 << 24)) || v != std::floor(v))
        throw InputError("expected an integer in [0, 16777216], got " + it->dump(), file, line,
                         key);
      return static_cast<int>(v);
    } else {
      return v;
    }
  } else {
    try {
      return it->get<T>();
    } catch (const json::exception &) {
      throw InputError("bad value " + it->dump(), file, line, key);
    }
  }
}

} // namespace

std::vector<PublishedRun> load_published_runs(const std::string &path, const std::string &root) {
  std::vector<PublishedRun> runs;
  const std::string source = std::filesystem::path(path).filename().string();
  // one JSON object per line, read once, nesting bounded (core/jsonl.hpp)
  for_each_json_line(path, [&](const json &j, long line) {
    if (!j.contains("model") || !j["model"].is_object())
      throw InputError("expected an object with a model", path, line, "model");
    const json &mj = j["model"];
    PublishedRun r;
    r.source = source;
    r.id = field<std::string>(j, "id", "line " + std::to_string(line), path, line);
    r.system = field<std::string>(j, "system", "", path, line);
    ModelConfig &m = r.model;
    m.name = field<std::string>(mj, "name", r.id, path, line);
    m.layers = field<int>(mj, "layers", 0, path, line);
    m.hidden = field<int>(mj, "hidden", 0, path, line);
    m.heads = field<int>(mj, "heads", 0, path, line);
    m.kv_heads = field<int>(mj, "kv_heads", 0, path, line);
    m.ffn = field<int>(mj, "ffn", 0, path, line);
    m.vocabulary = field<int>(mj, "vocab", 0, path, line);
    m.sequence = field<int>(mj, "seq", 0, path, line);
    m.head_dim_override = field<int>(mj, "head_dim", 0, path, line);
    m.qk_norm = field<bool>(mj, "qk_norm", false, path, line);
    m.experts = field<int>(mj, "experts", 0, path, line);
    m.top_k = field<int>(mj, "top_k", 0, path, line);
    m.moe_ffn = field<int>(mj, "moe_ffn", 0, path, line);
    m.shared_experts = field<int>(mj, "shared_experts", 0, path, line);
    m.first_dense_layers = field<int>(mj, "first_dense_layers", 0, path, line);
    m.mtp_layers = field<int>(mj, "mtp_layers", 0, path, line);
    m.sliding_window = field<int>(mj, "sliding_window", 0, path, line);
    m.window_skip_freq = field<int>(mj, "window_skip_freq", 0, path, line);
    // token dropping (Megatron-Core --moe-expert-capacity-factor, --moe-pad-expert-input-to-
    // capacity); absent: dropless
    m.capacity_factor = field<double>(mj, "capacity_factor", 0.0, path, line);
    m.pad_to_capacity = field<bool>(mj, "pad_to_capacity", false, path, line);
    // Multi-head latent attention (DeepSeek): the Hugging Face config's names
    m.q_lora_rank = field<int>(mj, "q_lora_rank", 0, path, line);
    m.kv_lora_rank = field<int>(mj, "kv_lora_rank", 0, path, line);
    m.qk_nope_head_dim = field<int>(mj, "qk_nope_head_dim", 0, path, line);
    m.qk_rope_head_dim = field<int>(mj, "qk_rope_head_dim", 0, path, line);
    m.v_head_dim = field<int>(mj, "v_head_dim", 0, path, line);
    m.dtype = DType::bfloat16;
    m.attention = Attention::fused;
    const std::string act = field<std::string>(mj, "activation", "gelu", path, line);
    if (const auto p = parse_mlp(act))
      m.mlp = *p;
    else
      throw InputError("unknown activation '" + act + "'", path, line, "model.activation");
    const std::string norm = field<std::string>(mj, "norm", "layernorm", path, line);
    const std::string pos = field<std::string>(mj, "position", "learned", path, line);
    const auto pn = parse_norm(norm);
    const auto pp = parse_position(pos);
    if (!pn || !pp)
      throw InputError("unknown norm or position", path, line, pn ? "model.position" : "model.norm");
    m.norm = *pn;
    m.position = *pp;
    const std::string sm = field<std::string>(mj, "softmax_type", "vanilla", path, line);
    if (const auto ps = parse_softmax(sm))
      m.softmax = *ps;
    else
      throw InputError("unknown softmax_type '" + sm + "' (vanilla, off-by-one or learnable)", path,
                       line, "model.softmax_type");
    m.bias = field<bool>(mj, "bias", m.mlp == Mlp::gelu && m.norm == Norm::layernorm, path, line);
    m.qkv_bias = field<bool>(mj, "qkv_bias", false, path, line);
    m.tied_embeddings = field<bool>(mj, "tied_embeddings", false, path, line);
    // Dropout: GPT-style models as the 2022 papers and Megatron's defaults (0.1); the Llama,
    // Nemotron and Mistral recipes set it to 0.
    m.dropout = field<bool>(mj, "dropout", m.mlp == Mlp::gelu && m.norm == Norm::layernorm &&
                                               m.position == Position::learned,
                            path, line);
    const std::string precision = field<std::string>(j, "precision", "bf16", path, line);
    m.fp8 = precision.find("fp8") != std::string::npos;
    try {
      validate_model(m, path + ":" + std::to_string(line));
    } catch (const InputError &e) {
      throw InputError(e.what(), path, line, "model");
    }
    Strategy &s = r.strategy;
    s.tp = field<int>(j, "tp", 1, path, line);
    s.pp = field<int>(j, "pp", 1, path, line);
    s.dp = field<int>(j, "dp", 1, path, line);
    s.cp = field<int>(j, "cp", 1, path, line);
    s.interleave = field<int>(j, "vp", 1, path, line);
    s.micro_batch = field<int>(j, "micro_batch", 1, path, line);
    s.global_batch = field<int>(j, "global_batch", 0, path, line);
    s.sp = field<bool>(j, "sp", false, path, line);
    s.zero = field<int>(j, "zero", 0, path, line);
    s.zero_shard = field<int>(j, "zero_shard", 0, path, line);
    s.fp32_grads = field<bool>(j, "fp32_grads", false, path, line);
    s.overlap_tp = field<bool>(j, "overlap_tp", false, path, line);
    s.overlap_dp = field<bool>(j, "overlap_grad_reduce", true, path, line);
    s.overlap_param_gather = field<bool>(j, "overlap_param_gather", false, path, line);
    s.fused_ce = field<bool>(j, "fused_ce", false, path, line);
    s.offload_layers = field<int>(j, "cpu_offloading_num_layers", 0, path, line);
    if (s.offload_layers < 0)
      throw InputError("expected an integer >= 0", path, line, "cpu_offloading_num_layers");
    s.fp8_param_gather = field<bool>(j, "fp8_param_gather", false, path, line);
    s.fp8_output_proj = field<bool>(j, "fp8_output_proj", false, path, line);
    s.fp8_attention = field<bool>(j, "fp8_dot_product_attention", false, path, line);
    // The FP8 recipe as sources print it: Megatron-Bridge's "FP8-CS" (current scaling) and
    // "FP8-MX", Megatron-Core's names; absent: delayed scaling (Megatron-Core's and NeMo's
    // default before 2025).
    const std::string fr = field<std::string>(j, "fp8_recipe", "delayed", path, line);
    const auto pr = fr == "FP8-CS"   ? std::optional<Fp8Recipe>(Fp8Recipe::tensorwise)
                    : fr == "FP8-MX" ? std::optional<Fp8Recipe>(Fp8Recipe::mxfp8)
                    : fr == "FP8-DS" ? std::optional<Fp8Recipe>(Fp8Recipe::delayed)
                                     : parse_fp8_recipe(fr);
    if (!pr)
      throw InputError("expected delayed, tensorwise, mxfp8, blockwise, FP8-CS or FP8-MX, got '" +
                           fr + "'",
                       path, line, "fp8_recipe");
    s.fp8_recipe = *pr;
    // Megatron-Core --moe-token-dispatcher-type, the flex dispatcher by its backend
    // (--moe-flex-dispatcher-backend deepep | hybridep)
    const std::string disp = field<std::string>(j, "moe_token_dispatcher", "alltoall", path, line);
    const auto pd = parse_moe_dispatcher(disp);
    if (!pd)
      throw InputError("expected alltoall, allgather, deepep or hybridep, got '" + disp + "'",
                       path, line, "moe_token_dispatcher");
    s.moe_dispatcher = *pd;
    s.moe_a2a_overlap = field<bool>(j, "moe_a2a_overlap", false, path, line);
    s.moe_fused_grouped_mlp = field<bool>(j, "moe_fused_grouped_mlp", false, path, line);
    s.moe_shared_expert_overlap = field<bool>(j, "moe_shared_expert_overlap", false, path, line);
    // Megatron-Core --attention-backend (Transformer Engine's DotProductAttention backend; the
    // launch scripts' NVTE_FUSED_ATTN=0 means flash)
    const std::string ab = field<std::string>(j, "attention_backend", "fused", path, line);
    const auto pab = parse_attention_backend(ab);
    if (!pab)
      throw InputError("expected fused or flash, got '" + ab + "'", path, line,
                       "attention_backend");
    s.attention_backend = *pab;
    s.recompute_layers = field<int>(j, "recompute_layers", 0, path, line);
    const std::string rc = field<std::string>(j, "recompute", "none", path, line);
    s.recompute = rc == "full" ? Recompute::full
                  : rc == "selective" ? Recompute::selective
                                      : Recompute::none;
    if (j.contains("recompute_modules") && !j["recompute_modules"].is_null()) {
      const json &rm = j["recompute_modules"];
      if (!rm.is_array())
        throw InputError("expected a list of module names", path, line, "recompute_modules");
      std::string list;
      for (const json &x : rm) {
        if (!x.is_string())
          throw InputError("expected a list of module names", path, line, "recompute_modules");
        list += (list.empty() ? "" : ",") + x.get<std::string>();
      }
      std::string bad;
      if (!parse_recompute_modules(list, s.recompute_modules, bad))
        throw InputError("unknown module '" + bad + "'", path, line, "recompute_modules");
    }
    s.pure_bf16 = field<bool>(j, "pure_bf16", false, path, line);
    // Megatron-Core's precision-aware optimizer, and its --exp-avg-dtype/--exp-avg-sq-dtype bf16
    s.precision_aware_optimizer = field<bool>(j, "precision_aware_optimizer", false, path, line);
    const std::string moments = field<std::string>(j, "optimizer_moments", "fp32", path, line);
    if (moments != "fp32" && moments != "bf16")
      throw InputError("expected fp32 or bf16, got '" + moments + "'", path, line,
                       "optimizer_moments");
    s.bf16_moments = moments == "bf16";
    if (j.contains("mixed_precision") && j["mixed_precision"].is_object() &&
        field<std::string>(j["mixed_precision"], "mode", "", path, line) == "pure_bf16")
      s.pure_bf16 = true;
    const std::string fw = field<std::string>(j, "framework", "megatron", path, line);
    s.framework = fw == "pytorch" ? Framework::pytorch : Framework::megatron;
    const std::string fsdp = field<std::string>(j, "fsdp", "", path, line);
    if (!fsdp.empty()) {
      s.zero = fsdp == "shard_grad_op" ? 2 : 3;
      if (fsdp != "hybrid_shard")
        s.zero_shard = 0;
    }
    if (std::int64_t{s.zero_shard} == std::int64_t{s.dp} * s.cp)
      s.zero_shard = 0;
    if (j.contains("pp_layers") && j["pp_layers"].is_array() && !j["pp_layers"].empty()) {
      const json &pl = j["pp_layers"];
      const json ends = {{"first", pl.front()}, {"last", pl.back()}};
      s.first_stage_layers = field<int>(ends, "first", 0, path, line);
      s.last_stage_layers = field<int>(ends, "last", 0, path, line);
    }
    // Megatron-Core's account_for_embedding/loss_in_pipeline_split: the embedding and the loss
    // each count as one block when splitting, so the first and last stages hold one block fewer.
    const bool acc_e = field<bool>(j, "account_for_embedding_in_pipeline_split", false, path, line);
    const bool acc_l = field<bool>(j, "account_for_loss_in_pipeline_split", false, path, line);
    if ((acc_e || acc_l) && s.pp > 1) {
      const int total = m.layers + (acc_e ? 1 : 0) + (acc_l ? 1 : 0);
      if (total % s.pp == 0) {
        s.first_stage_layers = total / s.pp - (acc_e ? 1 : 0);
        s.last_stage_layers = total / s.pp - (acc_l ? 1 : 0);
      }
    }
    s.first_stage_layers = field<int>(j, "first_stage_layers", s.first_stage_layers, path, line);
    s.last_stage_layers = field<int>(j, "last_stage_layers", s.last_stage_layers, path, line);
    r.gpus = field<int>(j, "gpus", 0, path, line);
    // GPUs per NVLink domain as scheduled (a rack cut by Slurm segments); 0 = the system's
    r.nvlink_domain = field<int>(j, "nvlink_domain", 0, path, line);
    if (r.nvlink_domain < 0 || r.nvlink_domain > kMaxGpus)
      throw InputError("expected a GPU count >= 1", path, line, "nvlink_domain");
    r.iteration_s = field<double>(j, "iteration_time_s", 0.0, path, line);
    r.no_time = field<bool>(j, "no_time", false, path, line);
    if (!(r.iteration_s > 0) || !std::isfinite(r.iteration_s))
      throw InputError("expected a positive iteration time", path, line, "iteration_time_s");
    if (j.contains("published") && j["published"].is_object())
      r.memory_gib = field<double>(j["published"], "memory_gib", 0.0, path, line);
    s.ep = std::max(1, field<int>(j, "ep", 1, path, line));
    s.etp = field<int>(j, "etp", 0, path, line);
    // Unstated expert TP: Megatron-Core's default is tp, which a layout with tp ep > tp cp dp
    // cannot use; such a recipe must set etp 1.
    for (auto [v, name] : {std::pair{s.tp, "tp"}, {s.pp, "pp"}, {s.dp, "dp"}, {s.cp, "cp"},
                           {s.interleave, "vp"}, {s.micro_batch, "micro_batch"}})
      if (v < 1)
        throw InputError("expected an integer >= 1", path, line, name);
    if (s.etp == 0 && s.ep > 1 && s.gpus() <= kMaxGpus &&
        (std::int64_t{s.tp} * s.cp * s.dp) % (std::int64_t{s.tp} * s.ep) != 0)
      s.etp = 1;
    // error_code: a path the OS cannot even stat (too long, a loop) is a missing file, not a throw
    std::error_code no_file;
    if (r.system.empty() ||
        !std::filesystem::exists(std::filesystem::path(root) / r.system, no_file))
      r.not_expressible = "no system file " + r.system;
    r.held_for_calibration = field<bool>(j, "calibration", false, path, line);
    runs.push_back(std::move(r));
    return true;
  });
  return runs;
}

namespace {
/// The system `r` ran on (its NVLink domain applied), or the reason it cannot be built.
SystemConfig run_system(const PublishedRun &r, const SystemConfig &base, std::string &why) {
  if (r.nvlink_domain <= 0)
    return base;
  try {
    return with_nvlink_domain(base, r.nvlink_domain);
  } catch (const InputError &e) {
    why = std::string("system: ") + e.what() + " (nvlink_domain)";
    return base;
  }
}

/// `r` estimated on `system`: its Estimate, or nullptr with `why` set when the layout is refused.
std::unique_ptr<Estimate> estimate_run(const PublishedRun &r, const SystemConfig &system,
                                       const fitting::ComputeSection *compute,
                                       const std::string &compute_system, std::string &why,
                                       std::string *report = nullptr) {
  Estimator est(r.model, system);
  if (compute && r.system == compute_system)
    est.use_compute(*compute);
  try {
    est.validate(r.strategy, r.gpus);
  } catch (const InputError &e) {
    why = std::string("layout: ") + e.what() + " (" + e.field() + ")";
    return nullptr;
  }
  auto e = std::make_unique<Estimate>();
  est.evaluate(r.strategy, *e);
  if (report)
    *report = estimate_table(est, r.strategy, *e);
  return e;
}
} // namespace

double calibrate_sustained(const PublishedRun &r, const std::string &root,
                           const fitting::ComputeSection *compute,
                           const std::string &compute_system) {
  auto refuse = [&](const std::string &why) {
    return InputError("cannot calibrate on run '" + r.id + "': " + why, "", 0, "--calibrate-on");
  };
  if (!r.not_expressible.empty())
    throw refuse(r.not_expressible);
  if (r.no_time)
    throw refuse("it publishes memory only, no iteration time");
  SystemConfig base = load_system((std::filesystem::path(root) / r.system).string());
  std::string why;
  auto time_at = [&](double eff) {
    base.device.sustained_efficiency = eff;
    const SystemConfig sys = run_system(r, base, why);
    if (!why.empty())
      throw refuse(why);
    const auto e = estimate_run(r, sys, compute, compute_system, why);
    if (!e)
      throw refuse(why);
    return e->time_s.iteration;
  };
  double lo = 0.05, hi = 1.0;
  if (const double fastest = time_at(hi); fastest > r.iteration_s)
    throw refuse(fmt::format("estimated {:.4g} s at sustained_efficiency 1 (the tables' full "
                             "rates), slower than the published {:.4g} s",
                             fastest, r.iteration_s));
  if (const double slowest = time_at(lo); slowest < r.iteration_s)
    throw refuse(fmt::format("estimated {:.4g} s at sustained_efficiency 0.05, still faster than "
                             "the published {:.4g} s: compute is not what bounds it",
                             slowest, r.iteration_s));
  for (int i = 0; i < 48; ++i) {
    const double mid = 0.5 * (lo + hi);
    (time_at(mid) > r.iteration_s ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

std::map<std::string, const PublishedRun *>
smallest_run_per_system(const std::vector<PublishedRun> &runs) {
  std::map<std::string, const PublishedRun *> pick;
  for (const PublishedRun &r : runs) {
    if (!r.not_expressible.empty() || r.no_time)
      continue;
    auto [it, added] = pick.emplace(r.system, &r);
    if (!added && r.gpus < it->second->gpus)
      it->second = &r;
  }
  return pick;
}

std::vector<RunComparison>
compare_published(const std::vector<PublishedRun> &runs, const std::string &root,
                  const fitting::ComputeSection *compute, const std::string &compute_system,
                  const std::string &explain_id, const std::map<std::string, double> *sustained,
                  const std::set<std::string> *calibration_ids) {
  std::vector<RunComparison> out;
  std::map<std::string, SystemConfig> systems;
  for (const PublishedRun &r : runs) {
    RunComparison c;
    c.run = &r;
    c.calibration = r.held_for_calibration || (calibration_ids && calibration_ids->count(r.id));
    if (!r.not_expressible.empty()) {
      c.skipped = r.not_expressible;
      out.push_back(c);
      continue;
    }
    auto it = systems.find(r.system);
    if (it == systems.end()) {
      SystemConfig sys = load_system((std::filesystem::path(root) / r.system).string());
      if (sustained) {
        if (auto s = sustained->find(r.system); s != sustained->end())
          sys.device.sustained_efficiency = s->second;
      }
      it = systems.emplace(r.system, std::move(sys)).first;
    }
    std::string why;
    const SystemConfig system = run_system(r, it->second, why);
    std::unique_ptr<Estimate> e;
    if (why.empty())
      e = estimate_run(r, system, compute, compute_system, why,
                       !explain_id.empty() && r.id == explain_id ? &c.report : nullptr);
    if (!e) {
      c.skipped = why;
      out.push_back(c);
      continue;
    }
    c.estimated_s = e->time_s.iteration;
    c.time_error = r.no_time ? 0.0 : (c.estimated_s - r.iteration_s) / r.iteration_s;
    c.estimated_gib = e->memory_bytes.total / kGiB;
    c.memory_error = r.memory_gib > 0 ? (c.estimated_gib - r.memory_gib) / r.memory_gib : 0.0;
    c.fits = e->fits_memory;
    out.push_back(c);
  }
  return out;
}

SourceSummary summarize_published(const std::vector<RunComparison> &rows) {
  SourceSummary r;
  r.runs = static_cast<int>(rows.size());
  for (const RunComparison &c : rows) {
    if (r.source.empty())
      r.source = c.run->source;
    if (!c.skipped.empty()) {
      ++r.skipped;
      continue;
    }
    if (c.calibration) {
      ++r.calibration;
      continue;
    }
    if (!c.fits) { // the source must use memory savings it does not state: not reproduced
      ++r.not_fitting;
      continue;
    }
    if (!c.run->no_time) {
      const double e = std::fabs(c.time_error);
      r.mean_abs_time += e;
      r.max_abs_time = std::max(r.max_abs_time, e);
      ++r.estimated;
    }
    if (c.run->memory_gib > 0) {
      const double e = std::fabs(c.memory_error);
      r.mean_abs_memory += e;
      r.max_abs_memory = std::max(r.max_abs_memory, e);
      ++r.memory_runs;
    }
  }
  if (r.estimated)
    r.mean_abs_time /= r.estimated;
  if (r.memory_runs)
    r.mean_abs_memory /= r.memory_runs;
  return r;
}

} // namespace scalefit::estimator

// Tables (fmt) and JSON (nlohmann) for estimates, searches and comparisons.
#include "scalefit/estimator/report.hpp"

#include "scalefit/core/units.hpp"

#include <fmt/format.h>

#include <map>

namespace scalefit::estimator {

std::string strategy_label(const Strategy &s) {
  std::string extra;
  if (s.cp > 1)
    extra += fmt::format(" cp={}", s.cp);
  if (s.ep > 1)
    extra += fmt::format(" ep={}{}", s.ep,
                         s.moe_dispatcher == MoeDispatcher::alltoall
                             ? std::string()
                             : fmt::format(" ({})", moe_dispatcher_name(s.moe_dispatcher)));
  if (s.first_stage_layers || s.last_stage_layers)
    extra += fmt::format(" pp-layers={}/../{}", s.first_stage_layers, s.last_stage_layers);
  if (s.zero_shard > 0)
    extra += fmt::format(" zero-shard={}", s.zero_shard);
  if (s.recompute_modules != 0)
    extra = fmt::format(" ({})", recompute_modules_name(s.recompute_modules)) + extra;
  if (s.offload_layers > 0)
    extra += fmt::format(" cpu-offload={}", s.offload_layers);
  if (s.attention_backend == AttentionBackend::flash && s.framework == Framework::megatron)
    extra += " attention=flash";
  return fmt::format("dp={} tp={} pp={} v={} zero={} recompute={}{}{} b={} B={}", s.dp, s.tp,
                     s.pp, s.interleave, s.zero, recompute_name(s.recompute), s.sp ? " sp" : "",
                     extra, s.micro_batch, s.batch());
}

namespace {
nlohmann::json strategy_json(const Strategy &s) {
  return {{"dp", s.dp},
          {"tp", s.tp},
          {"pp", s.pp},
          {"cp", s.cp},
          {"ep", s.ep},
          {"etp", s.expert_tp()},
          {"moe_dispatcher", moe_dispatcher_name(s.moe_dispatcher)},
          {"moe_a2a_overlap", s.moe_a2a_overlap},
          {"moe_fused_grouped_mlp", s.moe_fused_grouped_mlp},
          {"first_stage_layers", s.first_stage_layers},
          {"last_stage_layers", s.last_stage_layers},
          {"zero_shard", s.shard_ranks()},
          {"recompute_layers", s.recompute_layers},
          {"recompute_modules", recompute_modules_name(s.recompute_modules)},
          {"overlap_param_gather", s.overlap_param_gather},
          {"overlap_p2p_comm", s.overlap_p2p_comm},
          {"fused_ce", s.fused_ce},
          {"cpu_offloading_num_layers", s.offload_layers},
          {"fp8_param_gather", s.fp8_param_gather},
          {"fp8_output_proj", s.fp8_output_proj},
          {"fp8_dot_product_attention", s.fp8_attention},
          {"fp8_recipe", fp8_recipe_name(s.fp8_recipe)},
          {"attention_backend", attention_backend_name(s.attention_backend)},
          {"interleave", s.interleave},
          {"zero", s.zero},
          {"recompute", recompute_name(s.recompute)},
          {"sp", s.sp},
          {"micro_batch", s.micro_batch},
          {"global_batch", s.batch()},
          {"bucket_bytes", s.bucket_bytes},
          {"fp32_grads", s.fp32_grads},
          {"precision_aware_optimizer", s.precision_aware_optimizer || s.bf16_moments},
          {"optimizer_moments", s.bf16_moments ? "bf16" : "fp32"},
          {"overlap_dp", s.overlap_dp},
          {"overlap_tp", s.overlap_tp},
          {"framework", framework_name(s.framework)}};
}

/// GPU compute of one transformer block and micro-batch on the slowest stage [s]: its layer terms
/// (GEMMs, attention, memory-bound; forward, backward and recomputation) over its blocks and
/// micro-batches. 0 when the stage has no blocks.
double block_compute_s(const Strategy &s, const Estimate &e) {
  const int layers = e.slowest_stage == 0          ? e.stage_layers[0]
                     : e.slowest_stage == s.pp - 1 ? e.stage_layers[2]
                                                   : e.stage_layers[1];
  if (layers <= 0 || e.micro_batches <= 0)
    return 0;
  return (e.terms[0].seconds + e.terms[1].seconds + e.terms[2].seconds) /
         (double(layers) * e.micro_batches);
}

/// True when the host learns each MoE block's token counts before it can go on: dropless routing
/// (or a capacity without padding), whose per-expert counts Megatron-Core's dispatchers copy to the
/// host once per block in the forward (token_dispatcher.py: the all-to-all split sizes and
/// Transformer Engine's grouped-GEMM m_splits are host integers; the backward reuses them).
bool host_syncs_per_block(const ModelConfig &md) {
  return md.moe() && !(md.capacity_factor > 0 && md.pad_to_capacity);
}
} // namespace

nlohmann::json estimate_json(const Estimator &est, const Strategy &s, const Estimate &e) {
  nlohmann::json j;
  j["model"] = est.model().name;
  j["system"] = est.system().name;
  j["strategy"] = strategy_json(s);
  j["gpus"] = s.gpus();
  j["time_s"] = {{"iteration", e.time_s.iteration},
                 {"compute", e.time_s.compute},
                 {"communication", e.time_s.communication},
                 {"overlap", e.time_s.overlap},
                 {"bubble", e.time_s.bubble}};
  j["communication_s"] = {{"tp", e.comm_tp_s}, {"cp", e.comm_cp_s}, {"ep", e.comm_ep_s},
                          {"pp", e.comm_pp_s}, {"dp", e.comm_dp_s}, {"offload", e.comm_offload_s}};
  j["active_params"] = e.active_params;
  j["memory_gib"] = {{"weights", e.memory_bytes.weights / kGiB},
                     {"gradients", e.memory_bytes.gradients / kGiB},
                     {"optimizer", e.memory_bytes.optimizer / kGiB},
                     {"activations", e.memory_bytes.activations / kGiB},
                     {"total", e.memory_bytes.total / kGiB},
                     {"device", est.system().device.memory_gib},
                     {"stage", e.peak_stage}};
  j["pipeline"] = {{"stage_layers", {e.stage_layers[0], e.stage_layers[1], e.stage_layers[2]}},
                   {"slowest_stage", e.slowest_stage},
                   {"peak_memory_stage", e.peak_stage}};
  j["fits_memory"] = e.fits_memory;
  j["params"] = e.params;
  j["params_per_gpu"] = e.params_per_gpu;
  // Megatron's num_floating_point_operations (non-causal attention) is "model"; "model_causal"
  // counts causal attention as half; "hardware" adds recomputation.
  j["flops"] = {{"model", e.model_flops},
                {"model_causal", e.model_flops_causal},
                {"hardware", e.hardware_flops},
                {"convention", "model: Megatron-LM num_floating_point_operations (attention "
                               "non-causal, padded vocabulary)"}};
  j["vocab_padded"] = e.vocab_padded;
  j["architecture"] = {{"kv_heads", est.model().kv_heads_count()},
                       {"mlp", mlp_name(est.model().mlp)},
                       {"norm", norm_name(est.model().norm)},
                       {"position", position_name(est.model().position)},
                       {"softmax_type", softmax_name(est.model().softmax)},
                       {"bias", est.model().bias},
                       {"fp8", est.model().fp8},
                       {"sliding_window", est.model().sliding_window},
                       {"windowed_layers", est.model().windowed_layers()},
                       {"mtp_layers", est.model().mtp_layers}};
  j["spec_only"] = est.spec_only();
  j["micro_batches"] = e.micro_batches;
  j["tflops_per_gpu"] = e.tflops_per_gpu;
  j["mfu"] = e.mfu;
  j["samples_per_s"] = e.samples_per_s;
  nlohmann::json msgs = nlohmann::json::array();
  std::map<std::string, int> priced_by;
  for (int i = 0; i < e.n_messages; ++i) {
    const Message &m = e.messages[i];
    const std::string src = est.comm().source_name(m.source);
    priced_by[src] += 1;
    msgs.push_back({{"op", std::string(op_name(m.op))},
                    {"by", parallelism_name(m.by)},
                    {"what", m.what},
                    {"bytes", m.bytes},
                    {"nranks", m.group.nranks},
                    {"nnodes", m.group.nnodes},
                    {"ranks_per_node", m.group.ranks_per_node},
                    {"count", m.count},
                    {"time_us", m.time_us},
                    {"total_s", m.total_s()},
                    {"priced_by", src},
                    {"extrapolated", m.extrapolated}});
  }
  j["messages"] = msgs;
  j["priced_by"] = priced_by;
  nlohmann::json terms = nlohmann::json::array();
  for (const ComputeTerm &t : e.terms)
    terms.push_back({{"what", t.what}, {"seconds", t.seconds}, {"priced_by", t.priced_by}});
  j["compute_terms"] = terms;
  j["attention"] = attention_name(est.model().attention);
  j["calibrated"] = est.calibrated();
  j["block_compute_s"] = block_compute_s(s, e);
  j["host_sync_per_moe_block"] = host_syncs_per_block(est.model());
  return j;
}

std::string estimate_table(const Estimator &est, const Strategy &s, const Estimate &e) {
  std::string o;
  auto out = std::back_inserter(o);
  fmt::format_to(out, "model {} ({:.3g}B params) on {} x{} GPUs ({} per node)\n", est.model().name,
                 e.params * 1e-9, est.system().name, s.gpus(), est.system().gpus_per_node);
  fmt::format_to(out, "strategy  {}  micro-batches {}\n", strategy_label(s), e.micro_batches);
  fmt::format_to(out, "architecture: kv_heads {}, mlp {}, {}, {}{}{}\n",
                 est.model().kv_heads_count(), mlp_name(est.model().mlp),
                 norm_name(est.model().norm), position_name(est.model().position),
                 est.model().bias ? ", biases" : "", est.model().fp8 ? ", FP8 GEMMs" : "");
  const ModelConfig &md = est.model();
  if (md.mla())
    fmt::format_to(out,
                   "attention: multi-head latent, kv latent {}, q latent {}, head dims {} + {} "
                   "(RoPE), v {}\n",
                   md.kv_lora_rank, md.q_lora_rank > 0 ? std::to_string(md.q_lora_rank) : "none",
                   md.qk_nope_head_dim, md.qk_rope_head_dim, md.v_head_dim);
  if (md.sliding_window > 0)
    fmt::format_to(out, "attention: sliding window {} on {} of {} blocks (the rest full)\n",
                   md.sliding_window, md.windowed_layers(), md.layers);
  if (md.softmax != Softmax::vanilla)
    fmt::format_to(out, "attention: softmax {}{}\n", softmax_name(md.softmax),
                   md.softmax == Softmax::learnable ? " (a learned sink logit per head)" : "");
  if (md.mtp_layers > 0)
    fmt::format_to(out, "multi-token prediction: {} module(s) on the last stage\n",
                   md.mtp_layers);
  if (md.moe())
    fmt::format_to(out,
                   "experts: {} routed (top {}) + {} shared of {}, {} of {} blocks; capacity {}{}\n",
                   md.experts, md.top_k, md.shared_experts, md.moe_ffn, md.moe_layers(), md.layers,
                   md.capacity_factor > 0 ? fmt::format("factor {:g}", md.capacity_factor)
                                          : std::string("dropless"),
                   md.pad_to_capacity ? ", padded" : "");
  if (md.moe()) {
    // What each expert GEMM gets (layer_cost.cpp): the rank's E / ep experts share the k routed
    // copies of its T / t tokens (x etp, x the load), one GEMM per expert and pass.
    const MoeOps &mo = est.ops().moe;
    const double T = double(s.micro_batch) * md.sequence / s.cp;
    const double local = mo.experts / s.ep;
    const double rows =
        mo.top_k * (s.tp > 1 ? T / s.tp : T) * s.expert_tp() * mo.load(s.moe_imbalance) / local;
    if (s.fused_grouped_mlp(md.fp8))
      fmt::format_to(out,
                     "experts per GPU: {:g} of {:.0f} rows each per micro-batch (Transformer "
                     "Engine's fused grouped MLP: one kernel per GEMM pass over the {:g} experts, "
                     "activation and casts in its epilogues)\n",
                     local, rows, local);
    else
      fmt::format_to(out,
                     "experts per GPU: {:g} of {:.0f} rows each per micro-batch (one GEMM per "
                     "expert and pass; few rows per expert is where published steps run slower "
                     "than estimated: docs/estimator.md){}\n",
                     local, rows,
                     s.moe_fused_grouped_mlp
                         ? "; --moe-fused-grouped-mlp has no effect without --dtype fp8 "
                           "--fp8-recipe mxfp8 (Transformer Engine fuses MXFP8 and NVFP4 only)"
                         : "");
    if (s.moe_dispatcher == MoeDispatcher::alltoall && local > 1)
      fmt::format_to(out,
                     "token sort: the all-to-all dispatcher sorts the {:.0f} received rows "
                     "by local expert and back, two memory-bound passes each way per block "
                     "and micro-batch (Megatron-Core's sort_chunks_by_idxs; the flex "
                     "dispatchers need none)\n",
                     rows * local);
    if (host_syncs_per_block(md))
      fmt::format_to(
          out,
          "host: dropless routing copies each MoE block's tokens per expert to the host (one "
          "synchronize per block in the forward); GPU compute per block and micro-batch {:.2f} ms. "
          "The "
          "estimate prices GPU work only: where that is a few ms, eager steps can be host-bound "
          "(docs/estimator.md, \"Dropless at small micro-batches\")\n",
          block_compute_s(s, e) * 1e3);
  }
  if (s.offload_layers > 0)
    fmt::format_to(out,
                   "CPU offloading: activations of {} of {} blocks to host memory over {:g} GB/s "
                   "per direction; copies {:.4f} s per iteration, of which hidden behind "
                   "compute all but what exceeds each neighbouring block's pass\n",
                   s.offload_layers, md.layers, est.system().host.bandwidth_gbps, e.comm_offload_s);
  if (md.fp8 && s.fp8_param_gather)
    fmt::format_to(out, "FP8 parameters: weight matrices kept and all-gathered in FP8\n");
  if (s.fp8_output_proj)
    fmt::format_to(out, "LM head: {}\n",
                   s.mxfp8_lm_head(md.fp8)
                       ? "logits GEMMs in MXFP8 (fp8_output_proj)"
                       : "fp8_output_proj has no effect without --dtype fp8 --fp8-recipe mxfp8 "
                         "(Megatron-Core activates it with MXFP8 only)");
  if (s.fp8_attention)
    fmt::format_to(out, "attention: {}\n",
                   s.fp8_attention_kernel(md.fp8)
                       ? (s.mxfp8(md.fp8) ? "fused kernels in MXFP8 (fp8_dot_product_attention)"
                                          : "fused kernels in FP8 (fp8_dot_product_attention)")
                       : "fp8_dot_product_attention has no effect without --dtype fp8 on "
                         "Megatron-Core's fused backend");
  // Blockwise FP8 (DeepSeek-style 128-element blocks) on a device without block-scaled tensor
  // cores (no mxfp8_relative_efficiency: Hopper) is priced as per-tensor FP8; Megatron-LM's
  // measured H100 MoE layers say that is fast (docs/estimator.md, "A layer-level check").
  const bool blockwise_unscaled =
      s.fp8_recipe == Fp8Recipe::blockwise && !(est.system().device.mxfp8_relative_efficiency > 0);
  if (md.fp8)
    fmt::format_to(out, "FP8 recipe: {}{}\n", fp8_recipe_name(s.fp8_recipe),
                   s.fp8_recipe == Fp8Recipe::delayed
                       ? " (each model chunk's amaxes all-reduced after its forward and its "
                         "backward over the stage's TP x DP x CP ranks, not hidden)"
                   : blockwise_unscaled
                       ? " (priced as per-tensor FP8 GEMMs: this device has no block-scaled "
                         "tensor cores; Megatron-LM's measured H100 MoE layers run blockwise FP8 "
                         "0-13% faster than bf16 where this prices them 14-27% faster, "
                         "docs/estimator.md)"
                       : "");
  if (s.pp > 1)
    fmt::format_to(out, "pipeline: blocks per stage {} (first), {} (middle), {} (last); slowest "
                        "stage {}\n",
                   e.stage_layers[0], e.stage_layers[1], e.stage_layers[2], e.slowest_stage);
  if (est.spec_only())
    fmt::format_to(out, "priced by spec tables only: no kernel or collective measurement of {} "
                        "was given (--fit)\n",
                   est.system().name);
  fmt::format_to(out, "\n");
  const auto &t = e.time_s;
  fmt::format_to(out, "time per iteration [s] (Lu et al.: T_cp + T_cm - T_ol + T_sd)\n");
  fmt::format_to(out,
                 "  compute        {:10.4f}\n  communication  {:10.4f}   (TP {:.4f}, CP {:.4f}, "
                 "EP {:.4f}, PP {:.4f}, DP/ZeRO {:.4f})\n",
                 t.compute, t.communication, e.comm_tp_s, e.comm_cp_s, e.comm_ep_s, e.comm_pp_s,
                 e.comm_dp_s);
  fmt::format_to(
      out, "  overlap       -{:10.4f}\n  bubble         {:10.4f}\n  iteration      {:10.4f}\n\n",
      t.overlap, t.bubble, t.iteration);
  const auto &m = e.memory_bytes;
  fmt::format_to(out, "memory per GPU, pipeline stage {} [GiB]\n", e.peak_stage);
  fmt::format_to(out,
                 "  weights {:.2f}  gradients {:.2f}  optimizer {:.2f}{}  activations {:.2f}\n",
                 m.weights / kGiB, m.gradients / kGiB, m.optimizer / kGiB,
                 s.bf16_moments                ? " (precision-aware, bf16 moments)"
                 : s.precision_aware_optimizer ? " (precision-aware)"
                                               : "",
                 m.activations / kGiB);
  fmt::format_to(out, "  total   {:.2f} of {:.0f}  -> {}\n\n", m.total / kGiB,
                 est.system().device.memory_gib, e.fits_memory ? "fits" : "DOES NOT FIT");
  fmt::format_to(
      out, "FLOPs per iteration: model {:.4g} PFLOP, executed (with recompute) {:.4g} PFLOP\n",
      e.model_flops * 1e-15, e.hardware_flops * 1e-15);
  fmt::format_to(out,
                 "throughput: {:.1f} TFLOP/s per GPU (hardware), MFU {:.1f}%, {:.2f} samples/s\n\n",
                 e.tflops_per_gpu, 100 * e.mfu, e.samples_per_s);
  fmt::format_to(out, "compute terms [s] ({} attention{})\n", attention_name(est.model().attention),
                 est.calibrated() ? fmt::format(", framework calibrated: dispatch {:.2f} us/kernel, "
                                                "memory-bound efficiency {:.3f}, +{:.2f} GiB",
                                                est.framework().dispatch_us,
                                                est.framework().memory_efficiency,
                                                est.framework().memory_overhead_gib)
                                  : std::string());
  for (const ComputeTerm &c : e.terms)
    fmt::format_to(out, "  {:<22} {:10.4f}  priced by {}\n", c.what, c.seconds, c.priced_by);
  fmt::format_to(out, "\n");
  fmt::format_to(out, "{:<5} {:<14} {:>12} {:>6} {:>6} {:>4} {:>10} {:>11} {:>9}  {}\n", "by", "op",
                 "bytes", "ranks", "nodes", "rpn", "count", "time_us", "total_s", "priced by");
  for (int i = 0; i < e.n_messages; ++i) {
    const Message &g = e.messages[i];
    fmt::format_to(
        out, "{:<5} {:<14} {:>12.0f} {:>6} {:>6} {:>4} {:>10.0f} {:>11.1f} {:>9.4f}  {}{}  ({})\n",
        parallelism_name(g.by), op_name(g.op), g.bytes, g.group.nranks, g.group.nnodes,
        g.group.ranks_per_node, g.count, g.time_us, g.total_s(), est.comm().source_name(g.source),
        g.extrapolated ? " [extrapolated]" : "", g.what);
  }
  return o;
}

std::string scaling_table(const Scaling &s) {
  return fmt::format(
      "\nscaling {} -> {} GPUs (dp {} -> {}, global batch {} -> {}), Cheng et al.:\n"
      "  t_iter(g)/t_iter(n) {:.3f} (formula (r_cp + r_cm)/(r_cp + r_cm/eff): {:.3f})\n"
      "  network efficiency eff = t_comm(g)/t_comm(n) {:.3f}\n"
      "  throughput speedup {:.2f}x of ideal {:.2f}x: scaling efficiency {:.1f}%\n",
      s.from_gpus, s.to_gpus, s.at_n.dp * s.from_gpus / s.to_gpus, s.at_n.dp,
      s.at_n.batch() * s.from_gpus / s.to_gpus, s.at_n.batch(), s.iteration_ratio,
      s.predicted_ratio, s.network_efficiency, s.throughput_speedup,
      double(s.to_gpus) / s.from_gpus, 100 * s.scaling_efficiency);
}

nlohmann::json scaling_json(const Scaling &s) {
  return {{"from_gpus", s.from_gpus},
          {"to_gpus", s.to_gpus},
          {"iteration_ratio", s.iteration_ratio},
          {"predicted_ratio", s.predicted_ratio},
          {"network_efficiency", s.network_efficiency},
          {"throughput_speedup", s.throughput_speedup},
          {"scaling_efficiency", s.scaling_efficiency},
          {"iteration_s_at_n", s.estimate_n.time_s.iteration}};
}

std::string search_table(const Estimator &est, const SearchResult &r) {
  std::string o;
  auto out = std::back_inserter(o);
  fmt::format_to(out, "{:>4} {:>10} {:>9} {:>9} {:>9} {:>7} {:>6}  {}\n", "rank", "iter_s",
                 "comp_s", "comm_s", "bubble_s", "mem_GiB", "MFU%", "strategy");
  int i = 0;
  for (const Ranked &c : r.top) {
    const Estimate &e = c.estimate;
    fmt::format_to(out, "{:>4} {:>10.4f} {:>9.4f} {:>9.4f} {:>9.4f} {:>7.1f} {:>6.1f}  {}\n", ++i,
                   e.time_s.iteration, e.time_s.compute, e.time_s.communication, e.time_s.bubble,
                   e.memory_bytes.total / kGiB, 100 * e.mfu, strategy_label(c.strategy));
  }
  fmt::format_to(out,
                 "\nmodel {} on {}: {} layouts enumerated; {} rejected by the layout checks before "
                 "any estimate; {} estimated, of which {} fit in memory\n",
                 est.model().name, est.system().name, r.enumerated, r.enumerated - r.estimated,
                 r.estimated, r.accepted);
  for (int k = 1; k < static_cast<int>(r.rejected.size()); ++k)
    if (r.rejected[k] > 0)
      fmt::format_to(out, "  rejected {:>9}  {}\n", r.rejected[k],
                     reject_name(static_cast<Reject>(k)));
  return o;
}

nlohmann::json search_json(const Estimator &est, const SearchResult &r) {
  nlohmann::json j;
  j["enumerated"] = r.enumerated;
  j["estimated"] = r.estimated;
  j["accepted"] = r.accepted;
  nlohmann::json rej = nlohmann::json::object();
  for (int k = 1; k < static_cast<int>(r.rejected.size()); ++k)
    if (r.rejected[k] > 0)
      rej[reject_name(static_cast<Reject>(k))] = r.rejected[k];
  j["rejected"] = rej;
  j["top"] = nlohmann::json::array();
  for (const Ranked &c : r.top)
    j["top"].push_back(estimate_json(est, c.strategy, c.estimate));
  return j;
}

std::string comparison_table(const Estimator &a, const Estimator &b, const Comparison &c) {
  std::string o;
  auto out = std::back_inserter(o);
  const auto &ea = c.a.estimate, &eb = c.b.estimate;
  fmt::format_to(out, "{:<26} {:>22} {:>22}\n", "", a.system().name, b.system().name);
  fmt::format_to(out, "{:<26} {:>22} {:>22}\n", "GPUs per node", a.system().gpus_per_node,
                 b.system().gpus_per_node);
  auto row = [&](const char *name, double x, double y, const char *f) {
    fmt::format_to(out, fmt::runtime(std::string("{:<26} {:>22") + f + "} {:>22" + f + "}\n"), name,
                   x, y);
  };
  row("iteration [s]", ea.time_s.iteration, eb.time_s.iteration, ".4f");
  row("compute [s]", ea.time_s.compute, eb.time_s.compute, ".4f");
  row("communication [s]", ea.time_s.communication, eb.time_s.communication, ".4f");
  row("overlap [s]", ea.time_s.overlap, eb.time_s.overlap, ".4f");
  row("bubble [s]", ea.time_s.bubble, eb.time_s.bubble, ".4f");
  row("comm share of iteration %", 100 * c.comm_share_a, 100 * c.comm_share_b, ".1f");
  row("exposed comm share %", 100 * c.exposed_share_a, 100 * c.exposed_share_b, ".1f");
  row("memory per GPU [GiB]", ea.memory_bytes.total / kGiB, eb.memory_bytes.total / kGiB, ".1f");
  fmt::format_to(out, "{:<26} {:>22} {:>22}\n", "fits in memory", ea.fits_memory ? "yes" : "NO",
                 eb.fits_memory ? "yes" : "NO");
  row("TFLOP/s per GPU", ea.tflops_per_gpu, eb.tflops_per_gpu, ".1f");
  row("MFU %", 100 * ea.mfu, 100 * eb.mfu, ".1f");
  fmt::format_to(out, "strategy A: {}\nstrategy B: {}\n", strategy_label(c.a.strategy),
                 strategy_label(c.b.strategy));
  fmt::format_to(out,
                 "ratios B/A (Cheng et al.): training time {:.2f}x, communication time {:.2f}x\n",
                 c.time_ratio, c.comm_ratio);
  return o;
}

nlohmann::json comparison_json(const Estimator &a, const Estimator &b, const Comparison &c) {
  return {{"a", estimate_json(a, c.a.strategy, c.a.estimate)},
          {"b", estimate_json(b, c.b.strategy, c.b.estimate)},
          {"time_ratio", c.time_ratio},
          {"comm_ratio", c.comm_ratio},
          {"comm_share_a", c.comm_share_a},
          {"comm_share_b", c.comm_share_b},
          {"exposed_share_a", c.exposed_share_a},
          {"exposed_share_b", c.exposed_share_b}};
}

}  // namespace scalefit::estimator

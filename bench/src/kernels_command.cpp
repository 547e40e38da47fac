// `scalefit-bench kernels`: shape list (a model's layer, or the --sweep grid) x engine -> table,
// summary, JSONL. Its options and their validation: kernels_options.cpp.
#include "scalefit/bench/kernels_command.hpp"

#include "scalefit/bench/comm.hpp"
#include "scalefit/bench/kernels_resume.hpp"
#include "scalefit/bench/sysinfo.hpp"
#include "scalefit/core/csv.hpp"
#include "scalefit/core/error.hpp"
#include "scalefit/core/records.hpp"
#include "scalefit/core/stats.hpp"
#include "scalefit/core/timing.hpp"

#include <mpi.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#ifndef SCALEFIT_VERSION
#define SCALEFIT_VERSION "unknown"
#endif

namespace scalefit::kernels {

namespace {

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0)
    return "unknown";
  return buf;
}

double tflops_of(double flops, double time_us) {
  return time_us > 0 ? flops / (time_us * 1e-6) / 1e12 : 0.0;
}

nlohmann::json stats_json(const Summary &s) {
  return {{"n", s.n},     {"min", s.min},       {"median", s.median}, {"mean", s.mean},
          {"max", s.max}, {"stddev", s.stddev}, {"p99", s.p99}};
}

/// Times one prepared shape: warm-up, then samples of `batch` back-to-back runs.
Summary time_shape(GemmEngine &engine, const KernelsOptions &o, int &batch_out) {
  if (o.warmup > 0)
    engine.run_us(o.warmup);
  StopRule rule;
  rule.max_time_s = o.max_time_s;
  rule.min_time_s = std::min(0.02, o.max_time_s);
  rule.fixed_samples = o.iters;
  int batch = 1;
  std::vector<double> samples;
  double elapsed_s = 0;
  if (o.iters == 0) {
    // One probe run sets the batch so a sample lasts ~1 ms (host timer noise well under 1%).
    const double probe_us = engine.run_us(1);
    elapsed_s += probe_us * 1e-6;
    batch = calibrate_batch(probe_us, 1000.0, 1000);
  }
  while (!rule.should_stop(samples, elapsed_s)) {
    const double us = engine.run_us(batch);
    elapsed_s += us * 1e-6;
    samples.push_back(us / batch);
  }
  batch_out = batch;
  return summarize(samples);
}

/// The context record of a run (schema kKernelsSchema): the engine, device, dtype, model or
/// sweep, layout and scale that define the sweep (same_kernels_sweep), and its provenance.
nlohmann::json kernels_context(const KernelsOptions &o, GemmEngine &engine, Attention attention,
                               int nranks, const std::string &command_line) {
  nlohmann::json ctx = {{"type", "context"},
                       {"schema", kKernelsSchema},
                       {"tool", "scalefit-bench kernels"},
                       {"system", o.system},
                       {"host", host_name()},
                       {"nranks", nranks},
                       {"engine", o.engine},
                       {"dtype", precision_name(o.precision)},
                       {"device", engine.device()},
                       {"library", engine.library()},
                       {"model",
                        {{"name", o.model.name},
                         {"layers", o.model.layers},
                         {"hidden", o.model.hidden},
                         {"heads", o.model.heads},
                         {"sequence", o.model.sequence},
                         {"vocabulary", o.model.vocabulary},
                         {"ffn", o.model.ffn_size()}}},
                       {"tp", o.tp},
                       {"micro_batch", o.micro_batch},
                       {"scale", o.scale},
                       {"attention", o.sweep ? "none" : attention_name(attention)},
                       {"sweep", o.sweep ? sweep_grid_name(*o.sweep) : ""},
                       {"versions", {{"scalefit", SCALEFIT_VERSION}}},
                       {"command_line", command_line},
                       {"start_time", utc_now_iso8601()}};
  if (!o.sweep && o.model.moe()) {
    ctx["model"]["experts"] = o.model.experts;
    ctx["model"]["top_k"] = o.model.top_k;
    ctx["model"]["moe_ffn"] = o.model.moe_ffn;
    ctx["model"]["shared_experts"] = o.model.shared_experts;
    ctx["model"]["moe_layers"] = o.model.moe_layers();
    ctx["ep"] = o.moe.ep;
    ctx["moe_imbalance"] = o.moe.imbalance;
    ctx["grouped_gemm"] = grouped_gemm_api_name(o.moe.grouped_api);
  }
  return ctx;
}

/// The fields that identify a shape's record (kernel_record_key): name, kind, pass, m, n, k,
/// batch, dtype (the one the kernel runs in), group_tokens and grouped_gemm (how unequal groups
/// ran).
nlohmann::json identity_json(const KernelShape &s, const KernelsOptions &o) {
  nlohmann::json id = {{"name", s.name},
                       {"kind", kernel_kind_name(s.kind)},
                       {"pass", pass_name(s.pass)},
                       {"m", s.m},
                       {"n", s.n},
                       {"k", s.k},
                       {"batch", s.batch},
                       {"dtype", precision_name(kernel_precision(o.precision, s))}};
  if (s.kind == KernelKind::grouped_gemm && !s.group_tokens.empty()) {
    id["group_tokens"] = s.group_tokens;
    id["grouped_gemm"] = o.engine == "cpu" ? grouped_gemm_api_name(GroupedGemmApi::per_expert)
                                           : grouped_gemm_api_name(s.grouped_api);
  }
  return id;
}

} // namespace

int run_kernels(const KernelsOptions &o, const std::string &command_line) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  // Rank 0 alone creates the engine, resolves --attention and opens the file; every rank agrees
  // on failure.
  std::unique_ptr<GemmEngine> engine;
  std::unique_ptr<JsonlWriter> writer;
  std::unique_ptr<CsvWriter> csv; // --csv: a flat row per kernel
  std::string error, field, attention_note;
  Attention attention = Attention::unfused;
  std::vector<KernelShape> shapes;
  nlohmann::json ctx;   // the context record (with --out or --csv)
  KernelsResume resume; // what --out already holds of this sweep
  if (rank == 0) {
    try {
      engine = make_engine(o.engine, o.precision);
      auto layer = [&](Attention att) {
        auto v = o.sweep ? sweep_shapes(*o.sweep)
                         : transformer_gemms(o.model, o.tp, o.micro_batch, true, att, o.moe);
        return o.scale != 1.0 ? scale_shapes(std::move(v), o.scale) : v;
      };
      shapes = layer(Attention::unfused);
      if (!o.sweep && o.attention != "unfused") {
        // The head size the kernel will run (after --scale) decides whether fused is available.
        std::vector<KernelShape> fused = layer(Attention::fused);
        std::string why;
        for (const KernelShape &k : fused)
          if (k.kind == KernelKind::attention && why.empty())
            why = engine->fused_attention_unavailable(k.k);
        if (why.empty()) {
          attention = Attention::fused;
          shapes = std::move(fused);
        } else if (o.attention == "fused") {
          throw InputError("--attention fused: " + why, "", 0, "--attention");
        } else {
          attention_note = "fused attention unavailable (" + why + "): running it unfused";
        }
      }
      // Refuse, before allocating, a shape whose operands cannot fit: unfused attention's
      // s x s scores grow with s^2 (32 matrices of 64k x 64k in bf16 are 256 GiB).
      std::uint64_t available = engine->free_memory_bytes();
      std::string where = "the GPU's free memory (cudaMemGetInfo)";
      if (available == 0 && engine->name() == "cpu") {
        available = bench::mem_available_bytes();
        where = "the host's MemAvailable";
      }
      if (const std::string why = memory_refusal(shapes, o.precision, available, where);
          !why.empty())
        throw InputError(why, "", 0,
                         !o.sweep && attention == Attention::unfused ? "--attention" : "--micro-batch");
      if (!o.out.empty() || !o.csv.empty())
        ctx = kernels_context(o, *engine, attention, nranks, command_line);
      if (!o.out.empty()) {
        resume = prepare_kernels_output(o.out, ctx); // never a record twice (kernels_resume.hpp)
        writer = std::make_unique<JsonlWriter>(o.out);
      }
      if (!o.csv.empty())
        csv = std::make_unique<CsvWriter>(o.csv, kernels_csv_header());
    } catch (const InputError &e) {
      // A file's error keeps its file and line (the message then names the field itself).
      error = e.file().empty() ? e.message() : e.what();
      field = e.file().empty() ? e.field() : "";
    }
  }
  bench::agree_or_throw(error, field);
  if (rank != 0) {
    bench::agree_or_throw("", ""); // rank 0's measurements went well, or every rank exits 2
    return kExitOk;
  }
  // Rank 0 measures. Bad input found on the way (a shape the fused kernel refuses, an output that
  // cannot be written) ends every rank with exit 2, rather than leaving the others waiting.
  const auto measure = [&]() -> int {
    std::printf("# scalefit-bench kernels: engine %s%s, %s, %s on %s\n", o.engine.c_str(),
                o.engine_defaulted ? (o.engine == "cublas" ? " (default: GPU visible)"
                                      : cuda_built()       ? " (default: no GPU visible)"
                                                           : " (default: not built with CUDA)")
                                   : "",
                std::string(precision_name(o.precision)).c_str(), engine->library().c_str(),
                engine->device().c_str());
    const std::string sampling = o.iters > 0 ? "samples " + std::to_string(o.iters) : "adaptive";
    const std::string ranks_note =
        nranks > 1 ? "; rank 0 of " + std::to_string(nranks) + " measures" : "";
    if (o.sweep)
      std::printf("# sweep %s: %zu GEMM shapes (kernels/README.md); scale %g; %s%s\n",
                  std::string(sweep_grid_name(*o.sweep)).c_str(), shapes.size(), o.scale,
                  sampling.c_str(), ranks_note.c_str());
    else
      std::printf("# model %s: l=%d h=%d a=%d s=%d V=%d ffn=%d; tp %d micro-batch %d scale %g; "
                  "attention %s; %s%s\n",
                  o.model.name.c_str(), o.model.layers, o.model.hidden, o.model.heads,
                  o.model.sequence, o.model.vocabulary, o.model.ffn_size(), o.tp, o.micro_batch,
                  o.scale, std::string(attention_name(attention)).c_str(), sampling.c_str(),
                  ranks_note.c_str());
    if (!o.sweep && o.model.moe())
      std::printf("# moe: %d experts, top-%d, expert ffn %d, %d shared; ep %d: %d local experts "
                  "of %lld tokens each (balanced)%s; moe layers %d of %d; per-layer figures are "
                  "an MoE block's\n",
                  o.model.experts, o.model.top_k, o.model.moe_ffn, o.model.shared_experts, o.moe.ep,
                  o.model.experts / o.moe.ep,
                  static_cast<long long>(expert_tokens(o.model, o.tp, o.micro_batch, o.moe.ep)),
                  o.moe.imbalance != 1.0
                      ? (", busiest x" + std::to_string(o.moe.imbalance).substr(0, 5) + " (" +
                         std::string(grouped_gemm_api_name(o.moe.grouped_api)) +
                         " GEMMs on cublas)")
                            .c_str()
                      : "",
                  o.model.moe_layers(), o.model.layers);
    if (!attention_note.empty())
      std::printf("# note: %s\n", attention_note.c_str());
    if (o.precision == Precision::fp8) {
      std::size_t in_bf16 = 0;
      for (const KernelShape &s : shapes)
        in_bf16 += kernel_precision(o.precision, s) != Precision::fp8;
      std::printf("# note: fp8: dense GEMMs with m, n, k multiples of 16 run in FP8 E4M3 "
                  "(per-tensor scales 448/amax, bf16 output, fp32 accumulation; cuBLASLt); the "
                  "other %zu kernel(s) (attention, softmax, batched or unaligned GEMMs) run in "
                  "bf16, as their records' dtype says\n",
                  in_bf16);
    }
    std::printf("# %-22s %4s %7s %7s %7s %6s %12s %12s %9s%s\n", "shape", "pass", "m", "n", "k",
                "batch", "time(us)", "median(us)", "TFLOP/s", o.check ? "  #wrong" : "");
    std::fflush(stdout);

    if (!resume.note.empty())
      std::fprintf(stderr, "scalefit-bench kernels: %s\n", resume.note.c_str());
    std::size_t resumed = 0;
    for (const KernelShape &s : shapes)
      resumed += resume.done.count(kernel_record_key(identity_json(s, o))) > 0;
    if (resumed > 0)
      std::printf("# resume: %zu of %zu kernels already in %s (kept, not measured again)%s\n",
                  resumed, shapes.size(), o.out.c_str(),
                  resumed == shapes.size() ? "; nothing left to measure" : "");
    bool ctx_written = false;


    std::int64_t total_wrong = 0;
    double fwd_us = 0, bwd_us = 0, fwd_flops = 0, bwd_flops = 0, all_us = 0, best_tf = 0;
    for (const KernelShape &s : shapes) {
      const nlohmann::json id = identity_json(s, o);
      if (const auto old = resume.done.find(kernel_record_key(id)); old != resume.done.end()) {
        // Measured by an earlier run of this sweep: its figures, not measured or written again.
        const nlohmann::json &r = old->second;
        const double mean = r.value("time_us", 0.0), tf = tflops_of(s.flops(), mean);
        const double median =
            r.contains("stats") && r["stats"].is_object() ? r["stats"].value("median", mean) : mean;
        if (s.per_layer && s.blocks != Blocks::dense) {
          (s.pass == Pass::fwd ? fwd_us : bwd_us) += mean;
          (s.pass == Pass::fwd ? fwd_flops : bwd_flops) += s.model_flops();
        }
        all_us += mean;
        best_tf = std::max(best_tf, tf);
        const std::int64_t wrong = r.contains("wrong") && r["wrong"].is_number_integer()
                                       ? r["wrong"].get<std::int64_t>()
                                       : 0;
        total_wrong += wrong;
        std::printf("  %-22s %4s %7lld %7lld %7lld %6lld %12.2f %12.2f %9.4f", s.name.c_str(),
                    std::string(pass_name(s.pass)).c_str(), static_cast<long long>(s.m),
                    static_cast<long long>(s.n), static_cast<long long>(s.k),
                    static_cast<long long>(s.batch), mean, median, tf);
        if (o.check)
          std::printf(" %7lld", static_cast<long long>(wrong));
        std::printf("  (resumed)\n");
        continue;
      }
      std::optional<CheckResult> chk;
      if (o.check)
        chk = check_shape(*engine, s);
      engine->prepare(s);
      int batch = 1;
      const Summary st = time_shape(*engine, o, batch);
      const double tf = tflops_of(s.flops(), st.mean);
      if (s.per_layer && s.blocks != Blocks::dense) { // an MoE model's figures: an MoE block's
        (s.pass == Pass::fwd ? fwd_us : bwd_us) += st.mean;
        (s.pass == Pass::fwd ? fwd_flops : bwd_flops) += s.model_flops();
      }
      all_us += st.mean;
      best_tf = std::max(best_tf, tf);
      std::printf("  %-22s %4s %7lld %7lld %7lld %6lld %12.2f %12.2f %9.4f", s.name.c_str(),
                  std::string(pass_name(s.pass)).c_str(), static_cast<long long>(s.m),
                  static_cast<long long>(s.n), static_cast<long long>(s.k),
                  static_cast<long long>(s.batch), st.mean, st.median, tf);
      if (chk)
        std::printf(" %7lld", static_cast<long long>(chk->wrong));
      std::printf("\n");
      std::fflush(stdout);
      if (writer || csv) {
        nlohmann::json rec = {{"type", "kernel"},
                              {"name", s.name},
                              {"kind", kernel_kind_name(s.kind)},
                              {"pass", pass_name(s.pass)},
                              {"per_layer", s.per_layer},
                              {"m", s.m},
                              {"n", s.n},
                              {"k", s.k},
                              {"batch", s.batch},
                              {"dtype", precision_name(kernel_precision(o.precision, s))},
                              {"engine", o.engine},
                              {"flops", s.flops()},
                              {"model_flops", s.model_flops()},
                              {"time_us", st.mean},
                              {"tflops", tf},
                              {"iters_per_sample", batch},
                              {"stats", stats_json(st)}};
        if (s.kind == KernelKind::attention) {
          rec["causal"] = s.causal;
          rec["attention"] = "fused";
        }
        if (s.blocks != Blocks::all)
          rec["blocks"] = blocks_name(s.blocks);
        if (s.kind == KernelKind::grouped_gemm) {
          // m, n, k are one balanced group's; batch = groups; group_tokens when they differ.
          rec["groups"] = s.batch;
          rec["tokens_per_group"] = s.tokens_in_k ? s.k : s.m;
          rec["tokens_dim"] = s.tokens_in_k ? "k" : "m";
          if (!s.group_tokens.empty()) {
            rec["group_tokens"] = s.group_tokens;
            // How the unequal groups ran: the cpu engine always runs one GEMM per group.
            rec["grouped_gemm"] = engine->name() == "cpu"
                                      ? grouped_gemm_api_name(GroupedGemmApi::per_expert)
                                      : grouped_gemm_api_name(s.grouped_api);
          }
        }
        if (chk)
          rec["wrong"] = chk->wrong;
        if (writer && !ctx_written) {
          writer->write(ctx); // a rerun's context, then the kernels it measured
          ctx_written = true;
        }
        if (writer)
          writer->write(rec);
        if (csv)
          csv->row(kernels_csv_row(ctx, rec));
      }
      if (chk)
        total_wrong += chk->wrong;
    }

    if (o.sweep) {
      std::printf("# sweep: %zu shapes, %.2f us of kernel time per pass over the grid, best %.4f "
                  "TFLOP/s",
                  shapes.size(), all_us, best_tf);
    } else {
      const double fwd_tf = tflops_of(fwd_flops, fwd_us),
                   all_tf = tflops_of(fwd_flops + bwd_flops, fwd_us + bwd_us);
      std::printf("# per-layer forward %.2f us (%.4f TFLOP/s), backward %.2f us, fwd+bwd %.2f us "
                  "(%.4f TFLOP/s; model FLOPs)",
                  fwd_us, fwd_tf, bwd_us, fwd_us + bwd_us, all_tf);
      if (o.peak_tflops > 0)
        std::printf("; %.1f%% of peak %.1f TFLOP/s", 100.0 * all_tf / o.peak_tflops, o.peak_tflops);
    }
    if (o.scale != 1.0)
      std::printf("; shapes scaled by %g", o.scale);
    std::printf("\n");
    if (o.check)
      std::printf("# check: %lld wrong element(s)%s\n", static_cast<long long>(total_wrong),
                  total_wrong ? " -- FAILED" : "");
    std::fflush(stdout);
    return total_wrong > 0 ? kExitCheck : kExitOk;
  };
  int code = kExitOk;
  std::string failure;
  try {
    code = measure();
  } catch (const InputError &e) {
    if (nranks == 1)
      throw;
    failure = e.what();
  }
  bench::agree_or_throw(failure, "");
  return code;
}

} // namespace scalefit::kernels

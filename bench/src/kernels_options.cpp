// `scalefit-bench kernels`' options (CLI11) and their validation into KernelsOptions; the run
// itself is kernels_command.cpp's.
#include "scalefit/bench/kernels_command.hpp"

#include "scalefit/bench/options.hpp"
#include "scalefit/core/error.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>

namespace scalefit::kernels {

void add_kernels_options(CLI::App &app, RawKernelsArgs &raw) {
  app.add_option("--model", raw.model_path, "Model YAML (configs/models/*.yaml)");
  app.add_option("--layers", raw.layers, "Transformer layers l (overrides --model)");
  app.add_option("--hidden", raw.hidden, "Hidden size h");
  app.add_option("--heads", raw.heads, "Attention heads a");
  app.add_option("--seq,--sequence", raw.sequence, "Sequence length s");
  app.add_option("--vocab,--vocabulary", raw.vocabulary, "Vocabulary size V");
  app.add_option("--ffn", raw.ffn, "MLP inner size (default 4h)");
  app.add_option("--tp", raw.tp, "Tensor-parallel degree t (divides heads)")->capture_default_str();
  app.add_option("--micro-batch", raw.micro_batch, "Micro-batch b [samples]")
      ->capture_default_str();
  app.add_option("--engine", raw.engine,
                 "cpu (Eigen), cublas, or auto (cublas if built and a GPU is visible)")
      ->capture_default_str();
  app.add_option("-d,--dtype", raw.dtype,
                 "fp32|fp64 (cpu); fp32|tf32|fp16|bf16|fp64|fp8 (cublas; fp8: dense GEMMs in FP8 "
                 "E4M3 with per-tensor scales and bf16 output on sm_89+, attention in bf16); "
                 "default fp32 on cpu, the model's dtype on cublas");
  app.add_option("-w,--warmup", raw.warmup, "Warm-up runs per shape")->capture_default_str();
  app.add_option("-n,--iters", raw.iters, "Samples per shape (0: adaptive, stop on noise/time)")
      ->capture_default_str();
  app.add_option("--max-time", raw.max_time_s, "Adaptive time budget per shape [s]")
      ->capture_default_str();
  app.add_option("--scale", raw.scale, "Shrink m, n, k by this factor in (0, 1] for quick runs")
      ->capture_default_str();
  app.add_option("--out", raw.out,
                 "Append JSON Lines records to FILE; a FILE that already holds this sweep (a cut "
                 "job run again) is resumed point by point: its kernels are kept, not measured "
                 "again, a torn last line is dropped");
  app.add_option("--csv", raw.csv, "Append one CSV row per kernel to FILE (docs/records.md)");
  app.add_flag("-c,--check", raw.check, "Check each kernel against a naive reference on a slice");
  app.add_option("--peak-tflops", raw.peak_tflops, "Device peak [TFLOP/s] for the summary");
  app.add_option("--system", raw.system, "System name for the context record");
  app.add_option("--attention", raw.attention,
                 "fused (one causal flash kernel per pass: cuDNN SDPA on cublas, tiled online "
                 "softmax on cpu), unfused (score GEMM + softmax + context GEMM), or auto (the "
                 "model file's attention: when unfused, else fused where the engine has it)")
      ->capture_default_str();
  app.add_option("--ep", raw.ep,
                 "Expert-parallel degree of an MoE model: the GPU holds experts/ep experts, each "
                 "over top_k*(b*s/tp)*ep/experts routed tokens (divides experts)")
      ->capture_default_str();
  app.add_option("--moe-imbalance", raw.moe_imbalance,
                 "MoE: the busiest local expert's tokens over the balanced count (>= 1); above 1 "
                 "the expert GEMMs are unequal groups (see --grouped-gemm)")
      ->capture_default_str();
  app.add_option("--grouped-gemm", raw.grouped_gemm,
                 "MoE, unequal expert groups on cublas: per-expert (one cublasGemmEx per local "
                 "expert, as Transformer Engine's GroupedLinear runs them; the default) or "
                 "cublas-grouped (one cublasGemmGroupedBatchedEx call)");
  app.add_option("--sweep", raw.sweep,
                 "Measure the GEMM shape grid instead of a model: small (CPU-sized) or full "
                 "(GPU-sized); see kernels/README.md");
}

KernelsOptions validate_kernels_args(const RawKernelsArgs &raw) {
  KernelsOptions o;
  if (!raw.sweep.empty()) {
    o.sweep = parse_sweep_grid(raw.sweep);
    if (!o.sweep)
      throw InputError("unknown sweep grid '" + raw.sweep + "' (expected small or full)", "", 0,
                       "--sweep");
    if (!raw.model_path.empty() || raw.layers || raw.hidden || raw.heads || raw.sequence ||
        raw.vocabulary || raw.ffn || raw.tp != 1 || raw.micro_batch != 1 || raw.ep != 1 ||
        raw.moe_imbalance != 1.0 || !raw.grouped_gemm.empty())
      throw InputError(
          "--sweep measures a fixed shape grid; drop the model flags (--model, "
          "--layers, --hidden, --heads, --seq, --vocab, --ffn, --tp, --micro-batch, --ep, "
          "--moe-imbalance, --grouped-gemm)",
          "", 0, "--sweep");
    o.model.name = "sweep";
    o.model.dtype = DType::bfloat16;
  } else {
    std::string origin = "command line";
    if (!raw.model_path.empty()) {
      o.model = load_model(raw.model_path);
      origin = raw.model_path;
    } else {
      const std::pair<int, const char *> need[] = {{raw.layers, "--layers"},
                                                   {raw.hidden, "--hidden"},
                                                   {raw.heads, "--heads"},
                                                   {raw.sequence, "--seq"},
                                                   {raw.vocabulary, "--vocab"}};
      for (const auto &[v, flag] : need)
        if (v == 0)
          throw InputError(std::string("give --model FILE, --sweep GRID, or all of --layers "
                                       "--hidden --heads --seq --vocab (missing ") +
                               flag + ")",
                           "", 0, flag);
      o.model.name = "cli";
      o.model.dtype = DType::half;
    }
    if (raw.layers)
      o.model.layers = raw.layers;
    if (raw.hidden)
      o.model.hidden = raw.hidden;
    if (raw.heads)
      o.model.heads = raw.heads;
    if (raw.sequence)
      o.model.sequence = raw.sequence;
    if (raw.vocabulary)
      o.model.vocabulary = raw.vocabulary;
    if (raw.ffn)
      o.model.ffn = raw.ffn;
    validate_model(o.model, origin);
    if (!o.model.moe() && (raw.ep != 1 || raw.moe_imbalance != 1.0))
      throw InputError("--ep and --moe-imbalance apply to MoE models (experts > 0); " + origin +
                           " has no experts",
                       "", 0, raw.ep != 1 ? "--ep" : "--moe-imbalance");
    o.moe.ep = raw.ep;
    o.moe.imbalance = raw.moe_imbalance;
    if (!raw.grouped_gemm.empty()) {
      if (raw.grouped_gemm == "per-expert")
        o.moe.grouped_api = GroupedGemmApi::per_expert;
      else if (raw.grouped_gemm == "cublas-grouped")
        o.moe.grouped_api = GroupedGemmApi::cublas_grouped;
      else
        throw InputError("unknown grouped GEMM '" + raw.grouped_gemm +
                             "' (expected per-expert or cublas-grouped)",
                         "", 0, "--grouped-gemm");
      if (!o.model.moe())
        throw InputError("--grouped-gemm applies to MoE models (experts > 0); " + origin +
                             " has no experts",
                         "", 0, "--grouped-gemm");
    }
    // transformer_gemms checks tp, the micro-batch, ep and the imbalance; fail here, before any
    // engine exists.
    (void)transformer_gemms(o.model, raw.tp, raw.micro_batch, true, Attention::unfused, o.moe);
  }
  o.tp = raw.tp;
  o.micro_batch = raw.micro_batch;
  if (raw.attention != "auto" && raw.attention != "fused" && raw.attention != "unfused")
    throw InputError("unknown attention '" + raw.attention + "' (expected fused, unfused or auto)",
                     "", 0, "--attention");
  o.attention = raw.attention;
  // auto honours a model file that asks for unfused attention (core/model.hpp, `attention:`).
  if (o.attention == "auto" && !o.sweep && o.model.attention == Attention::unfused)
    o.attention = "unfused";

  if (raw.engine == "auto") {
    o.engine = default_engine_name();
    o.engine_defaulted = true;
  } else if (raw.engine == "cpu" || raw.engine == "cublas") {
    o.engine = raw.engine;
  } else {
    throw InputError("unknown engine '" + raw.engine + "' (expected cpu, cublas or auto)", "", 0,
                     "--engine");
  }
  if (raw.dtype.empty()) {
    o.precision = default_precision(o.engine, o.model.dtype);
  } else {
    const auto p = parse_precision(raw.dtype);
    if (!p)
      throw InputError("unknown dtype '" + raw.dtype +
                           "' (expected fp32, tf32, fp16, bf16, fp64, fp8)",
                       "", 0, "--dtype");
    o.precision = *p;
  }
  if (o.engine == "cpu" && o.precision == Precision::fp8)
    throw InputError(
        std::string("engine cpu computes fp32 or fp64, not fp8: FP8 E4M3 is a GPU "
                    "tensor-core format (--engine cublas on compute capability 8.9 "
                    "or newer)") +
            (o.engine_defaulted
                 ? "; engine auto chose cpu (" +
                       std::string(cuda_built() ? "no GPU visible" : "not built with CUDA") + ")"
                 : ""),
        "", 0, "--dtype");
  if (o.engine == "cpu" && o.precision != Precision::fp32 && o.precision != Precision::fp64)
    throw InputError("engine cpu computes fp32 or fp64, not " +
                         std::string(precision_name(o.precision)),
                     "", 0, "--dtype");
  if (raw.warmup < 0)
    throw InputError("expected a non-negative count", "", 0, "-w");
  if (raw.iters < 0)
    throw InputError("expected a non-negative count (0: adaptive)", "", 0, "-n");
  if (!(raw.max_time_s > 0 && raw.max_time_s <= bench::kMaxDurationS))
    throw InputError("expected a positive time [s], at most 1e6", "", 0, "--max-time");
  if (!(raw.scale > 0 && raw.scale <= 1))
    throw InputError("expected a factor in (0, 1]", "", 0, "--scale");
  // 0: no peak given (no MFU column); NaN and infinity refused (a comparison with NaN is false)
  if (!(raw.peak_tflops >= 0 && raw.peak_tflops <= 1e6))
    throw InputError("expected a finite peak in [0, 1e6] TFLOP/s", "", 0, "--peak-tflops");
  o.warmup = raw.warmup;
  o.iters = raw.iters;
  o.max_time_s = raw.max_time_s;
  o.scale = raw.scale;
  o.out = raw.out;
  o.csv = raw.csv;
  o.check = raw.check;
  o.peak_tflops = raw.peak_tflops;
  o.system = raw.system;
  return o;
}

} // namespace scalefit::kernels

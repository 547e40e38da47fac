/// \file kernels_command.hpp
/// `scalefit-bench kernels`: times the GEMMs, softmax and attention of a transformer layer
/// (kernels/shapes.hpp), or with --sweep a GEMM shape grid (kernels/sweep.hpp), on an engine
/// (kernels/engine.hpp), prints a table and appends JSON Lines (schema "scalefit.kernels/1").
/// The driver lives with the scalefit-bench executable; kernels/ is the library it drives.
/// Under mpirun with several ranks only rank 0 measures (the others wait at a barrier); for
/// per-GPU figures on a multi-GPU node, run one process per GPU with CUDA_VISIBLE_DEVICES.
#pragma once

#include "scalefit/core/model.hpp"
#include "scalefit/kernels/engine.hpp"
#include "scalefit/kernels/sweep.hpp"

#include <optional>
#include <string>

// CLI11 is header-only and costs about 12 s of compile time per translation unit (Debian's 2.1):
// a forward declaration here, the header only where options are registered or parsed.
namespace CLI {
class App;
} // namespace CLI

namespace scalefit::kernels {

/// Schema identifier written into the context record of a kernels JSONL file.
inline constexpr const char *kKernelsSchema = "scalefit.kernels/1";

/// The command line as parsed, before validation (0 / empty = not given).
struct RawKernelsArgs {
  std::string model_path;      ///< --model FILE.yaml (configs/models/*.yaml)
  int layers = 0;              ///< --layers l (overrides the file)
  int hidden = 0;              ///< --hidden h
  int heads = 0;               ///< --heads a
  int sequence = 0;            ///< --seq s
  int vocabulary = 0;          ///< --vocab V
  int ffn = 0;                 ///< --ffn (4h when 0)
  int tp = 1;                  ///< --tp t
  int micro_batch = 1;         ///< --micro-batch b [samples]
  std::string engine = "auto"; ///< --engine cpu|cublas|auto
  std::string dtype;           ///< -d/--dtype (engine default when empty)
  int warmup = 2;              ///< -w warm-up runs per shape
  int iters = 0;               ///< -n samples per shape (0: adaptive)
  double max_time_s = 0.2;     ///< --max-time: adaptive time budget per shape [s]
  double scale = 1.0;          ///< --scale F in (0, 1]
  std::string out;             ///< --out FILE.jsonl (appended)
  std::string csv;             ///< --csv FILE.csv (appended, one row per kernel)
  bool check = false;          ///< -c
  double peak_tflops = 0;      ///< --peak-tflops: device peak for the summary [TFLOP/s]
  std::string system;          ///< --system NAME for the context record
  std::string attention = "auto"; ///< --attention fused|unfused|auto
  std::string sweep;           ///< --sweep small|full (empty: the model's layer)
  int ep = 1;                  ///< --ep: expert-parallel degree (MoE models; divides experts)
  double moe_imbalance = 1.0;  ///< --moe-imbalance: busiest local expert's tokens / balanced
  /// --grouped-gemm per-expert|cublas-grouped: how unequal expert groups run on cublas (empty:
  /// per-expert).
  std::string grouped_gemm;
};

/// Registers the kernels options on `app` (a subcommand), writing into `raw`.
void add_kernels_options(CLI::App &app, RawKernelsArgs &raw);

/// Validated options.
struct KernelsOptions {
  ModelConfig model;                     ///< the model (file and/or flags), validated
  int tp = 1;                            ///< TP degree (divides heads and ffn)
  int micro_batch = 1;                   ///< b [samples]
  std::string engine;                    ///< "cpu" or "cublas" (auto resolved)
  bool engine_defaulted = false;         ///< engine came from "auto"
  Precision precision = Precision::fp32; ///< engine precision
  int warmup = 2;                        ///< warm-up runs per shape (>= 0)
  int iters = 0;                         ///< samples per shape (0: adaptive)
  double max_time_s = 0.2;               ///< adaptive budget per shape [s]
  double scale = 1.0;                    ///< shape shrink factor
  std::string out;                       ///< JSONL path or empty
  std::string csv;                       ///< CSV path or empty
  bool check = false;                    ///< run the -c check
  double peak_tflops = 0;                ///< 0: not given
  std::string system;                    ///< system label
  std::string attention = "auto";        ///< "fused", "unfused" or "auto" (resolved at run)
  std::optional<SweepGrid> sweep;        ///< --sweep grid; then `model` is unused
  MoeLayout moe;                         ///< --ep, --moe-imbalance (MoE models)
};

/// Validates `raw`: the model (load_model + flag overrides, or all five of --layers --hidden
/// --heads --seq --vocab), tp (divides heads and ffn), engine and dtype names, counts; or, with
/// --sweep, no model flags at all (the grid replaces the layer; default dtype bf16 on cublas).
/// Resolves engine "auto" (cublas when built with CUDA and a GPU is visible, else cpu).
/// \throws InputError naming the argument. Deterministic: every rank throws alike.
KernelsOptions validate_kernels_args(const RawKernelsArgs &raw);

/// Runs the measurement on MPI rank 0 (other ranks wait). Creates the engine on rank 0 (an
/// unavailable engine becomes an InputError on every rank), resolves --attention (auto: fused
/// when the engine has it for this head size and precision, else unfused with a note on the
/// second line; fused where the engine lacks it: InputError), prints the engine on the first
/// line, then the table and a summary; appends a context record and one record per shape
/// (flushed as measured) to opts.out. Records carry flops (executed) and model_flops
/// (Narayanan et al.'s count; the summary's per-layer TFLOP/s use it), see KernelShape.
/// \returns kExitOk, or kExitCheck when -c found a wrong element.
/// \throws InputError for bad input; RuntimeError when a library call fails.
int run_kernels(const KernelsOptions &opts, const std::string &command_line);

} // namespace scalefit::kernels

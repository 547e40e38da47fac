/// \file compute.hpp
/// Compute fits: models of achieved kernel throughput, fitted to `scalefit.kernels/1` records
/// (`scalefit-bench kernels`), that predict the time of any GEMM, batched GEMM, attention or
/// memory-bound kernel shape. Written to and read from the fit file's `compute` section
/// (docs/fit-file.md).
///
/// GEMM model (kinds gemm and batched_gemm), per dtype. A GEMM of m x n x k, `batch` times, is
/// cut into output tiles Tm x Tn; the tiles run in waves over the device's `sms` SMs. Time:
///
///   t(m, n, k, batch) = c0 + W * sms * Tm * Tn * 2 * (k + k0) / R,   W = max(1, tiles / sms),
///   tiles = ceil(m / Tm) * ceil(n / Tn) * batch,  (Tm, Tn) in {128x128, 128x256} (the faster)
///
/// R [TFLOP/s] is the rate of full waves, k0 [elements] the per-tile prologue/epilogue cost in
/// k-steps (small-k falloff), ceil() the tile waste of ragged m and n (small-m falloff), W < 1
/// impossible (one wave is the minimum: under-filled devices). Fractional W, not ceil: cuBLAS on
/// Hopper splits the last wave (stream-K), measured on H100 (tests/data/kernels). Shapes whose
/// n or k (the leading dimensions of the row-major operands; m never is one) is not a multiple
/// of 16 bytes of elements (V = 50257) cannot use the tensor-memory path and run on their own
/// pair (R_odd, k0_odd): on H100 and H200 bf16 about a sixth of R.
/// Linear in (c0, 1/R, k0/R, 1/R_odd, k0_odd/R_odd): fitted by weighted least squares on
/// relative error (Eigen), the tile choice iterated to a fixed point.
///
/// Memory-bound model (kinds softmax and memory): t = c0 + bytes / B, bytes = read + written.
/// The `memory` fit (the estimator's elementwise kernels) comes, in order of preference, from
/// measured elementwise/copy kernels, from single-rank collectives (nccl-tests -g 1: every
/// out-of-place collective is a device-to-device copy, size read + size written; dtype "any"),
/// or from the softmax.
/// Attention (fused) model: t = c0 + flops / R with causal flops 2 b a s^2 d (half of 4 b a s^2 d).
#pragma once

#include "scalefit/core/collectives.hpp"
#include "scalefit/core/records.hpp"

#include <yaml-cpp/yaml.h>

#include <array>
#include <optional>

#include <string>
#include <vector>

namespace scalefit::fitting {

/// Kernel kinds a compute fit covers. grouped_gemm (an MoE layer's experts: `batch` groups of
/// per-group shapes, scalefit-bench kernels --model MOE.yaml) has the GEMM model with the tiles
/// summed over the groups: tiles = sum_g ceil(m_g / Tm) ceil(n / Tn), each tile's k its group's.
enum class KernelKind { gemm, batched_gemm, softmax, memory, attention_fused, grouped_gemm };
/// "gemm", "batched_gemm", "softmax", "memory", "attention_fused", "grouped_gemm".
const char *kernel_kind_name(KernelKind k);
/// Inverse of kernel_kind_name, plus the record kinds "attention"/"flash_attention"
/// (attention_fused) and "elementwise"/"copy"/"memory_bound" (memory); nullopt for other names.
std::optional<KernelKind> parse_kernel_kind(const std::string &name);

/// One measured kernel (a `scalefit.kernels/1` "kernel" record).
struct KernelPoint {
  KernelKind kind = KernelKind::gemm;
  std::string name;   ///< "qkv.fwd"
  std::string dtype;  ///< "bf16", "fp16", "tf32", "fp32", "fp64", "fp8" (E4M3 inputs)
  double m = 0, n = 0, k = 0, batch = 1; ///< GEMM shape; softmax: rows m*batch of n
  double time_us = 0; ///< mean time [us]
  double bytes = 0;   ///< memory-bound kinds: bytes read + written [B]
  double flops = 0;   ///< FLOPs of the kernel
  /// grouped_gemm with unequal groups: each group's tokens (record field group_tokens), the
  /// group's m, or its k when tokens_in_k (a weight gradient); empty: all groups are m x n x k.
  std::vector<double> group_tokens;
  bool tokens_in_k = false; ///< record field tokens_dim "k"
  /// Unequal groups ran one GEMM per group, one after another (record field grouped_gemm
  /// "per-expert", scalefit-bench's default since 2026-11-28): each group its own waves and
  /// its own fixed time c0. False: one kernel over all groups' tiles (cuBLAS's grouped API,
  /// "cublas-grouped", and records without the field).
  bool per_group = false;
  /// A point merged from repeats in several files (merge_kernel_repeats): each repeat's time_us
  /// [us], the first file's first; time_us is their median. Empty for a point measured once.
  std::vector<double> repeat_time_us;
  std::string origin; ///< "file:line"
};

/// Quality of one compute fit (as the communication fits: docs/fit-file.md).
struct ComputeQuality {
  int points = 0;             ///< measurements fitted
  double mape_pct = 0;        ///< mean |relative error| in sample [%]
  double max_err_pct = 0;     ///< largest |relative error| in sample [%]
  double loo_mape_pct = -1;   ///< leave-one-shape-out mean |relative error| [%] (all points of
                              ///< the held-out shape left out); -1 when not computed
  double loo_max_err_pct = -1;///< leave-one-shape-out largest |relative error| [%]
};

/// A fitted compute model for one (dtype, kind).
struct ComputeFit {
  KernelKind kind = KernelKind::gemm;
  std::string dtype;       ///< "bf16", "fp16", "tf32", "fp32", "fp8"
  int sms = 1;             ///< SMs the waves run over (GEMM kinds)
  double c0_us = 0;        ///< fixed time per kernel [us]
  double tflops = 0;       ///< R: full-wave rate, aligned shapes [TFLOP/s] (gemm, attention)
  double k0 = 0;           ///< per-tile overhead [k elements], aligned shapes
  double tflops_odd = 0;   ///< R_odd for shapes whose n or k is not 16-byte aligned; 0: none fitted
  double k0_odd = 0;       ///< per-tile overhead, odd shapes
  double gbps = 0;         ///< B: memory-bound bandwidth [GB/s] (softmax, memory)
  ComputeQuality quality;  ///< fit quality
  RepeatStats repeats;     ///< points merged from repeats in several files (merge_kernel_repeats)
  std::string source;      ///< files the points came from

  /// Predicted time [us] of one GEMM (batch of `batch`) of m x n x k elements; for a grouped fit,
  /// `batch` equal groups of m x n x k.
  double gemm_us(double m, double n, double k, double batch) const noexcept;
  /// Predicted time [us] of a grouped GEMM of groups (m_g, n_g, k_g) [elements]: the tiles of all
  /// groups in waves over the SMs, each tile costing its own group's k.
  double grouped_us(const std::vector<std::array<double, 3>> &groups) const noexcept;
  /// Predicted time [us] of the same groups run one GEMM per group in turn (KernelPoint::
  /// per_group): the sum of gemm_us over the groups, each with its own waves and c0.
  double per_group_us(const std::vector<std::array<double, 3>> &groups) const noexcept;
  /// Predicted time [us] of a memory-bound kernel moving `bytes` [B].
  double memory_us(double bytes) const noexcept;
  /// Predicted time [us] of a kernel of `flops` FLOPs at the flat rate (attention kinds).
  double flops_us(double flops) const noexcept;
  /// The prediction for a measured point of this fit's kind.
  double predict_us(const KernelPoint &p) const noexcept;
};

/// Framework constants fitted by `scalefit calibrate` from measured training steps (Cheng et al.
/// 2024 split kernel time from framework dispatch): the fit file's `framework` section.
struct FrameworkConstants {
  bool present = false;             ///< calibrated (the section exists)
  double dispatch_us = 0;           ///< host dispatch per kernel [us]: a kernel takes max(gpu, this)
  double memory_efficiency = 1;     ///< multiplier on memory-bound bandwidth (0, 2]
  double memory_overhead_gib = 0;   ///< fixed memory beyond the model's terms [GiB]
  int steps = 0;                    ///< measured steps calibrated on
  double time_mape_pct = 0;         ///< in-sample time error [%]
  double memory_mape_pct = 0;       ///< in-sample memory error [%]
  std::string source;               ///< steps file
};

/// Everything the compute section holds.
struct ComputeSection {
  FrameworkConstants framework;    ///< calibration (absent unless calibrated)
  std::string device;              ///< the context's device ("NVIDIA H100 80GB HBM3")
  std::vector<ComputeFit> fits;    ///< one per (dtype, kind) measured
  /// The fit for (dtype, kind), else one of dtype "any" (copies), or nullptr. dtype aliases:
  /// "half"=fp16, "bfloat16"=bf16, "float"=fp32, "e4m3"/"fp8_e4m3"=fp8.
  const ComputeFit *find(const std::string &dtype, KernelKind kind) const;
  bool empty() const { return fits.empty(); }
};

/// True when `path` is a JSONL file whose first context record has schema scalefit.kernels/1.
/// \throws InputError when it cannot be opened.
bool is_kernels_file(const std::string &path);

/// Reads the kernel records of a `scalefit.kernels/1` file (context device into `device`).
/// \throws InputError naming file, line and field for malformed lines, NaN/inf or negative times.
std::vector<KernelPoint> read_kernel_points(const std::string &path, std::string *device = nullptr);

/// SMs of a device by its name (H100: 132, H200: 132, A100: 108; NVIDIA whitepapers); 1 for
/// CPUs and unknown devices (waves then never quantize).
int device_sms(const std::string &device);

/// Fits one (dtype, kind) group of points. GEMM kinds need >= 3 points (>= 5 with odd shapes),
/// memory-bound and attention >= 1. \param loo compute the leave-one-shape-out figures.
/// \throws InputError when there are too few points.
ComputeFit fit_compute(const std::vector<KernelPoint> &points, int sms, bool loo = true);

/// Groups points by (dtype, kind) and fits each; memory-bound `memory` fits come from the
/// softmax points when no `memory` points exist (noted in source). \param files for provenance.
ComputeSection fit_compute_section(const std::vector<KernelPoint> &points,
                                   const std::string &device, const std::string &files,
                                   bool loo = true);

/// The out-of-place measurements of single-rank communicators in `set` (local device copies) of
/// 1 MiB or more as memory-bound points: kind memory, dtype "any", bytes = 2 x size (read +
/// write).
std::vector<KernelPoint> copy_points(const RecordSet &set, const std::string &file);

/// Reads and fits `scalefit.kernels/1` files (all points together, grouped by dtype and kind)
/// and the copies of single-rank comm record sets (`comm_sets`, named by `comm_files`); the
/// device of the first kernels context. A kernel in several files is merged or refused by
/// `policy` (merge_kernel_repeats; its lines appended to `notes` when given). Empty section when
/// there is nothing to fit.
/// \throws InputError for malformed files or groups too small to fit.
ComputeSection fit_kernel_files(const std::vector<std::string> &files, bool loo = true,
                                const std::vector<RecordSet> &comm_sets = {},
                                const std::vector<std::string> &comm_files = {},
                                RepeatPolicy policy = RepeatPolicy::merge,
                                std::vector<std::string> *notes = nullptr);

/// The points of several `scalefit.kernels/1` files (`per_file[i]` read from `files[i]`, its
/// context's device `devices[i]`) as one list in which no kernel is counted twice. Two records are
/// the same kernel when device, dtype, kind, name, m, n, k, batch and group tokens are equal:
///  - in ONE file, with different times (a rerun appended to it before `scalefit-bench kernels`
///    resumed point by point): \throws InputError naming the file, the second line and field
///    time_us, and the first line; identical records are counted once;
///  - in two files: a repeat (repeats.hpp). RepeatPolicy::merge keeps one point whose time_us is
///    the median of the repeats' [us] and whose repeat_time_us lists them, and appends one line
///    per pair of files to `notes`; RepeatPolicy::refuse \throws InputError as above. Identical
///    records (the same file given twice) are counted once, with a note.
std::vector<KernelPoint> merge_kernel_repeats(const std::vector<std::vector<KernelPoint>> &per_file,
                                              const std::vector<std::string> &devices,
                                              const std::vector<std::string> &files,
                                              RepeatPolicy policy, std::vector<std::string> &notes);

/// A table of the fits: kind, dtype, points, parameters, MAPE and LOO [%].
std::string compute_table(const ComputeSection &c);

/// Writes `compute` (and `framework` when calibrated) as keys of the fit file's top-level map
/// (fit_file_compute.cpp; the layout is docs/fit-file.md).
void emit_compute_yaml(YAML::Emitter &out, const ComputeSection &c);
/// Writes `repeats: {points, measurements, max_spread_pct}` (a fit entry's or compute fit's).
void emit_repeats(YAML::Emitter &out, const RepeatStats &r);
/// Reads parent["repeats"] as emit_repeats writes it (absent: empty). `field` prefixes the
/// field named in errors ("entries[3].").
/// \throws InputError naming `file`, the line and the field of a malformed or negative count.
RepeatStats parse_repeats(const YAML::Node &parent, const std::string &field,
                          const std::string &file);
/// Reads the `compute` and `framework` keys of a fit file's root (absent: empty section).
/// \throws InputError naming `file`, the line and the field of a bad value (NaN, inf, <= 0).
ComputeSection parse_compute_yaml(const YAML::Node &root, const std::string &file);

} // namespace scalefit::fitting

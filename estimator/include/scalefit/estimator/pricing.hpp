/// \file pricing.hpp
/// Step 3 of the estimator (DESIGN.md): the price of one compute operation on one GPU, from the
/// compute fits of a fit file (`scalefit fit` of measured kernels) where they exist, else from the
/// system's spec tables (Calculon's step efficiencies). Every price source has a label the
/// estimate prints ("fit:gemm:bf16", "spec:gemm_efficiency", ...). Communication is priced by a
/// CommModel (comm_model.hpp).
#pragma once

#include "scalefit/estimator/config.hpp"
#include "scalefit/fitting/compute.hpp"

#include <optional>
#include <string>

namespace scalefit::estimator {

/// The attention kernels a step runs: Transformer Engine's fused (cuDNN) or flash
/// (FlashAttention-2) backend under Megatron-Core, or PyTorch's scaled_dot_product_attention.
enum class AttentionKernel { fused, flash, sdpa };

/// Prices GEMMs, batched GEMMs, fused attention and memory-bound kernels [s]. All methods are
/// noexcept and allocation-free; a kernel never takes less than the calibrated dispatch floor,
/// and each pays the system's launch gap (Cheng et al. 2024's k1).
class ComputePricer {
public:
  /// \param system device peaks and tables; \param dtype the model's 16/32-bit dtype.
  ComputePricer(const SystemConfig &system, DType dtype);

  /// Uses the fits in `compute` for the dtype (bf16 fits serve fp16 and the reverse; tf32 serves
  /// fp32; "fp8" GEMM fits price FP8 GEMMs) instead of the spec tables; a calibrated framework
  /// section adds its dispatch floor and memory-bound efficiency.
  void use(const fitting::ComputeSection &compute);

  /// One GEMM C[m x n] = A[m x k] B[k x n] [elements], `batch` of them [s]; `fp8` prices it at
  /// the FP8 peak (Transformer Engine's recipe: a measured fp8 fit, else gemm_efficiency_fp8, else
  /// gemm_efficiency x fp8_relative_efficiency), ignored on a device without an FP8 peak.
  /// Spec-table prices are scaled by the device's sustained_efficiency.
  /// Without a fit, the spec price is bounded below by the roofline (gemm_roofline_s).
  double gemm_s(double m, double n, double k, double batch, bool fp8 = false) const noexcept;
  /// HBM time of one GEMM's operands [s]: A and B read once in `in_bytes` per element, C written
  /// once in 16 bits, at the hbm_efficiency of that many bytes x sustained_efficiency
  /// (Williams et al. 2009, the roofline's memory ceiling). Binds for GEMMs with a small inner
  /// or outer dimension, e.g. FP8 expert GEMMs of a few hundred columns.
  double gemm_roofline_s(double m, double n, double k, double batch,
                         double in_bytes) const noexcept;
  /// A batched GEMM (unfused attention's scores and context) [s]; shapes as gemm_s.
  double bgemm_s(double m, double n, double k, double batch) const noexcept;
  /// A grouped GEMM (an MoE layer's local experts): `groups` GEMMs of m x n x k each [s]. The
  /// grouped_gemm fit of measured expert GEMMs (scalefit-bench kernels --model MOE.yaml) when the
  /// fit file has one, else `groups` x gemm_s(m, n, k, 1, fp8): one GEMM per expert, each priced
  /// at its own size, as Transformer Engine's GroupedLinear launches them; `fp8` always goes to
  /// gemm_s (expert GEMMs are measured in the 16-bit dtype).
  /// `one_kernel` (Transformer Engine's fused grouped MLP): without a grouped_gemm fit, one GEMM
  /// of all the groups' rows, gemm_s(groups m, n, k): one persistent kernel over the experts.
  double grouped_gemm_s(double m, double n, double k, double groups, bool fp8 = false,
                        bool one_kernel = false) const noexcept;
  /// One memory-bound kernel moving `bytes` [B] read + written [s].
  double mem_s(double bytes) const noexcept;
  /// `n` memory-bound kernels moving `bytes` [B] in all, priced as n of bytes / n each [s].
  double mem_n_s(double n, double bytes) const noexcept;
  /// One fused attention kernel of `flops` FLOPs (causal half counted) over sequences of `seq`
  /// tokens, forward or backward [s], by `kind`:
  /// - fused (Transformer Engine's cuDNN attention): the attention fit, else
  ///   fused_attention_efficiency at `seq`;
  /// - flash (FlashAttention-2): flash_attention_efficiency at `seq` (a fit of measured fused
  ///   kernels does not price it), else as fused;
  /// - sdpa (PyTorch's scaled_dot_product_attention): the attention fit, else
  ///   sdpa_attention_efficiency at `seq`;
  /// a table missing everywhere: constants::kFusedAttentionEfficiency of the 16-bit peak. Table
  /// prices are the kernels' isolated rates, NOT scaled by sustained_efficiency (config.hpp:
  /// attention kernels run far below the power limit that derates GEMMs). `noncausal`: a forward
  /// call without a causal mask
  /// (`flops` all executed), priced by the table's `forward_noncausal` row where it has one
  /// (FlashAttention-3 paper Fig. 5: the unmasked kernels run 10-28% more FLOP/s at 2k-16k).
  /// `fp8` (Strategy::fp8_attention_kernel; `mx` under the MXFP8 recipe): a fused kernel in FP8
  /// at the device's forward_fp8 / backward_fp8 (forward_mxfp8 / backward_mxfp8) rows, fractions
  /// of the FP8 peak, for the causal and the unmasked steps alike; without the rows (or with a
  /// measured attention fit) as the 16-bit kernel.
  double attention_s(double flops, double seq, bool backward,
                     AttentionKernel kind = AttentionKernel::fused, bool noncausal = false,
                     bool fp8 = false, bool mx = false) const noexcept;
  /// True when attention_s prices an FP8 kernel (`mx`: MXFP8) by the device's FP8 rows.
  bool fp8_attention_priced(bool mx) const noexcept;
  /// One attention kernel over a sliding window of `window` tokens (Megatron-Core's
  /// window_size (W, 0)) [s]: `flops` of the mask's non-zeros, forward or backward. A fused
  /// kernel on a device with `forward_window` / `backward_window` rows runs at their rate for
  /// `window` (DeviceConfig::attention_fwd_window_efficiency: NVIDIA's cuDNN SDPA benchmark
  /// with sliding windows); otherwise (no rows, a measured attention fit, flash or SDPA) as
  /// attention_s at `seq`, the sequence the window slides over (`fp8` / `mx` passed on). An FP8
  /// kernel (`fp8`, `mx`: MXFP8) on a device with the FP8 rows and the matching
  /// `forward_window_fp8` / `backward_window_fp8` (`_mxfp8`) rows runs at their rate for `seq`
  /// (DeviceConfig::attention_fwd_window_fp8_efficiency: its backward does not skip the tiles
  /// outside the window); without them at the 16-bit window rows. Throws nothing.
  double window_attention_s(double flops, double window, double seq, bool backward,
                            AttentionKernel kind = AttentionKernel::fused, bool fp8 = false,
                            bool mx = false) const noexcept;
  /// Label of what prices attention of `kind`.
  const std::string &fused_source(AttentionKernel kind) const {
    return kind == AttentionKernel::sdpa ? src_sdpa
           : kind == AttentionKernel::flash && !m_dev.flash_fwd_efficiency.steps.empty()
               ? src_flash
               : src_fused;
  }
  /// Label of what prices attention of `kind` as attention_s prices it with `fp8` / `mx`: the FP8
  /// or MXFP8 rows' label where they price it, else fused_source(kind).
  const std::string &attention_source(AttentionKernel kind, bool fp8, bool mx) const {
    if (fp8 && kind == AttentionKernel::fused && fp8_attention_priced(mx))
      return mx ? src_fused_mx : src_fused8;
    return fused_source(kind);
  }
  /// A kernel of `gpu_s` [s] on the GPU with the dispatch floor and launch gap [s].
  double kernel_s(double gpu_s) const noexcept;

  /// Peak matrix rate of the model's dtype [FLOP/s].
  double peak() const { return m_peak; }
  /// FP8 peak [FLOP/s] (0 when the device has none).
  double peak_fp8() const { return m_peak8; }
  /// True when a calibrated framework section is in use.
  bool calibrated() const { return m_framework.present; }
  /// The calibrated constants (present == false when none).
  const fitting::FrameworkConstants &framework() const { return m_framework; }
  /// True when a measured fit prices the model dtype's GEMMs (not the spec table).
  bool has_gemm_fit() const { return m_fit_gemm.has_value(); }

  /// Labels of what prices each kind of operation.
  std::string src_gemm = "spec:gemm_efficiency", src_gemm8 = "spec:gemm_efficiency_fp8",
              src_bgemm = "spec:gemm_efficiency", src_ggemm = "spec:gemm_efficiency",
              src_mem = "spec:hbm_efficiency", src_attn = "spec:gemm_efficiency",
              src_fused = "spec:fused_attention_efficiency",
              src_sdpa = "spec:fused_attention_efficiency",
              src_flash = "spec:flash_attention_table";
  /// src_gemm8 with the MXFP8 factor (device.mxfp8_relative_efficiency) an mxfp8 step applies.
  std::string src_gemm8_mx = "spec:gemm_efficiency_fp8 x mxfp8 factor";
  /// src_fused when FP8 attention (fp8_dot_product_attention) is priced by the fp8 / mxfp8 rows.
  std::string src_fused8, src_fused_mx;

private:
  /// src_fused8 / src_fused_mx from src_fused (after the constructor and use()).
  void label_fp8_attention();
  std::optional<fitting::ComputeFit> m_fit_gemm, m_fit_gemm8, m_fit_bgemm, m_fit_mem, m_fit_attn;
  std::optional<fitting::ComputeFit> m_fit_ggemm; ///< grouped_gemm (MoE experts), when measured
  fitting::FrameworkConstants m_framework;
  DeviceConfig m_dev;
  DType m_dtype;
  double m_peak = 0, m_peak8 = 0, m_hbm = 0, m_launch_s = 0;
};

} // namespace scalefit::estimator

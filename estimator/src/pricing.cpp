// Step 3: pricing of compute operations (pricing.hpp): compute fits first, spec tables else.
#include "scalefit/estimator/pricing.hpp"

#include "scalefit/estimator/constants.hpp"

#include <algorithm>

namespace scalefit::estimator {
namespace {
const char *fit_dtype(DType d) {
  return d == DType::bfloat16 ? "bf16" : d == DType::half ? "fp16" : "tf32";
}
const char *alt_dtype(DType d) {
  return d == DType::bfloat16 ? "fp16" : d == DType::half ? "bf16" : "fp32";
}
} // namespace

ComputePricer::ComputePricer(const SystemConfig &system, DType dtype)
    : m_dev(system.device), m_dtype(dtype) {
  const bool wide = dtype == DType::float32;
  m_peak = (wide ? m_dev.matrix_tflops_32 : m_dev.matrix_tflops_16) * 1e12;
  m_peak8 = m_dev.matrix_tflops_8 * 1e12;
  m_hbm = m_dev.hbm_gbps * 1e9;
  m_launch_s = m_dev.kernel_launch_us * 1e-6;
  if (!m_dev.attention_fwd_efficiency.steps.empty())
    src_fused = "spec:fused_attention_table";
  if (!m_dev.sdpa_fwd_efficiency.steps.empty())
    src_sdpa = "spec:sdpa_attention_table";
  if (!m_dev.gemm_efficiency_fp8.steps.empty())
    src_gemm8 = "spec:gemm_efficiency_fp8";
  else
    src_gemm8 = "spec:gemm_efficiency x fp8 factor";
  src_gemm8_mx = src_gemm8 + " x mxfp8 factor";
  label_fp8_attention();
}

void ComputePricer::label_fp8_attention() {
  src_fused8 = src_fused + " (forward_fp8/backward_fp8 rows)";
  src_fused_mx = src_fused + " (forward_mxfp8/backward_mxfp8 rows)";
}

void ComputePricer::use(const fitting::ComputeSection &c) {
  using fitting::KernelKind;
  auto pick = [&](KernelKind k, std::optional<fitting::ComputeFit> &slot, std::string &src,
                  const char *want, const char *alt) {
    const fitting::ComputeFit *f = c.find(want, k);
    std::string note;
    if (!f && alt) {
      f = c.find(alt, k);
      note = std::string(" for ") + want;
    }
    if (!f)
      return;
    slot = *f;
    src = std::string("fit:") + fitting::kernel_kind_name(k) + ":" + f->dtype + note;
  };
  pick(KernelKind::gemm, m_fit_gemm, src_gemm, fit_dtype(m_dtype), alt_dtype(m_dtype));
  pick(KernelKind::gemm, m_fit_gemm8, src_gemm8, "fp8", nullptr);
  src_gemm8_mx = src_gemm8 + " x mxfp8 factor";
  pick(KernelKind::batched_gemm, m_fit_bgemm, src_bgemm, fit_dtype(m_dtype), alt_dtype(m_dtype));
  pick(KernelKind::memory, m_fit_mem, src_mem, fit_dtype(m_dtype), alt_dtype(m_dtype));
  pick(KernelKind::attention_fused, m_fit_attn, src_fused, fit_dtype(m_dtype), alt_dtype(m_dtype));
  if (m_fit_attn)
    src_sdpa = src_fused;
  // MoE expert GEMMs: their own grouped fit when measured, else the GEMM fit (gemm_s).
  pick(KernelKind::grouped_gemm, m_fit_ggemm, src_ggemm, fit_dtype(m_dtype), alt_dtype(m_dtype));
  if (!m_fit_ggemm)
    src_ggemm = src_gemm;
  if (!m_fit_bgemm && m_fit_gemm) { // batched GEMMs priced as single ones when not measured
    m_fit_bgemm = m_fit_gemm;
    src_bgemm = src_gemm;
  }
  src_attn = src_bgemm;
  m_framework = c.framework;
  if (m_framework.present) {
    m_launch_s = 0; // the calibrated dispatch floor replaces the system's launch share
    for (std::string *s : {&src_gemm, &src_gemm8, &src_bgemm, &src_ggemm, &src_mem, &src_attn,
                           &src_fused, &src_sdpa})
      *s += " +calibrated";
  }
  label_fp8_attention();
}

double ComputePricer::kernel_s(double gpu_s) const noexcept {
  return std::max(gpu_s, m_framework.dispatch_us * 1e-6) + m_launch_s;
}

double ComputePricer::gemm_roofline_s(double m, double n, double k, double batch,
                                      double in_bytes) const noexcept {
  // Williams et al. 2009 (roofline): a GEMM cannot run faster than HBM moves its operands once,
  // A (m x k) and B (k x n) in the input dtype, C (m x n) in 16 bits.
  const double bytes = batch * ((m * k + k * n) * in_bytes + m * n * 2.0);
  return bytes / (m_hbm * m_dev.hbm_efficiency.at(bytes * 1e-6) * m_dev.sustained_efficiency);
}

double ComputePricer::gemm_s(double m, double n, double k, double batch, bool fp8) const noexcept {
  if (fp8 && m_peak8 > 0) {
    if (m_fit_gemm8)
      return kernel_s(m_fit_gemm8->gemm_us(m, n, k, batch) * 1e-6);
    const double flops = 2 * m * n * k * batch;
    const double eff = (m_dev.gemm_efficiency_fp8.steps.empty()
                            ? m_dev.gemm_efficiency.at(flops * 1e-9) * m_dev.fp8_relative_efficiency
                            : m_dev.gemm_efficiency_fp8.at(flops * 1e-9)) *
                       m_dev.sustained_efficiency;
    return kernel_s(std::max(flops / (m_peak8 * eff), gemm_roofline_s(m, n, k, batch, 1.0)));
  }
  if (m_fit_gemm)
    return kernel_s(m_fit_gemm->gemm_us(m, n, k, batch) * 1e-6);
  const double flops = 2 * m * n * k * batch;
  return kernel_s(std::max(
      flops / (m_peak * m_dev.gemm_efficiency.at(flops * 1e-9) * m_dev.sustained_efficiency),
      gemm_roofline_s(m, n, k, batch, m_dtype == DType::float32 ? 4.0 : 2.0)));
}

double ComputePricer::bgemm_s(double m, double n, double k, double batch) const noexcept {
  if (m_fit_bgemm)
    return kernel_s(m_fit_bgemm->gemm_us(m, n, k, batch) * 1e-6);
  return gemm_s(m, n, k, batch);
}

double ComputePricer::grouped_gemm_s(double m, double n, double k, double groups, bool fp8,
                                     bool one_kernel) const noexcept {
  if (m_fit_ggemm && !fp8)
    return kernel_s(m_fit_ggemm->gemm_us(m, n, k, groups) * 1e-6);
  // Without a measured grouped fit: Transformer Engine's fused grouped MLP runs one persistent
  // kernel over the experts (`one_kernel`); its GroupedLinear (Megatron-Core's TEGroupedMLP)
  // launches one GEMM per expert, each priced at its own size (the efficiency tables and the GEMM
  // fit are per kernel; a batch would be priced as one kernel of all the experts' FLOPs, which
  // small experts never reach).
  if (one_kernel)
    return gemm_s(groups * m, n, k, 1, fp8);
  return groups * gemm_s(m, n, k, 1, fp8);
}

double ComputePricer::mem_s(double bytes) const noexcept {
  const double eff = m_framework.present ? m_framework.memory_efficiency : 1.0;
  if (m_fit_mem)
    return kernel_s(m_fit_mem->memory_us(bytes) * 1e-6 / eff);
  return kernel_s(bytes / (m_hbm * m_dev.hbm_efficiency.at(bytes * 1e-6) * eff *
                           m_dev.sustained_efficiency));
}

double ComputePricer::mem_n_s(double n, double bytes) const noexcept {
  return n > 0 ? n * mem_s(bytes / n) : 0.0;
}

bool ComputePricer::fp8_attention_priced(bool mx) const noexcept {
  return !m_fit_attn && m_peak8 > 0 &&
         !(mx ? m_dev.attention_fwd_mxfp8_efficiency : m_dev.attention_fwd_fp8_efficiency)
              .steps.empty();
}

double ComputePricer::attention_s(double flops, double seq, bool backward, AttentionKernel kind,
                                  bool noncausal, bool fp8, bool mx) const noexcept {
  const bool flash_table = !m_dev.flash_fwd_efficiency.steps.empty();
  if (kind == AttentionKernel::flash && !flash_table)
    kind = AttentionKernel::fused;
  if (m_fit_attn && kind != AttentionKernel::flash)
    return kernel_s(m_fit_attn->flops_us(flops) * 1e-6);
  if (fp8 && kind == AttentionKernel::fused && fp8_attention_priced(mx)) {
    const EfficiencyTable &t8 =
        mx ? (backward ? m_dev.attention_bwd_mxfp8_efficiency
                       : m_dev.attention_fwd_mxfp8_efficiency)
           : (backward ? m_dev.attention_bwd_fp8_efficiency : m_dev.attention_fwd_fp8_efficiency);
    if (!t8.steps.empty())
      return kernel_s(flops / (m_peak8 * t8.at(seq)));
  }
  const EfficiencyTable &t =
      kind == AttentionKernel::sdpa
          ? (backward ? m_dev.sdpa_bwd_efficiency : m_dev.sdpa_fwd_efficiency)
      : kind == AttentionKernel::flash
          ? (backward ? m_dev.flash_bwd_efficiency : m_dev.flash_fwd_efficiency)
          : (backward ? m_dev.attention_bwd_efficiency : m_dev.attention_fwd_efficiency);
  const EfficiencyTable &unmasked = kind == AttentionKernel::flash
                                        ? m_dev.flash_fwd_noncausal_efficiency
                                        : m_dev.attention_fwd_noncausal_efficiency;
  if (noncausal && !backward && kind != AttentionKernel::sdpa && !unmasked.steps.empty())
    return kernel_s(flops / (m_peak * unmasked.at(seq)));
  // Attention runs at its tables' isolated rates: sustained_efficiency is the GEMMs' and the
  // memory-bound kernels' derate (config.hpp says why). The constant is a direct measurement
  // inside a PyTorch step (constants.hpp).
  if (t.steps.empty())
    return kernel_s(flops / (m_peak * constants::kFusedAttentionEfficiency));
  return kernel_s(flops / (m_peak * t.at(seq)));
}

double ComputePricer::window_attention_s(double flops, double window, double seq, bool backward,
                                         AttentionKernel kind, bool fp8, bool mx) const noexcept {
  const EfficiencyTable &t =
      backward ? m_dev.attention_bwd_window_efficiency : m_dev.attention_fwd_window_efficiency;
  const bool fused = kind == AttentionKernel::fused ||
                     (kind == AttentionKernel::flash && m_dev.flash_fwd_efficiency.steps.empty());
  if (fused && !m_fit_attn && fp8 && fp8_attention_priced(mx)) {
    const EfficiencyTable &t8 = mx ? (backward ? m_dev.attention_bwd_window_mxfp8_efficiency
                                               : m_dev.attention_fwd_window_mxfp8_efficiency)
                                   : (backward ? m_dev.attention_bwd_window_fp8_efficiency
                                               : m_dev.attention_fwd_window_fp8_efficiency);
    if (!t8.steps.empty()) // keyed by the sequence: the FP8 kernels' cost follows it
      return kernel_s(flops / (m_peak8 * t8.at(seq)));
  }
  if (!fused || m_fit_attn || t.steps.empty())
    return attention_s(flops, seq, backward, kind, false, fp8, mx);
  return kernel_s(flops / (m_peak * t.at(window)));
}

} // namespace scalefit::estimator

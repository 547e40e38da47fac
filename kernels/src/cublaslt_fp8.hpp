/// \file cublaslt_fp8.hpp
/// One FP8 GEMM shape planned on cuBLASLt, the recipe of Transformer Engine's FP8 linear layers:
/// A and B in FP8 E4M3 with one fp32 scale per tensor, C in bf16, fp32 compute
/// (CUBLAS_COMPUTE_32F, scale type fp32). Private to the cublas engine (host code; compiled only
/// with SCALEFIT_ENABLE_CUDA).
///
/// Layout. scalefit's GEMMs are row-major C[m x n] = A[m x k] B[k x n]. cuBLASLt's FP8 kernels
/// take only the "TN" form (cuBLAS documentation, cublasLtMatmul: FP8 needs A transposed and B
/// not, in column-major terms) and 16-byte aligned leading dimensions, so the B operand is held
/// transposed, as W[n x k] row-major (a Linear layer's weight: C = X W^T, as in Transformer
/// Engine and PyTorch). Column-major, cuBLASLt then computes C^T (n x m) = op(W) op(X) with
/// W stored k x n (ld k, transposed), X stored k x m (ld k, not transposed), C^T stored n x m
/// (ld n) -- which is row-major C. m, n, k must be multiples of 16 (kernel_precision ensures it).
///
/// Scales: the device holds x_q = e4m3(x * s) with s = 448 / amax; the GEMM is given the descales
/// 1/s_w and 1/s_x as CUBLASLT_MATMUL_DESC_A_SCALE_POINTER / B_SCALE_POINTER (device fp32
/// scalars), so that C = (1/s_w)(1/s_x) sum_p w_q x_q, the product of the dequantized operands.
/// Fast accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM) is left at its default, off: the
/// partial sums are promoted to fp32 (Transformer Engine enables it for forward GEMMs only).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace scalefit::kernels::detail {

/// Descriptors and the heuristic's algorithm of one FP8 GEMM shape, built once and run many
/// times (the timing loop sees only cublasLtMatmul).
class Fp8Gemm {
public:
  /// Plans C[m x n] = X[m x k] W[n x k]^T. `descale_w`, `descale_x`: device fp32 scalars read at
  /// every run. \throws RuntimeError when cuBLASLt rejects the shape or has no algorithm for it.
  Fp8Gemm(cublasLtHandle_t lt, std::int64_t m, std::int64_t n, std::int64_t k,
          const float *descale_w, const float *descale_x, std::size_t workspace_bytes);
  ~Fp8Gemm();
  Fp8Gemm(const Fp8Gemm &) = delete;
  Fp8Gemm &operator=(const Fp8Gemm &) = delete;

  /// Enqueues the GEMM on `stream`: x (m x k E4M3), w (n x k E4M3), c (m x n bf16), all device
  /// memory from cudaMalloc (256-byte aligned). The heuristic's candidates are tried in its order
  /// until one launches (cublasLtMatmul answers CUBLAS_STATUS_NOT_SUPPORTED for a candidate the
  /// heuristic offered but the call's pointers rule out); that one is kept for later runs.
  /// \throws RuntimeError when cuBLASLt fails, or refuses every candidate.
  void run(const void *x, const void *w, void *c, void *workspace, cudaStream_t stream) const;

private:
  void release() noexcept;

  cublasLtHandle_t m_lt;
  cublasLtMatmulDesc_t m_op = nullptr;
  cublasLtMatrixLayout_t m_w = nullptr, m_x = nullptr, m_c = nullptr;
  std::vector<cublasLtMatmulAlgo_t> m_algos; // the heuristic's candidates, best first
  mutable std::size_t m_pick = 0;            // the first candidate that launched
  std::size_t m_workspace_bytes = 0;
};

} // namespace scalefit::kernels::detail

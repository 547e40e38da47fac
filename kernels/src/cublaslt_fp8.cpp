// The FP8 GEMM of the cublas engine on cuBLASLt (cublaslt_fp8.hpp: layout, scales, recipe).
#include "cublaslt_fp8.hpp"

#include "cuda_check.hpp"

#include <cublas_v2.h> // cublasGetStatusName / cublasGetStatusString for SCALEFIT_CUBLAS_CHECK

#include <string>

namespace scalefit::kernels::detail {

namespace {
constexpr int kCandidates = 8; // heuristic candidates asked for (cublasLtMatmulAlgoGetHeuristic)
} // namespace

Fp8Gemm::Fp8Gemm(cublasLtHandle_t lt, std::int64_t m, std::int64_t n, std::int64_t k,
                 const float *descale_w, const float *descale_x, std::size_t workspace_bytes)
    : m_lt(lt), m_workspace_bytes(workspace_bytes) {
  cublasLtMatmulPreference_t pref = nullptr;
  try {
    SCALEFIT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&m_op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t trans_w = CUBLAS_OP_T, trans_x = CUBLAS_OP_N;
    SCALEFIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(m_op, CUBLASLT_MATMUL_DESC_TRANSA,
                                                         &trans_w, sizeof trans_w));
    SCALEFIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(m_op, CUBLASLT_MATMUL_DESC_TRANSB,
                                                         &trans_x, sizeof trans_x));
    SCALEFIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        m_op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &descale_w, sizeof descale_w));
    SCALEFIT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        m_op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &descale_x, sizeof descale_x));
    // Column-major: W is k x n (ld k) used transposed, X is k x m (ld k), C^T is n x m (ld n).
    const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
    SCALEFIT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&m_w, CUDA_R_8F_E4M3, u(k), u(n), k));
    SCALEFIT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&m_x, CUDA_R_8F_E4M3, u(k), u(m), k));
    SCALEFIT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&m_c, CUDA_R_16BF, u(n), u(m), n));
    SCALEFIT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    SCALEFIT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &m_workspace_bytes,
        sizeof m_workspace_bytes));
    cublasLtMatmulHeuristicResult_t results[kCandidates]{};
    int found = 0;
    SCALEFIT_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(m_lt, m_op, m_w, m_x, m_c, m_c, pref,
                                                         kCandidates, results, &found));
    for (int i = 0; i < found; ++i)
      if (results[i].state == CUBLAS_STATUS_SUCCESS)
        m_algos.push_back(results[i].algo);
    if (m_algos.empty())
      throw RuntimeError("cuBLASLt has no FP8 E4M3 algorithm for m x n x k = " + std::to_string(m) +
                         " x " + std::to_string(n) + " x " + std::to_string(k) +
                         " (bf16 output, fp32 compute)");
    cublasLtMatmulPreferenceDestroy(pref);
  } catch (...) {
    if (pref)
      cublasLtMatmulPreferenceDestroy(pref);
    release();
    throw;
  }
}

Fp8Gemm::~Fp8Gemm() {
  release();
}

void Fp8Gemm::release() noexcept {
  if (m_c)
    cublasLtMatrixLayoutDestroy(m_c);
  if (m_x)
    cublasLtMatrixLayoutDestroy(m_x);
  if (m_w)
    cublasLtMatrixLayoutDestroy(m_w);
  if (m_op)
    cublasLtMatmulDescDestroy(m_op);
  m_c = m_x = m_w = nullptr;
  m_op = nullptr;
}

void Fp8Gemm::run(const void *x, const void *w, void *c, void *workspace,
                  cudaStream_t stream) const {
  const float alpha = 1.0f, beta = 0.0f; // host scalars (the default pointer mode)
  // beta = 0: C is not read; D = C in place (same layout).
  for (;; ++m_pick) {
    const cublasStatus_t st =
        cublasLtMatmul(m_lt, m_op, &alpha, w, m_w, x, m_x, &beta, c, m_c, c, m_c, &m_algos[m_pick],
                       workspace, m_workspace_bytes, stream);
    if (st == CUBLAS_STATUS_SUCCESS)
      return;
    if (st == CUBLAS_STATUS_NOT_SUPPORTED && m_pick + 1 < m_algos.size())
      continue; // the next candidate; nothing was enqueued
    throw_gpu_error("cuBLAS", cublasGetStatusName(st), cublasGetStatusString(st),
                    "cublasLtMatmul (FP8 E4M3; the heuristic's candidates tried in order)",
                    __FILE__, __LINE__);
  }
}

} // namespace scalefit::kernels::detail

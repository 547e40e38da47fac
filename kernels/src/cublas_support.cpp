// cuBLAS types, check-operand formats and the MoE grouped GEMM (see cublas_support.hpp).
#include "cublas_support.hpp"

#include "scalefit/core/error.hpp"
#include "cuda_check.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

namespace scalefit::kernels::detail {

cudaDataType_t data_type(Precision p) {
  switch (p) {
  case Precision::fp64:
    return CUDA_R_64F;
  case Precision::fp16:
    return CUDA_R_16F;
  case Precision::bf16:
    return CUDA_R_16BF;
  default:
    return CUDA_R_32F;
  }
}

cublasComputeType_t compute_type(Precision p) {
  switch (p) {
  case Precision::fp64:
    return CUBLAS_COMPUTE_64F;
  case Precision::tf32:
    return CUBLAS_COMPUTE_32F_FAST_TF32;
  default:
    return CUBLAS_COMPUTE_32F;
  }
}

std::vector<unsigned char> to_device_format(std::span<const double> values, Precision p) {
  std::vector<unsigned char> out(values.size() * precision_bytes(p));
  for (std::size_t i = 0; i < values.size(); ++i) {
    switch (p) {
    case Precision::fp64:
      reinterpret_cast<double *>(out.data())[i] = values[i];
      break;
    case Precision::fp16:
      reinterpret_cast<__half *>(out.data())[i] = __float2half(static_cast<float>(values[i]));
      break;
    case Precision::bf16:
      reinterpret_cast<__nv_bfloat16 *>(out.data())[i] =
          __float2bfloat16(static_cast<float>(values[i]));
      break;
    default:
      reinterpret_cast<float *>(out.data())[i] = static_cast<float>(values[i]);
    }
  }
  return out;
}

std::vector<double> from_device_format(const std::vector<unsigned char> &bytes, Precision p) {
  const std::size_t n = bytes.size() / precision_bytes(p);
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (p) {
    case Precision::fp64:
      out[i] = reinterpret_cast<const double *>(bytes.data())[i];
      break;
    case Precision::fp16:
      out[i] = __half2float(reinterpret_cast<const __half *>(bytes.data())[i]);
      break;
    case Precision::bf16:
      out[i] = __bfloat162float(reinterpret_cast<const __nv_bfloat16 *>(bytes.data())[i]);
      break;
    default:
      out[i] = reinterpret_cast<const float *>(bytes.data())[i];
    }
  }
  return out;
}

std::array<std::size_t, 3> grouped_sizes(const KernelShape &s) {
  std::array<std::size_t, 3> n{0, 0, 0};
  for (const GemmDims &g : s.groups()) {
    n[0] += static_cast<std::size_t>(g.m * g.k);
    n[1] += static_cast<std::size_t>(g.k * g.n);
    n[2] += static_cast<std::size_t>(g.m * g.n);
  }
  return n;
}

bool equal_groups(const KernelShape &s) {
  return s.group_tokens.empty() ||
         std::all_of(s.group_tokens.begin(), s.group_tokens.end(),
                     [&](std::int64_t t) { return t == s.group_tokens.front(); });
}

void group_pointers(const KernelShape &s, std::size_t elem_bytes, void *a, void *b, void *c,
                    std::vector<void *> &out) {
  const std::vector<GemmDims> groups = s.groups();
  const std::size_t g = groups.size();
  out.assign(3 * g, nullptr);
  auto *pa = static_cast<unsigned char *>(a), *pb = static_cast<unsigned char *>(b),
       *pc = static_cast<unsigned char *>(c);
  for (std::size_t i = 0; i < g; ++i) {
    out[i] = pb; // cuBLAS's A: our B^T
    out[g + i] = pa;
    out[2 * g + i] = pc;
    pa += static_cast<std::size_t>(groups[i].m * groups[i].k) * elem_bytes;
    pb += static_cast<std::size_t>(groups[i].k * groups[i].n) * elem_bytes;
    pc += static_cast<std::size_t>(groups[i].m * groups[i].n) * elem_bytes;
  }
}

void launch_grouped_ex(cublasHandle_t handle, Precision p, const KernelShape &s,
                       void **device_ptrs) {
#if CUBLAS_VERSION >= 120500
  if (p == Precision::fp64)
    throw InputError("unequal grouped GEMMs (--moe-imbalance) run in fp32, tf32, fp16 or bf16 "
                     "(cublasGemmGroupedBatchedEx), not fp64",
                     "", 0, "--dtype");
  const std::vector<GemmDims> groups = s.groups();
  const int g = static_cast<int>(groups.size());
  std::vector<int> m(g), n(g), k(g), one(g, 1);
  std::vector<cublasOperation_t> op(g, CUBLAS_OP_N);
  std::vector<float> alpha(g, 1.0f), beta(g, 0.0f);
  for (int i = 0; i < g; ++i) { // column-major view: C^T (n x m) = B^T (n x k) A^T (k x m)
    m[i] = static_cast<int>(groups[i].n);
    n[i] = static_cast<int>(groups[i].m);
    k[i] = static_cast<int>(groups[i].k);
  }
  const cudaDataType_t dt = data_type(p);
  // lda = n (ours), ldb = k, ldc = n: the same arrays as m, k, m of the column-major view.
  SCALEFIT_CUBLAS_CHECK(cublasGemmGroupedBatchedEx(
      handle, op.data(), op.data(), m.data(), n.data(), k.data(), alpha.data(),
      const_cast<const void *const *>(device_ptrs), dt, m.data(),
      const_cast<const void *const *>(device_ptrs + g), dt, k.data(), beta.data(),
      device_ptrs + 2 * g, dt, m.data(), g, one.data(), compute_type(p)));
#else
  (void)handle, (void)p, (void)s, (void)device_ptrs;
  throw InputError("unequal grouped GEMMs (--moe-imbalance above 1) need cuBLAS 12.5 or newer "
                   "(cublasGemmGroupedBatchedEx); this build has " +
                       std::to_string(CUBLAS_VERSION),
                   "", 0, "--moe-imbalance");
#endif
}

} // namespace scalefit::kernels::detail

// Device-side input fill: a counter-based hash (SplitMix64) to uniform values, one grid-stride
// kernel per buffer, on the engine's stream. Replaces host loops + pageable cudaMemcpy, which
// took minutes (and tens of GB of host memory) for s = 8192 score matrices.
#include "cuda_kernels.hpp"

#include "scalefit/kernels/fill.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace scalefit::kernels::detail {

namespace {

template <class T> __device__ T from_float(float x) {
  return static_cast<T>(x);
}
template <> __device__ __half from_float<__half>(float x) {
  return __float2half(x);
}
template <> __device__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16(x);
}

template <class T>
__global__ void fill_uniform_kernel(T *data, std::int64_t count, std::uint64_t seed, float lo,
                                    float hi) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride)
    data[i] = from_float<T>(lo + (hi - lo) * uniform_hash_value(seed, static_cast<std::uint64_t>(i)));
}

/// e4m3(x * scale): round to nearest even, saturating (Transformer Engine's cast).
__device__ __nv_fp8_storage_t to_e4m3(float x, float scale) {
  return __nv_cvt_float_to_fp8(x * scale, __NV_SATFINITE, __NV_E4M3);
}

__global__ void fill_uniform_fp8_kernel(__nv_fp8_storage_t *data, std::int64_t count,
                                        std::uint64_t seed, float lo, float hi, float scale) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride)
    data[i] = to_e4m3(lo + (hi - lo) * uniform_hash_value(seed, static_cast<std::uint64_t>(i)),
                      scale);
}

__global__ void quantize_fp8_kernel(const float *in, __nv_fp8_storage_t *out, std::int64_t count,
                                    float scale) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride)
    out[i] = to_e4m3(in[i], scale);
}

unsigned grid_for(std::int64_t count, int threads) {
  const std::int64_t want = (count + threads - 1) / threads;
  return static_cast<unsigned>(want < 65536 ? want : 65536);
}

} // namespace

cudaError_t launch_fill_uniform_fp8(void *data, std::int64_t count, std::uint64_t seed, float lo,
                                    float hi, float scale, cudaStream_t stream) {
  if (count <= 0)
    return cudaSuccess;
  fill_uniform_fp8_kernel<<<grid_for(count, 256), 256, 0, stream>>>(
      static_cast<__nv_fp8_storage_t *>(data), count, seed, lo, hi, scale);
  return cudaGetLastError();
}

cudaError_t launch_quantize_fp8(const float *in, void *out, std::int64_t count, float scale,
                                cudaStream_t stream) {
  if (count <= 0)
    return cudaSuccess;
  quantize_fp8_kernel<<<grid_for(count, 256), 256, 0, stream>>>(
      in, static_cast<__nv_fp8_storage_t *>(out), count, scale);
  return cudaGetLastError();
}

cudaError_t launch_fill_uniform(void *data, SoftmaxType type, std::int64_t count,
                                std::uint64_t seed, float lo, float hi, cudaStream_t stream) {
  if (count <= 0)
    return cudaSuccess;
  constexpr int kThreads = 256;
  const std::int64_t want = (count + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(want < 65536 ? want : 65536);
  switch (type) {
  case SoftmaxType::fp32:
    fill_uniform_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<float *>(data), count, seed,
                                                         lo, hi);
    break;
  case SoftmaxType::fp16:
    fill_uniform_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<__half *>(data), count, seed,
                                                         lo, hi);
    break;
  case SoftmaxType::bf16:
    fill_uniform_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<__nv_bfloat16 *>(data), count,
                                                         seed, lo, hi);
    break;
  case SoftmaxType::fp64:
    fill_uniform_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<double *>(data), count, seed,
                                                         lo, hi);
    break;
  }
  return cudaGetLastError();
}

} // namespace scalefit::kernels::detail

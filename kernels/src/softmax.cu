// The CUDA row softmax: one block per row, max and sum by block reduction, fp32/fp64 arithmetic.
#include "cuda_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>

namespace scalefit::kernels::detail {

namespace {

template <class T> struct Acc { using type = float; };
template <> struct Acc<double> { using type = double; };

template <class T> __device__ typename Acc<T>::type load(T x) {
  return static_cast<typename Acc<T>::type>(x);
}
template <> __device__ float load<__half>(__half x) {
  return __half2float(x);
}
template <> __device__ float load<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

template <class T, class A> __device__ T store(A x) {
  return static_cast<T>(x);
}
template <> __device__ __half store<__half, float>(float x) {
  return __float2half(x);
}
template <> __device__ __nv_bfloat16 store<__nv_bfloat16, float>(float x) {
  return __float2bfloat16(x);
}

constexpr int kThreads = 256;

/// Reduces v over the block with op; `identity` fills the lanes past the last warp.
template <class A, class Op> __device__ A block_reduce(A v, A *shared, Op op, A identity) {
  for (int off = 16; off > 0; off /= 2)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, off));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? shared[lane] : identity;
    for (int off = 16; off > 0; off /= 2)
      v = op(v, __shfl_xor_sync(0xffffffffu, v, off));
    if (lane == 0)
      shared[0] = v;
  }
  __syncthreads();
  const A r = shared[0];
  __syncthreads();
  return r;
}

template <class T> __global__ void softmax_rows_kernel(T *data, int cols) {
  using A = typename Acc<T>::type;
  __shared__ A shared[kThreads / 32];
  T *row = data + static_cast<long long>(blockIdx.x) * cols;
  A mx = -static_cast<A>(FLT_MAX);
  for (int j = threadIdx.x; j < cols; j += kThreads)
    mx = max(mx, load(row[j]));
  mx = block_reduce(
      mx, shared, [](A a, A b) { return max(a, b); }, -static_cast<A>(FLT_MAX));
  A sum = 0;
  for (int j = threadIdx.x; j < cols; j += kThreads)
    sum += exp(load(row[j]) - mx);
  sum = block_reduce(
      sum, shared, [](A a, A b) { return a + b; }, A(0));
  const A inv = A(1) / sum;
  for (int j = threadIdx.x; j < cols; j += kThreads)
    row[j] = store<T, A>(exp(load(row[j]) - mx) * inv);
}

} // namespace

cudaError_t launch_softmax_rows(void *data, SoftmaxType type, std::int64_t rows, int cols,
                                cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(rows)), block(kThreads);
  switch (type) {
  case SoftmaxType::fp32:
    softmax_rows_kernel<<<grid, block, 0, stream>>>(static_cast<float *>(data), cols);
    break;
  case SoftmaxType::fp16:
    softmax_rows_kernel<<<grid, block, 0, stream>>>(static_cast<__half *>(data), cols);
    break;
  case SoftmaxType::bf16:
    softmax_rows_kernel<<<grid, block, 0, stream>>>(static_cast<__nv_bfloat16 *>(data), cols);
    break;
  case SoftmaxType::fp64:
    softmax_rows_kernel<<<grid, block, 0, stream>>>(static_cast<double *>(data), cols);
    break;
  }
  return cudaGetLastError();
}

} // namespace scalefit::kernels::detail

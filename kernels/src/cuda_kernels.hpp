/// \file cuda_kernels.hpp
/// Launch wrappers of scalefit's own CUDA kernels (softmax.cu, fill.cu); private to the GPU
/// engines. Every launch is asynchronous on the given stream: order host reads after it with a
/// synchronize of that same stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace scalefit::kernels::detail {

/// Element type of a device buffer: 0 fp32, 1 fp16, 2 bf16, 3 fp64.
enum class SoftmaxType : int { fp32 = 0, fp16 = 1, bf16 = 2, fp64 = 3 };

/// In-place numerically stable softmax of `rows` rows of `cols` elements at `data` (device
/// memory), computed in fp32 (fp64 for fp64), one thread block per row, on `stream`.
/// \returns the launch error (cudaGetLastError after the launch).
cudaError_t launch_softmax_rows(void *data, SoftmaxType type, std::int64_t rows, int cols,
                                cudaStream_t stream);

/// Fills `count` elements at `data` (device memory) with values uniform in [lo, hi): element i is
/// lo + (hi - lo) * u(seed, i), u the top 24 bits of a SplitMix64 hash of (seed, i) / 2^24 (a
/// counter-based generator: no state, every element independent, the same values on any GPU and
/// in uniform_hash_value on the host). A grid-stride loop on `stream`; O(count) device work, no
/// host memory. \returns the launch error.
cudaError_t launch_fill_uniform(void *data, SoftmaxType type, std::int64_t count,
                                std::uint64_t seed, float lo, float hi, cudaStream_t stream);

/// As launch_fill_uniform, into FP8 E4M3 (one byte per element): element i is
/// (lo + (hi - lo) u(seed, i)) * scale in fp32, converted with round to nearest even and
/// saturation at +-448 (__nv_cvt_float_to_fp8, __NV_SATFINITE). \returns the launch error.
cudaError_t launch_fill_uniform_fp8(void *data, std::int64_t count, std::uint64_t seed, float lo,
                                    float hi, float scale, cudaStream_t stream);

/// Quantizes `count` fp32 values at `in` (device memory) to FP8 E4M3 at `out`: out[i] =
/// e4m3(in[i] * scale), the product in fp32, the conversion as in launch_fill_uniform_fp8
/// (fp8_quantize_dequantize in engine.hpp models it on the host). \returns the launch error.
cudaError_t launch_quantize_fp8(const float *in, void *out, std::int64_t count, float scale,
                                cudaStream_t stream);

} // namespace scalefit::kernels::detail

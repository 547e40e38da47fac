/// \file softmax_cuda.hpp
/// Launch wrapper of the CUDA row softmax (softmax.cu); private to the cublas engine.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace scalefit::kernels::detail {

/// Element type of the rows: 0 fp32, 1 fp16, 2 bf16, 3 fp64.
enum class SoftmaxType : int { fp32 = 0, fp16 = 1, bf16 = 2, fp64 = 3 };

/// In-place numerically stable softmax of `rows` rows of `cols` elements at `data` (device
/// memory), computed in fp32 (fp64 for fp64), one thread block per row, on `stream`.
/// \returns the launch error (cudaGetLastError after the launch).
cudaError_t launch_softmax_rows(void *data, SoftmaxType type, std::int64_t rows, int cols,
                                cudaStream_t stream);

} // namespace scalefit::kernels::detail

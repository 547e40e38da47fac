/// \file device_buffer.hpp
/// RAII device memory of the GPU engines (private to kernels/src; CUDA builds only): the cuBLAS
/// engine's operands and workspaces and cuDNN attention's workspace.
#pragma once

#include "cuda_check.hpp"

#include <cuda_runtime.h>

#include <cstddef>

namespace scalefit::kernels::detail {

/// Device memory (cudaMalloc) that grows on demand and is freed on destruction. Not copyable.
/// resize(n) keeps the buffer when it already holds n bytes, else frees it and allocates n (at
/// least 1) bytes: the contents are not kept. \throws RuntimeError when cudaMalloc fails.
struct DeviceBuffer {
  void *ptr = nullptr;
  std::size_t bytes = 0;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() { release(); }
  void release() {
    if (ptr)
      cudaFree(ptr);
    ptr = nullptr;
    bytes = 0;
  }
  void resize(std::size_t n) {
    if (n <= bytes && ptr)
      return;
    release();
    SCALEFIT_KCUDA_CHECK(cudaMalloc(&ptr, n ? n : 1));
    bytes = n;
  }
};

} // namespace scalefit::kernels::detail

/// \file cublas_support.hpp
/// What the cuBLAS engine (cublas_engine.cpp) needs around its calls: cuBLAS's data and compute
/// types of a scalefit precision, host conversion of check operands to and from the device's
/// element format, and the grouped GEMM of MoE experts (sizes, per-group pointer arrays, and
/// cublasGemmGroupedBatchedEx, cuBLAS 12.5+). CUDA builds only; compiled here, not yet run on a
/// GPU.
#pragma once

#include "scalefit/kernels/engine.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <span>
#include <vector>

namespace scalefit::kernels::detail {

/// cuBLAS's element type of precision p: CUDA_R_64F, _16F, _16BF, else _32F (fp32 and tf32
/// operands are fp32 in memory).
cudaDataType_t data_type(Precision p);

/// cuBLAS's compute type of precision p: fp64 in fp64, tf32 as CUBLAS_COMPUTE_32F_FAST_TF32,
/// every other in fp32 (fp32 accumulation of fp16/bf16, as Megatron-Core's GEMMs).
cublasComputeType_t compute_type(Precision p);

/// `values` as the host bytes of precision p's elements (fp64, fp16, bf16 or fp32; round to
/// nearest), for a stream-ordered copy to the device.
std::vector<unsigned char> to_device_format(std::span<const double> values, Precision p);

/// The inverse of to_device_format: `bytes` of precision p's elements as doubles.
std::vector<double> from_device_format(const std::vector<unsigned char> &bytes, Precision p);

/// Elements of a grouped GEMM's A, B and C (row-major m x k, k x n, m x n per group), summed
/// over s.groups().
std::array<std::size_t, 3> grouped_sizes(const KernelShape &s);

/// Whether every group of s has the same token count (then one strided batched GEMM runs it).
bool equal_groups(const KernelShape &s);

/// The 3 g per-group pointers cublasGemmGroupedBatchedEx reads, in the column-major view
/// C^T = B^T A^T: [B_0 .. B_g-1, A_0 .. A_g-1, C_0 .. C_g-1], each group's operands packed one
/// after the other from a, b and c with `elem_bytes` per element. Host pointers into `out`
/// (resized); the caller copies them to the device.
void group_pointers(const KernelShape &s, std::size_t elem_bytes, void *a, void *b, void *c,
                    std::vector<void *> &out);

/// Launches the unequal grouped GEMM of s on `handle`'s stream with group_pointers' arrays at
/// `device_ptrs` (device memory). \throws InputError for fp64 (not supported by
/// cublasGemmGroupedBatchedEx) and, built against cuBLAS < 12.5, always (naming
/// --moe-imbalance). \throws RuntimeError on a cuBLAS error.
void launch_grouped_ex(cublasHandle_t handle, Precision p, const KernelShape &s,
                       void **device_ptrs);

} // namespace scalefit::kernels::detail

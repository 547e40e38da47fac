/// \file cpu_engine.hpp
/// The Eigen building blocks of the `cpu` engine, exposed for tests: row-major GEMM maps over the
/// caller's buffers, a numerically stable row softmax, and attention composed of them.
/// Instantiated for float and double. Eigen runs its GEMM on OpenMP threads when the build found
/// OpenMP (OMP_NUM_THREADS sets how many); batched GEMMs and large softmaxes instead split their
/// batches / rows over the threads (one parallel region per call).
#pragma once

#include "scalefit/kernels/engine.hpp"

#include <cstdint>
#include <memory>

namespace scalefit::kernels {

/// c = a * b for `batch` row-major products: a is batch x m x k, b batch x k x n, c batch x m x n
/// (batches contiguous). Eigen::Map of row-major matrices; no allocation beyond Eigen's packing.
template <class T>
void cpu_gemm(const T *a, const T *b, T *c, std::int64_t m, std::int64_t n, std::int64_t k,
              std::int64_t batch);

/// In-place softmax of each of `rows` rows of `cols` values: exp(x - max) / sum, so inputs of
/// any magnitude (e.g. 1e4) give finite results summing to 1.
template <class T> void cpu_softmax_rows(T *x, std::int64_t rows, std::int64_t cols);

/// Attention as Megatron-LM's unfused path runs it: per batch, S = q k^T * scale (batched GEMM),
/// P = softmax(S) (row-wise), out = P v (batched GEMM). q, k, v, out: batch x s x d row-major.
template <class T>
void cpu_attention(const T *q, const T *k, const T *v, T *out, std::int64_t batch, std::int64_t s,
                   std::int64_t d, T scale);

/// The `cpu` engine. \throws InputError (field "--dtype") unless precision is fp32 or fp64.
std::unique_ptr<GemmEngine> make_cpu_engine(Precision precision);

} // namespace scalefit::kernels

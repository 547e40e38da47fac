/// \file cudnn_attention.hpp
/// Fused causal attention on the GPU through cuDNN's SDPA graph (cuDNN 9 backend, header-only
/// cuDNN frontend >= 1.x: Graph::sdpa and Graph::sdpa_backward, FlashAttention-2-style kernels).
/// Private to the cublas engine; compiled only with SCALEFIT_HAVE_CUDNN. The frontend's headers
/// stay inside cudnn_attention.cpp (pimpl), so no other file sees its bundled nlohmann/json.
///
/// Layout: q, k, v, out, dout, dq, dk, dv are `batch` heads of s x d, row-major, heads
/// contiguous (cuDNN's [B=1, H=batch, S=s, D=d] with strides {H S D, S D, D, 1}); stats is the
/// fp32 per-row log-sum-exp [B, H, S, 1] the forward writes and the backward reads.
#pragma once

#include "scalefit/kernels/engine.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

namespace scalefit::kernels::detail {

/// Device pointers of one attention problem (unused ones may be null).
struct AttentionBuffers {
  void *q = nullptr, *k = nullptr, *v = nullptr; ///< inputs [batch x s x d], storage type
  void *out = nullptr;                           ///< forward output / backward input
  void *stats = nullptr;                         ///< fp32 [batch x s] log-sum-exp
  void *dout = nullptr;                          ///< backward input
  void *dq = nullptr, *dk = nullptr, *dv = nullptr; ///< backward outputs
};

/// One cuDNN handle on a stream and the SDPA graphs of the last shape built.
class CudnnAttention {
public:
  /// Creates the cuDNN handle bound to `stream`. \throws RuntimeError when cuDNN fails. The
  /// cublas engine makes one only when an attention kernel runs fused, so a cuDNN that cannot
  /// create a handle fails fused attention alone, never GEMM-only runs.
  explicit CudnnAttention(cudaStream_t stream);
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention &) = delete;
  CudnnAttention &operator=(const CudnnAttention &) = delete;

  /// "" when cuDNN's SDPA can take `precision` and `head_dim` (fp16/bf16; d a multiple of 8, at
  /// most 256), else the reason.
  static std::string unavailable(Precision precision, std::int64_t head_dim);

  /// "cuDNN 9.x.y (frontend a.b.c)": the loaded library's version (cudnnGetVersion), without a
  /// handle, so that naming the library creates none (only attention does).
  static std::string version();

  /// Builds (or reuses) the forward graph for shape (kind attention, m = n = s, k = d, causal)
  /// and, for a backward shape, the backward graph; sizes the workspace. scale = 1/sqrt(d).
  /// \throws InputError when cuDNN reports the graph unsupported; RuntimeError on other failures.
  void build(const KernelShape &shape, Precision precision);

  /// Enqueues the forward (writes out, stats) on the handle's stream.
  void forward(const AttentionBuffers &buf);
  /// Enqueues the backward (reads q, k, v, out, stats, dout; writes dq, dk, dv).
  void backward(const AttentionBuffers &buf);

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

} // namespace scalefit::kernels::detail

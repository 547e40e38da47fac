/// \file attention.hpp
/// Causal scaled dot-product attention on the CPU, two ways:
/// - the naive reference in double (the s x s score matrix stored), forward and backward, for
///   the `-c` check of every engine;
/// - a fused, FlashAttention-style tiled kernel with online softmax (Dao et al. 2022,
///   "FlashAttention", Algorithm 1; backward as in Dao 2023, "FlashAttention-2", Algorithm 2):
///   64 x 64 tiles, no s x s matrix stored, the per-row log-sum-exp kept for the backward pass,
///   which recomputes the scores. It is the CPU counterpart of cuDNN's SDPA graph on the GPU.
///
/// Layout: every tensor is `batch` heads of s x d, row-major, heads contiguous (batch = b a / t).
/// out = softmax(q k^T * scale + mask) v, with the causal mask hiding key j > query i (top-left
/// aligned, as GPT training and cuDNN's set_causal_mask). scale is usually 1 / sqrt(d).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace scalefit::kernels {

/// Reference forward attention in double: out (batch x s x d) = softmax(q k^T * scale [+ causal
/// mask]) v, each head separately, computing the whole s x s matrix. q, k, v: batch x s x d.
std::vector<double> naive_attention(std::span<const double> q, std::span<const double> k,
                                    std::span<const double> v, std::int64_t batch, std::int64_t s,
                                    std::int64_t d, double scale, bool causal = false);

/// Reference backward attention in double by the chain rule through the stored P = softmax(S):
/// dV = P^T dO, dP = dO V^T, dS = P o (dP - rowsum(dP o P)), dQ = scale dS K, dK = scale dS^T Q.
/// \returns dq | dk | dv concatenated (3 x batch x s x d).
std::vector<double> naive_attention_backward(std::span<const double> q, std::span<const double> k,
                                             std::span<const double> v,
                                             std::span<const double> dout, std::int64_t batch,
                                             std::int64_t s, std::int64_t d, double scale,
                                             bool causal);

/// Fused (flash) forward: out = attention(q, k, v) computed tile by tile with the online
/// softmax; lse (batch x s) receives each query row's log-sum-exp of its scaled scores (natural
/// log), which the backward pass needs. Heads run in parallel on OpenMP threads.
/// T is float or double; accumulation in T.
template <class T>
void cpu_flash_attention_forward(const T *q, const T *k, const T *v, T *out, T *lse,
                                 std::int64_t batch, std::int64_t s, std::int64_t d, T scale,
                                 bool causal);

/// Fused (flash) backward: given q, k, v, the forward's out and lse, and dout (all batch x s x d,
/// lse batch x s), writes dq, dk, dv (batch x s x d, overwritten). Recomputes P = exp(S - lse)
/// tile by tile: five tile GEMMs (S, dV, dP, dQ, dK) per tile, 2.5x the forward's two.
template <class T>
void cpu_flash_attention_backward(const T *q, const T *k, const T *v, const T *out, const T *lse,
                                  const T *dout, T *dq, T *dk, T *dv, std::int64_t batch,
                                  std::int64_t s, std::int64_t d, T scale, bool causal);

} // namespace scalefit::kernels

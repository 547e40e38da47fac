// Helpers shared by compute.cpp (the GEMM model and its fit) and compute_read.cpp (reading
// kernel records and copy points).
#pragma once

#include "scalefit/fitting/compute.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

namespace scalefit::fitting::detail {

/// Bytes per element of a kernel record's dtype (canonical or alias): 2 for bf16/fp16, 1 for
/// fp8 (E4M3 inputs of `scalefit-bench kernels -d fp8`), 8 for fp64, else 4 (tf32, fp32).
inline double element_bytes(const std::string &dtype) {
  if (dtype == "bf16" || dtype == "fp16" || dtype == "half" || dtype == "bfloat16")
    return 2;
  if (dtype == "fp8") // E4M3 inputs of `scalefit-bench kernels -d fp8` (bf16 output)
    return 1;
  if (dtype == "fp64" || dtype == "double")
    return 8;
  return 4; // tf32, fp32
}

/// The (m, n, k) of each group of a grouped point, `group_tokens` applied to m (or to k when
/// `tokens_in_k`). Only for points with `group_tokens`: a plain or batched GEMM is its
/// (m, n, k, batch), never expanded into `batch` copies (a record's batch may be 1e9).
inline std::vector<std::array<double, 3>> point_groups(const KernelPoint &p) {
  std::vector<std::array<double, 3>> g;
  g.reserve(p.group_tokens.size());
  for (double t : p.group_tokens)
    g.push_back(p.tokens_in_k ? std::array<double, 3>{p.m, p.n, t}
                              : std::array<double, 3>{t, p.n, p.k});
  return g;
}

/// True for the GEMM kinds the tiled-wave model fits (gemm, batched_gemm, grouped_gemm).
inline bool is_gemm(KernelKind k) {
  return k == KernelKind::gemm || k == KernelKind::batched_gemm || k == KernelKind::grouped_gemm;
}

/// The fit file's dtype name for a record's alias (half -> fp16, bfloat16 -> bf16, float -> fp32,
/// e4m3 -> fp8); other names unchanged.
inline std::string canonical_dtype(const std::string &d) {
  if (d == "half")
    return "fp16";
  if (d == "bfloat16")
    return "bf16";
  if (d == "float")
    return "fp32";
  if (d == "e4m3" || d == "fp8_e4m3")
    return "fp8";
  return d;
}

} // namespace scalefit::fitting::detail

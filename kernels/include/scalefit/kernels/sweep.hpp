/// \file sweep.hpp
/// The GEMM shape grid of `scalefit-bench kernels --sweep`: the points a compute-throughput fit
/// (fitting/, issue 8) needs to predict any shape, beyond one model's layer. Families:
///   square      m = n = k, powers of two (the roofline's compute-bound end)
///   square_odd  m = n = k one off a tile multiple (tile-alignment loss)
///   small_m     m small, n = k large (decode, micro-batch 1: wave quantization over SMs)
///   small_k     k small, m = n large (low arithmetic intensity: memory-bound end)
///   odd_n       the logits GEMM with V = 50257 (odd) next to V padded to 50304 (64 | V)
///   tall        m = tokens, n x k of transformer linears (qkv, proj, mlp up/down)
///   batched     `batch` square-ish products with a small k (attention scores: s x s x d)
///   context     `batch` products m = s, n = d, k = s (attention context P V)
/// Grid `small` is sized for a CPU (every shape under ~0.5 GFLOP, the whole grid in seconds);
/// `full` for a GPU (up to 16384^3, about 8.8 TFLOP for the largest). All forward, per_layer =
/// false, named "<family>.<m>x<n>x<k>" plus "x<batch>" for batched kinds.
#pragma once

#include "scalefit/kernels/shapes.hpp"

#include <optional>
#include <string_view>
#include <vector>

namespace scalefit::kernels {

/// Which grid.
enum class SweepGrid { small, full };

/// "small" / "full".
std::string_view sweep_grid_name(SweepGrid g);

/// Parses "small" / "full". \returns std::nullopt otherwise.
std::optional<SweepGrid> parse_sweep_grid(std::string_view name);

/// The shapes of `grid` (see the file comment): `small` 19 shapes, `full` 53 shapes, each
/// family's shapes in increasing size.
std::vector<KernelShape> sweep_shapes(SweepGrid grid);

} // namespace scalefit::kernels

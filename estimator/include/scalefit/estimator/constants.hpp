/// \file constants.hpp
/// Every hand-set constant of the estimator that no YAML or fit file sets, in one place, each
/// with its source. Measured figures (peaks, HBM, efficiency tables) live in configs/systems;
/// fitted ones in fit files (compute, framework sections).
#pragma once

namespace scalefit::estimator::constants {

/// Fused (flash) attention without a compute fit: achieved fraction of the dense matrix peak
/// for forward + backward. Source: PyTorch scaled_dot_product_attention (flash backend), causal,
/// GPT-13B shape (b 1, a 40, s 1024, d 128) on H100: 317 us forward + backward for
/// 3.5 * 2 b s^2 h = 37.6 GFLOP -> 118.6 TFLOP/s = 0.12 of 989 (../shared/data/h100/README.md).
inline constexpr double kFusedAttentionEfficiency = 0.12;

/// FlashAttention backward FLOPs relative to forward: 5 matrix products against 2 (Dao et al.
/// 2022, Sec. 3.1 / Algorithm 4), so backward = 2.5 x forward.
inline constexpr double kFlashBackwardFactor = 2.5;

/// Causal masking: flash attention skips the blocks above the diagonal, about half the s x s
/// products (Dao et al. 2022); unfused (Megatron 2022) computes them all.
inline constexpr double kCausalFraction = 0.5;

/// Softmax statistics flash attention keeps per row and head for backward: one fp32 log-sum-exp
/// [bytes] (Dao et al. 2022, Algorithm 2: m and l, stored as L = m + log l).
inline constexpr double kFlashStatsBytes = 4;

} // namespace scalefit::estimator::constants

/// \file search.hpp
/// Strategy search (enumerate DP x TP x PP x CP, ZeRO stage, recomputation, SP, micro-batch and
/// interleaving under the memory limit, ranked by iteration time) and system comparison
/// (Cheng et al. 2024: training time ratio, communication time ratio, communication share).
#pragma once

#include "scalefit/estimator/estimator.hpp"

#include <array>
#include <optional>
#include <vector>

namespace scalefit::estimator {

/// What search enumerates. Defaults cover the space the issue asks for.
struct SearchSpace {
  int gpus = 0;                                   ///< N; every dp * tp * pp * cp = N is tried
  int global_batch = 0;                           ///< B [samples]; required (> 0)
  std::vector<int> micro_batches{1, 2, 4, 8, 16}; ///< candidate b
  int max_interleave = 8;                         ///< v from 1 to this (with pp > 1)
  std::vector<int> zero_stages{0, 1, 2, 3};
  std::vector<Recompute> recomputes{Recompute::none, Recompute::selective, Recompute::full};
  bool try_sp = true; ///< also try SP where tp > 1
  int max_tp = 0;     ///< 0 = no limit; else tp <= max_tp
  int max_cp = 8;     ///< cp from 1 to this (powers of two dividing N; 1 = no context parallelism)
  int max_ep = 64;    ///< MoE models: ep from 1 to this (powers of two dividing the experts)
  Strategy base;      ///< options copied into every candidate (bucket, fp32 grads, overlap)
};

/// A ranked candidate.
struct Ranked {
  Strategy strategy; ///< the layout
  Estimate estimate; ///< its estimate
};

/// Search outcome.
struct SearchResult {
  std::vector<Ranked> top;        ///< best first, at most K
  long enumerated = 0;            ///< layouts enumerated: estimated + rejected by the checks
  long estimated = 0;             ///< layouts that passed Estimator::check and were estimated
                                  ///< in full (accepted + rejected for memory)
  long accepted = 0;              ///< layouts that passed every check and fit in memory
  std::array<long, 12> rejected{}; ///< count by Reject (index = enum value)
};

/// Enumerates `space` on `est` and keeps the `top_k` fastest layouts that fit in memory.
/// \throws InputError when space.gpus or space.global_batch is not positive.
SearchResult search(const Estimator &est, const SearchSpace &space, int top_k);

/// Side-by-side comparison of two systems (Cheng et al. 2024, Sec. 5): ratios are B / A.
struct Comparison {
  Ranked a, b;                ///< the layout used on each system
  double time_ratio = 0;      ///< iteration time B / A
  double comm_ratio = 0;      ///< communication time T_cm B / A
  double comm_share_a = 0;    ///< T_cm / iteration on A (can exceed 1 with overlap)
  double comm_share_b = 0;    ///< T_cm / iteration on B
  double exposed_share_a = 0; ///< (T_cm - T_ol) / iteration on A: communication not hidden
  double exposed_share_b = 0; ///< (T_cm - T_ol) / iteration on B
};

/// Compares `a` and `b` on the given strategy, or on each system's best layout from `space`
/// when `strategy` is empty. \throws InputError when the strategy is invalid or nothing fits.
Comparison compare(const Estimator &a, const Estimator &b, const std::optional<Strategy> &strategy,
                   const SearchSpace &space);

}  // namespace scalefit::estimator

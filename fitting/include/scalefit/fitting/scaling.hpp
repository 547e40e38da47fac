/// \file scaling.hpp
/// Scaling efficiency across node counts and the speedup it implies (Cheng et al. 2024, §scaling:
/// eff(g→n) = t_comm(g) / t_comm(n); speedup = (r_cp + r_cm) / (r_cp + r_cm / eff)), and the trend
/// of fitted parameters against node count used to price node counts that were not measured.
#pragma once

#include "scalefit/fitting/models.hpp"

#include <string>
#include <vector>

namespace scalefit::fitting {

/// A message-size band [lo_bytes, hi_bytes) of the efficiency table.
struct SizeBand {
  std::string name; ///< "<64KiB", "64KiB-16MiB", ">16MiB"
  double lo_bytes = 0;
  double hi_bytes = 0;
};

/// The default bands: < 64 KiB, 64 KiB – 16 MiB, >= 16 MiB.
const std::vector<SizeBand> &default_size_bands();

/// Efficiency of one band: mean of t_g(s)/t_n(s) over the power-of-two sizes s of the band that
/// lie in both curves' measured ranges; NaN (and sizes = 0) when the band has none.
struct BandEfficiency {
  SizeBand band;
  double efficiency = 0; ///< [1]; 1 = no slowdown from g to n nodes
  int sizes = 0;         ///< power-of-two sizes averaged
};

/// eff(g→n) between two fitted curves of the same op (Cheng et al.): t_g(s) / t_n(s) at equal
/// message size s, per size band and summarized with size weights: Σ s·eff(s) / Σ s over the
/// power-of-two sizes in the common measured range.
struct ScalingEfficiency {
  int from_nnodes = 0, to_nnodes = 0;
  std::vector<BandEfficiency> bands;
  double size_weighted = 0; ///< Σ s·eff(s) / Σ s [1]
};

/// Computes eff(g→n) from curve g (measured on [g_lo, g_hi] bytes) and curve n ([n_lo, n_hi]).
/// \throws std::invalid_argument when the ranges do not overlap on any power of two.
ScalingEfficiency scaling_efficiency(const CurveModel &g, double g_lo, double g_hi, int g_nnodes,
                                     const CurveModel &n, double n_lo, double n_hi, int n_nnodes,
                                     const std::vector<SizeBand> &bands = default_size_bands());

/// y = intercept + slope · log2(nnodes), with log2(nnodes) clamped to [log2(lo_nnodes),
/// log2(hi_nnodes)].
struct LogLinearTrend {
  double intercept = 0;
  double slope = 0;
  double lo_nnodes = 1; ///< smallest node count the rule is valid for (clamp below)
  double hi_nnodes = 1; ///< largest node count the rule is valid for (clamp above)
  double floor = 0;     ///< the result never goes below this (keeps α and bandwidth positive)
  /// Evaluates the clamped rule at `nnodes` (>= 1).
  double at(double nnodes) const;
};

/// Least-squares line of ys against log2(nnodes) (one point: slope 0). Valid range: measured
/// [min, 4·max] node counts; floor = 0.25 · min(ys) (documented in docs/fit-file.md).
/// \throws std::invalid_argument when empty or sizes differ.
LogLinearTrend fit_log_linear_trend(const std::vector<int> &nnodes, const std::vector<double> &ys);

/// Speedup from compute and communication shares (Cheng et al.):
/// speedup = (r_cp + r_cm) / (r_cp + r_cm / eff).
/// \param r_cp, r_cm compute and communication shares of iteration time at g GPUs (>= 0, not both
/// 0) \param eff network efficiency eff(g→n) in (0, ∞) \throws std::invalid_argument on negative
/// shares, both zero, or eff <= 0.
double speedup_from_shares(double r_cp, double r_cm, double eff);

} // namespace scalefit::fitting

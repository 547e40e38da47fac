// Scaling efficiency across node counts, parameter trends, speedup (Cheng et al. 2024).
#include "scalefit/fitting/scaling.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace scalefit::fitting {

const std::vector<SizeBand> &default_size_bands() {
  static const std::vector<SizeBand> bands{
      {"<64KiB", 0, 65536.0},
      {"64KiB-16MiB", 65536.0, 16777216.0},
      {">16MiB", 16777216.0, std::numeric_limits<double>::infinity()}};
  return bands;
}

ScalingEfficiency scaling_efficiency(const CurveModel &g, double g_lo, double g_hi, int g_nnodes,
                                     const CurveModel &n, double n_lo, double n_hi, int n_nnodes,
                                     const std::vector<SizeBand> &bands) {
  if (!std::isfinite(g_lo) || !std::isfinite(g_hi) || !std::isfinite(n_lo) || !std::isfinite(n_hi))
    throw std::invalid_argument("size ranges must be finite");
  const double lo = std::max(g_lo, n_lo), hi = std::min(g_hi, n_hi);
  std::vector<double> sizes;
  for (double s = std::exp2(std::ceil(std::log2(std::max(lo, 1.0)))); s <= hi * (1 + 1e-12); s *= 2)
    sizes.push_back(s);
  if (sizes.empty())
    throw std::invalid_argument("measured size ranges share no power of two");
  ScalingEfficiency out;
  out.from_nnodes = g_nnodes;
  out.to_nnodes = n_nnodes;
  double wsum = 0, wes = 0;
  for (const SizeBand &b : bands) {
    BandEfficiency be{b, 0, 0};
    for (double s : sizes)
      if (s >= b.lo_bytes && s < b.hi_bytes) {
        be.efficiency += g.time_us(s) / n.time_us(s);
        ++be.sizes;
      }
    be.efficiency = be.sizes ? be.efficiency / be.sizes : std::numeric_limits<double>::quiet_NaN();
    out.bands.push_back(be);
  }
  for (double s : sizes) {
    wes += s * g.time_us(s) / n.time_us(s);
    wsum += s;
  }
  out.size_weighted = wes / wsum;
  return out;
}

double LogLinearTrend::at(double nnodes) const {
  const double x =
      std::clamp(std::log2(std::max(nnodes, 1.0)), std::log2(lo_nnodes), std::log2(hi_nnodes));
  return std::max(intercept + slope * x, floor);
}

LogLinearTrend fit_log_linear_trend(const std::vector<int> &nnodes, const std::vector<double> &ys) {
  if (nnodes.empty() || nnodes.size() != ys.size())
    throw std::invalid_argument("trend needs equal, non-empty node counts and values");
  for (std::size_t i = 0; i < nnodes.size(); ++i)
    if (nnodes[i] < 1 || !std::isfinite(ys[i]))
      throw std::invalid_argument("trend needs node counts >= 1 and finite values");
  const double n = static_cast<double>(nnodes.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < nnodes.size(); ++i) {
    const double x = std::log2(static_cast<double>(nnodes[i]));
    sx += x, sy += ys[i], sxx += x * x, sxy += x * ys[i];
  }
  LogLinearTrend t;
  const double den = n * sxx - sx * sx;
  t.slope = std::abs(den) > 1e-12 ? (n * sxy - sx * sy) / den : 0.0;
  t.intercept = (sy - t.slope * sx) / n;
  t.lo_nnodes = *std::min_element(nnodes.begin(), nnodes.end());
  t.hi_nnodes = 4.0 * *std::max_element(nnodes.begin(), nnodes.end());
  t.floor = 0.25 * *std::min_element(ys.begin(), ys.end());
  return t;
}

double speedup_from_shares(double r_cp, double r_cm, double eff) {
  if (!std::isfinite(r_cp) || !std::isfinite(r_cm) || r_cp < 0 || r_cm < 0 || r_cp + r_cm <= 0)
    throw std::invalid_argument("shares must be finite, >= 0 and not both 0");
  if (!(eff > 0) || !std::isfinite(eff))
    throw std::invalid_argument("efficiency must be finite and > 0");
  return (r_cp + r_cm) / (r_cp + r_cm / eff);
}

} // namespace scalefit::fitting

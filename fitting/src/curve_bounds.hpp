// Physical ranges of a fitted comm curve's parameters: what the fit file loader accepts
// (fit_file_load.cpp) and what the fitter may choose (fit.cpp: a candidate outside them is
// dropped; fit_curve.cpp: a curve with none inside is not fitted), so `scalefit fit` never writes
// a file its own loader refuses (issue 19).
#pragma once

#include "scalefit/core/validate.hpp"
#include "scalefit/fitting/models.hpp"

#include <string>

namespace scalefit::fitting::detail {

inline constexpr Bounds kAlphaUs{0, 1e12};              ///< latency [us] (as bounds::time_us)
inline constexpr Bounds kBandwidthGbps{1e-9, 1e30};     ///< bmax, beta [GB/s] (a fitted step may lie far above the data)
inline constexpr Bounds kSteepness{1e-9, 1e6};          ///< k of a logistic step
inline constexpr Bounds kHalfBytes{1e-12, 1e30};        ///< s_half [B]
inline constexpr Bounds kFraction{0, 1, true, true};    ///< a drop's fraction, open (0, 1)
inline constexpr Bounds kDeltaUs{0, 1e12, true, false}; ///< a lift [us] (as bounds::time_us)

/// "" when every parameter of `m` lies in the ranges above (beta only for alpha_beta), else
/// the first one that does not, e.g. "steps[2].bmax_gbps = 9.4e-17 outside [1e-09, 1e+30]".
std::string out_of_bounds(const CurveModel &m);

} // namespace scalefit::fitting::detail

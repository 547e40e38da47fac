// Numeric constants the fitting sources share (one definition, so that a unity build, which
// compiles several sources as one, sees each once).
#pragma once

#include <limits>

namespace scalefit::fitting {

/// A quiet NaN: "not computed" in quality fields and intermediate results.
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

} // namespace scalefit::fitting

/// \file validate.hpp
/// Validated reads: every number read from a file or a command line is checked finite and inside a
/// physical range, and text is checked to be UTF-8, with InputError (exit 2) naming the file, the
/// line and the field. One place for these checks instead of scattered `> 0` tests (which NaN
/// fails silently and 4.9e-324 passes).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace scalefit {

/// An interval of allowed values. `lo_open`/`hi_open` exclude the end points.
struct Bounds {
  double lo = 0;
  double hi = 0;
  bool lo_open = false;
  bool hi_open = false;
  /// True when `v` is finite and inside the interval (NaN and ±inf never are).
  bool contains(double v) const noexcept;
  /// The interval as printed in messages, e.g. "[1e-06, 1e+06]" or "(0, 1]".
  std::string text() const;
};

/// Physical ranges shared by the readers (units as the field names say).
namespace bounds {
inline constexpr Bounds bandwidth_gbps{1e-6, 1e6};   ///< 1 kB/s .. 1 PB/s [GB/s]
inline constexpr Bounds latency_us{0, 1e7};          ///< a fixed cost up to 10 s [us]
inline constexpr Bounds time_us{0, 1e12};            ///< a measured or modelled time [us]
inline constexpr Bounds efficiency{1e-3, 1};         ///< a fraction of a peak, 0.1% .. 100%
inline constexpr Bounds tflops{1e-6, 1e6};           ///< a compute peak [TFLOP/s]
inline constexpr Bounds memory_gib{1e-3, 1e6};       ///< a device memory [GiB]
inline constexpr Bounds bytes{0, 1.2e18};            ///< a message or buffer size [B] (< 2^60)
/// A measured time [us]: 1 ns .. 1e12 us (11.6 days). A smaller time is a unit error or a
/// denormal (5e-324 makes bytes / time infinite), never a measurement.
inline constexpr Bounds measured_time_us{1e-3, 1e12};
/// A fitted or loaded kernel rate [TFLOP/s]: (1 MFLOP/s, 100 PFLOP/s]. 1e-308 or 1e308 would
/// price a kernel at zero or make an MFU of 194%.
inline constexpr Bounds fitted_tflops{1e-6, 1e5, true, false};
/// A fitted memory bandwidth [GB/s]: (1 kB/s, 1 PB/s].
inline constexpr Bounds fitted_gbps{1e-6, 1e6, true, false};
/// A fixed cost of a kernel or a dispatch [us]: 0 .. 1e7 us (10 s).
inline constexpr Bounds kernel_overhead_us{0, 1e7};
/// A kernel dimension (m, n, k, batch) [elements]: 1 .. 1e12 (a denormal m is no shape).
inline constexpr Bounds kernel_dim{1, 1e12};
/// A count of points or measurements in a fit: 0 .. 1e9 (a whole number; checked by the reader).
inline constexpr Bounds point_count{0, 1e9};
/// An error or spread in percent: any finite value >= 0. A fit's error at a point it left out
/// (an outlier) has no physical ceiling: measured times span 1e-3 .. 1e12 us and a model
/// misses an excluded point by as much as it likes (1e25 % seen in a fuzzed input); what a
/// writer computes from points the readers accept must load back.
inline constexpr Bounds error_pct{0, 1e300};
}  // namespace bounds

/// Returns `v` when bounds.contains(v). \throws InputError "expected a finite number in [lo, hi],
/// got V" naming `field`, `file` and `line` otherwise.
double require_in(double v, const Bounds &b, const std::string &field,
                  const std::string &file = "", long line = 0);

/// Returns `v` when lo <= v <= hi. \throws InputError "expected an integer in [lo, hi], got V"
/// naming `field`, `file` and `line` otherwise.
std::int64_t require_int_in(std::int64_t v, std::int64_t lo, std::int64_t hi,
                            const std::string &field, const std::string &file = "", long line = 0);

/// True when `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view text) noexcept;

/// \throws InputError naming `file`, the line and column of the first byte that is not UTF-8, and
/// the byte (e.g. a Latin-1 host name: "byte 0xE9 at column 12 is not UTF-8; save the file as
/// UTF-8"). YAML and JSON are UTF-8: a loader calls this on the text before parsing it.
void require_utf8(std::string_view text, const std::string &file);

/// `text` with every byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD,
/// for text read from logs (host names, environment echoes) that goes into JSON.
std::string to_valid_utf8(std::string_view text);

}  // namespace scalefit

/// \file units.hpp
/// Units and their parsing: sizes with nccl-tests' K/M/G suffixes (1024-based), GB/s = 1e9 B/s.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace scalefit {

inline constexpr double kGB = 1e9;          ///< 1 GB = 1e9 bytes (bandwidths, as nccl-tests)
inline constexpr double kGiB = 1073741824;  ///< 1 GiB = 2^30 bytes (memory sizes)
inline constexpr double kUsPerS = 1e6;      ///< microseconds per second

/// Parses a byte count like nccl-tests' -b/-e: a non-negative integer with an optional suffix
/// K, M, G or T (1024-based, case-insensitive, an optional trailing 'B' or 'iB' accepted).
/// \throws InputError naming `what` (the argument) on anything else, or on overflow.
std::uint64_t parse_bytes(std::string_view text, std::string_view what = "size");

/// Formats a byte count compactly with a 1024-based suffix when exact ("64M", "8", "1G").
std::string format_bytes(std::uint64_t bytes);

/// Bandwidth [GB/s] for `bytes` moved in `time_us` microseconds; 0 when time_us <= 0.
inline double gbps(double bytes, double time_us) {
  return time_us > 0 ? bytes / (time_us * 1e-6) / kGB : 0.0;
}

}  // namespace scalefit

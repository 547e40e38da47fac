/// \file sysinfo.hpp
/// What the host tells about itself, read from Linux's files (pure parsers with the paths as
/// parameters, so tests feed them fixtures): the last-level cache size, the memory available,
/// and a cleaned library version string.
#pragma once

#include <cstdint>
#include <string>

namespace scalefit::bench {

/// The largest cache of cpu0 [B]: the maximum of `<dir>/index*/size` ("32768K", "1M"); when the
/// directory has none, sysconf(_SC_LEVEL3_CACHE_SIZE) then _SC_LEVEL2_CACHE_SIZE. Writes where
/// the figure came from into `source` (may be null). 0 when nothing is known.
std::uint64_t host_cache_bytes(std::string *source = nullptr,
                               const std::string &dir = "/sys/devices/system/cpu/cpu0/cache");

/// MemAvailable of a meminfo file [B] (its "kB" is KiB); 0 when the file or the line is missing.
std::uint64_t mem_available_bytes(const std::string &meminfo = "/proc/meminfo");

/// A library's version text as one clean line: cut at the first NUL (MPI_Get_library_version's
/// length may count the terminator) or line break, trailing commas and blanks removed.
std::string clean_version_text(std::string text);

/// Bytes as "12.3 GiB" / "512.0 MiB" / "64 B" (binary units), for messages.
std::string human_bytes(std::uint64_t bytes);

} // namespace scalefit::bench

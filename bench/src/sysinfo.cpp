// Host facts from /sys and /proc (see sysinfo.hpp).
#include "scalefit/bench/sysinfo.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace scalefit::bench {

namespace {
/// "32768K", "1M", "512" -> bytes; 0 when malformed.
std::uint64_t parse_cache_size(const std::string &text) {
  std::size_t pos = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &pos);
  } catch (...) {
    return 0;
  }
  while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos])))
    ++pos;
  const char unit = pos < text.size() ? static_cast<char>(std::toupper(text[pos])) : ' ';
  if (unit == 'K')
    return v << 10;
  if (unit == 'M')
    return v << 20;
  if (unit == 'G')
    return v << 30;
  return v;
}
} // namespace

std::uint64_t host_cache_bytes(std::string *source, const std::string &dir) {
  namespace fs = std::filesystem;
  std::uint64_t best = 0;
  std::error_code ec;
  if (fs::is_directory(dir, ec))
    for (const auto &e : fs::directory_iterator(dir, ec)) {
      if (e.path().filename().string().rfind("index", 0) != 0)
        continue;
      std::ifstream in(e.path() / "size");
      std::string text;
      if (std::getline(in, text))
        best = std::max(best, parse_cache_size(text));
    }
  if (best > 0) {
    if (source)
      *source = dir + "/index*/size";
    return best;
  }
  for (const auto &[name, key] : {std::pair{"sysconf(_SC_LEVEL3_CACHE_SIZE)", _SC_LEVEL3_CACHE_SIZE},
                                  std::pair{"sysconf(_SC_LEVEL2_CACHE_SIZE)", _SC_LEVEL2_CACHE_SIZE}}) {
    const long v = sysconf(key);
    if (v > 0) {
      if (source)
        *source = name;
      return static_cast<std::uint64_t>(v);
    }
  }
  if (source)
    *source = "unknown";
  return 0;
}

std::uint64_t mem_available_bytes(const std::string &meminfo) {
#ifdef SCALEFIT_TEST_HOOKS
  // Test builds only: SCALEFIT_TEST_MEMINFO names a file read in place of /proc/meminfo, so a
  // test of the memory refusal does not depend on the machine's memory (a 128 GiB GPU box
  // fitted what a CI VM refused).
  if (const char *fake = std::getenv("SCALEFIT_TEST_MEMINFO");
      fake != nullptr && *fake != '\0' && meminfo == "/proc/meminfo")
    return mem_available_bytes(std::string(fake));
#endif
  std::ifstream in(meminfo);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream ss(line.substr(13));
      unsigned long long kib = 0;
      if (ss >> kib)
        return static_cast<std::uint64_t>(kib) << 10;
      return 0;
    }
  return 0;
}

std::string clean_version_text(std::string text) {
  if (const auto cut = text.find_first_of(std::string("\r\n\0", 3)); cut != std::string::npos)
    text.resize(cut);
  while (!text.empty() &&
         (text.back() == ',' || std::isspace(static_cast<unsigned char>(text.back()))))
    text.pop_back();
  return text;
}

std::string human_bytes(std::uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes >= (1ull << 30))
    return fmt::format("{:.1f} GiB", b / (1ull << 30));
  if (bytes >= (1ull << 20))
    return fmt::format("{:.1f} MiB", b / (1ull << 20));
  if (bytes >= (1ull << 10))
    return fmt::format("{:.1f} KiB", b / (1ull << 10));
  return fmt::format("{} B", bytes);
}

} // namespace scalefit::bench

// libFuzzer target: scalefit::parse_bytes, the size parser of -b/-e/--bytes ("64M", "8G"), on
// arbitrary bytes (fuzz/README.md). Beyond the shared contract it checks the round trip: a parsed
// size printed by format_bytes parses back to the same count.
#include "fuzz_input.hpp"

#include "scalefit/core/units.hpp"

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  scalefit::fuzz::expect_clean("parse_bytes", [&] {
    const std::uint64_t bytes = scalefit::parse_bytes(text, "--size");
    const std::string printed = scalefit::format_bytes(bytes);
    if (scalefit::parse_bytes(printed, "--size") != bytes) {
      std::fprintf(stderr, "fuzz parse_bytes: %llu printed as '%s' does not parse back\n",
                   static_cast<unsigned long long>(bytes), printed.c_str());
      std::abort();
    }
  });
  return 0;
}

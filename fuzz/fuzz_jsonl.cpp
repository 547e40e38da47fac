// libFuzzer target: scalefit::read_records (the JSONL reader) on arbitrary bytes
// (fuzz/README.md).
#include "fuzz_input.hpp"

#include "scalefit/core/records.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string &path = scalefit::fuzz::write_input(data, size);
  scalefit::fuzz::expect_clean("read_records", [&] { (void)scalefit::read_records(path); });
  return 0;
}

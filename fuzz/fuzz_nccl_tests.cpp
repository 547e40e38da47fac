// libFuzzer target: scalefit::ingest::read_nccl_tests on arbitrary bytes (fuzz/README.md).
#include "fuzz_input.hpp"

#include "scalefit/ingest/ingest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string &path = scalefit::fuzz::write_input(data, size);
  scalefit::fuzz::expect_clean("read_nccl_tests", [&] {
    scalefit::ingest::IngestOptions opt;
    (void)scalefit::ingest::read_nccl_tests(path, opt);
  });
  return 0;
}

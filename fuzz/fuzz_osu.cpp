// libFuzzer target: scalefit::ingest::read_osu and read_imb (the two MPI benchmark log readers)
// on arbitrary bytes (fuzz/README.md).
#include "fuzz_input.hpp"

#include "scalefit/ingest/ingest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string &path = scalefit::fuzz::write_input(data, size);
  scalefit::fuzz::expect_clean("read_osu", [&] {
    scalefit::ingest::IngestOptions opt;
    (void)scalefit::ingest::read_osu(path, opt);
  });
  scalefit::fuzz::expect_clean("read_imb", [&] {
    scalefit::ingest::IngestOptions opt;
    (void)scalefit::ingest::read_imb(path, opt);
  });
  return 0;
}

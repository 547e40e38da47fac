// libFuzzer target: the estimator's YAML loaders, load_system and load_model, each on the same
// arbitrary bytes (fuzz/README.md). One target for both: any YAML document exercises both.
#include "fuzz_input.hpp"

#include "scalefit/estimator/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string &path = scalefit::fuzz::write_input(data, size);
  scalefit::fuzz::expect_clean("load_system", [&] { (void)scalefit::estimator::load_system(path); });
  scalefit::fuzz::expect_clean("load_model", [&] { (void)scalefit::estimator::load_model(path); });
  return 0;
}

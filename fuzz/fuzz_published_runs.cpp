// libFuzzer target: the published-runs reader (estimator/published.hpp) on arbitrary bytes, and
// the estimate of every run it accepts (`scalefit validate`), systems from the source tree
// (fuzz/README.md).
#include "fuzz_input.hpp"

#include "scalefit/estimator/published.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string &path = scalefit::fuzz::write_input(data, size);
  scalefit::fuzz::expect_clean("published_runs", [&] {
    const auto runs = scalefit::estimator::load_published_runs(path, SCALEFIT_SOURCE_ROOT);
    (void)scalefit::estimator::compare_published(runs, SCALEFIT_SOURCE_ROOT);
  });
  return 0;
}

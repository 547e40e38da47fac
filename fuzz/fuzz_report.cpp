// libFuzzer target: the report's inputs and plot data on arbitrary bytes (fuzz/README.md), read
// both ways `scalefit report` takes a file: as results (comm or kernels JSONL: load_inputs, then
// build_plots and the index page, as `report --data-only` makes them; nothing is drawn) and as an
// estimate, search or compare document (`--estimate`).
#include "fuzz_input.hpp"

#include "scalefit/report/report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string &path = scalefit::fuzz::write_input(data, size);
  scalefit::fuzz::expect_clean("report results", [&] {
    const scalefit::report::Inputs in = scalefit::report::load_inputs({path}, {}, {});
    const auto plots = scalefit::report::build_plots(in);
    (void)scalefit::report::index_html(in, plots, "fuzz");
  });
  scalefit::fuzz::expect_clean("report --estimate", [&] {
    const scalefit::report::Inputs in = scalefit::report::load_inputs({}, {}, {path});
    const auto plots = scalefit::report::build_plots(in);
    (void)scalefit::report::index_html(in, plots, "fuzz");
  });
  return 0;
}

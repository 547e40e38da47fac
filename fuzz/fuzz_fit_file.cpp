// libFuzzer target: the fit-file loader scalefit::fitting::load_fit_file on arbitrary bytes
// (fuzz/README.md); a file that loads is then asked to price a few messages, which must not crash.
#include "fuzz_input.hpp"

#include "scalefit/fitting/predict.hpp"

#include <initializer_list>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string &path = scalefit::fuzz::write_input(data, size);
  scalefit::fuzz::expect_clean("load_fit_file", [&] {
    const scalefit::fitting::FitFilePtr fit = scalefit::fitting::load_fit_file(path);
    for (const scalefit::Op op : {scalefit::Op::allreduce, scalefit::Op::allgather}) {
      for (const int nnodes : {1, 2, 64}) {
        const scalefit::fitting::CommQuery query{op, 8 * nnodes, nnodes, std::nullopt};
        for (const double bytes : {0.0, 8.0, 1048576.0, 1e12})
          (void)scalefit::fitting::predict(*fit, query, bytes);
      }
    }
  });
  return 0;
}

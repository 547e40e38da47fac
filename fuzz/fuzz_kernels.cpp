// libFuzzer target: the kernels reader (scalefit::fitting::fit_kernel_files: read_kernel_points,
// the repeat merge, then the compute fit of every dtype and kind it reads, leave-one-shape-out
// off) on arbitrary bytes (fuzz/README.md). The fit sees whatever the reader accepts: grouped
// GEMMs with group_tokens and grouped_gemm, one point per kind, degenerate shapes.
#include "fuzz_input.hpp"

#include "scalefit/fitting/compute.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string &path = scalefit::fuzz::write_input(data, size);
  scalefit::fuzz::expect_clean("fit_kernel_files",
                               [&] { (void)scalefit::fitting::fit_kernel_files({path}, false); });
  return 0;
}

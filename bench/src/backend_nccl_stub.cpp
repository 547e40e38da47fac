// Builds without NCCL: the nccl backend is a clear error (exit 2), never a crash.
#include "scalefit/bench/backend.hpp"

#include "scalefit/core/error.hpp"

namespace scalefit::bench {

bool nccl_built() {
  return false;
}
int visible_gpu_count() {
  return 0;
}
std::string gpu_identity(int) {
  return "";
}

std::unique_ptr<Backend> make_nccl_backend(int, const NcclSettings &) {
  throw InputError("--backend nccl: scalefit-bench was not built with NCCL (configure with "
                   "-DSCALEFIT_ENABLE_CUDA=ON and NCCL_HOME); use --backend mpi",
                   "", 0, "--backend");
}

} // namespace scalefit::bench

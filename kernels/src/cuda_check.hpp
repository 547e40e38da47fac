/// \file cuda_check.hpp
/// Error-checking macros for the CUDA runtime, cuBLAS and cuDNN calls of the GPU engines (private
/// to kernels/src). On failure they throw scalefit::RuntimeError naming the library, the error
/// name and text, the expression, and file:line. Library code throws; scalefit-bench's main
/// decides the exit code (kExitInternal). kernels/ depends on core only, not on bench/.
#pragma once

#include "scalefit/core/error.hpp"

#include <string>

namespace scalefit::kernels::detail {

/// Throws RuntimeError "<lib> error <name> (<text>) in `<expr>` at <file>:<line>".
[[noreturn]] inline void throw_gpu_error(const char *lib, const std::string &name,
                                         const std::string &text, const char *expr,
                                         const char *file, int line) {
  throw RuntimeError(std::string(lib) + " error " + name + " (" + text + ") in `" + expr + "` at " +
                     file + ":" + std::to_string(line));
}

} // namespace scalefit::kernels::detail

/// Calls a CUDA runtime function; throws scalefit::RuntimeError unless it returns cudaSuccess.
#define SCALEFIT_KCUDA_CHECK(expr)                                                                 \
  do {                                                                                             \
    const cudaError_t scalefit_kcuda_rc_ = (expr);                                                 \
    if (scalefit_kcuda_rc_ != cudaSuccess)                                                         \
      ::scalefit::kernels::detail::throw_gpu_error("CUDA", cudaGetErrorName(scalefit_kcuda_rc_),   \
                                                   cudaGetErrorString(scalefit_kcuda_rc_), #expr,  \
                                                   __FILE__, __LINE__);                            \
  } while (0)

/// Calls a cuBLAS function; throws scalefit::RuntimeError unless it returns success.
#define SCALEFIT_CUBLAS_CHECK(expr)                                                                \
  do {                                                                                             \
    const cublasStatus_t scalefit_cublas_rc_ = (expr);                                             \
    if (scalefit_cublas_rc_ != CUBLAS_STATUS_SUCCESS)                                              \
      ::scalefit::kernels::detail::throw_gpu_error(                                                \
          "cuBLAS", cublasGetStatusName(scalefit_cublas_rc_),                                      \
          cublasGetStatusString(scalefit_cublas_rc_), #expr, __FILE__, __LINE__);                  \
  } while (0)

/// \file check.hpp
/// Error-checking macros for MPI, CUDA and NCCL calls (after nvbench's NVBENCH_CUDA_CALL and
/// nccl-tests' NCCLCHECK): on failure they throw scalefit::RuntimeError whose message names the
/// library, the error name and string, the expression text, file:line, and the MPI rank and host.
/// Library code throws; only a binary's main decides to MPI_Abort.
///
/// SCALEFIT_CUDA_CHECK needs <cuda_runtime.h> and SCALEFIT_NCCL_CHECK needs <nccl.h> where they
/// are used (macros expand at the call site, so this header itself needs neither).
#pragma once

#include "scalefit/core/error.hpp"

#include <mpi.h>

#include <string>

namespace scalefit::bench::detail {

/// "rank R on HOST" for the calling process (rank -1 before MPI_Init or after MPI_Finalize).
std::string where();

/// Throws RuntimeError "<lib> error <name> (<text>) in `<expr>` at <file>:<line> on rank R on
/// HOST".
[[noreturn]] void throw_call_error(const char *lib, const std::string &name,
                                   const std::string &text, const char *expr, const char *file,
                                   int line);

/// Throws the RuntimeError for an MPI return code (name and string from MPI_Error_class/string).
[[noreturn]] void throw_mpi_error(int code, const char *expr, const char *file, int line);

} // namespace scalefit::bench::detail

/// Calls an MPI function; throws scalefit::RuntimeError when it does not return MPI_SUCCESS.
/// (MPI_COMM_WORLD must use MPI_ERRORS_RETURN for errors to reach here; scalefit-bench sets it.)
#define SCALEFIT_MPI_CHECK(expr)                                                                   \
  do {                                                                                             \
    const int scalefit_mpi_rc_ = (expr);                                                           \
    if (scalefit_mpi_rc_ != MPI_SUCCESS)                                                           \
      ::scalefit::bench::detail::throw_mpi_error(scalefit_mpi_rc_, #expr, __FILE__, __LINE__);     \
  } while (0)

/// Calls a CUDA runtime function; throws scalefit::RuntimeError unless it returns cudaSuccess.
#define SCALEFIT_CUDA_CHECK(expr)                                                                  \
  do {                                                                                             \
    const cudaError_t scalefit_cuda_rc_ = (expr);                                                  \
    if (scalefit_cuda_rc_ != cudaSuccess)                                                          \
      ::scalefit::bench::detail::throw_call_error("CUDA", cudaGetErrorName(scalefit_cuda_rc_),     \
                                                  cudaGetErrorString(scalefit_cuda_rc_), #expr,    \
                                                  __FILE__, __LINE__);                             \
  } while (0)

/// Calls an NCCL function; throws scalefit::RuntimeError unless it returns ncclSuccess (or
/// ncclInProgress for non-blocking communicators). The text includes ncclGetLastError.
#define SCALEFIT_NCCL_CHECK(expr)                                                                  \
  do {                                                                                             \
    const ncclResult_t scalefit_nccl_rc_ = (expr);                                                 \
    if (scalefit_nccl_rc_ != ncclSuccess && scalefit_nccl_rc_ != ncclInProgress) {                 \
      const char *scalefit_nccl_last_ = ncclGetLastError(nullptr);                                 \
      ::scalefit::bench::detail::throw_call_error(                                                 \
          "NCCL", "ncclResult_t " + std::to_string(static_cast<int>(scalefit_nccl_rc_)),           \
          std::string(ncclGetErrorString(scalefit_nccl_rc_)) +                                     \
              (scalefit_nccl_last_ && *scalefit_nccl_last_                                         \
                   ? std::string("; last error: ") + scalefit_nccl_last_                           \
                   : std::string()),                                                               \
          #expr, __FILE__, __LINE__);                                                              \
    }                                                                                              \
  } while (0)

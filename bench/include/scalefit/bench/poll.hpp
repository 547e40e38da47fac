/// \file poll.hpp
/// Waiting for GPU work by polling, with the communicator's health checked on every turn: what
/// nccl-tests' testStreamSynchronize does (cudaStreamQuery in a loop, ncclCommGetAsyncError
/// between queries), so that a dead link, a remote abort or an NCCL internal error ends the
/// wait with an error naming it instead of hanging until --timeout. Header-only and free of
/// CUDA/NCCL types so the CPU build tests the logic with fakes (tests/bench/test_poll.cpp); the
/// nccl backend passes the real queries.
#pragma once

#include "scalefit/core/error.hpp"

#include <string>
#include <utility>

namespace scalefit::bench {

/// What one query of the awaited work (a stream or an event) says.
enum class WorkState {
  done,    ///< finished (cudaSuccess)
  pending, ///< still running (cudaErrorNotReady)
};

/// Polls until the work is done. `query()` returns WorkState and throws on a CUDA error;
/// `async_error()` returns "" while the communicator is healthy (ncclSuccess or ncclInProgress)
/// and otherwise a description of the failure (ncclGetErrorString and ncclGetLastError). The
/// health check runs after every `pending` query, before the next (nccl-tests checks on every
/// turn too; ncclCommGetAsyncError is a load of the communicator's state). Spins without
/// sleeping, as the host timer must see completion at once (nccl-tests' timer does the same).
/// \throws RuntimeError "NCCL reported an asynchronous error: <description>" as soon as
///   async_error() is not empty; whatever query() throws.
template <class Query, class AsyncError>
void wait_polling(Query &&query, AsyncError &&async_error) {
  for (;;) {
    if (query() == WorkState::done)
      return;
    if (std::string e = async_error(); !e.empty())
      throw RuntimeError("NCCL reported an asynchronous error: " + e);
  }
}

} // namespace scalefit::bench

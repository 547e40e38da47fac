/// \file verify.hpp
/// Buffers of a block of points and the untimed correctness run of `-c` (nccl-tests' check: fill
/// verifiable data, run once, compare every element with the exact expected value).
#pragma once

#include "scalefit/bench/backend.hpp"
#include "scalefit/bench/collective.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace scalefit::bench {

/// Send and receive buffers of one (op, shape, dtype) block [B], allocated with the backend
/// (zero-filled): sized for its largest point, or larger so that the buffer rotation (comm.cpp)
/// runs through memory the cache cannot hold; plus a host staging area for checks (pinned on
/// nccl), allocated at the first check.
struct Buffers {
  Backend *backend = nullptr;
  void *send = nullptr;
  void *recv = nullptr;
  std::size_t send_bytes = 0, recv_bytes = 0;
  unsigned char *host = nullptr; ///< staging for backends whose memory is not host memory
  std::size_t host_bytes = 0;
  Buffers(Backend &b, std::size_t send_bytes, std::size_t recv_bytes);
  ~Buffers();
  /// Makes `host` hold at least `bytes` (Backend::alloc_host).
  void ensure_host(std::size_t bytes);
  Buffers(const Buffers &) = delete;
  Buffers &operator=(const Buffers &) = delete;
};

/// Send and receive pointers of a placement: the two buffers out of place; in place, nccl-tests'
/// layout inside the receive buffer (Collective::{send,recv}_inplace_offset). Both are advanced
/// by `shift` bytes (buffer rotation; the caller keeps shift + the point's extent in bounds).
std::pair<const void *, void *> placement_ptrs(const Collective &c, Buffers &b, const CollArgs &a,
                                               Placement p, std::size_t shift = 0);

/// Fills (through Comm::copy_in, ordered with the communicator's stream) rank a.rank's inputs
/// (check_pattern) and a sentinel (all bits set: NaN or -1, never an
/// expected value) in its receive area, runs the operation once, and counts the elements of its
/// result that differ from Collective::expected (exact equality; avg on floating types within
/// 1e-2 for 16-bit floats, 1e-6 otherwise; avg on integers exactly trunc(sum / n), as NCCL). Ranks without a defined result (reduce's non-roots) count 0.
std::int64_t check_point(Backend &backend, Comm &comm, const Collective &coll, Buffers &b,
                         const CollArgs &a, Placement placement);

} // namespace scalefit::bench

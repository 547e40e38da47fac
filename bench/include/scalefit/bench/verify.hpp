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

/// Send and receive buffers of one (op, shape, dtype) block, sized for its largest point [B],
/// allocated with the backend (zero-filled), plus a host staging area for checks.
struct Buffers {
  Backend *backend = nullptr;
  void *send = nullptr;
  void *recv = nullptr;
  std::size_t send_bytes = 0, recv_bytes = 0;
  std::vector<unsigned char> host; ///< staging for backends whose memory is not host memory
  Buffers(Backend &b, std::size_t send_bytes, std::size_t recv_bytes);
  ~Buffers();
  Buffers(const Buffers &) = delete;
  Buffers &operator=(const Buffers &) = delete;
};

/// Send and receive pointers of a placement: the two buffers out of place; in place, nccl-tests'
/// layout inside the receive buffer (Collective::{send,recv}_inplace_offset).
std::pair<const void *, void *> placement_ptrs(const Collective &c, Buffers &b, const CollArgs &a,
                                               Placement p);

/// Fills rank a.rank's inputs (check_pattern) and a sentinel (all bits set: NaN or -1, never an
/// expected value) in its receive area, runs the operation once, and counts the elements of its
/// result that differ from Collective::expected (exact equality; avg within 1e-2 for 16-bit
/// floats, 1e-6 otherwise). Ranks without a defined result (reduce's non-roots) count 0.
std::int64_t check_point(Backend &backend, Comm &comm, const Collective &coll, Buffers &b,
                         const CollArgs &a, Placement placement);

} // namespace scalefit::bench

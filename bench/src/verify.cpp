// The untimed correctness run of -c: fill check data, run once, count wrong elements.
#include "scalefit/bench/verify.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace scalefit::bench {

Buffers::Buffers(Backend &b, std::size_t sb, std::size_t rb)
    : backend(&b), send_bytes(sb), recv_bytes(rb) {
  send = b.alloc(sb);
  recv = b.alloc(rb);
}

Buffers::~Buffers() {
  backend->release(send);
  backend->release(recv);
  if (host)
    backend->release_host(host);
}

void Buffers::ensure_host(std::size_t bytes) {
  if (host_bytes >= bytes && host)
    return;
  if (host)
    backend->release_host(host);
  host = nullptr;
  host = static_cast<unsigned char *>(backend->alloc_host(bytes));
  host_bytes = bytes;
}

/// Send and receive pointers of a placement (nccl-tests' in-place layout inside the recv buffer).
std::pair<const void *, void *> placement_ptrs(const Collective &c, Buffers &b, const CollArgs &a,
                                               Placement p, std::size_t shift) {
  if (p == Placement::out_of_place)
    return {static_cast<const char *>(b.send) + shift, static_cast<char *>(b.recv) + shift};
  auto *base = static_cast<char *>(b.recv) + shift;
  const std::size_t es = dtype_size(a.dtype), r = static_cast<std::size_t>(a.rank);
  return {base + c.send_inplace_offset(a.count) * r * es,
          base + c.recv_inplace_offset(a.count) * r * es};
}

/// Runs the operation once on check data and counts wrong elements on this rank. Host-accessible
/// buffers (mpi) are filled and read in place; others are staged through host memory.
std::int64_t check_point(Backend &backend, Comm &comm, const Collective &coll, Buffers &b,
                         const CollArgs &a, Placement placement) {
  const std::size_t es = dtype_size(a.dtype);
  const std::size_t ns = coll.send_count(a.count, a.nranks),
                    nr = coll.recv_count(a.count, a.nranks);
  const CheckPattern pat = check_pattern(a.dtype, a.redop, a.nranks);
  const bool direct = backend.host_accessible();
  if (!direct)
    b.ensure_host(std::max(ns, nr) * es + std::max(coll.send_inplace_offset(a.count),
                                                   coll.recv_inplace_offset(a.count)) *
                                              static_cast<std::size_t>(a.rank) * es);
  auto [send, recv] = placement_ptrs(coll, b, a, placement);
  // Host images of the send and receive buffers (the buffers themselves when direct).
  auto *send_img = direct ? static_cast<unsigned char *>(b.send) : b.host;
  auto *recv_img = direct ? static_cast<unsigned char *>(b.recv) : b.host;
  if (placement == Placement::out_of_place) {
    std::memset(recv_img, 0xff, nr * es); // NaN / -1: never an expected value
    if (!direct)
      comm.copy_in(b.recv, recv_img, nr * es);
    fill_inputs(a.dtype, send_img, ns, pat, a.rank);
    if (!direct)
      comm.copy_in(b.send, send_img, ns * es);
  } else {
    const std::size_t total = std::max(ns + coll.send_inplace_offset(a.count) * a.rank,
                                       nr + coll.recv_inplace_offset(a.count) * a.rank);
    std::memset(recv_img, 0xff, total * es);
    const std::size_t off = static_cast<std::size_t>(static_cast<const char *>(send) -
                                                     static_cast<const char *>(b.recv));
    fill_inputs(a.dtype, recv_img + off, ns, pat, a.rank);
    if (!direct)
      comm.copy_in(b.recv, recv_img, total * es);
  }
  // One operation, through a CUDA graph under -G as the timed samples ran (Comm::run_once).
  comm.run_once([&] { coll.run(comm, send, recv, a); });
  if (!coll.has_result(a))
    return 0;
  const void *result = recv;
  if (placement == Placement::in_place && coll.op == Op::reducescatter &&
      backend.inplace_reducescatter_at_start())
    result = b.recv;
  if (placement == Placement::out_of_place && coll.op == Op::broadcast && a.rank == a.root &&
      backend.outofplace_broadcast_root_result_in_send())
    result = send;
  const unsigned char *h = static_cast<const unsigned char *>(result);
  if (!direct) {
    comm.copy_out(b.host, result, nr * es);
    h = b.host;
  }
  // avg on floats: NCCL multiplies by 1/nranks (rounded); on integers it truncates: exact.
  const bool tolerant = a.redop == RedOp::avg && op_has_redop(coll.op) && !is_integer_type(a.dtype);
  const double tol = (a.dtype == DType::half || a.dtype == DType::bfloat16) ? 1e-2 : 1e-6;
  const std::size_t blocks = nr / a.count;
  auto count_wrong = [&](auto load) {
    std::int64_t wrong = 0;
    for (std::size_t blk = 0, j = 0; blk < blocks; ++blk)
      for (std::size_t i = 0; i < a.count; ++i, ++j) {
        const double got = load(j);
        const double want = coll.expected(pat, a, blk, i);
        if (tolerant ? !(std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want)))
                     : got != want)
          ++wrong;
      }
    return wrong;
  };
  auto typed = [&](auto zero) {
    using T = decltype(zero);
    return count_wrong([h](std::size_t j) {
      T v;
      std::memcpy(&v, h + j * sizeof(T), sizeof(T));
      return static_cast<double>(v);
    });
  };
  switch (a.dtype) {
  case DType::float32:
    return typed(float{});
  case DType::float64:
    return typed(double{});
  case DType::int32:
    return typed(std::int32_t{});
  case DType::int64:
    return typed(std::int64_t{});
  default:
    return count_wrong([&](std::size_t j) { return load_value(a.dtype, h, j); });
  }
}

} // namespace scalefit::bench

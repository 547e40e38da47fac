/// \file collective.hpp
/// Collectives as small plug-ins, nccl-tests' `testColl` shape: a name, the buffer counts for a
/// per-rank count (getCollByteCount), the in-place layout, how to run it on a backend, and the
/// expected result for the check. busbw factors and per-rank counts come from core
/// (busbw_factor, count_per_rank). Adding an operation is one entry in all_collectives().
#pragma once

#include "scalefit/bench/alltoallv.hpp"
#include "scalefit/bench/backend.hpp"
#include "scalefit/bench/checkdata.hpp"
#include "scalefit/core/collectives.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace scalefit::bench {

/// Arguments of one operation on one communicator.
struct CollArgs {
  std::size_t count = 0; ///< per-rank count (nccl-tests' count column) [elements]
  DType dtype = DType::float32;
  RedOp redop = RedOp::sum;
  int root = 0;   ///< for reduce and broadcast
  int rank = 0;   ///< the calling rank in the communicator
  int nranks = 1; ///< ranks in the communicator
  /// alltoallv's count matrix (--alltoallv-matrix); the layout is alltoallv_plan's, built once
  /// per point.
  AlltoallvMatrix matrix = AlltoallvMatrix::uniform;
};

/// One collective, as nccl-tests describes it.
struct Collective {
  Op op;
  std::string_view nccl_tests_name; ///< e.g. "all_reduce_perf" (for users' eyes)
  /// Elements of the send and receive buffers for per-rank count c on n ranks.
  std::size_t (*send_count)(std::size_t c, int n);
  std::size_t (*recv_count)(std::size_t c, int n);
  /// In-place layout inside one buffer `base` (nccl-tests' {send,recv}InplaceOffset):
  /// send = base + send_inplace_offset(c) * rank, recv = base + recv_inplace_offset(c) * rank.
  std::size_t (*send_inplace_offset)(std::size_t c);
  std::size_t (*recv_inplace_offset)(std::size_t c);
  /// Issues the operation once on `comm`.
  void (*run)(Comm &comm, const void *send, void *recv, const CollArgs &a);
  /// Whether rank a.rank's receive buffer holds a defined result (reduce: root only).
  bool (*has_result)(const CollArgs &a);
  /// Expected element j = block * a.count + i of a.rank's receive buffer (block < recv_count /
  /// count) when every rank r's send buffer holds p.input(r, k) at index k.
  double (*expected)(const CheckPattern &p, const CollArgs &a, std::size_t block, std::size_t i);
};

/// Every collective, in core's all_ops() order.
const std::vector<Collective> &all_collectives();

/// The plug-in of an operation.
const Collective &collective(Op op);

/// Whether backend `backend` ("mpi", "nccl") runs `op` at placement `p`: "" when it does (timed,
/// and checked under -c), else why not, for the table's N/A and the context record's `not_run`.
/// NCCL defines in-place (send == recv) for AllReduce, Broadcast, Reduce, AllGather and
/// ReduceScatter only: in-place AllToAll and SendRecv are undefined on nccl, neither timed nor
/// checked (nccl-tests runs them but reports no errors: `reportErrors = in_place ? 0 : 1`). MPI
/// defines both (MPI_IN_PLACE, MPI_Sendrecv_replace): the mpi backend runs them. In-place
/// AllToAllv is run on neither backend (NCCL has no AllToAllv; nccl-tests checks it out of place
/// only; MPI_IN_PLACE is left out to keep the backends alike).
std::string not_run_reason(std::string_view backend, Op op, Placement p);

} // namespace scalefit::bench

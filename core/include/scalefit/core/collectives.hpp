/// \file collectives.hpp
/// Collective operations, data types and reduction operators, with the byte/count/bandwidth
/// conventions of nccl-tests (`doc/PERFORMANCE.md`): `size` (bytes) is the whole array,
/// algbw = size / time, busbw = algbw * factor(op, n).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace scalefit {

/// A communication operation timed by scalefit-bench and priced by the estimator.
/// alltoallv is AllToAll with per-peer counts (MPI_Alltoallv; nccl-tests 2.19's alltoallv_perf):
/// its count matrix (uniform or skewed) is the measurement's `method` (bench/alltoallv.hpp).
enum class Op {
  allreduce,
  allgather,
  reducescatter,
  reduce,
  broadcast,
  alltoall,
  alltoallv,
  sendrecv
};

/// All operations, in the order `--ops all` runs them.
const std::vector<Op> &all_ops();

/// Canonical lower-case name ("allreduce", ...).
std::string_view op_name(Op op);

/// Parses an operation name; accepts the canonical name, nccl-tests' binary stems ("all_reduce",
/// "reduce_scatter", "alltoall", "alltoallv", "sendrecv") and NCCL's names ("AllReduce",
/// "ReduceScatter", "AlltoAllv"), case-insensitively. \returns std::nullopt when unknown.
std::optional<Op> parse_op(std::string_view name);

/// nccl-tests' bus-bandwidth factor for `nranks` ranks: AllReduce 2(n-1)/n; AllGather,
/// ReduceScatter, AllToAll, AllToAllv (n-1)/n; Reduce, Broadcast, SendRecv 1 (nccl-tests
/// doc/PERFORMANCE.md; alltoallv as src/alltoallv.cu's AlltoAllvGetBw).
/// \param nranks >= 1 (n = 1 gives 0 for the (n-1)/n ops, as nccl-tests prints).
double busbw_factor(Op op, int nranks);

/// Whether the operation's count is size / (type size * n) (AllGather, ReduceScatter, AllToAll,
/// AllToAllv: the count column is per peer) rather than size / type size (the others), as in
/// nccl-tests' getCollByteCount.
bool count_divided_by_ranks(Op op);

/// Elements each rank contributes for a message of `bytes` (nccl-tests convention: `bytes` is the
/// whole array). AllGather/ReduceScatter/AllToAll/AllToAllv: floor(bytes / (type_bytes * nranks));
/// others: floor(bytes / type_bytes). 0 means the size is too small to measure and is skipped.
std::size_t count_per_rank(Op op, std::size_t bytes, std::size_t type_bytes, int nranks);

/// The number of bytes actually moved as the "size" once the per-rank count is rounded down:
/// count_per_rank * type_bytes * (nranks for the divided ops, else 1).
std::size_t effective_bytes(Op op, std::size_t bytes, std::size_t type_bytes, int nranks);

/// Element types, named as nccl-tests prints them.
enum class DType { int8, uint8, int32, uint32, int64, uint64, half, float32, float64, bfloat16 };

/// nccl-tests' name: "int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float",
/// "double", "bfloat16".
std::string_view dtype_name(DType t);
/// Parses nccl-tests' names and common aliases (fp32, f32, fp16, bf16, fp64, int, ...).
std::optional<DType> parse_dtype(std::string_view name);
/// Size of one element [bytes].
std::size_t dtype_size(DType t);

/// Reduction operators, named as nccl-tests prints them.
enum class RedOp { sum, prod, max, min, avg };
/// nccl-tests' name: "sum", "prod", "max", "min", "avg".
std::string_view redop_name(RedOp r);
/// Parses redop_name's output (case-insensitive). \returns std::nullopt when unknown.
std::optional<RedOp> parse_redop(std::string_view name);
/// Whether the operation takes a reduction operator (AllReduce, Reduce, ReduceScatter).
bool op_has_redop(Op op);
/// Whether the operation takes a root rank (Reduce, Broadcast).
bool op_has_root(Op op);

/// Buffer placement: separate send and receive buffers, or the result in the send buffer.
enum class Placement { out_of_place, in_place };
std::string_view placement_name(Placement p);  ///< "out-of-place" / "in-place"
/// Parses "out-of-place"/"in-place" (also "oop", "ip"). \returns std::nullopt when unknown.
std::optional<Placement> parse_placement(std::string_view name);

/// The shape of the communicator a measurement ran on.
/// kind: "world" (all ranks), "intra" (ranks of one node), "inter" (ranks across nodes).
struct GroupShape {
  std::string kind = "world";
  int nranks = 1;          ///< ranks in the communicator
  int nnodes = 1;          ///< distinct nodes among them
  int ranks_per_node = 1;  ///< nranks / nnodes
  bool operator==(const GroupShape &) const = default;
  /// "world n=8 (2x4)" style label for tables and diagnostics.
  std::string label() const;
};

}  // namespace scalefit

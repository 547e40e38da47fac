/// \file alltoallv.hpp
/// The count matrices of AllToAllv (`scalefit-bench comm --ops alltoallv --alltoallv-matrix M`):
/// which share of its data each rank sends to each peer.
///
/// Sizes follow nccl-tests 2.19's alltoallv_perf (src/alltoallv.cu): `count` (the count column)
/// is the per-peer count of the uniform matrix, count_per_rank(alltoallv, size, type, n) =
/// size / (type size * n), and every rank sends n * count elements in all. Both matrices below
/// also make every rank *receive* n * count elements, so nccl-tests' size (the largest per-rank
/// send or receive volume over all ranks) is size = n * count * type size for both, algbw =
/// size / time and busbw = algbw * (n - 1) / n, as AlltoAllvGetBw.
///
///  - uniform: every peer gets `count` elements (NCCL_TESTS_ALLTOALLV_SPREAD=0.0 in nccl-tests;
///    the same traffic as alltoall).
///  - skewed: MoE-like routing. Each rank's tokens prefer experts with a Zipf popularity: the
///    peer of popularity rank q (q = 0 the favourite) gets a share (q + 1)^-s / sum_k (k + 1)^-s
///    of the rank's n * count elements, s = kAlltoallvSkewExponent. Rank r's favourite is the
///    next rank (r + 1) mod n, then (r + 2) mod n, ..., and its own expert last (popularity rank
///    of offset k = (p - r) mod n is (k - 1) mod n). The preference is rotated by rank, so every
///    expert is the favourite of exactly one rank and receives n * count elements in all: the
///    per-pair traffic is skewed (on 8 ranks 37% of a rank's data goes to one peer and 4.6% to
///    the least popular) while expert loads stay balanced in aggregate, as a router with a load
///    balancing loss keeps them. Shares are rounded to whole elements by largest remainder (ties
///    to the more popular peer), so they sum to n * count exactly; small counts give some peers 0.
///    A globally hot expert (one rank receiving more than the others) is not what this matrix
///    measures: nccl-tests' size column would then be that rank's receive volume.
#pragma once

#include "scalefit/bench/backend.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace scalefit::bench {

/// The count matrix of an AllToAllv (see the file comment).
enum class AlltoallvMatrix { uniform, skewed };

/// Zipf exponent s of the skewed matrix's per-peer shares.
inline constexpr double kAlltoallvSkewExponent = 1.0;

/// "uniform" or "skewed": the --alltoallv-matrix value and the measurement's `method`.
std::string_view alltoallv_matrix_name(AlltoallvMatrix m);
/// Parses alltoallv_matrix_name's output. \returns std::nullopt when unknown.
std::optional<AlltoallvMatrix> parse_alltoallv_matrix(std::string_view name);

/// One row of the circulant count matrix: element k is what rank r sends to rank (r + k) mod n
/// [elements], k = 0..n-1 (k = 0: itself). Sums to n * count exactly. Empty for nranks < 1.
std::vector<std::size_t> alltoallv_row(AlltoallvMatrix m, std::size_t count, int nranks);

/// Rank `rank`'s AllToAllv arguments (Comm::alltoallv): send_counts[p] = row[(p - rank) mod n],
/// recv_counts[p] = row[(rank - p) mod n], displacements the running sums in peer order (the
/// received segments are concatenated in source-rank order, as nccl-tests' expected buffer).
AlltoallvLayout alltoallv_layout(AlltoallvMatrix m, std::size_t count, int nranks, int rank);

/// A layout with what the check needs: `source_offsets[p]` is where the segment rank `rank`
/// receives from p starts in p's send buffer [elements].
struct AlltoallvPlan {
  AlltoallvMatrix matrix = AlltoallvMatrix::uniform;
  std::size_t count = 0;
  int nranks = 0, rank = -1;
  AlltoallvLayout layout;
  std::vector<std::size_t> source_offsets;
};

/// Builds the plan of (matrix, count, nranks, rank).
AlltoallvPlan make_alltoallv_plan(AlltoallvMatrix m, std::size_t count, int nranks, int rank);

/// The plan of (matrix, count, nranks, rank), built when the key differs from the previous call's
/// and reused otherwise (one per thread): the timed loop runs one point at a time, so the layout
/// is built once per point (at its first, warm-up operation) and never allocated per operation.
const AlltoallvPlan &alltoallv_plan(AlltoallvMatrix m, std::size_t count, int nranks, int rank);

/// The context record's "alltoallv" object when `ops` holds alltoallv (else null): the matrix,
/// its definition, the skew exponent and nccl-tests' equivalent.
nlohmann::json alltoallv_context(const std::vector<Op> &ops, AlltoallvMatrix m);

} // namespace scalefit::bench

#include "scalefit/core/collectives.hpp"

#include <gtest/gtest.h>

using namespace scalefit;

// nccl-tests doc/PERFORMANCE.md: allreduce 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n;
// reduce, broadcast, sendrecv 1.
TEST(Collectives, BusbwFactorsForOneToSixteenRanks) {
  for (int n = 1; n <= 16; ++n) {
    const double nd = n;
    EXPECT_DOUBLE_EQ(busbw_factor(Op::allreduce, n), 2.0 * (nd - 1) / nd) << n;
    EXPECT_DOUBLE_EQ(busbw_factor(Op::allgather, n), (nd - 1) / nd) << n;
    EXPECT_DOUBLE_EQ(busbw_factor(Op::reducescatter, n), (nd - 1) / nd) << n;
    EXPECT_DOUBLE_EQ(busbw_factor(Op::alltoall, n), (nd - 1) / nd) << n;
    EXPECT_DOUBLE_EQ(busbw_factor(Op::reduce, n), 1.0) << n;
    EXPECT_DOUBLE_EQ(busbw_factor(Op::broadcast, n), 1.0) << n;
    EXPECT_DOUBLE_EQ(busbw_factor(Op::sendrecv, n), 1.0) << n;
  }
  EXPECT_DOUBLE_EQ(busbw_factor(Op::allreduce, 8), 1.75);
}

TEST(Collectives, CountPerRankFollowsNcclTests) {
  for (int n = 1; n <= 16; ++n) {
    for (Op op : all_ops()) {
      const std::size_t bytes = 1 << 20;
      const std::size_t c = count_per_rank(op, bytes, 4, n);
      if (count_divided_by_ranks(op)) EXPECT_EQ(c, bytes / (4u * n)) << op_name(op) << " n=" << n;
      else EXPECT_EQ(c, bytes / 4u) << op_name(op) << " n=" << n;
    }
  }
  // 8 bytes of float on 4 ranks: allgather has 0 elements per rank (skipped), allreduce 2.
  EXPECT_EQ(count_per_rank(Op::allgather, 8, 4, 4), 0u);
  EXPECT_EQ(count_per_rank(Op::allreduce, 8, 4, 4), 2u);
  EXPECT_EQ(effective_bytes(Op::reducescatter, 100, 4, 3), 96u);  // 8 per rank * 4 B * 3
  EXPECT_EQ(effective_bytes(Op::broadcast, 10, 8, 3), 8u);
}

TEST(Collectives, ParsesNamesFromEveryTool) {
  EXPECT_EQ(parse_op("all_reduce"), Op::allreduce);
  EXPECT_EQ(parse_op("AllReduce"), Op::allreduce);
  EXPECT_EQ(parse_op("reduce_scatter"), Op::reducescatter);
  EXPECT_EQ(parse_op("alltoall"), Op::alltoall);
  EXPECT_EQ(parse_op("bcast"), Op::broadcast);
  EXPECT_FALSE(parse_op("allreduc").has_value());
  for (Op op : all_ops()) EXPECT_EQ(parse_op(op_name(op)), op);
  EXPECT_EQ(parse_dtype("float"), DType::float32);
  EXPECT_EQ(parse_dtype("bf16"), DType::bfloat16);
  EXPECT_EQ(parse_dtype("double"), DType::float64);
  EXPECT_FALSE(parse_dtype("float128").has_value());
  EXPECT_EQ(dtype_size(DType::half), 2u);
  EXPECT_EQ(dtype_name(DType::float32), "float");
  EXPECT_EQ(parse_redop("max"), RedOp::max);
  EXPECT_EQ(parse_placement("in-place"), Placement::in_place);
}

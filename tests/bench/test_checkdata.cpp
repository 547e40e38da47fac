// Check data: inputs are exact in every type, reductions stay in range, and each plug-in's
// expected result equals an independent host simulation of the collective's semantics.
#include "scalefit/bench/checkdata.hpp"
#include "scalefit/bench/collective.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace scalefit;
using namespace scalefit::bench;

TEST(CheckPattern, InputsAreSmallIntegersThatCycle) {
  const CheckPattern p = check_pattern(DType::float32, RedOp::sum, 4);
  EXPECT_EQ(p.base, 0);
  EXPECT_EQ(p.period, 8);
  EXPECT_EQ(p.input(0, 0), 0);
  EXPECT_EQ(p.input(3, 6), 1); // (3 + 6) % 8
  EXPECT_EQ(p.input(1, 7), 0);
}

TEST(CheckPattern, SumsStayExactInTheType) {
  for (DType t : {DType::half, DType::bfloat16, DType::int8, DType::uint8, DType::float32})
    for (RedOp r : {RedOp::sum, RedOp::prod, RedOp::max, RedOp::min})
      for (int n : {1, 2, 3, 8, 64, 512}) {
        const CheckPattern p = check_pattern(t, r, n);
        ASSERT_GE(p.period, 1);
        EXPECT_EQ(p.period & (p.period - 1), 0) << "period is a power of two";
        for (int i = 0; i < p.period; ++i) {
          const double v = reduce_inputs(p, r, n, static_cast<std::size_t>(i));
          EXPECT_LE(v, exact_integer_limit(t))
              << dtype_name(t) << " " << redop_name(r) << " n=" << n;
          EXPECT_EQ(v, std::floor(v));
          EXPECT_EQ(p.reduced[static_cast<std::size_t>(i)], v);
        }
      }
}

TEST(CheckPattern, ReductionsByHand) {
  const CheckPattern p = check_pattern(DType::float32, RedOp::sum, 3);
  // index 0 on ranks 0,1,2: 0 + 1 + 2
  EXPECT_EQ(reduce_inputs(p, RedOp::sum, 3, 0), 3);
  // index 6: 6 + 7 + 0
  EXPECT_EQ(reduce_inputs(p, RedOp::sum, 3, 6), 13);
  EXPECT_EQ(reduce_inputs(p, RedOp::max, 3, 6), 7);
  EXPECT_EQ(reduce_inputs(p, RedOp::min, 3, 6), 0);
  const CheckPattern q = check_pattern(DType::float32, RedOp::prod, 3);
  EXPECT_EQ(q.base, 1);
  EXPECT_EQ(reduce_inputs(q, RedOp::prod, 3, 0), 1 * 2 * 1); // 1+(0%2), 1+(1%2), 1+(2%2)
}

TEST(Conversions, HalfAndBf16HoldSmallIntegersExactly) {
  for (int v = 0; v <= 2048; ++v)
    EXPECT_EQ(half_bits_to_float(float_to_half_bits(static_cast<float>(v))), v);
  for (int v = 0; v <= 256; ++v)
    EXPECT_EQ(bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(v))), v);
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(1e6f), 0x7c00); // overflow to inf
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(half_bits_to_float(0x0001), std::ldexp(1.0f, -24));
}

TEST(FillAndLoad, RoundTripEveryType) {
  for (DType t : {DType::int8, DType::uint8, DType::int32, DType::uint32, DType::int64,
                  DType::uint64, DType::half, DType::bfloat16, DType::float32, DType::float64}) {
    const CheckPattern p = check_pattern(t, RedOp::sum, 2);
    std::vector<unsigned char> buf(37 * dtype_size(t));
    fill_inputs(t, buf.data(), 37, p, 5, 3);
    for (std::size_t i = 0; i < 37; ++i)
      ASSERT_EQ(load_value(t, buf.data(), i), p.input(5, 3 + i)) << dtype_name(t) << " " << i;
  }
}

namespace {

/// Reference semantics of each collective on host arrays: sends[r] is rank r's send buffer;
/// returns each rank's receive buffer (empty when undefined). Written from the MPI/NCCL
/// definitions, independently of the plug-ins.
std::vector<std::vector<double>> simulate(Op op, const std::vector<std::vector<double>> &sends,
                                          std::size_t c, RedOp r, int root) {
  const int n = static_cast<int>(sends.size());
  auto red = [&](double a, double b) {
    switch (r) {
    case RedOp::sum:
    case RedOp::avg:
      return a + b;
    case RedOp::prod:
      return a * b;
    case RedOp::max:
      return std::max(a, b);
    case RedOp::min:
      return std::min(a, b);
    }
    return a;
  };
  auto reduce_at = [&](std::size_t idx) {
    double acc = sends[0][idx];
    for (int k = 1; k < n; ++k)
      acc = red(acc, sends[static_cast<std::size_t>(k)][idx]);
    return r == RedOp::avg ? acc / n : acc;
  };
  std::vector<std::vector<double>> out(static_cast<std::size_t>(n));
  for (int me = 0; me < n; ++me) {
    auto &o = out[static_cast<std::size_t>(me)];
    switch (op) {
    case Op::allreduce:
      for (std::size_t i = 0; i < c; ++i)
        o.push_back(reduce_at(i));
      break;
    case Op::reduce:
      if (me == root)
        for (std::size_t i = 0; i < c; ++i)
          o.push_back(reduce_at(i));
      break;
    case Op::allgather:
      for (int b = 0; b < n; ++b)
        for (std::size_t i = 0; i < c; ++i)
          o.push_back(sends[static_cast<std::size_t>(b)][i]);
      break;
    case Op::reducescatter:
      for (std::size_t i = 0; i < c; ++i)
        o.push_back(reduce_at(static_cast<std::size_t>(me) * c + i));
      break;
    case Op::broadcast:
      o = sends[static_cast<std::size_t>(root)];
      break;
    case Op::alltoall:
    case Op::alltoallv: // CollArgs' default matrix, uniform: alltoall's traffic
      for (int b = 0; b < n; ++b)
        for (std::size_t i = 0; i < c; ++i)
          o.push_back(sends[static_cast<std::size_t>(b)][static_cast<std::size_t>(me) * c + i]);
      break;
    case Op::sendrecv:
      o = sends[static_cast<std::size_t>((me + n - 1) % n)];
      break;
    }
  }
  return out;
}

} // namespace

TEST(Collectives, ExpectedMatchesAReferenceSimulation) {
  for (const Collective &coll : all_collectives())
    for (int n : {1, 2, 3, 4})
      for (RedOp r : {RedOp::sum, RedOp::prod, RedOp::max, RedOp::min})
        for (std::size_t c : {1u, 5u, 9u}) {
          const int root = n - 1;
          const CheckPattern p = check_pattern(DType::float32, r, n);
          std::vector<std::vector<double>> sends;
          for (int k = 0; k < n; ++k) {
            std::vector<double> s;
            for (std::size_t i = 0; i < coll.send_count(c, n); ++i)
              s.push_back(p.input(k, i));
            sends.push_back(s);
          }
          const auto want = simulate(coll.op, sends, c, r, root);
          for (int me = 0; me < n; ++me) {
            CollArgs a{c, DType::float32, r, root, me, n};
            const auto &w = want[static_cast<std::size_t>(me)];
            ASSERT_EQ(coll.has_result(a), !w.empty()) << op_name(coll.op);
            if (w.empty())
              continue;
            ASSERT_EQ(w.size(), coll.recv_count(c, n)) << op_name(coll.op);
            for (std::size_t j = 0; j < w.size(); ++j)
              ASSERT_EQ(coll.expected(p, a, j / c, j % c), w[j])
                  << op_name(coll.op) << " n=" << n << " rank " << me << " j=" << j;
          }
        }
}

TEST(Collectives, EveryOpHasAPlugIn) {
  for (Op op : all_ops())
    EXPECT_EQ(collective(op).op, op);
  EXPECT_EQ(all_collectives().size(), all_ops().size());
}

// Issue 15's CPU-testable logic of the GPU path: which (backend, op, placement) combinations run
// (in-place AllToAll and SendRecv are N/A on nccl, as nccl-tests), how the table and the context
// record say so, NCCL's truncating integer avg in the -c expectation, the one-rank-per-GPU
// refusal, and what --help says -n means next to nccl-tests' -n.
#include "scalefit/bench/collective.hpp"
#include "scalefit/bench/guard.hpp"
#include "scalefit/bench/options.hpp"
#include "scalefit/bench/output.hpp"
#include "scalefit/bench/table.hpp"
#include "scalefit/bench/verify.hpp"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstring>

using namespace scalefit;
using namespace scalefit::bench;

TEST(NotRun, OnlyInPlaceAlltoallAndSendrecvOnNccl) {
  for (Op op : all_ops())
    for (Placement p : {Placement::out_of_place, Placement::in_place}) {
      // mpi runs everything (MPI_IN_PLACE, MPI_Sendrecv_replace) but in-place alltoallv, which
      // neither backend runs.
      const bool a2av = p == Placement::in_place && op == Op::alltoallv;
      EXPECT_EQ(not_run_reason("mpi", op, p).empty(), !a2av) << op_name(op);
      const bool na = p == Placement::in_place &&
                      (op == Op::alltoall || op == Op::alltoallv || op == Op::sendrecv);
      EXPECT_EQ(not_run_reason("nccl", op, p).empty(), !na)
          << op_name(op) << " " << placement_name(p);
    }
  EXPECT_NE(not_run_reason("nccl", Op::alltoall, Placement::in_place).find("ncclAlltoAll"),
            std::string::npos);
  EXPECT_NE(not_run_reason("nccl", Op::sendrecv, Placement::in_place).find("ncclSend/ncclRecv"),
            std::string::npos);
  EXPECT_NE(not_run_reason("nccl", Op::sendrecv, Placement::in_place).find("undefined"),
            std::string::npos);
}

TEST(NotRun, ContextRecordNamesOpPlacementAndWhy) {
  const std::vector<Op> ops = all_ops();
  const std::vector<Placement> both = {Placement::out_of_place, Placement::in_place};
  const nlohmann::json j = not_run_entries("nccl", ops, both);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 3u) << j.dump();
  EXPECT_EQ(j[0]["op"], "alltoall");
  EXPECT_EQ(j[0]["placement"], "in-place");
  EXPECT_EQ(j[0]["why"], not_run_reason("nccl", Op::alltoall, Placement::in_place));
  EXPECT_EQ(j[1]["op"], "alltoallv");
  EXPECT_EQ(j[2]["op"], "sendrecv");
  EXPECT_EQ(j[2]["placement"], "in-place");
  const nlohmann::json m = not_run_entries("mpi", ops, both);
  ASSERT_EQ(m.size(), 1u) << m.dump();
  EXPECT_EQ(m[0]["op"], "alltoallv");
  EXPECT_TRUE(not_run_entries("nccl", ops, {Placement::out_of_place}).empty());
  EXPECT_TRUE(not_run_entries("nccl", {Op::allreduce}, both).empty());
}

TEST(NotRun, TableSaysNAInColumnsOfTheSameWidth) {
  const std::string header = table_header("t");
  const std::string pre = row_preamble(8, 2, "float", "none", -1);
  const std::string out = row_body(5.0, 1.0, 1.0, 0), na = row_not_run();
  EXPECT_EQ(na, "      N/A     N/A     N/A     N/A");
  EXPECT_EQ(na.size(), out.size());
  EXPECT_EQ(na.size(), row_absent().size());
  const std::string names = header.substr(header.find("#       size"));
  EXPECT_EQ(names.rfind("#wrong") + 6, pre.size() + out.size() + na.size()); // in-place #wrong
  EXPECT_EQ(not_run_note("in-place", "why not"), "# in-place: N/A: why not\n");
}

TEST(IntegerAvg, ExpectedIsTruncatedSumOverRanksAsNccl) {
  // 3 ranks, period 8: index 6 sums 6 + 7 + 0 = 13 -> 13 / 3 = 4 (4.33 in floats).
  for (DType t : {DType::int8, DType::uint8, DType::int32, DType::uint32, DType::int64,
                  DType::uint64}) {
    ASSERT_TRUE(is_integer_type(t));
    const CheckPattern p = check_pattern(t, RedOp::avg, 3);
    ASSERT_EQ(p.period, 8) << dtype_name(t);
    for (int i = 0; i < p.period; ++i) {
      long long sum = 0;
      for (int r = 0; r < 3; ++r)
        sum += static_cast<long long>(p.input(r, static_cast<std::size_t>(i)));
      EXPECT_EQ(p.reduced[static_cast<std::size_t>(i)], static_cast<double>(sum / 3))
          << dtype_name(t) << " i=" << i;
    }
    EXPECT_EQ(p.reduced[6], 4.0) << dtype_name(t);
  }
  for (DType t : {DType::float32, DType::float64, DType::half, DType::bfloat16})
    EXPECT_FALSE(is_integer_type(t)) << dtype_name(t);
  EXPECT_DOUBLE_EQ(check_pattern(DType::float32, RedOp::avg, 3).reduced[6], 13.0 / 3);
  // 4 ranks: index 5 sums 5 + 6 + 7 + 0 = 18 -> 4 (4.5).
  EXPECT_EQ(check_pattern(DType::int32, RedOp::avg, 4).reduced[5], 4.0);
}

namespace {

/// Rank 0 of `n` ranks whose AllReduce(avg) computes what NCCL does on integers: the sum of
/// every rank's inputs (the check pattern's) divided by n in integer arithmetic; on floats the
/// exact mean. `rounded` rounds the integer mean to nearest instead (not NCCL's result).
class AvgComm final : public Comm {
public:
  AvgComm(int n, bool rounded) : m_n(n), m_rounded(rounded) {}
  int rank() const override { return 0; }
  int size() const override { return m_n; }
  void allreduce(const void *, void *r, std::size_t c, DType t, RedOp op) override {
    const CheckPattern p = check_pattern(t, op, m_n);
    for (std::size_t i = 0; i < c; ++i) {
      long long sum = 0;
      for (int k = 0; k < m_n; ++k)
        sum += static_cast<long long>(p.input(k, i));
      const double v = !is_integer_type(t) ? static_cast<double>(sum) / m_n
                       : m_rounded         ? std::round(static_cast<double>(sum) / m_n)
                                           : static_cast<double>(sum / m_n);
      store_value(t, r, i, v);
    }
  }
  void allgather(const void *, void *, std::size_t, DType) override {}
  void reducescatter(const void *, void *, std::size_t, DType, RedOp) override {}
  void reduce(const void *, void *, std::size_t, DType, RedOp, int) override {}
  void broadcast(const void *, void *, std::size_t, DType, int) override {}
  void alltoall(const void *, void *, std::size_t, DType) override {}
  void sendrecv(const void *, void *, std::size_t, DType, int, int) override {}
  void alltoallv(const void *, void *, const AlltoallvLayout &, DType) override {}
  double time_batch_us(int, const std::function<void()> &, std::uint64_t) override { return 0; }
  void synchronize() override {}
  void copy_in(void *d, const void *s, std::size_t b) override { std::memcpy(d, s, b); }
  void copy_out(void *d, const void *s, std::size_t b) override { std::memcpy(d, s, b); }

private:
  int m_n;
  bool m_rounded;
};

std::int64_t check_avg(DType t, bool rounded) {
  auto backend = make_mpi_backend(); // host memory only; no MPI call is made
  AvgComm comm(3, rounded);
  const CollArgs a{16, t, RedOp::avg, -1, 0, 3};
  Buffers b(*backend, 16 * dtype_size(t), 16 * dtype_size(t));
  return check_point(*backend, comm, collective(Op::allreduce), b, a, Placement::out_of_place);
}

} // namespace

TEST(IntegerAvg, CheckAcceptsNcclsTruncationAndOnlyIt) {
  // 16 elements on 3 ranks: sums 3, 6, 9, 12, 15, 18, 13, 8 (period 8), twice. NCCL's
  // trunc(sum / 3) is right everywhere (against the exact mean, 13/3 and 8/3 were 4 "wrong" of
  // 16); rounding to nearest differs from it at 8/3 = 2.67 (3, not 2): 2 elements.
  for (DType t : {DType::int8, DType::uint8, DType::int32, DType::uint32, DType::int64,
                  DType::uint64}) {
    EXPECT_EQ(check_avg(t, false), 0) << dtype_name(t);
    EXPECT_EQ(check_avg(t, true), 2) << dtype_name(t);
  }
  EXPECT_EQ(check_avg(DType::float32, false), 0); // floats: the mean, within the tolerance
}

TEST(SharedGpu, RefusesTwoRanksOfANodeOnOneGpu) {
  // One node, 4 ranks, 2 GPUs: ranks 0 and 2 pick the same GPU (local_rank % 2).
  const std::vector<std::string> hosts = {"n1", "n1", "n1", "n1"};
  const std::string why = shared_gpu_refusal(hosts, {"0000:1B:00.0", "0000:43:00.0",
                                                     "0000:1B:00.0", "0000:43:00.0"});
  EXPECT_NE(why.find("more ranks than GPUs on node n1: 4 ranks share 2 GPUs"), std::string::npos)
      << why;
  EXPECT_NE(why.find("ranks 0 and 2 would both use GPU 0000:1B:00.0"), std::string::npos) << why;
  EXPECT_NE(why.find("at most 2 ranks per node"), std::string::npos) << why;
  EXPECT_NE(why.find("--ntasks-per-node=2"), std::string::npos) << why;
  // One GPU per rank, also when each rank sees only its own (per-rank CUDA_VISIBLE_DEVICES:
  // every rank's device 0, different GPUs) and when two nodes use the same bus ids.
  EXPECT_EQ(shared_gpu_refusal(hosts, {"A", "B", "C", "D"}), "");
  EXPECT_EQ(shared_gpu_refusal({"n1", "n1", "n2", "n2"}, {"A", "B", "A", "B"}), "");
  EXPECT_NE(shared_gpu_refusal({"n1", "n1", "n2", "n2"}, {"A", "B", "A", "A"})
                .find("node n2: 2 ranks share 1 GPU (ranks 2 and 3"),
            std::string::npos);
  EXPECT_EQ(shared_gpu_refusal(hosts, {"", "", "", ""}), ""); // unknown: not judged
  EXPECT_EQ(shared_gpu_refusal({"n1"}, {"A"}), "");
}

TEST(Help, SaysWhatMinusNMeansHereAndInNcclTests) {
  CLI::App app{"comm"};
  RawCommArgs raw;
  add_comm_options(app, raw);
  std::string help; // whitespace runs collapsed: CLI11 may wrap the descriptions
  for (char c : app.help())
    if (!std::isspace(static_cast<unsigned char>(c)) || (!help.empty() && help.back() != ' '))
      help += std::isspace(static_cast<unsigned char>(c)) ? ' ' : c;
  EXPECT_NE(help.find("Timed samples per point"), std::string::npos) << help;
  EXPECT_NE(help.find("Not nccl-tests' -n"), std::string::npos) << help;
  EXPECT_NE(help.find("what nccl-tests' -n counts"), std::string::npos) << help;
}

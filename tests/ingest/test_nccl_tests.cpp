// Tests of the nccl-tests reader on every real log in tests/data/nccl-tests/ (copied from
// /work/shared/data, first line = provenance) and on synthetic snippets of the current format,
// a cut-off run and noisy rows. Expected values are read off the files by eye.
#include "scalefit/ingest/ingest.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/records.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>

using namespace scalefit;
using namespace scalefit::ingest;

namespace {

std::string data(const std::string &name) {
  return std::string(SCALEFIT_TEST_DATA_DIR) + "/nccl-tests/" + name;
}

const MeasurementRecord *find(const IngestResult &r, std::uint64_t bytes, Placement p,
                              std::optional<Op> op = std::nullopt) {
  for (const auto &m : r.measurements)
    if (m.bytes == bytes && m.placement == p && (!op || m.op == *op))
      return &m;
  return nullptr;
}

bool any_contains(const std::vector<std::string> &v, const std::string &a,
                  const std::string &b = "") {
  return std::any_of(v.begin(), v.end(), [&](const std::string &s) {
    return s.find(a) != std::string::npos && (b.empty() || s.find(b) != std::string::npos);
  });
}

// One row of each shared log: the largest size, both placements, as printed in the file.
struct LogCase {
  const char *file;
  std::optional<int> nnodes_opt; // --nnodes where the log names no hosts
  std::size_t records;
  Op op;
  int nranks;
  int nnodes;
  std::uint64_t bytes;
  double oop_time_us, oop_algbw, oop_busbw;
  double ip_time_us, ip_busbw;
  std::optional<std::int64_t> oop_wrong;
};

// Readable test names in ctest instead of the struct's bytes.
void PrintTo(const LogCase &c, std::ostream *os) {
  *os << c.file;
}

class SharedLogs : public ::testing::TestWithParam<LogCase> {};

TEST_P(SharedLogs, RowCountsOpRanksAndLargestRow) {
  const LogCase &c = GetParam();
  IngestOptions opt;
  opt.nnodes = c.nnodes_opt;
  const IngestResult r = read_nccl_tests(data(c.file), opt);
  EXPECT_TRUE(r.warnings.empty()) << (r.warnings.empty() ? "" : r.warnings.front());
  ASSERT_EQ(r.measurements.size(), c.records);
  EXPECT_EQ(r.context.backend, "nccl-tests");
  EXPECT_EQ(r.context.nranks, c.nranks);
  EXPECT_EQ(r.context.nnodes, c.nnodes);
  EXPECT_EQ(r.context.ranks_per_node, c.nranks / c.nnodes);
  for (const auto &m : r.measurements) {
    EXPECT_EQ(m.op, c.op);
    EXPECT_EQ(m.group.nranks, c.nranks);
    EXPECT_EQ(m.group.nnodes, c.nnodes);
    EXPECT_EQ(m.dtype, DType::float32);
    // nccl-tests' count column: elements per rank.
    EXPECT_EQ(m.count, count_per_rank(m.op, m.bytes, 4, m.group.nranks));
    EXPECT_GT(m.time_us, 0);
  }
  const auto *oop = find(r, c.bytes, Placement::out_of_place);
  const auto *ip = find(r, c.bytes, Placement::in_place);
  ASSERT_NE(oop, nullptr);
  ASSERT_NE(ip, nullptr);
  EXPECT_DOUBLE_EQ(oop->time_us, c.oop_time_us);
  EXPECT_DOUBLE_EQ(oop->algbw_gbps, c.oop_algbw);
  EXPECT_DOUBLE_EQ(oop->busbw_gbps, c.oop_busbw);
  EXPECT_DOUBLE_EQ(ip->time_us, c.ip_time_us);
  EXPECT_DOUBLE_EQ(ip->busbw_gbps, c.ip_busbw);
  EXPECT_EQ(oop->wrong, c.oop_wrong);
  // Provenance: the file's first line.
  std::ifstream in(data(c.file));
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(r.context.source.at("first_comment_line").get<std::string>(), first);
  EXPECT_EQ(r.context.source.at("file").get<std::string>(), c.file);
}

constexpr std::uint64_t k8G = 8589934592ull, k1G = 1073741824ull, k16G = 17179869184ull;

INSTANTIATE_TEST_SUITE_P(
    NcclTests, SharedLogs,
    ::testing::Values(LogCase{"a100-sxm4-40gb_8gpu_nvswitch_singlenode_allreduce.txt",
                              {},
                              64,
                              Op::allreduce,
                              8,
                              1,
                              k8G,
                              63896,
                              134.44,
                              235.26,
                              63959,
                              235.03,
                              {}},
                      LogCase{"a100-sxm4-40gb_8gpu_nvswitch_singlenode_allgather.txt",
                              {},
                              58,
                              Op::allgather,
                              8,
                              1,
                              k8G,
                              33646,
                              255.31,
                              223.39,
                              32669,
                              230.07,
                              {}},
                      LogCase{"a100-sxm4-40gb_8gpu_nvswitch_singlenode_alltoall.txt",
                              {},
                              58,
                              Op::alltoall,
                              8,
                              1,
                              k8G,
                              33508,
                              256.36,
                              224.31,
                              33234,
                              226.16,
                              {}},
                      LogCase{"a100-sxm4-40gb_8gpu_nvswitch_singlenode_broadcast.txt",
                              {},
                              64,
                              Op::broadcast,
                              8,
                              1,
                              k8G,
                              36896,
                              232.81,
                              232.81,
                              36599,
                              234.70,
                              {}},
                      LogCase{"a100-sxm4-40gb_8gpu_nvswitch_singlenode_reduce.txt",
                              {},
                              64,
                              Op::reduce,
                              8,
                              1,
                              k8G,
                              37613,
                              228.38,
                              228.38,
                              37539,
                              228.83,
                              {}},
                      LogCase{"a100-sxm4-40gb_8gpu_nvswitch_singlenode_reducescatter.txt",
                              {},
                              58,
                              Op::reducescatter,
                              8,
                              1,
                              k8G,
                              32464,
                              264.60,
                              231.52,
                              32502,
                              231.25,
                              {}},
                      LogCase{"h100-hgx-xe9680_ib-8x400G_2node_16gpu_allreduce.txt", 2, 64,
                              Op::allreduce, 16, 2, k16G, 68652, 250.24, 469.21, 68668, 469.10, 0},
                      LogCase{"h100-hgx-xe9680_ib-8x400G_4node_32gpu_allreduce.txt", 4, 64,
                              Op::allreduce, 32, 4, k16G, 90986, 188.82, 365.84, 91081, 365.46, 0},
                      LogCase{"rtx2080ti_2gpu_pcie_noP2P_allreduce.txt",
                              {},
                              56,
                              Op::allreduce,
                              2,
                              1,
                              k1G,
                              268588,
                              4.00,
                              4.00,
                              268461,
                              4.00,
                              0},
                      LogCase{"rtx2080ti_2gpu_pcie_noP2P_allgather.txt",
                              {},
                              52,
                              Op::allgather,
                              2,
                              1,
                              k1G,
                              141614,
                              7.58,
                              3.79,
                              139719,
                              3.84,
                              0},
                      LogCase{"rtx2080ti_2gpu_pcie_noP2P_alltoall.txt",
                              {},
                              52,
                              Op::alltoall,
                              2,
                              1,
                              k1G,
                              116573,
                              9.21,
                              4.61,
                              113591,
                              4.73,
                              0},
                      LogCase{"rtx2080ti_2gpu_pcie_noP2P_broadcast.txt",
                              {},
                              56,
                              Op::broadcast,
                              2,
                              1,
                              k1G,
                              96800,
                              11.09,
                              11.09,
                              96803,
                              11.09,
                              0},
                      LogCase{"rtx2080ti_2gpu_pcie_noP2P_reduce.txt",
                              {},
                              56,
                              Op::reduce,
                              2,
                              1,
                              k1G,
                              96427,
                              11.14,
                              11.14,
                              96450,
                              11.13,
                              0},
                      LogCase{"rtx2080ti_2gpu_pcie_noP2P_reduce_1gpu_edgecase.txt",
                              {},
                              56,
                              Op::reduce,
                              1,
                              1,
                              k1G,
                              4016.0,
                              267.37,
                              267.37,
                              0.19,
                              5706839.35,
                              0}),
    [](const auto &info) {
      std::string n = info.param.file;
      n = n.substr(0, n.find('.'));
      for (char &ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch)))
          ch = '_';
      return n;
    });

TEST(NcclTestsA100, AllReduceDetails) {
  const auto r = read_nccl_tests(data("a100-sxm4-40gb_8gpu_nvswitch_singlenode_allreduce.txt"));
  EXPECT_EQ(r.context.source.at("format"), "pre-2.13");
  EXPECT_EQ(r.context.source.at("tables")[0].at("nranks_from"), "rank lines");
  EXPECT_EQ(r.context.hosts, std::vector<std::string>{"localhost"});
  ASSERT_EQ(r.context.devices.size(), 8u);
  EXPECT_EQ(r.context.devices[7], "A100-SXM4-40GB");
  // The two size-0 rows (lines 18, 19) are notes, not records; the NCCL INFO line is ignored.
  EXPECT_TRUE(any_contains(r.notes, ".txt:18: size 0"));
  EXPECT_TRUE(any_contains(r.notes, ".txt:19: size 0"));
  EXPECT_EQ(find(r, 0, Placement::out_of_place), nullptr);
  // First measured row (line 20): size 4, count 1.
  const auto *first = find(r, 4, Placement::in_place);
  ASSERT_NE(first, nullptr);
  EXPECT_DOUBLE_EQ(first->time_us, 35.30);
  EXPECT_EQ(first->count, 1u);
  EXPECT_EQ(first->root, -1);
  EXPECT_EQ(first->redop, RedOp::sum);
  EXPECT_FALSE(first->wrong.has_value()); // "N/A": -c 0
  EXPECT_EQ(first->extra.at("source_line"), 20);
  // The 8 GiB row: 8589934592 B, 2147483648 float, out-of-place 63896 us.
  const auto *big = find(r, k8G, Placement::out_of_place);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->count, 2147483648ull);
  EXPECT_NEAR(big->busbw_gbps / big->algbw_gbps, busbw_factor(Op::allreduce, 8), 1e-3);
}

TEST(NcclTestsA100, RootedOpsKeepTheirRoot) {
  const auto b = read_nccl_tests(data("a100-sxm4-40gb_8gpu_nvswitch_singlenode_broadcast.txt"));
  const auto *m = find(b, 1024, Placement::out_of_place);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->root, 0);
  EXPECT_DOUBLE_EQ(m->time_us, 34.87);
}

TEST(NcclTestsA100, AllGatherAllToAllTieIsBrokenByFileNameOrOp) {
  const std::string f = data("a100-sxm4-40gb_8gpu_nvswitch_singlenode_allgather.txt");
  const auto by_name = read_nccl_tests(f);
  EXPECT_TRUE(any_contains(by_name.notes, "operation allgather taken from the file name"));
  IngestOptions opt;
  opt.op = Op::allgather;
  const auto by_opt = read_nccl_tests(f, opt);
  EXPECT_FALSE(any_contains(by_opt.notes, "operation allgather taken from the file name"));
  EXPECT_EQ(by_opt.measurements.front().op, Op::allgather);
  // --op contradicting the columns (allgather has no redop) is a warning.
  opt.op = Op::allreduce;
  const auto wrong = read_nccl_tests(f, opt);
  EXPECT_TRUE(any_contains(wrong.warnings, "--op allreduce"));

  // Under a neutral name the table alone cannot tell allgather from alltoall.
  const auto tmp = std::filesystem::path(::testing::TempDir()) / "ingest_neutral_name.txt";
  std::filesystem::copy_file(f, tmp, std::filesystem::copy_options::overwrite_existing);
  try {
    read_nccl_tests(tmp.string());
    FAIL() << "expected InputError";
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "op");
    EXPECT_EQ(e.line(), 15); // the header line
    EXPECT_NE(e.message().find("--op"), std::string::npos);
  }
  opt.op = Op::alltoall;
  EXPECT_EQ(read_nccl_tests(tmp.string(), opt).measurements.front().op, Op::alltoall);
  // The count column gives nranks exactly for the divided ops.
  const auto a2a = read_nccl_tests(tmp.string(), opt);
  EXPECT_EQ(a2a.context.nranks, 8);
  std::filesystem::remove(tmp);
}

TEST(NcclTestsH100, RanksFromBusbwNodesFromOption) {
  const std::string f = data("h100-hgx-xe9680_ib-8x400G_2node_16gpu_allreduce.txt");
  const auto r = read_nccl_tests(f);
  EXPECT_EQ(r.context.nranks, 16);
  EXPECT_EQ(r.context.nnodes, 1);
  EXPECT_TRUE(any_contains(r.notes, "assuming 1 node"));
  EXPECT_EQ(r.context.source.at("tables")[0].at("nranks_from"), "busbw/algbw");
  EXPECT_EQ(r.context.versions.at("nccl"), "2.26.2+cuda12.8");
  EXPECT_EQ(r.context.source.at("format"), "2.13-2.17");

  IngestOptions opt;
  opt.nnodes = 2;
  opt.system = "xe9680";
  opt.nranks = 8; // contradicts the log: ignored with a warning
  const auto r2 = read_nccl_tests(f, opt);
  EXPECT_EQ(r2.context.system, "xe9680");
  EXPECT_EQ(r2.context.nranks, 16);
  EXPECT_EQ(r2.measurements.front().group.ranks_per_node, 8);
  EXPECT_TRUE(any_contains(r2.warnings, "--nranks 8 ignored"));
  // First row, in-place (line 8).
  const auto *m = find(r2, 8, Placement::in_place);
  ASSERT_NE(m, nullptr);
  EXPECT_DOUBLE_EQ(m->time_us, 24.70);
}

TEST(NcclTestsRtx, CommandLineRankLinesAndNA) {
  const auto r = read_nccl_tests(data("rtx2080ti_2gpu_pcie_noP2P_alltoall.txt"));
  EXPECT_EQ(r.context.command_line, "./build/alltoall_perf -b 8 -e 1024M -f 2 -g 2");
  EXPECT_EQ(r.context.hosts, std::vector<std::string>{"autodl-container-xxxxx"});
  ASSERT_EQ(r.context.devices.size(), 2u);
  EXPECT_EQ(r.context.devices[1], "NVIDIA GeForce RTX 2080 Ti");
  const auto *ip = find(r, k1G, Placement::in_place);
  ASSERT_NE(ip, nullptr);
  EXPECT_FALSE(ip->wrong.has_value()); // "N/A" in the in-place #wrong column
  EXPECT_TRUE(any_contains(r.notes, ".txt:12: size 0"));
}

TEST(NcclTestsRtx, OneGpuEdgeCaseOverflowingColumns) {
  const auto r = read_nccl_tests(data("rtx2080ti_2gpu_pcie_noP2P_reduce_1gpu_edgecase.txt"));
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(r.context.nranks, 1);
  const auto *ip = find(r, 536870912, Placement::in_place);
  ASSERT_NE(ip, nullptr);
  EXPECT_DOUBLE_EQ(ip->algbw_gbps, 2821923.32);
  EXPECT_DOUBLE_EQ(ip->time_us, 0.19);
}

TEST(NcclTestsSynthetic, CurrentFormatTwoTestsInOneLog) {
  const auto r = read_nccl_tests(data("synthetic_current_two_tests.txt"));
  EXPECT_TRUE(r.warnings.empty()) << (r.warnings.empty() ? "" : r.warnings.front());
  ASSERT_EQ(r.measurements.size(), 22u); // 7 allreduce rows + 4 allgather rows, x2
  const auto n_ar = std::count_if(r.measurements.begin(), r.measurements.end(),
                                  [](const auto &m) { return m.op == Op::allreduce; });
  EXPECT_EQ(n_ar, 14);
  EXPECT_EQ(r.context.nranks, 4);
  EXPECT_EQ(r.context.nnodes, 2);
  EXPECT_EQ(r.context.hosts, (std::vector<std::string>{"node-a", "node-b"}));
  EXPECT_EQ(r.context.versions.at("nccl-tests"), "2.18.3");
  EXPECT_EQ(r.context.versions.at("nccl"), "2.28.7");
  EXPECT_EQ(r.context.env.at("NCCL_IB_HCA"), "mlx5_0");
  EXPECT_EQ(r.context.command_line.rfind("mpirun -np 4", 0), 0u);
  EXPECT_EQ(r.context.source.at("format"), "current");
  const auto *ag = find(r, 4194304, Placement::in_place, Op::allgather);
  ASSERT_NE(ag, nullptr);
  EXPECT_DOUBLE_EQ(ag->time_us, 340.00);
  EXPECT_DOUBLE_EQ(ag->busbw_gbps, 9.25);
  EXPECT_EQ(ag->count, 4194304u / (4 * 4)); // the count column: per rank, 4 ranks
  EXPECT_EQ(ag->group.ranks_per_node, 2);
  const auto *ar = find(r, 65536, Placement::out_of_place, Op::allreduce);
  ASSERT_NE(ar, nullptr);
  EXPECT_DOUBLE_EQ(ar->time_us, 30.00);
  EXPECT_EQ(ar->wrong, 0);
}

TEST(NcclTestsSynthetic, CurrentFormatWithPerIterationColumns) {
  const auto r = read_nccl_tests(data("synthetic_current_iflag_alltoall.txt"));
  EXPECT_TRUE(r.warnings.empty()) << (r.warnings.empty() ? "" : r.warnings.front());
  ASSERT_EQ(r.measurements.size(), 6u);
  EXPECT_EQ(r.context.nranks, 8);
  const auto *m = find(r, 16777216, Placement::out_of_place);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->op, Op::alltoall);
  EXPECT_EQ(m->dtype, DType::half);
  EXPECT_EQ(m->count, 16777216u / (2 * 8)); // the count column: per rank, 8 ranks
  EXPECT_DOUBLE_EQ(m->time_us, 300.00);
  EXPECT_EQ(m->wrong, 3);
  EXPECT_DOUBLE_EQ(m->extra.at("i_min_us").get<double>(), 270.00);
  EXPECT_DOUBLE_EQ(m->extra.at("i_max_us").get<double>(), 390.00);
  EXPECT_DOUBLE_EQ(m->extra.at("i_p99_us").get<double>(), 375.00);
  EXPECT_DOUBLE_EQ(m->extra.at("i_cv_pct").get<double>(), 2.50);
  const auto *ip = find(r, 16777216, Placement::in_place);
  ASSERT_NE(ip, nullptr);
  EXPECT_DOUBLE_EQ(ip->time_us, 305.00);
  EXPECT_DOUBLE_EQ(ip->extra.at("i_p99_us").get<double>(), 381.25);
}

TEST(NcclTestsSynthetic, CutOffRunKeepsMeasuredRowsAndWarns) {
  const std::string f = data("synthetic_cutoff_allreduce.txt");
  const auto r = read_nccl_tests(f);
  ASSERT_EQ(r.measurements.size(), 6u); // three complete rows
  EXPECT_EQ(r.context.nranks, 4);
  EXPECT_EQ(r.context.nnodes, 2);
  EXPECT_EQ(r.context.command_line.rfind("srun -N 2", 0), 0u);
  EXPECT_EQ(r.measurements.front().op, Op::allreduce); // from all_reduce_perf_mpi
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_TRUE(any_contains(r.warnings, f + ":16:", "cut off"));
  EXPECT_TRUE(any_contains(r.warnings, f + ":17:", "cannot read row"));
  EXPECT_EQ(find(r, 8388608, Placement::out_of_place), nullptr); // the cut row is not invented
  IngestOptions strict;
  strict.strict = true;
  try {
    read_nccl_tests(f, strict);
    FAIL() << "expected InputError";
  } catch (const InputError &e) {
    EXPECT_EQ(e.file(), f);
    EXPECT_EQ(e.line(), 17);
  }
}

TEST(NcclTestsSynthetic, GarbageRowsAreReportedWithFileAndLine) {
  const std::string f = data("synthetic_garbage_rows_reduce_scatter.txt");
  const auto r = read_nccl_tests(f);
  EXPECT_EQ(r.measurements.front().op, Op::reducescatter);
  EXPECT_EQ(r.context.nranks, 4);
  // Line 14: busbw '#!@%%' -> out-of-place point dropped, in-place kept.
  EXPECT_TRUE(any_contains(r.warnings, f + ":14: field 'out-of-place busbw'"));
  EXPECT_EQ(find(r, 262144, Placement::out_of_place), nullptr);
  ASSERT_NE(find(r, 262144, Placement::in_place), nullptr);
  // Line 15: a row overwritten by a log line.
  EXPECT_TRUE(any_contains(r.warnings, f + ":15:", "cannot read row"));
  EXPECT_EQ(find(r, 1048576, Placement::out_of_place), nullptr);
  // Line 16: a row behind an NCCL INFO prefix is recovered, with a warning.
  EXPECT_TRUE(any_contains(r.warnings, f + ":16:", "mixed with other output"));
  const auto *rec = find(r, 4194304, Placement::out_of_place);
  ASSERT_NE(rec, nullptr);
  EXPECT_DOUBLE_EQ(rec->time_us, 300.0);
  // Line 17: '13.9813.98' split into algbw and busbw.
  EXPECT_TRUE(any_contains(r.warnings, f + ":17:", "glued"));
  const auto *glued = find(r, 16777216, Placement::in_place);
  ASSERT_NE(glued, nullptr);
  EXPECT_DOUBLE_EQ(glued->algbw_gbps, 13.98);
  EXPECT_DOUBLE_EQ(glued->busbw_gbps, 13.98);
  EXPECT_EQ(glued->wrong, 0);
  EXPECT_EQ(r.warnings.size(), 4u);
  EXPECT_EQ(r.measurements.size(), 7u);
}

// A count no buffer could hold (#wrong 1e30: found by the fuzzer, whose cast to an integer was
// undefined) and a root beyond any rank are refused with the field named; the row's time stays.
TEST(NcclTestsErrors, OutOfRangeWrongCountAndRootAreRefused) {
  const auto tmp = std::filesystem::path(::testing::TempDir()) / "ingest_wrong_1e30.txt";
  {
    std::ofstream out(tmp);
    out << "# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22803\n"
           "# Collective test starting: reduce_perf\n"
           "#  Rank  0 Group  0 Pid    441 on         vm device  0 [0000:00:06] NVIDIA H100\n"
           "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
           "     time   algbw   busbw  #wrong\n"
           "        4096          1024     float     sum       0     4.83    0.85    0.85    1e30"
           "     0.18   22.64   22.64       0\n"
           "        8192          2048     float     sum 1000000000000  4.83  1.70  1.70       0"
           "     0.18   45.50   45.50       0\n";
  }
  const auto r = read_nccl_tests(tmp.string());
  const std::string f = tmp.string();
  EXPECT_TRUE(any_contains(r.warnings, f + ":5: field 'out-of-place #wrong'"));
  EXPECT_TRUE(any_contains(r.warnings, f + ":6: field 'root'"));
  const auto *rec = find(r, 4096, Placement::out_of_place);
  ASSERT_NE(rec, nullptr);
  EXPECT_FALSE(rec->wrong.has_value()); // not known, rather than a made-up count
  EXPECT_DOUBLE_EQ(rec->time_us, 4.83);
  for (const auto &m : r.measurements)
    if (m.wrong)
      EXPECT_GE(*m.wrong, 0);
  std::filesystem::remove(tmp);
}

TEST(NcclTestsErrors, MissingFileAndNoTable) {
  EXPECT_THROW(read_nccl_tests(data("does_not_exist.txt")), InputError);
  const auto tmp = std::filesystem::path(::testing::TempDir()) / "ingest_no_table.txt";
  {
    std::ofstream out(tmp);
    out << "just a shell transcript\n$ ls\nfoo bar\n";
  }
  EXPECT_THROW(read_nccl_tests(tmp.string()), InputError);
  std::filesystem::remove(tmp);
}

TEST(NcclTestsRecords, RoundTripThroughCoreJsonl) {
  const auto r = read_nccl_tests(data("rtx2080ti_2gpu_pcie_noP2P_allreduce.txt"));
  const auto tmp = std::filesystem::path(::testing::TempDir()) / "ingest_roundtrip.jsonl";
  std::filesystem::remove(tmp);
  {
    JsonlWriter w(tmp.string());
    w.write(to_json(r.context));
    for (const auto &m : r.measurements)
      w.write(to_json(m));
  }
  const RecordSet back = read_records(tmp.string());
  ASSERT_EQ(back.contexts.size(), 1u);
  EXPECT_EQ(back.contexts[0].backend, "nccl-tests");
  ASSERT_EQ(back.measurements.size(), r.measurements.size());
  EXPECT_EQ(back.measurements.back().key(), r.measurements.back().key());
  EXPECT_DOUBLE_EQ(back.measurements.back().time_us, 268461);
  std::filesystem::remove(tmp);
}

} // namespace

namespace {

std::string write_tmp(const std::string &name, const std::string &text) {
  const auto p = std::filesystem::path(::testing::TempDir()) / name;
  std::ofstream(p) << text;
  return p.string();
}

TEST(NcclTestsSynthetic, TimestampAndCputimeColumnsAndDuplicateRanks) {
  // Current format with -C (cputime) and a timestamp column; two processes built without MPI
  // both print "Rank 0" (reported, counted once).
  const std::string f = write_tmp(
      "ingest_timestamp.txt",
      "# nccl-tests version 2.17.6 nccl-headers=22501 nccl-library=22501\n"
      "# Collective test starting: broadcast_perf\n"
      "# Using devices\n"
      "#  Rank  0 Group  0 Pid  10 on h1 device  0 [0000:01:00] NVIDIA H100\n"
      "#  Rank  0 Group  0 Pid  11 on h1 device  0 [0000:01:00] NVIDIA H100\n"
      "#       size         count      type   redop    root  cputime   algbw   busbw  #wrong  "
      "cputime   algbw   busbw  #wrong           timestamp\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
      " (us)  (GB/s)  (GB/s)         %Y-%m-%d %H:%M:%S\n"
      "     1048576        262144     float    none       0    50.00   20.97   20.97       0    "
      "51.00   20.56   20.56       0  2026-11-20 10:00:01\n"
      "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 20.7\n#\n"
      "# Collective test concluded: broadcast_perf\n");
  const auto r = read_nccl_tests(f);
  ASSERT_EQ(r.measurements.size(), 2u);
  const auto &m = r.measurements[1];
  EXPECT_EQ(m.op, Op::broadcast);
  EXPECT_EQ(m.root, 0);
  EXPECT_DOUBLE_EQ(m.time_us, 51.00);
  EXPECT_EQ(m.extra.at("time_kind"), "cputime");
  EXPECT_EQ(m.extra.at("timestamp"), "2026-11-20 10:00:01");
  EXPECT_EQ(r.context.nranks, 1);
  EXPECT_EQ(r.context.versions.at("nccl"), "2.25.1");
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_TRUE(any_contains(r.warnings, f + ":5:", "listed twice"));
  std::filesystem::remove(f);
}

TEST(NcclTestsSynthetic, ReduceWithoutRankLinesNeedsNranks) {
  const std::string body =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "     1048576        262144     float     sum       0    50.00   20.97   20.97      0    "
      "51.00   20.56   20.56      0\n"
      "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 20.7\n";
  const std::string f = write_tmp("ingest_reduce_no_ranks.txt", body);
  const auto r = read_nccl_tests(f);
  EXPECT_EQ(r.measurements.front().op, Op::reduce); // redop + root >= 0
  EXPECT_EQ(r.context.nranks, 1);
  EXPECT_TRUE(any_contains(r.warnings, f + ":1: field 'nranks'", "pass --nranks"));
  IngestOptions opt;
  opt.nranks = 4;
  const auto r4 = read_nccl_tests(f, opt);
  EXPECT_TRUE(r4.warnings.empty());
  EXPECT_EQ(r4.measurements.front().group.nranks, 4);
  EXPECT_EQ(r4.context.source.at("tables")[0].at("nranks_from"), "--nranks");
  std::filesystem::remove(f);
}

} // namespace

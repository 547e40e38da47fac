// nccl-tests logs made for the purpose (tests/data/nccl-tests/synthetic_*, temp files): current-
// format variants, cut-off and garbage rows, out-of-range numbers, errors, the JSONL round trip.
// The real shared logs are read in test_nccl_tests.cpp.
#include "scalefit/ingest/ingest.hpp"

#include "helpers.hpp"

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
using namespace scalefit::ingest::test;

namespace {

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

// alltoallv_perf (nccl-tests 2.19): its columns are alltoall_perf's; size is the largest rank's
// volume under nccl-tests' own matrix (16 B per-peer rounding makes it 48 B short of n * count *
// 4 here), count the per-peer count; in-place #wrong is N/A (no in-place check).
TEST(NcclTestsSynthetic, AlltoallvPerfIsReadAsAlltoallvWithItsCountColumn) {
  const auto r = read_nccl_tests(data("synthetic_current_alltoallv_8gpu.txt"));
  EXPECT_TRUE(r.warnings.empty()) << (r.warnings.empty() ? "" : r.warnings.front());
  ASSERT_EQ(r.measurements.size(), 12u); // 6 rows x 2 placements
  EXPECT_EQ(r.context.nranks, 8);
  for (const auto &m : r.measurements) {
    EXPECT_EQ(m.op, Op::alltoallv);
    EXPECT_EQ(m.method, "nccl-tests"); // nccl-tests' own matrix: a curve of its own
    EXPECT_EQ(m.dtype, DType::float32);
  }
  const auto *m = find(r, 16777168, Placement::out_of_place);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->count, 524288u); // the log's count column, not floor(size / 32) = 524286
  EXPECT_DOUBLE_EQ(m->time_us, 360.20);
  EXPECT_DOUBLE_EQ(m->busbw_gbps, 40.76);
  EXPECT_EQ(m->wrong, 0);
  EXPECT_NEAR(m->busbw_gbps, m->algbw_gbps * busbw_factor(Op::alltoallv, 8), 0.01);
  const auto *ip = find(r, 16777168, Placement::in_place);
  ASSERT_NE(ip, nullptr);
  EXPECT_FALSE(ip->wrong.has_value()); // N/A
  EXPECT_NE(m->key(), find(r, 16777168, Placement::in_place)->key());
  EXPECT_NE(m->key().find("nccl-tests"), std::string::npos) << m->key();
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
  opt.nnodes = 1; // nothing in the log says the nodes either (warned without it)
  const auto r4 = read_nccl_tests(f, opt);
  EXPECT_TRUE(r4.warnings.empty());
  EXPECT_EQ(r4.measurements.front().group.nranks, 4);
  EXPECT_EQ(r4.context.source.at("tables")[0].at("nranks_from"), "--nranks");
  std::filesystem::remove(f);
}

} // namespace

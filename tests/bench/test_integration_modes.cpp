// Integration of the timing modes and the cluster-health findings: --nccl-tests (issue 15), the
// slow node of --groups pairs and the rank that is consistently last (issue 17), on the mpi
// backend with the test-build slow-rank hook (SCALEFIT_TEST_SLOW_RANKS, backend_mpi.cpp).
#include "scalefit/bench/repeat.hpp"
#include "scalefit/core/records.hpp"

#include "integration_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

using namespace scalefit;
using test::Result;
using test::TempDir;
using test::bench::bench_bin;
using test::bench::measure;
using test::bench::run_raw;
namespace fs = std::filesystem;

TEST(Integration, NcclTestsModeTimesBatchesOfTwentyAndSaysSo) {
  TempDir d;
  Result r;
  const RecordSet set =
      measure(2, "--backend mpi --ops allreduce -b 1K -e 4K -f 4 --nccl-tests -n 3", d, &r);
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(set.measurements.size(), 2u);
  for (const auto &m : set.measurements) {
    EXPECT_EQ(m.iters_per_sample, 20) << m.key(); // nccl-tests' -n 20 operations per sample
    EXPECT_EQ(m.samples_us.size(), 3u) << m.key();
  }
  const auto &ctx = set.contexts.at(0).extra;
  EXPECT_EQ(ctx["sampling"]["mode"], "nccl-tests");
  EXPECT_EQ(ctx["sampling"]["batch"], 20);
  EXPECT_EQ(ctx["sampling"]["warmup_iters"], 1);
  EXPECT_EQ(ctx["buffers"]["alloc"], "malloc (host)");
  EXPECT_EQ(ctx["buffers"]["registration"], "none");
  EXPECT_EQ(ctx["statistic"], "mean"); // nccl-tests' average, while the default is the median
}

// Issue 20, Sec. 1: the default sweep rotates through buffers allocated once for the run and
// faulted in before the first point, so no timed sample pays first-touch page faults (before:
// calloc'd buffers per op, 2.5-7x the warm time through the first pass of every point <= 256 KiB).
TEST(Integration, RotatedBuffersAreResidentBeforeTheFirstTimedSample) {
  TempDir d;
  Result r;
  const RecordSet set = measure(
      2, "--backend mpi --ops allreduce,allgather,broadcast -b 8 -e 1M -f 8 --max-time 0.01", d,
      &r);
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(set.measurements.size(), 3u * 6u); // 8 B .. 256 KiB
  std::int64_t total = 0;
  for (const auto &m : set.measurements) {
    ASSERT_TRUE(m.extra.contains("page_faults")) << m.key();
    const auto faults = m.extra["page_faults"].get<std::int64_t>();
    // A first pass through fresh pages of a 64 KiB point rotating over >= 2 x LLC faults
    // thousands of 4 KiB pages; the MPI library's own bookkeeping may fault a few.
    EXPECT_LE(faults, 16) << m.key();
    total += faults;
  }
  EXPECT_LE(total, 64);
}

// Issue 20, Sec. 3: OSU's and IMB's definition on request, named in the header and context.
TEST(Integration, SyncBarrierTimesEachOperationAloneAndSaysSo) {
  TempDir d;
  Result r;
  const RecordSet set =
      measure(2, "--backend mpi --ops broadcast -b 8 -e 64K -f 64 -n 5 --sync barrier", d, &r);
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(set.measurements.size(), 3u);
  EXPECT_EQ(set.contexts.at(0).extra["timer"]["sync"], "barrier");
  EXPECT_NE(r.out.find("sync barrier (each operation timed alone"), std::string::npos) << r.out;
  for (const auto &m : set.measurements)
    EXPECT_GT(m.time_us, 0) << m.key();
  const Result bad = run_raw("-np 1 " + bench_bin() + " comm --backend nccl --sync barrier", d);
  EXPECT_EQ(bad.code, 2);
}

TEST(Integration, PairsFindTheSlowNodeAndNameIt) {
  // 4 emulated nodes of 1 rank; rank 2 (node 2) sleeps 20 ms after every timed operation
  // (SCALEFIT_TEST_SLOW_RANKS: a test-build hook of the mpi backend).
  TempDir d;
  const fs::path out = d.path / "pairs.jsonl";
  // 20 ms: above the time slices a healthy pair loses when CTest runs other MPI tests on the
  // same 2 cores (ranks yield when idle so the spinning ranks do not starve the others).
  const Result r = run_raw("--mca mpi_yield_when_idle 1 -x SCALEFIT_TEST_SLOW_RANKS=2 "
                           "-x SCALEFIT_TEST_SLOW_US=20000 -np 4 " +
                               bench_bin() +
                               " comm --backend mpi --emulate-nodes 4 --groups pairs --ops "
                               "sendrecv -b 64K -e 64K -n 3 --batch 4 --out " +
                               out.string(),
                           d);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# Pairs across nodes: 4 nodes, 3 rounds"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# SLOW node 2 ("), std::string::npos) << r.out;
  for (const char *healthy : {"# SLOW node 0 ", "# SLOW node 1 ", "# SLOW node 3 "})
    EXPECT_EQ(r.out.find(healthy), std::string::npos) << r.out;
  const RecordSet set = read_records(out.string());
  ASSERT_EQ(set.measurements.size(), 6u); // 6 node pairs, one size, SendRecv
  std::set<std::string> pairs;
  double slow_min = 1e300, healthy_max = 0;
  for (const auto &m : set.measurements) {
    EXPECT_EQ(m.group.kind, "pairs");
    EXPECT_EQ(m.group.nranks, 2);
    EXPECT_EQ(m.group.nnodes, 2);
    pairs.insert(m.method);
    const auto nodes = m.extra["pair"]["nodes"];
    const bool with_slow = nodes[0] == 2 || nodes[1] == 2;
    // A 20 ms sleep per operation on the slow side: its pairs take >= 20 ms per op, and longer
    // than any pair without it (on a loaded machine a healthy pair may be slow too, never as slow).
    (with_slow ? slow_min : healthy_max) =
        with_slow ? std::min(slow_min, m.time_us) : std::max(healthy_max, m.time_us);
  }
  EXPECT_GE(slow_min, 20000.0);
  EXPECT_LT(healthy_max, slow_min);
  EXPECT_EQ(pairs.size(), 6u);
  EXPECT_TRUE(pairs.count("pair_n0.g0-n2.g0")) << *pairs.begin();
}

TEST(Integration, TheRankThatIsConsistentlyLastIsNamed) {
  TempDir d;
  const fs::path out = d.path / "last.jsonl";
  const Result r = run_raw("--mca mpi_yield_when_idle 1 -x SCALEFIT_TEST_SLOW_RANKS=2 "
                           "-x SCALEFIT_TEST_SLOW_US=20000 -np 4 " +
                               bench_bin() +
                               " comm --backend mpi --ops allreduce -b 1K -e 64K -f 4 -n 4 "
                               "--batch 2 --out " +
                               out.string(),
                           d);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# slowest rank: rank 2 ("), std::string::npos) << r.out;
  const RecordSet set = read_records(out.string());
  ASSERT_EQ(set.measurements.size(), 4u);
  for (const auto &m : set.measurements) {
    EXPECT_EQ(m.extra["slowest_rank"], 2) << m.key();
    EXPECT_GE(m.extra["slowest_rank_share"].get<double>(), 0.5) << m.key();
  }
}

// --timeout names the ranks that had not arrived (issue 17, section 3): the test-build hook
// SCALEFIT_TEST_HANG_RANK/SCALEFIT_TEST_HANG_POINT makes one rank sleep forever before a point.
namespace {

/// Point names as scalefit-bench prints them (comm_setup.cpp: point_name), for -np 4, world.
std::string allreduce_point(std::uint64_t bytes) {
  return "allreduce " + std::to_string(bytes) + " B float out-of-place world n=4 (1x4)";
}

/// Runs a 4-rank allreduce sweep of 1K, 4K, 16K, 64K with rank `hang_rank` hung before point
/// `hang_point` (1-based) and --timeout 1; `timeout 60` ends it should the watchdog not.
Result run_hung(int hang_rank, int hang_point, const TempDir &d) {
  return run_raw(
      "--mca mpi_yield_when_idle 1 -x SCALEFIT_TEST_HANG_RANK=" + std::to_string(hang_rank) +
          " -x SCALEFIT_TEST_HANG_POINT=" + std::to_string(hang_point) + " -np 4 " + bench_bin() +
          " comm --backend mpi --ops allreduce -b 1K -e 64K -f 4 -n 2 --batch 2 "
          "--timeout 1",
      d);
}

} // namespace

TEST(Integration, TimeoutNamesTheRankThatHadNotArrived) {
  TempDir d;
  const auto start = std::chrono::steady_clock::now();
  const Result r = run_hung(2, 3, d);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(r.code, 0) << r.out << r.err;
  // Point 3 of the sweep is 16 KiB; rank 2 was last seen starting point 2 (4 KiB).
  const std::string expected = "in " + allreduce_point(16384) + " (point 3): rank 2 (";
  EXPECT_NE(r.err.find("scalefit-bench: timeout after 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(") had not arrived (last seen at point 2: " + allreduce_point(4096) + ")"),
            std::string::npos)
      << r.err;
  // Rank 0's line names rank 2 alone.
  const std::size_t at = r.err.find("scalefit-bench: timeout after");
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string line = r.err.substr(at, r.err.find('\n', at) - at);
  for (const char *healthy : {"rank 0 (", "rank 1 (", "rank 3 (", "ranks "})
    EXPECT_EQ(line.find(healthy), std::string::npos) << line;
  EXPECT_LT(took, 30.0);
}

TEST(Integration, TimeoutWithTheCollectorHungSaysSo) {
  TempDir d;
  const Result r = run_hung(0, 2, d);
  EXPECT_NE(r.code, 0) << r.out << r.err;
  // Rank 0 collects the reports; hung, it takes none of point 2, and the other ranks say so.
  EXPECT_NE(r.err.find("in " + allreduce_point(4096) + " (point 2): rank 0 ("), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("has not taken this rank's report of point 2"), std::string::npos) << r.err;
}

TEST(Integration, RepeatMergesTheRunsOfEachPointIntoOneRecordWithTheirSpread) {
  TempDir d;
  Result r;
  const RecordSet set =
      measure(2, "--backend mpi --ops allreduce -b 1K -e 4K -f 4 -n 3 --batch 2 --repeat 3", d, &r);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("run 3 of 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# Run-to-run spread over 3 runs"), std::string::npos) << r.out;
  EXPECT_EQ(set.contexts.at(0).extra["repeat"], 3);
  ASSERT_EQ(set.measurements.size(), 2u); // one record per point, not per run
  for (const auto &m : set.measurements) {
    const auto &rep = m.extra.at("repeat");
    EXPECT_EQ(rep["runs"], 3) << m.key();
    std::vector<double> t = rep["time_us"].get<std::vector<double>>();
    const std::vector<double> bw = rep["busbw_gbps"].get<std::vector<double>>();
    ASSERT_EQ(t.size(), 3u);
    ASSERT_EQ(bw.size(), 3u);
    // The record is the median run's: its time is the middle of the three.
    const std::size_t kept = rep["run"].get<std::size_t>();
    ASSERT_LT(kept, 3u);
    EXPECT_DOUBLE_EQ(m.time_us, t[kept]);
    std::vector<double> sorted = t;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_DOUBLE_EQ(m.time_us, sorted[1]);
    EXPECT_DOUBLE_EQ(rep["spread_pct"].get<double>(), 100 * (sorted[2] - sorted[0]) / sorted[1]);
    EXPECT_DOUBLE_EQ(rep["busbw_min_gbps"].get<double>(), *std::min_element(bw.begin(), bw.end()));
    EXPECT_DOUBLE_EQ(rep["busbw_max_gbps"].get<double>(), *std::max_element(bw.begin(), bw.end()));
    EXPECT_GE(m.busbw_gbps, rep["busbw_min_gbps"].get<double>());
    EXPECT_LE(m.busbw_gbps, rep["busbw_max_gbps"].get<double>());
  }
}

TEST(Integration, BudgetRevisitsGiveTheLessCertainPointsLargerShares) {
  // --repeat 3 --budget: the first run shares evenly; runs 2 and 3 weight each point's share by
  // its run-to-run uncertainty so far (repeat.hpp budget_weight). The time per unit of weight
  // (time left / weight left, after the overhead set aside) moves slowly through a run, so two
  // points visited one after the other (consecutive sizes) get caps in the ratio of their
  // weights (within 2x on a busy host, but for one pair after a point that overran its cap); even
  // shares would give them equal caps whatever their weights.
  TempDir d;
  Result r;
  const RecordSet set = measure(2,
                                "--backend mpi --ops allreduce -b 8 -e 2K -f 4 --repeat 3 "
                                "--budget 6 --min-time 1 --max-time 1",
                                d, &r);
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(set.measurements.size(), 5u);
  std::vector<const MeasurementRecord *> by_size;
  for (const auto &m : set.measurements)
    by_size.push_back(&m);
  std::sort(by_size.begin(), by_size.end(),
            [](const auto *a, const auto *b) { return a->bytes < b->bytes; });
  double spent = 0;
  int compared = 0;
  int beyond_2x = 0;
  for (std::size_t run = 0; run < 3; ++run) {
    std::vector<double> per_weight; // in visit order
    for (const MeasurementRecord *m : by_size) {
      const auto &rep = m->extra.at("repeat");
      ASSERT_EQ(rep["uncertainty_before"][run].is_null(), run == 0) << m->key();
      const double cap = rep["time_cap_s"][run].get<double>();
      ASSERT_GE(cap, 0) << m->key(); // 0: the budget ran out (a heavily loaded host)
      spent += cap;
      const double w =
          run == 0 ? 1.0 : bench::budget_weight(rep["uncertainty_before"][run].get<double>(), 0.01);
      per_weight.push_back(cap / w);
    }
    for (std::size_t i = 1; i < per_weight.size(); ++i) {
      if (!(per_weight[i - 1] > 0 && per_weight[i] > 0))
        continue;
      ++compared;
      const double ratio = per_weight[i] / per_weight[i - 1];
      if (ratio > 2.0 || ratio < 1 / 2.0)
        ++beyond_2x;
      EXPECT_LT(ratio, 3.0) << "run " << run << " point " << i;
      EXPECT_GT(ratio, 1 / 3.0) << "run " << run << " point " << i;
    }
  }
  EXPECT_GE(compared, 1); // 12 unless the host was too busy for the budget
  // One point that overran its cap shortens the next one's time left: one pair in 12 may fall
  // outside 2x (seen once in CI: 2.045), not more.
  EXPECT_LE(beyond_2x, 1) << compared << " pairs compared";
  (void)spent;
  // The sweep keeps to its budget (rank 0's "finished in S s": the timed part, with warm-ups).
  const std::size_t at = r.err.find("finished in ");
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_LT(std::stod(r.err.substr(at + 12)), 6.0 * 1.1) << r.err;
}

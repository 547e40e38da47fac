// Issue 19, Sec. 1: nccl-tests logs as forks and pastes print them (test inputs in
// tests/data/real-logs/, first line = source; `synthetic_*` reproduce a layout and say so).
// Expected values are read off the files by eye.
#include "scalefit/ingest/ingest.hpp"

#include "helpers.hpp"

#include "scalefit/core/error.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

using namespace scalefit;
using namespace scalefit::ingest;
using scalefit::ingest::test::any_contains;
using scalefit::ingest::test::real;
using scalefit::ingest::test::find;
using scalefit::ingest::test::write_tmp;

namespace {

std::string slurp(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

// A fork's allgather rows leave the redop column blank (12 fields under a 13-column header).
// Before: "header and footer but no rows".
TEST(NcclTestsPastes, BlankRedopOfAnOpWithoutReductionIsRead) {
  const std::string f = real("synthetic_nccl-tests_fork_allgather_blank-redop.txt");
  const auto r = read_nccl_tests(f);
  ASSERT_EQ(r.measurements.size(), 22u); // 11 sizes x 2 placements
  EXPECT_EQ(r.measurements.front().op, Op::allgather);
  EXPECT_EQ(r.context.nranks, 8); // count column: 1024 B / (32 x 4 B)
  EXPECT_EQ(r.context.nnodes, 1); // 8 Rank lines on dgx-h100-07
  const auto *m = find(r, 1073741824, Placement::out_of_place);
  ASSERT_NE(m, nullptr);
  EXPECT_DOUBLE_EQ(m->time_us, 4290.7);
  EXPECT_EQ(m->root, -1);
  EXPECT_TRUE(any_contains(r.notes, f + ":15:", "11 row(s) print nothing under redop"));
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
}

// Issue 19, Sec. 1: AllGather vs AllToAll with no banner. The same table unchecked (-c 0: N/A
// under both #wrong columns), in a file whose name names no op: the columns fit both ops and
// nothing else tells them apart. Read as allgather with a warning naming --op (before: exit 2);
// the in-place N/A rule still decides where the out-of-place column was checked.
TEST(NcclTestsPastes, AllGatherOrAllToAllWithoutABannerIsReadWithAWarningNamingOp) {
  std::string text = slurp(real("synthetic_nccl-tests_fork_allgather_blank-redop.txt"));
  text = std::regex_replace(text, std::regex("      0(\\s+[0-9.]+\\s+[0-9.]+\\s+[0-9.]+)      0\n"),
                            "    N/A$1    N/A\n");
  ASSERT_NE(text.find("    N/A\n"), std::string::npos);
  const std::string f = write_tmp("unchecked_paste.txt", text);
  const auto r = read_nccl_tests(f);
  ASSERT_EQ(r.measurements.size(), 22u);
  EXPECT_EQ(r.measurements.front().op, Op::allgather);
  EXPECT_TRUE(any_contains(r.warnings, f + ":", "pass --op alltoall")) << r.warnings.size();
  IngestOptions opt;
  opt.op = Op::alltoall;
  EXPECT_EQ(read_nccl_tests(f, opt).measurements.front().op, Op::alltoall);
  // Checked out of place, N/A in place: alltoall's signature, no warning needed.
  std::string checked = slurp(real("synthetic_nccl-tests_fork_allgather_blank-redop.txt"));
  checked = std::regex_replace(checked, std::regex("(\\s+[0-9.]+\\s+[0-9.]+\\s+[0-9.]+)      0\n"),
                               "$1    N/A\n");
  const auto c = read_nccl_tests(write_tmp("checked_paste.txt", checked));
  ASSERT_FALSE(c.measurements.empty());
  EXPECT_EQ(c.measurements.front().op, Op::alltoall);
}

// The same rows under a banner naming all_reduce_perf: a reducing op must print its redop, so
// the rows are not read without it (each is warned about, and the table has no rows: exit 2).
TEST(NcclTestsPastes, BlankRedopIsRefusedWhenTheNamedOpReduces) {
  const std::string text = "# Collective test starting: all_reduce_perf\n" +
                           slurp(real("synthetic_nccl-tests_fork_allgather_blank-redop.txt"));
  const std::string f = write_tmp("blank_redop_allreduce.txt", text);
  try {
    read_nccl_tests(f);
    FAIL() << "expected InputError";
  } catch (const InputError &e) {
    EXPECT_NE(std::string(e.what()).find("no rows"), std::string::npos) << e.what();
  }
  // A row missing another column (root) is no blank-redop row either.
  const auto r = read_nccl_tests(write_tmp(
      "blank_root.txt",
      "#  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw  busbw #wrong\n"
      "   1024     32  float   none         10.52  0.10  0.09   0   10.63  0.10  0.08   0\n"
      "   4096    128  float   none    -1   10.61  0.39  0.34   0   10.72  0.38  0.33   0\n"
      "  16384    512  float   none    -1   11.03  1.49  1.30   0   11.14  1.47  1.29   0\n"));
  EXPECT_EQ(r.measurements.size(), 4u);
  EXPECT_TRUE(any_contains(r.warnings, ":2: cannot read row"));
}

// ---- node counts: never more than the log shows, "unknown" rather than a silent 1 ----

namespace {

// An AllReduce table of 16 ranks (busbw = algbw * 2 * 15 / 16), rows only.
const char *kAllReduce16 =
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time "
    "  algbw   busbw #wrong\n"
    "     1048576        262144     float     sum      -1   104.86   10.00   18.75      0   104.86 "
    "  10.00   18.75      0\n"
    "   104857600      26214400     float     sum      -1  1048.58  100.00  187.50      0  1048.58 "
    " 100.00  187.50      0\n";

} // namespace

// A cut rank list whose hosts are printed two ways (Rank lines: FQDN, NCCL INFO: short name):
// 2 hosts appear, so "at least 2 nodes", not 4.
TEST(NcclTestsPastes, CutRankListCountsEachHostOnce) {
  const auto r = read_nccl_tests(write_tmp(
      "cut_rank_list_fqdn.txt",
      std::string(
          "node-a:1001:1001 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
          "node-b:2001:2001 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
          "#  Rank  0 Group  0 Pid   1001 on node-a.cluster.local device  0 [0x18] H100\n"
          "#  Rank  1 Group  0 Pid   1002 on node-a.cluster.local device  1 [0x2a] H100\n"
          "...\n"
          "#  Rank 15 Group  0 Pid   2008 on node-b.cluster.local device  7 [0xdb] H100\n") +
          kAllReduce16));
  EXPECT_EQ(r.context.nranks, 16);
  EXPECT_EQ(r.context.nnodes, 2);
  EXPECT_TRUE(r.context.source.at("tables").at(0).at("nnodes_lower_bound").get<bool>());
  EXPECT_TRUE(any_contains(r.notes, "at least 2 nodes"));
}

// Only the last Rank line (rank 127 on host-31) of a 128-rank run: one host seen says nothing of
// the others, so the count is unknown (1 in the record, warned with --nnodes), not "1 node".
TEST(NcclTestsPastes, LastRankLineAloneLeavesTheNodeCountUnknown) {
  const std::string f = write_tmp(
      "last_rank_line.txt",
      "# Collective test starting: all_gather_perf\n"
      "#  Rank 127 Group  0 Pid  88231 on    host-31 device  7 [0xdb] NVIDIA H100 80GB HBM3\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
      "     1048576          2048     float    none      -1   210.00    4.99    4.95      0\n"
      "   268435456        524288     float    none      -1  3100.00   86.59   85.92      0\n"
      "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 45.4\n");
  const auto r = read_nccl_tests(f);
  EXPECT_EQ(r.context.nranks, 128); // count column: 1048576 B / (2048 x 4 B)
  EXPECT_EQ(r.context.nnodes, 1);
  EXPECT_EQ(r.context.source.at("tables").at(0).at("nnodes_from"), "unknown (assumed 1)");
  EXPECT_TRUE(any_contains(r.warnings, f + ":3: field 'nnodes'",
                           "1 host among partial rank lines (1 of 128 ranks)"));
  EXPECT_TRUE(any_contains(r.warnings, "node count is unknown", "pass --nnodes"));
  IngestOptions opt;
  opt.nnodes = 32;
  const auto r32 = read_nccl_tests(f, opt);
  EXPECT_EQ(r32.context.nnodes, 32);
  EXPECT_TRUE(r32.warnings.empty()) << r32.warnings.front();
  // --strict: the unknown count is an error naming the option (exit 2).
  opt.nnodes.reset();
  opt.strict = true;
  try {
    read_nccl_tests(f, opt);
    FAIL() << "expected InputError";
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "nnodes");
    EXPECT_NE(std::string(e.what()).find("--nnodes"), std::string::npos) << e.what();
  }
}

// OSU without rank lines, launcher line or allocation: the same warning; "unknown" in the source.
TEST(NcclTestsPastes, OsuWithoutHostsSaysTheNodeCountIsUnknown) {
  const std::string f = write_tmp("osu_no_hosts.txt", "# OSU MPI Latency Test v7.4\n"
                                                      "# Size          Latency (us)\n"
                                                      "1                       1.66\n");
  const auto r = read_osu(f);
  EXPECT_EQ(r.context.nnodes, 1);
  EXPECT_EQ(r.context.source.at("nnodes_from"), "unknown (assumed 1)");
  EXPECT_TRUE(any_contains(r.warnings, "field 'nnodes'", "pass --nnodes"));
}

// The same log pasted into a GitHub issue without a code fence: Markdown stores every leading
// '#' as "\#" (synthetic, the layout of such a paste). Before: no header, no host names, no
// footer ("run cut off"), the node count unknown.
TEST(NcclTestsPastes, MarkdownEscapedHashesReadAsComments) {
  const std::string f = write_tmp(
      "nccl_escaped_hashes.txt",
      "\\# nThread 1 nGpus 1 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 "
      "agg iters: 1 validation: 1 graph: 0\n"
      "\\#\n"
      "\\# Using devices\n"
      "\\#  Rank  0 Group  0 Pid  101 on    node-1 device  0 [0x18] NVIDIA H100 80GB HBM3\n"
      "\\#  Rank  1 Group  0 Pid  102 on    node-2 device  0 [0x18] NVIDIA H100 80GB HBM3\n"
      "\\#\n"
      "\\#                                                              out-of-place          "
      "             in-place\n"
      "\\#       size         count      type   redop    root     time   algbw   busbw #wrong  "
      "   time   algbw   busbw #wrong\n"
      "\\#        (B)    (elements)                               (us)  (GB/s)  (GB/s)         "
      "   (us)  (GB/s)  (GB/s)\n"
      "           8             2     float     sum      -1    10.20    0.00    0.00      0    "
      "10.10    0.00    0.00      0\n"
      "        1024           256     float     sum      -1    11.50    0.09    0.09      0    "
      "11.40    0.09    0.09      0\n"
      "\\# Out of bounds values : 0 OK\n"
      "\\# Avg bus bandwidth    : 0.05\n");
  const auto r = read_nccl_tests(f);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  ASSERT_EQ(r.measurements.size(), 4u);
  EXPECT_EQ(r.context.nranks, 2);
  EXPECT_EQ(r.context.nnodes, 2); // the two host names of the rank lines
  EXPECT_EQ(r.measurements.front().op, Op::allreduce);
}

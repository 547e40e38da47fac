// Issue 19, Sec. 1: nccl-tests logs as forks and pastes print them (test inputs in
// tests/data/real-logs/, first line = source; `synthetic_*` reproduce a layout and say so).
// Expected values are read off the files by eye.
#include "scalefit/ingest/ingest.hpp"

#include "helpers.hpp"

#include "scalefit/core/error.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

using namespace scalefit;
using namespace scalefit::ingest;
using scalefit::ingest::test::any_contains;
using scalefit::ingest::test::find;
using scalefit::ingest::test::write_tmp;

namespace {

std::string real(const std::string &name) {
  return std::string(SCALEFIT_TEST_DATA_DIR) + "/real-logs/" + name;
}

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

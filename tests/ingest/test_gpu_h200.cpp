// scalefit-bench's own nccl-tests-format logs next to nccl-tests' on one H200, from two GPU
// contacts (tests/data/gpu-h200 and its contact2/, README there: commands, machine, date). Both go
// through the nccl-tests reader; the test holds what the side-by-side showed: every size of both
// logs checked with no wrong element, and the two tools' out-of-place times within 5% at every size
// from 16 MiB (bandwidth-bound; the smaller sizes are launch-bound and vary run to run by more than
// the tools differ).
#include "scalefit/ingest/ingest.hpp"

#include "helpers.hpp"

#include "scalefit/core/records.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>

using namespace scalefit;
using namespace scalefit::ingest;
using namespace scalefit::ingest::test;

namespace {

std::string h200(const std::string &name) {
  return std::string(SCALEFIT_TEST_DATA_DIR) + "/gpu-h200/" + name;
}

/// (contact folder under gpu-h200/, "" for the first; op)
class H200SideBySide : public ::testing::TestWithParam<std::tuple<const char *, const char *>> {};

TEST_P(H200SideBySide, SameSizesCheckedAndLargeMessagesWithin5Percent) {
  const std::string dir = std::get<0>(GetParam()), op = std::get<1>(GetParam());
  const IngestResult sf = read_nccl_tests(h200(dir + "scalefit_" + op + ".txt"));
  const IngestResult nt = read_nccl_tests(h200(dir + "nccl-tests_" + op + ".txt"));
  EXPECT_EQ(sf.context.nranks, 1);
  EXPECT_EQ(nt.context.nranks, 1);
  // gpu-check runs scalefit out of place only: 8 B (16 B for alltoall) to 1 GiB, every size read
  // (its `-` in-place columns and `~2modes` flags are no warnings), each in nccl-tests' log too.
  EXPECT_TRUE(sf.warnings.empty()) << sf.warnings.front();
  ASSERT_GE(sf.measurements.size(), 27u);
  int compared = 0;
  for (const auto &s : sf.measurements) {
    ASSERT_EQ(s.placement, Placement::out_of_place);
    ASSERT_TRUE(s.wrong.has_value()) << op << " " << s.bytes << " B: not checked";
    EXPECT_EQ(*s.wrong, 0) << op << " " << s.bytes << " B";
    const MeasurementRecord *n = scalefit::ingest::test::find(nt, s.bytes, s.placement);
    if (s.bytes < (16u << 20)) // nccl-tests' allgather prints its 8 B row as size 0 on one rank
      continue;
    ASSERT_NE(n, nullptr) << op << " " << s.bytes << " B: not in the nccl-tests log";
    EXPECT_NEAR(s.time_us / n->time_us, 1.0, 0.05) << op << " " << s.bytes << " B";
    ++compared;
  }
  EXPECT_EQ(compared, 7); // 16 MiB .. 1 GiB
}

INSTANTIATE_TEST_SUITE_P(Ops, H200SideBySide,
                         ::testing::Combine(::testing::Values("", "contact2/"),
                                            ::testing::Values("allreduce", "allgather",
                                                              "reducescatter", "broadcast",
                                                              "reduce", "alltoall", "sendrecv")));

} // namespace

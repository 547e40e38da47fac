// Failure kinds of issue #10 on real logs collected from public threads and docs
// (tests/data/real-logs/, first line = source) and on clearly named synthetic reproductions.
// Expected values are read off the files by eye.
#include "scalefit/ingest/ingest.hpp"

#include "helpers.hpp"

#include "scalefit/core/error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

using namespace scalefit;
using namespace scalefit::ingest;
using scalefit::ingest::test::any_contains;
using scalefit::ingest::test::real;

namespace {

std::string table_field(const IngestResult &r, const char *key) {
  return r.context.source.at("tables").at(0).at(key).get<std::string>();
}

// Kind 1: launcher prefixes with NCCL INFO noise between the table lines.
TEST(RealWorld, TagOutputPrefixesAndInfoNoiseAreStripped) {
  const auto r = read_nccl_tests(real("t4_aws-eks-efa_2node_allreduce_tag-output_info.txt"));
  EXPECT_EQ(r.measurements.size(), 58u); // 29 non-zero sizes x 2 placements
  EXPECT_EQ(r.context.nranks, 2);
  EXPECT_EQ(r.context.nnodes, 2);
  EXPECT_EQ(r.context.versions.at("nccl"), "2.12.7+cuda11.4");
  EXPECT_EQ(r.context.env.at("NCCL_SHM_DISABLE"), "0.");
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
}

TEST(RealWorld, RayAndTagOutputDoublePrefix) {
  const auto r =
      read_nccl_tests(real("h200_gke-rdma_2node_16gpu_allgather_ray-and-tag-output-prefix.txt"));
  EXPECT_EQ(r.measurements.size(), 48u);
  EXPECT_EQ(r.measurements.front().op, Op::allgather);
  EXPECT_EQ(r.context.nranks, 16);
  EXPECT_EQ(r.context.nnodes, 2);
}

TEST(RealWorld, SrunLabelCollapsedAndIndentedLayout) {
  const auto r = read_nccl_tests(real("synthetic_srun-label_collapsed-indented_from_t4.txt"));
  EXPECT_EQ(r.measurements.size(), 58u);
  EXPECT_EQ(r.context.nranks, 2);
  EXPECT_EQ(r.context.nnodes, 2);
}

// Kind 2: a partial rank list; the busbw/algbw factor wins and the record names it.
TEST(RealWorld, PartialRankListTakesRanksFromTheBusbwFactor) {
  const auto r = read_nccl_tests(real("gb200_nvl72_72gpu_allreduce_partial-rank-list.txt"));
  EXPECT_EQ(r.context.nranks, 72); // 586.06 / 297.16 = 2 * 71 / 72
  EXPECT_EQ(table_field(r, "nranks_from"), "busbw/algbw");
  EXPECT_EQ(r.context.source.at("tables").at(0).at("rank_lines").get<int>(), 1); // only rank 71
}

// Kind 3: node counts from host names, launcher lines; lower bounds flagged.
TEST(RealWorld, NodesFromRankLinesAndLauncherLines) {
  const auto a = read_nccl_tests(real("h100_gcp-a3mega_2node_16gpu_allreduce.txt"));
  EXPECT_EQ(a.context.nranks, 16);
  EXPECT_EQ(a.context.nnodes, 2);
  const auto b = read_nccl_tests(real("mi250x_rccl-tests_16rank_allreduce_pre2.13_error-column.txt"));
  EXPECT_EQ(b.context.nranks, 16); // mpirun.mpich -np 16; busbw 0.00-0.11 says too little
  EXPECT_EQ(table_field(b, "nranks_from"), "launcher command line");
}

TEST(RealWorld, ChannelViaNetIsALowerBoundOnNodes) {
  // The T4 log without its Rank lines: only NCCL INFO lines (hosts, `via NET/`) remain.
  const auto tmp = std::filesystem::path(::testing::TempDir()) / "no_rank_lines.txt";
  {
    std::ifstream in(real("t4_aws-eks-efa_2node_allreduce_tag-output_info.txt"));
    std::ofstream out(tmp);
    std::string line;
    while (std::getline(in, line))
      if (line.find("#  Rank") == std::string::npos)
        out << line << "\n";
  }
  const auto r = read_nccl_tests(tmp.string());
  EXPECT_EQ(r.context.nnodes, 2);
  EXPECT_TRUE(r.context.source.at("tables").at(0).at("nnodes_lower_bound").get<bool>());
  std::filesystem::remove(tmp);
}

// Kind 4: OSU variants.
TEST(RealWorld, OsuAlltoallPersonalizedExchangeWithModuleAndTimeLines) {
  const auto r = read_osu(real("synthetic_osu_alltoall_v5.8_module-and-time-lines.txt"));
  ASSERT_EQ(r.measurements.size(), 11u); // size 0 skipped
  EXPECT_EQ(r.measurements.front().op, Op::alltoall);
  EXPECT_EQ(r.context.nranks, 144); // mpirun -np 144
  EXPECT_EQ(r.context.nnodes, 4);   // --map-by ppr:36:node
  EXPECT_EQ(r.measurements.front().bytes, 144u); // OSU size 1 B per peer x 144
  EXPECT_EQ(r.context.versions.at("osu"), "5.8");
}

TEST(RealWorld, OsuLatency50WithSrunBanner) {
  const auto r = read_osu(real("osu_latency_v5.0_cray-aries_srun_2node.txt"));
  EXPECT_EQ(r.measurements.size(), 23u);
  EXPECT_EQ(r.context.nranks, 2);
  EXPECT_EQ(r.context.nnodes, 2); // srun -n2 -N2
}

TEST(RealWorld, OsuCudaReduceTakesRanksFromMpirun) {
  const auto r = read_osu(real("osu_reduce_cuda_v7.3_192ranks_efa_excerpt.txt"));
  EXPECT_EQ(r.context.nranks, 192);
  EXPECT_EQ(r.measurements.front().op, Op::reduce);
}

// Kind 6: layout noise.
TEST(RealWorld, RcclVersionHeaderAndRcclTestsVersionLine) {
  const auto a = read_nccl_tests(real("mi300x_rccl-tests_rccl-version-header_allreduce_excerpt.txt"));
  EXPECT_EQ(a.measurements.size(), 10u);
  EXPECT_EQ(a.context.versions.at("rccl"), "2.28.3-amdsmi-bdf-topology:360c5c6+");
  const auto b = read_nccl_tests(real("mi100_rccl-tests_pcie_2gpu_allreduce_p2p-off.txt"));
  EXPECT_EQ(b.measurements.size(), 50u);
  EXPECT_EQ(b.context.nranks, 2);
}

TEST(RealWorld, EmptyTableIsAClearError) {
  try {
    read_nccl_tests(real("synthetic_nccl-tests_empty-table.txt"));
    FAIL() << "expected InputError";
  } catch (const InputError &e) {
    EXPECT_EQ(e.line(), 5);
    EXPECT_NE(std::string(e.what()).find("no rows"), std::string::npos) << e.what();
  }
}

TEST(RealWorld, NcclTestsJsonAndRcclTestsJsonLines) {
  const auto j = read_nccl_tests(real("synthetic_nccl-tests_J_json_v2.json"));
  EXPECT_EQ(j.measurements.size(), 8u);
  EXPECT_EQ(j.context.nranks, 4);
  EXPECT_EQ(j.measurements.front().op, Op::allreduce);
  EXPECT_DOUBLE_EQ(j.measurements.front().time_us, 20.0);
  const auto r = read_nccl_tests(real("rccl-tests_json-lines_4gpu_allreduce_excerpt.jsonl"));
  EXPECT_EQ(r.measurements.size(), 5u);
  EXPECT_EQ(r.context.nranks, 4);
}

// Issue #9: lines of 200 KB (an NCCL_DEBUG dump, an environment echo) crash neither reader.
TEST(RealWorld, TwoHundredKilobyteLinesDoNotCrashEitherReader) {
  const auto tmp = std::filesystem::path(::testing::TempDir()) / "long_line.txt";
  const std::string huge(200 * 1024, 'x');
  const std::string digits(200 * 1024, '7');
  for (const bool osu : {false, true}) {
    {
      std::ifstream in(osu ? real("osu_latency_v5.0_cray-aries_srun_2node.txt")
                           : real("gh200_cscs-alps_2node_slingshot_allreduce.txt"));
      std::ofstream out(tmp);
      out << "host:1:1 [0] NCCL INFO NCCL_DEBUG dump " << huge << "\n";
      out << "# " << huge << "\n" << digits << "\n" << "2.22" << digits << "\n";
      std::string line;
      while (std::getline(in, line))
        out << line << "\n";
      out << "./all_reduce_perf" << huge << "_perf\n";
    }
    const auto r = osu ? read_osu(tmp.string()) : read_nccl_tests(tmp.string());
    EXPECT_GT(r.measurements.size(), 10u);
  }
  std::filesystem::remove(tmp);
}

} // namespace

// Rows pasted without their header (nccl-tests issue #294): read as the standard columns, with a
// warning; nranks from NCCL's "Destroy COMPLETE ... nranks 16" lines.
TEST(RealWorld, RowsWithoutAHeaderAreReadAsTheStandardColumns) {
  const std::string f = real("h100_nccl-tests_issue294_2node_rows-only.txt");
  const auto r = read_nccl_tests(f);
  EXPECT_EQ(r.measurements.size(), 10u);
  EXPECT_EQ(r.measurements.front().op, Op::allreduce); // in-place #wrong checked, as AllReduce
  EXPECT_EQ(r.context.nranks, 16);
  EXPECT_TRUE(any_contains(r.warnings, f + ":3: no table header: read 5 rows"));
  // The same rows printed by 16 processes of a build without MPI: sizes repeat, which ingest
  // says (fit then refuses the conflicting points), and 1-rank no-op bandwidths beyond 1 PB/s are
  // skipped, not written.
  const std::string g = real("h100_nccl-tests_issue294_non-mpi-build_repeated-sizes.txt");
  const auto s = read_nccl_tests(g);
  EXPECT_EQ(s.context.nranks, 1);
  EXPECT_TRUE(any_contains(s.warnings, g + ":8: field 'size': 19 rows repeat a size"));
  for (const auto &m : s.measurements)
    EXPECT_LE(m.algbw_gbps, 1e6);
}

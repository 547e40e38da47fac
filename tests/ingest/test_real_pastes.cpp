// Issue 19, Sec. 1: the paste kinds of test_osu_pastes.cpp and test_nccl_tests_pastes.cpp, each on
// real public logs (tests/data/real-logs/, first line = source: mailing-list archives, project
// docs, issues). Expected values are read off the files by eye.
#include "scalefit/ingest/ingest.hpp"

#include "helpers.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

using namespace scalefit;
using namespace scalefit::ingest;
using scalefit::ingest::test::find;
using scalefit::ingest::test::osu_size;
using scalefit::ingest::test::real;

namespace {

std::map<std::string, int> per_method(const IngestResult &r) {
  std::map<std::string, int> n;
  for (const auto &m : r.measurements)
    ++n[m.method];
  return n;
}

} // namespace

// ---- OSU through a mail archive's HTML ----

// Open MPI users, 2014: `<p>` paragraphs with `<br>` line breaks; the ranks only in the mpirun
// line.
TEST(RealPastes, OmpiUsersHtmlAlltoallTakesTheRanksFromMpirun) {
  const auto r = read_osu(real("osu_alltoall_v4.2_ompi-users-html_4rank_mpirun-np4_p-br.txt"));
  ASSERT_EQ(r.measurements.size(), 21u); // 1 .. 1048576
  EXPECT_EQ(r.measurements.front().op, Op::alltoall);
  EXPECT_EQ(r.context.nranks, 4); // mpirun -np 4
  EXPECT_EQ(r.context.versions.at("osu"), "4.2");
  const auto *m = osu_size(r, 1048576);
  ASSERT_NE(m, nullptr);
  EXPECT_DOUBLE_EQ(m->time_us, 765.65);
  // nothing in the post says how many nodes: assumed 1, and said so
  EXPECT_TRUE(scalefit::ingest::test::any_contains(r.warnings, "nnodes", "unknown"));
}

// Open MPI users, 2011: every line its own `<p>...<br>`, the mpirun line wrapped before the binary
// (a site build, osu_latency-openmpi-1.2.7), and a prose line that names osu_latency first. The
// command is the wrapped mpirun, not the prose.
TEST(RealPastes, WrappedMpirunIsTheCommandNotTheProseNamingTheBinary) {
  const auto r = read_osu(real("osu_latency_v3.3_ompi-users-html_p-br-every-line_segfault.txt"));
  ASSERT_EQ(r.measurements.size(), 23u); // 1 .. 4194304; the size-0 row skipped
  EXPECT_EQ(r.measurements.front().method, "osu_latency");
  EXPECT_EQ(r.context.command_line,
            "mpirun --mca btl ^openib -np 2 /opt/scripts/osu_latency-openmpi-1.2.7");
  EXPECT_EQ(r.context.nranks, 2);
  const auto *m = osu_size(r, 1048576);
  ASSERT_NE(m, nullptr);
  EXPECT_DOUBLE_EQ(m->time_us, 1238.21);
}

// Open MPI users, 2011: latency, bandwidth and bi-directional bandwidth of OMB 3.3, whose osu_bibw
// heads its column "Bi-Bandwidth (MB/s)" (before: exit 2, "table header without a title").
TEST(RealPastes, Omb3BiBandwidthHeaderIsRead) {
  const auto r =
      read_osu(real("osu_latency+bw+bibw_v3.3_ompi-users-html_mixed-ib_never-gets-past.txt"));
  const auto n = per_method(r);
  EXPECT_EQ(n.at("osu_latency"), 23);
  EXPECT_EQ(n.at("osu_bw"), 21); // "never gets past" 1048576
  EXPECT_EQ(n.at("osu_bibw"), 21);
  const auto *bibw = osu_size(r, 1048576, "osu_bibw");
  ASSERT_NE(bibw, nullptr);
  EXPECT_NEAR(bibw->time_us, 2 * 1048576 / 3033.31, 1e-6); // both directions: 2 x bytes / bibw
  const auto *bw = osu_size(r, 1048576, "osu_bw");
  ASSERT_NE(bw, nullptr);
  EXPECT_NEAR(bw->time_us, 1048576 / 2728.58, 1e-6);
}

// Open MPI users, 2015: `*srun -p GTX980x4sys` / `--ntasks 2 ./osu_bibw*` (a mail client's bold,
// wrapped without a backslash) before each of two runs of the CUDA build's osu_bibw. The runs
// differ 3x at 1 MiB (the thread's question): each is its own curve (before, one merged curve
// that `scalefit fit` refused as the same point measured twice in one file).
TEST(RealPastes, BoldWrappedSrunLineIsJoinedWithItsBinary) {
  const auto r =
      read_osu(real("osu_bibw_cuda-build_ompi-users-html_srun-ntasks2-wrapped_2runs.txt"));
  EXPECT_EQ(per_method(r).at("osu_bibw"), 23);
  EXPECT_EQ(per_method(r).at("osu_bibw_run2"), 23);
  const auto *first = osu_size(r, 1048576, "osu_bibw"),
             *second = osu_size(r, 1048576, "osu_bibw_run2");
  ASSERT_TRUE(first && second);
  EXPECT_NEAR(first->time_us, 2 * 1048576 / 4244.62, 1e-6);
  EXPECT_NEAR(second->time_us, 2 * 1048576 / 13484.74, 1e-6);
  EXPECT_TRUE(scalefit::ingest::test::any_contains(r.notes, "osu_bibw again (table 2"));
  EXPECT_EQ(r.context.command_line, "srun -p GTX980x4sys --ntasks 2 ./osu_bibw");
  EXPECT_EQ(r.context.nranks, 2);
  // srun's --cpu-bind=verbose report puts both tasks on svail-15: one node, from the log
  EXPECT_EQ(r.context.nnodes, 1);
  EXPECT_NE(scalefit::ingest::test::source(r, "nnodes_from").find("cpu-bind"), std::string::npos);
}

// ---- OSU ranks from the launch line ----

// Sarus cookbook (CSCS Piz Daint, 2019): `srun -C gpu -N2 -t2 \` continued over three lines, no
// task count: one task per node, 2 ranks on 2 nodes.
TEST(RealPastes, SrunNodesOverBackslashLinesGiveTheRanks) {
  const auto a2a = read_osu(real("osu_alltoall_v5.3.2_sarus-piz-daint_srun-N2-backslash.txt"));
  ASSERT_EQ(a2a.measurements.size(), 21u);
  EXPECT_EQ(a2a.measurements.front().op, Op::alltoall);
  EXPECT_EQ(a2a.context.nranks, 2);
  EXPECT_EQ(a2a.context.nnodes, 2);
  const auto *m = osu_size(a2a, 1048576);
  ASSERT_NE(m, nullptr);
  EXPECT_DOUBLE_EQ(m->time_us, 733.93);
  const auto lat = read_osu(real("osu_latency_v5.3.2_sarus-piz-daint_srun-N2-backslash.txt"));
  EXPECT_EQ(lat.measurements.size(), 23u);
  EXPECT_EQ(lat.context.nnodes, 2);
}

// EESSI blog (2026, GH200 on Slingshot-11): the two srun commands in their own block, the two
// tables in one output block after it.
TEST(RealPastes, CommandsInTheirOwnBlockGiveTheNodesOfBothTables) {
  const auto r =
      read_osu(real("osu_bibw+latency_cuda_v7.5_eessi-olivia-gh200_srun-N2-ntasks-per-node1.txt"));
  const auto n = per_method(r);
  EXPECT_EQ(n.at("osu_bibw"), 23);
  EXPECT_EQ(n.at("osu_latency"), 23);
  EXPECT_EQ(r.context.nranks, 2);
  EXPECT_EQ(r.context.nnodes, 2); // srun -N 2 --ntasks-per-node=1
  const auto *m = osu_size(r, 1048576, "osu_latency");
  ASSERT_NE(m, nullptr);
  EXPECT_DOUBLE_EQ(m->time_us, 50.04);
}

// ---- Two OSU tests without titles ----

// A course write-up: six tables in code fences with no title lines (three bandwidth, one of them
// only "TODO", three latency: between cores, between sockets, between nodes), no command: each
// table is its test by its column header, and each run of a test its own curve.
TEST(RealPastes, UntitledBandwidthAndLatencyTablesAreTwoMethods) {
  const auto r = read_osu(real("osu_bw+latency_uibk-lcc2_no-titles_code-fences_todo-table.txt"));
  const auto n = per_method(r);
  EXPECT_EQ(n.at("osu_bw"), 23);
  EXPECT_EQ(n.at("osu_bw_run2"), 23); // the "TODO" table has no rows: not a run
  EXPECT_EQ(n.at("osu_latency"), 22); // 0 .. 2 MiB, the size-0 row skipped
  EXPECT_EQ(n.at("osu_latency_run2"), 23);
  EXPECT_EQ(n.at("osu_latency_run3"), 22);
  EXPECT_EQ(n.size(), 5u);
  // osu_bw or osu_bibw: only the header says "Bandwidth"; read as osu_bw and said so
  EXPECT_TRUE(scalefit::ingest::test::any_contains(r.warnings, "osu_bibw"));
}

// ---- nccl-tests ----

// nccl-tests issue #78 (2021): an alltoall table alone (no banner, no command), pre-2.13 columns
// with nothing under redop; the ranks from the count column (256 MiB of floats, 1048576 per peer).
TEST(RealPastes, TableOnlyAlltoallWithBlankRedop) {
  const auto r =
      read_nccl_tests(real("v100_nccl-tests_issue78_8node_alltoall_blank-redop_table-only.txt"));
  ASSERT_EQ(r.measurements.size(), 4u);               // 2 sizes x 2 placements
  EXPECT_EQ(r.measurements.front().op, Op::alltoall); // named by the file, as a user would
  EXPECT_EQ(r.context.nranks, 64);
  const auto *m = find(r, 536870912, Placement::out_of_place);
  ASSERT_NE(m, nullptr);
  EXPECT_DOUBLE_EQ(m->time_us, 1041974);
}

// The same table under a name that names no op: before nccl-tests 2.13 AllToAll was checked in
// place, where its sends overwrite their own input, so the in-place error is 1 on every row and
// the out-of-place one 0 (AllGather is exact both ways): alltoall, said in a note.
TEST(RealPastes, PreTwoThirteenErrorColumnsTellAlltoallFromAllgather) {
  std::ifstream in(real("v100_nccl-tests_issue78_8node_alltoall_blank-redop_table-only.txt"));
  std::stringstream text;
  text << in.rdbuf();
  const std::string f = scalefit::ingest::test::write_tmp("table_only.txt", text.str());
  const auto r = read_nccl_tests(f);
  ASSERT_EQ(r.measurements.size(), 4u);
  EXPECT_EQ(r.measurements.front().op, Op::alltoall);
  EXPECT_TRUE(scalefit::ingest::test::any_contains(r.notes, "told by the error columns"));
  EXPECT_FALSE(scalefit::ingest::test::any_contains(r.warnings, "pass --op"));
  // the in-place half of one row made exact: nothing tells the ops apart any more
  std::string exact = text.str();
  const auto at = exact.find("1e+00");
  ASSERT_NE(at, std::string::npos);
  exact.replace(at, 5, "0e+00");
  const auto r2 = read_nccl_tests(scalefit::ingest::test::write_tmp("table_only2.txt", exact));
  EXPECT_EQ(r2.measurements.front().op, Op::allgather);
  EXPECT_TRUE(scalefit::ingest::test::any_contains(r2.warnings, "pass --op alltoall"));
}

// SuperBench's nccl-tests fixture (one node of 8 A100, pre-2.13, -c 0): alltoall rows blank under
// redop, 0 B rows skipped.
TEST(RealPastes, SuperBenchAlltoallRowsWithBlankRedop) {
  const auto r = read_nccl_tests(real("a100_superbench_8gpu_alltoall_pre2.13_blank-redop.txt"));
  EXPECT_EQ(r.measurements.size(), 58u);
  EXPECT_EQ(r.measurements.front().op, Op::alltoall);
  EXPECT_EQ(r.context.nranks, 8);
  EXPECT_EQ(r.context.nnodes, 1);
}

// GCP A3 High docs (cluster-toolkit, dstack): allgather tables without their banner, one indented
// in a Markdown list, one with every '#' stripped; 16 ranks from the count column.
TEST(RealPastes, AllgatherTablesWithoutTheirBanner) {
  const auto gke = read_nccl_tests(
      real("h100_gke-a3high_cluster-toolkit_2node_allgather_table-only_indented.txt"));
  EXPECT_EQ(gke.measurements.size(), 20u);
  EXPECT_EQ(gke.measurements.front().op, Op::allgather);
  EXPECT_EQ(gke.context.nranks, 16);
  const auto ds = read_nccl_tests(real("h100_gcp-a3high_dstack_2node_allgather_hash-stripped.txt"));
  EXPECT_EQ(ds.measurements.size(), 22u);
  EXPECT_EQ(ds.measurements.front().op, Op::allgather);
  EXPECT_EQ(ds.context.nranks, 16);
}

// Where a log's job shape comes from besides its tables (issue #10, kinds 1-4 seen again on logs
// collected 2026-11-23, tests/data/real-logs/, first line = source): launcher lines read as each
// launcher means them (Open MPI's and aprun's -N is per node, Slurm's is nodes), a command
// continued with '\', host lists with slots, batch allocations (salloc, #SBATCH, #PBS), Open MPI's
// job map; OMB 2.0 titles; two OSU tests in one file; SendRecv told from AllReduce. Expected values
// are read off the files (and their stated sources) by eye.
#include "scalefit/ingest/ingest.hpp"

#include "helpers.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace scalefit;
using namespace scalefit::ingest;
using scalefit::ingest::test::any_contains;
using scalefit::ingest::test::real;
using scalefit::ingest::test::source;
using scalefit::ingest::test::write_tmp;

namespace {

std::string table_source(const IngestResult &r, const char *key) {
  return r.context.source.at("tables").at(0).at(key).get<std::string>();
}

// nccl-tests/OSU tables of a tiny 2-size run, for the synthetic allocation cases (busbw for 8
// ranks: 2 (n - 1) / n = 1.75 algbw).
const char *kAllReduceTable =
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time "
    "  algbw   busbw #wrong\n"
    "        1024           256     float     sum      -1    20.00    0.05    0.09      0    20.00 "
    "   0.05    0.09      0\n"
    "     1048576        262144     float     sum      -1   100.00   10.49   18.36      0   100.00 "
    "  10.49   18.36      0\n";
const char *kOsuAllreduce = "# OSU MPI Allreduce Latency Test v7.4\n"
                            "# Datatype: MPI_CHAR.\n"
                            "# Size       Avg Latency(us)\n"
                            "1024                   20.00\n"
                            "1048576               100.00\n";

} // namespace

// srun's options on one line, continued with '\' onto the line naming all_gather_perf.
TEST(Launchers, ContinuedSrunLineGivesTheNodes) {
  const auto r = read_nccl_tests(
      real("mi250x_rccl-tests_4node_32rank_srun-label-backslash_allgather_excerpt.txt"));
  EXPECT_EQ(r.measurements.front().op, Op::allgather);
  EXPECT_EQ(r.context.nranks, 32); // the count column: 512 elements of 65536 B / 4 B
  EXPECT_EQ(r.context.nnodes, 4);  // --nodes=4, one line above the binary
  EXPECT_EQ(table_source(r, "nnodes_from"), "launcher command line");
  EXPECT_NE(r.context.command_line.find("--nodes=4"), std::string::npos) << r.context.command_line;
  EXPECT_NE(r.context.command_line.find("all_gather_perf -b 64K"), std::string::npos);
}

// Open MPI's `mpirun -n 144 -N 36`: 36 per node, so 4 nodes (not 36 nodes of 4).
TEST(Launchers, OpenMpiCapitalNIsRanksPerNode) {
  const auto r = read_osu(real("osu_allreduce_v7.5_oci_144rank_mpirun-N36_spikes.txt"));
  EXPECT_EQ(r.context.nranks, 144);
  EXPECT_EQ(r.context.nnodes, 4);
  EXPECT_EQ(r.context.ranks_per_node, 36);
  EXPECT_EQ(source(r, "nnodes_from"), "launcher command line");
}

// `mpirun -H epyc002:128,epyc003:128` without -np starts one rank per slot: 256 on 2 hosts.
TEST(Launchers, HostListSlotsGiveTheRanks) {
  const auto r = read_osu(real("osu_bcast_v7.3_orfeo_256rank_H-slots.txt"));
  EXPECT_EQ(r.context.nranks, 256);
  EXPECT_EQ(r.context.nnodes, 2);
  EXPECT_EQ(source(r, "nranks_from"), "launcher command line");
}

// `salloc -n128 ...` then a bare `mpirun osu_bcast`: the allocation gives the ranks.
TEST(Launchers, SallocGivesTheRanksOfABareMpirun) {
  const auto r = read_osu(real("osu_bcast_v7.3_orfeo_salloc-n128.txt"));
  EXPECT_EQ(r.context.nranks, 128);
  EXPECT_EQ(source(r, "nranks_from"), "batch allocation (salloc/sbatch/#SBATCH/#PBS)");
}

// `$ salloc -C gpu -A class02 -N 2 ...` after a shell prompt: 2 nodes for osu_latency.
TEST(Launchers, SallocAfterAPromptGivesTheNodes) {
  const auto r = read_osu(real("osu_latency_cuda_v5.7_piz-daint_salloc-N2.txt"));
  EXPECT_EQ(r.context.nranks, 2);
  EXPECT_EQ(r.context.nnodes, 2);
  EXPECT_EQ(source(r, "nnodes_from"), "batch allocation (salloc/sbatch/#SBATCH/#PBS)");
}

// `mpirun --display-map` (pasted from a mail archive as HTML: "<p>&nbsp;Data for node: ...").
TEST(Launchers, OpenMpiJobMapGivesTheNodes) {
  const auto r = read_osu(real("osu_latency_cuda_v4.4.1_ompi-users-html_job-map.txt"));
  EXPECT_EQ(r.context.nnodes, 2);
  EXPECT_EQ(source(r, "nnodes_from"),
            "job map (Open MPI's Data for node:, Slurm's cpu-bind report)");
  EXPECT_EQ(r.measurements.front().method, "osu_latency");
}

// "# OSU MPI Bandwidth Test (Version 2.0)" and `mpirun -np 2 -ppn 1`.
TEST(Launchers, Omb2VersionTitleIsRead) {
  const auto r = read_osu(real("osu_bw_v2.0_qlogic_version-title.txt"));
  EXPECT_EQ(r.context.versions.at("osu"), "2.0");
  EXPECT_EQ(r.measurements.front().method, "osu_bw");
  EXPECT_EQ(r.context.nnodes, 2);
}

// osu_bibw then osu_latency in one file: two methods, each its own curve (no duplicate clash);
// OMB 7.1 prints '# Datatype' after the column header, which is no reason for a note.
TEST(Launchers, TwoOsuTestsInOneFileAreTwoMethods) {
  const std::string f = real("osu_bibw+latency_v7.1_eessi_two-tables.txt");
  const auto r = read_osu(f);
  std::set<std::string> methods;
  for (const auto &m : r.measurements) {
    EXPECT_EQ(m.op, Op::sendrecv);
    methods.insert(m.method);
  }
  EXPECT_EQ(methods, (std::set<std::string>{"osu_bibw", "osu_latency"}));
  EXPECT_FALSE(any_contains(r.notes, "no '# Datatype:' line"));
  std::vector<RecordSet> sets(1);
  sets[0].contexts.push_back(r.context);
  for (const auto &m : r.measurements) {
    sets[0].measurements.push_back(m);
    sets[0].context_of.push_back(0);
    sets[0].origin.push_back(f);
  }
  EXPECT_TRUE(drop_duplicate_measurements(sets).empty()); // 1 B of bibw is not 1 B of latency
}

// A sendrecv_perf table without banner or command line: redop prints "sum" as for AllReduce, but
// the in-place #wrong is N/A (SendRecv has no in-place check).
TEST(Launchers, SendRecvToldFromAllReduceByTheInPlaceCheck) {
  const auto r = read_nccl_tests(real("a40_nccl-tests_2node_issue214_excerpt-5rows.txt"));
  EXPECT_EQ(r.measurements.front().op, Op::sendrecv);
  EXPECT_TRUE(any_contains(r.notes, "operation sendrecv told by the in-place #wrong column"));
  EXPECT_EQ(r.context.nnodes, 2); // Rank lines on gpu23 and gpu24
}

// No #wrong to tell them apart: AllReduce, with a warning naming SendRecv.
TEST(Launchers, AllReduceOrSendRecvUndecidedIsReadAsAllReduceWithAWarning) {
  const auto r = read_nccl_tests(write_tmp("launch_undecided.txt",
                                           "#  size   count   type  redop  root   time  algbw  "
                                           "busbw #wrong   time  algbw  busbw #wrong\n"
                                           "   1024     256  float    sum    -1  20.00   0.05   "
                                           "0.05    N/A  20.00   0.05   0.05    N/A\n"
                                           "1048576  262144  float    sum    -1 100.00  10.49  "
                                           "10.49    N/A 100.00  10.49  10.49    N/A\n"));
  EXPECT_EQ(r.measurements.front().op, Op::allreduce);
  EXPECT_TRUE(any_contains(r.warnings, "field 'op'", "pass --op sendrecv"));
}

// Synthetic: the shapes batch scripts state, each on the line a user would paste above the table.
TEST(Launchers, SbatchAndPbsDirectivesGiveTheShape) {
  const auto a = read_nccl_tests(write_tmp(
      "launch_sbatch.txt", std::string("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n"
                                       "srun all_reduce_perf -b 1K -e 1M -f 1024 -g 1\n") +
                               kAllReduceTable));
  EXPECT_EQ(a.context.nranks, 4 * 2);
  EXPECT_EQ(a.context.nnodes, 2);
  const auto b = read_osu(
      write_tmp("launch_pbs.txt", std::string("#PBS -l select=4:ncpus=64:mpiprocs=8\n"
                                              "mpiexec ./osu_allreduce -m 1024:1048576\n") +
                                      kOsuAllreduce));
  EXPECT_EQ(b.context.nranks, 32);
  EXPECT_EQ(b.context.nnodes, 4);
  EXPECT_EQ(source(b, "nranks_from"), "batch allocation (salloc/sbatch/#SBATCH/#PBS)");
  // aprun -n 16 -N 4: 4 per node, as Open MPI's -N.
  const auto c = read_osu(write_tmp(
      "launch_aprun.txt", std::string("aprun -n 16 -N 4 ./osu_allreduce\n") + kOsuAllreduce));
  EXPECT_EQ(c.context.nranks, 16);
  EXPECT_EQ(c.context.nnodes, 4);
  // srun -n 16 -N 4: 4 nodes.
  const auto d = read_osu(write_tmp(
      "launch_srun.txt", std::string("srun -n 16 -N 2 ./osu_allreduce\n") + kOsuAllreduce));
  EXPECT_EQ(d.context.nnodes, 2);
}

// TACC's ibrun (Frontera, Stampede, Lonestar; SDSC's Comet wraps mpirun_rsh the same way) is a
// launcher: `ibrun -n 48`, and without -n the Slurm allocation's tasks. It echoes what it runs
// as "IBRUN: Command string is [mpirun_rsh -np 48 ... ./osu_allreduce]" (the echo's layout as a
// Comet webinar's output shows it; the tables are synthetic). Before: "pass --nranks".
TEST(Launchers, IbrunAndItsBracketedCommandEchoGiveTheRanks) {
  const std::string table = "# OSU MPI Allreduce Latency Test v5.3\n"
                            "# Size       Avg Latency(us)\n"
                            "4                       5.36\n"
                            "8                       5.38\n";
  const auto echo = read_osu(write_tmp(
      "osu_ibrun_echo.txt", "IBRUN: Command string is [mpirun_rsh -np 48 -hostfile /tmp/0p4Nbx12u1 "
                            "-export-all /home/user/osu/osu_allreduce]\n\n" +
                                table));
  ASSERT_EQ(echo.measurements.size(), 2u);
  EXPECT_EQ(echo.context.nranks, 48);
  EXPECT_EQ(source(echo, "nranks_from"), "launcher command line");
  EXPECT_EQ(echo.context.command_line.find("mpirun_rsh -np 48"), 0u) << echo.context.command_line;
  const auto n =
      read_osu(write_tmp("osu_ibrun_n.txt", "login1$ ibrun -n 96 -o 0 ./osu_allreduce\n" + table));
  EXPECT_EQ(n.context.nranks, 96);
  // without -n: the allocation's tasks and nodes
  const auto alloc = read_osu(write_tmp(
      "osu_ibrun_alloc.txt", "#SBATCH -N 2\n#SBATCH -n 112\nibrun ./osu_allreduce\n" + table));
  EXPECT_EQ(alloc.context.nranks, 112);
  EXPECT_EQ(alloc.context.nnodes, 2);
}

// IBM's jsrun (LSF: Summit, Sierra, Lassen) counts resource sets: `-n 2 -a 6 -r 1` is 2 sets of
// 6 tasks, one set per host: 12 ranks on 2 nodes (synthetic tables). Before: -n read as 2 ranks.
TEST(Launchers, JsrunCountsResourceSetsTimesTasks) {
  const std::string table = "# OSU MPI Allreduce Latency Test v5.8\n"
                            "# Size       Avg Latency(us)\n"
                            "4                       5.36\n";
  const auto a =
      read_osu(write_tmp("osu_jsrun_a.txt", "jsrun -n 2 -a 6 -g 6 -r 1 ./osu_allreduce\n" + table));
  EXPECT_EQ(a.context.nranks, 12);
  EXPECT_EQ(a.context.nnodes, 2);
  const auto longopts = read_osu(
      write_tmp("osu_jsrun_long.txt",
                "jsrun --nrs 4 --tasks_per_rs 1 --rs_per_host 2 ./osu_allreduce\n" + table));
  EXPECT_EQ(longopts.context.nranks, 4);
  EXPECT_EQ(longopts.context.nnodes, 2);
  const auto np = read_osu(write_tmp("osu_jsrun_np.txt", "jsrun -p 8 ./osu_allreduce\n" + table));
  EXPECT_EQ(np.context.nranks, 8); // -p: tasks in all
}

// A scaling sweep pasted in one go (the layout of open-mpi/ompi PR #7735's osu_iallgather sweep,
// here with the blocking test; tables synthetic): each command's table ran with its own -n.
// Before: every table was read with the first command's 16 ranks. A script of commands followed
// by the outputs does not say which table ran with which: warned, the first's count kept.
TEST(Launchers, EachTableOfASweepTakesTheCommandBeforeIt) {
  const std::string t16 = "# OSU MPI Allgather Latency Test v5.3.2\n"
                          "# Size       Avg Latency(us)\n"
                          "1                     135.61\n";
  const std::string t24 = "# OSU MPI Allgather Latency Test v5.3.2\n"
                          "# Size       Avg Latency(us)\n"
                          "1                     184.28\n";
  const std::string f = write_tmp(
      "osu_sweep.txt",
      "$ mpirun -n 16 --map-by node ./mpi/collective/osu_allgather -m 1:1\n\n" + t16 +
          "\n$ mpirun -n 24 --map-by ppr:6:node ./mpi/collective/osu_allgather -m 1:1\n\n" + t24);
  const auto r = read_osu(f);
  ASSERT_EQ(r.measurements.size(), 2u);
  EXPECT_EQ(r.measurements[0].group.nranks, 16);
  EXPECT_EQ(r.measurements[0].bytes, 16u); // 1 B from each of 16 ranks
  EXPECT_EQ(r.measurements[1].group.nranks, 24);
  EXPECT_EQ(r.measurements[1].group.nnodes, 4); // ppr:6:node
  EXPECT_EQ(r.measurements[1].bytes, 24u);
  EXPECT_TRUE(r.warnings.size() == 1u && any_contains(r.warnings, "nnodes", "unknown"))
      << r.warnings.size(); // the first command gives no nodes; nothing about the ranks
  const auto script = read_osu(
      write_tmp("osu_script_first.txt",
                "mpirun -n 16 ./osu_allgather\nmpirun -n 24 ./osu_allgather\n" + t16 + t24));
  ASSERT_EQ(script.measurements.size(), 2u);
  EXPECT_EQ(script.measurements[1].group.nranks, 16);
  EXPECT_TRUE(any_contains(script.warnings, "field 'nranks'", "do not alternate with its tables"));
  // --nranks decides for every table
  IngestOptions o;
  o.nranks = 8;
  const auto forced = read_osu(f, o);
  EXPECT_EQ(forced.measurements[1].group.nranks, 8);
}

// Issue 19, Sec. 1: OSU logs as people paste them, read rather than refused (test inputs in
// tests/data/real-logs/, first line = source; `synthetic_*` reproduce a layout and say so).
// - pasted through a mail archive's HTML (`<p>...<br>` lines, escaped characters);
// - the rank count only in the launch line (srun -N2 over a backslash continuation, a wrapped
//   mpirun_rsh command, the command in its own block before the output);
// - two tests in one paste without their title lines, told apart by their column headers;
// - a vendor's docs page: each command in its own code fence, the results as Markdown tables;
// - a Flux job (`flux run -N4 --tasks-per-node=96`) whose page also times osu_barrier.
// Expected values are read off the files by eye.
#include "scalefit/ingest/ingest.hpp"

#include "helpers.hpp"

#include "scalefit/core/error.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

using namespace scalefit;
using namespace scalefit::ingest;
using scalefit::ingest::test::any_contains;
using scalefit::ingest::test::osu_size;
using scalefit::ingest::test::real;
using scalefit::ingest::test::source;
using scalefit::ingest::test::write_tmp;

// ---- 1. HTML paragraphs ----

// Every line in <p>...<br>, the first five rows in one paragraph split by <br>, spaces as &nbsp;,
// the launcher's "2>&1" escaped. Before: "no OSU result table found".
TEST(OsuPastes, MailArchiveHtmlParagraphsAreUnwrapped) {
  const std::string f = real("synthetic_osu_allreduce_v5.6.2_mail-archive_p-br-paragraphs.txt");
  const auto r = read_osu(f);
  ASSERT_EQ(r.measurements.size(), 21u); // sizes 1 .. 1048576
  EXPECT_EQ(r.measurements.front().op, Op::allreduce);
  EXPECT_EQ(r.context.versions.at("osu"), "5.6.2");
  EXPECT_EQ(r.context.nranks, 4); // mpirun -np 4, behind "&gt;&amp;"-escaped text
  EXPECT_EQ(r.context.nnodes, 2); // -ppn 2
  EXPECT_NE(r.context.command_line.find("2>&1"), std::string::npos) << r.context.command_line;
  const auto *m16 = osu_size(r, 16); // the 5th row of the one-line paragraph
  ASSERT_NE(m16, nullptr);
  EXPECT_DOUBLE_EQ(m16->time_us, 0.92);
  EXPECT_EQ(m16->extra.at("source_line").get<long>(), 8); // the file's line, not the piece's
  const auto *last = osu_size(r, 1048576);
  ASSERT_NE(last, nullptr);
  EXPECT_DOUBLE_EQ(last->time_us, 451.20);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
}

// Tags in any case and spelling (<P>, <BR/>, <br />, </p>) break lines, <pre> is no paragraph tag,
// and a bad row inside a <br>-joined line is named by the file's line number.
TEST(OsuPastes, HtmlEntitiesDecodeOnceAndDiagnosticsNameTheFileLine) {
  const std::string f =
      write_tmp("osu_html_bad_row.txt", "<p># OSU MPI Latency Test v7.4<br>\n"
                                        "<P># Size&nbsp;&nbsp;Latency (us)<BR/>\n"
                                        "<p>1&nbsp; 1.50<br />2&nbsp; oops<br>4 1.52</p>\n"
                                        "<pre>8 1.53</pre>\n");
  const auto r = read_osu(f);
  EXPECT_EQ(r.measurements.size(), 2u); // 1 and 4; "<pre>8" is no size
  EXPECT_TRUE(any_contains(r.warnings, f + ":3: field 'latency(us)'", "'oops'"));
}

// Archives that escape '#' as a numeric character reference (`&#35;`, `&#x23;`) read as the log;
// a reference to anything but printable ASCII is kept as written (here: text after a row, noted).
TEST(OsuPastes, NumericCharacterReferencesDecode) {
  const auto r = read_osu(write_tmp("osu_html_numeric.txt",
                                    "<p>&#35; OSU MPI Latency Test v7.4<br>\n"
                                    "<p>&#x23; Size&#160;&#160;Latency (us)<br>\n"
                                    "<p>1&nbsp; 1.50<br>2 1.51 &#1234;<br>4 1.52</p>\n"));
  ASSERT_EQ(r.measurements.size(), 3u);
  EXPECT_EQ(r.measurements.front().op, Op::sendrecv);
  EXPECT_DOUBLE_EQ(r.measurements[1].time_us, 1.51);
  EXPECT_DOUBLE_EQ(r.measurements.back().time_us, 1.52);
  EXPECT_TRUE(any_contains(r.notes, ":3:", "text after the row's 2 fields ignored ('&#1234;"));
}

// A note pasted after a row ("<-- here", "★←Drops from here" as in intel/mpi-benchmarks issue
// 37) keeps the row and is noted; a message in place of the figures is still no row, and a row
// of more numbers than columns is still refused.
TEST(OsuPastes, TextAfterARowIsIgnoredWithANote) {
  const auto r = read_osu(write_tmp("osu_annotated.txt", "# OSU MPI Latency Test v7.4\n"
                                                         "# Size          Latency (us)\n"
                                                         "1024                    2.47\n"
                                                         "2048                    3.79   <-- here\n"
                                                         "4096                    4.99 ★←Drops\n"
                                                         "8192                    7.28 7.30\n"
                                                         "16384  oops  11.75\n"));
  ASSERT_EQ(r.measurements.size(), 3u);
  EXPECT_DOUBLE_EQ(r.measurements[1].time_us, 3.79);
  EXPECT_DOUBLE_EQ(r.measurements[2].time_us, 4.99);
  EXPECT_TRUE(any_contains(r.notes, ":4:", "ignored ('<--"));
  EXPECT_TRUE(any_contains(r.warnings, ":6:", "expected 2 fields"));
  EXPECT_TRUE(any_contains(r.warnings, ":7:", "expected 2 fields"));
}

// ---- 3. ranks from the launch line ----

// `srun -N2 \` continued on the next line, no -n: one task per node, 2 ranks on 2 nodes. Before:
// refused ("pass --nranks").
TEST(OsuPastes, SrunNodesWithoutTasksStartOneTaskPerNode) {
  const auto r = read_osu(real("synthetic_osu_allreduce_v7.3_srun-N2-backslash.txt"));
  ASSERT_EQ(r.measurements.size(), 21u);
  EXPECT_EQ(r.context.nranks, 2);
  EXPECT_EQ(r.context.nnodes, 2);
  EXPECT_EQ(source(r, "nranks_from"),
            "launcher command line (srun -N without -n: one task per node)");
  EXPECT_NE(r.context.command_line.find("./osu_allreduce"), std::string::npos);
  // The allocation's task count is what srun inherits: it wins over the one-per-node default.
  const auto a = read_osu(write_tmp(
      "osu_srun_in_sbatch.txt", "#SBATCH --ntasks=8\nsrun -N2 ./osu_allreduce\n"
                                "# OSU MPI Allreduce Latency Test v7.3\n# Size Avg Latency(us)\n"
                                "1024 20.00\n"));
  EXPECT_EQ(a.context.nranks, 8);
  EXPECT_EQ(a.context.nnodes, 2);
  // -N with --ntasks-per-node: nodes x per node.
  const auto b = read_osu(write_tmp(
      "osu_srun_per_node.txt", "srun -N 2 --ntasks-per-node=4 ./osu_allreduce\n"
                               "# OSU MPI Allreduce Latency Test v7.3\n# Size Avg Latency(us)\n"
                               "1024 20.00\n"));
  EXPECT_EQ(b.context.nranks, 8);
  EXPECT_EQ(b.context.nnodes, 2);
}

// `mpirun_rsh -np 4 gpu01 gpu01 gpu02 gpu02 MV2_...=...` wrapped before the binary's path: the
// two lines are one command; -np gives the ranks, the host names the nodes.
TEST(OsuPastes, WrappedMpirunRshCommandGivesRanksAndNodes) {
  const auto r = read_osu(real("synthetic_osu_alltoall_v5.9_mpirun_rsh-wrapped-command.txt"));
  ASSERT_EQ(r.measurements.size(), 21u);
  EXPECT_EQ(r.measurements.front().op, Op::alltoall);
  EXPECT_EQ(r.context.nranks, 4);
  EXPECT_EQ(r.context.nnodes, 2);
  EXPECT_EQ(r.measurements.front().bytes, 4u); // 1 B per peer x 4 ranks
  EXPECT_EQ(source(r, "nranks_from"), "launcher command line");
  EXPECT_EQ(source(r, "nnodes_from"), "launcher command line");
  EXPECT_EQ(r.context.command_line.rfind("mpirun_rsh -np 4", 0), 0u) << r.context.command_line;
}

// The command in its own Markdown block, prose and a fence between it and the output; and
// `--ntasks=16` spelled long. A launcher line that a '#' line follows is not joined with a later
// binary: nothing says the ranks, and the refusal names --nranks.
TEST(OsuPastes, CommandInASeparateBlockAndRefusalWhenNothingSays) {
  const auto r = read_osu(write_tmp("osu_separate_block.txt",
                                    "I ran\n```\nsrun --ntasks=16 --ntasks-per-node=8 "
                                    "`./osu_bcast -m 1:1024`\n```\nand got\n```\n"
                                    "# OSU MPI Broadcast Latency Test v7.2\n"
                                    "# Size       Avg Latency(us)\n1024 5.10\n```\n"));
  EXPECT_EQ(r.context.nranks, 16);
  EXPECT_EQ(r.context.nnodes, 2);
  try {
    read_osu(write_tmp("osu_no_ranks.txt", "mpirun --bind-to core\n# note\n./osu_allreduce\n"
                                           "# OSU MPI Allreduce Latency Test v7.3\n"
                                           "# Size Avg Latency(us)\n1024 20.00\n"));
    FAIL() << "expected InputError";
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "nranks");
    EXPECT_EQ(e.line(), 5);
    EXPECT_NE(std::string(e.what()).find("--nranks"), std::string::npos) << e.what();
  }
}

// ---- 4. two tests without titles ----

// osu_latency then osu_bibw, each after its command, no title lines: two methods, the bibw times
// counted for both directions (2 * size / bandwidth), nothing merged.
TEST(OsuPastes, TwoUntitledTablesAreTwoMethods) {
  const auto r = read_osu(real("synthetic_osu_latency+bibw_v7.1_no-titles.txt"));
  std::map<std::string, int> per_method;
  for (const auto &m : r.measurements)
    ++per_method[m.method];
  EXPECT_EQ(per_method, (std::map<std::string, int>{{"osu_latency", 21}, {"osu_bibw", 21}}));
  const auto *lat = osu_size(r, 1048576, "osu_latency");
  ASSERT_NE(lat, nullptr);
  EXPECT_DOUBLE_EQ(lat->time_us, 47.32);
  const auto *bi = osu_size(r, 1048576, "osu_bibw");
  ASSERT_NE(bi, nullptr);
  EXPECT_DOUBLE_EQ(bi->time_us, 2.0 * 1048576 / 46313.37);
  EXPECT_EQ(r.context.nnodes, 2); // ppr:1:node
  const auto &tables = r.context.source.at("tables");
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_EQ(tables.at(1).at("test"), "osu_bibw");
  EXPECT_EQ(tables.at(1).at("test_from"), "command line");
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
}

// Without titles or commands the headers still split the tables; a bandwidth table is read as
// osu_bw with a warning (osu_bibw's header is the same); a collective's header names no op.
TEST(OsuPastes, UntitledHeadersWithoutCommands) {
  const std::string f =
      write_tmp("osu_untitled.txt", "# Size          Latency (us)\n1 1.66\n1024 2.31\n\n"
                                    "# Size      Bandwidth (MB/s)\n1 2.87\n1024 2975.75\n");
  const auto r = read_osu(f);
  std::set<std::string> methods;
  for (const auto &m : r.measurements)
    methods.insert(m.method);
  EXPECT_EQ(methods, (std::set<std::string>{"osu_latency", "osu_bw"}));
  EXPECT_TRUE(any_contains(r.warnings, f + ":5: field 'test'", "read as osu_bw"));
  EXPECT_DOUBLE_EQ(osu_size(r, 1024, "osu_bw")->time_us, 1024 / 2975.75);
  try {
    read_osu(write_tmp("osu_untitled_coll.txt", "# Size  Avg Latency(us)\n1024 20.00\n"));
    FAIL() << "expected InputError";
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "test");
    EXPECT_NE(std::string(e.what()).find("--op"), std::string::npos) << e.what();
  }
}

// A binary named in prose is not the command line; one after a prompt, settings or a wrapper
// with options is, from the first word after the prompt (before, the prose phrase "osu_latency
// with -d cuda today" was recorded as the command).
TEST(OsuPastes, CommandLineStartsAfterThePromptAndNeverInProse) {
  const std::string table = "# OSU MPI Latency Test v7.1\n# Size          Latency (us)\n"
                            "1                       1.10\n2                       1.12\n";
  const auto command = [&](const std::string &name, const std::string &first_line) {
    return read_osu(write_tmp(name, first_line + "\n" + table)).context.command_line;
  };
  EXPECT_EQ(command("prose.txt", "I ran osu_latency with -d cuda today"), "");
  EXPECT_EQ(command("wrapper.txt", "$ numactl -N 0 ./osu_latency"), "numactl -N 0 ./osu_latency");
  EXPECT_EQ(command("settings.txt", "user@login:~/omb$ MV2_USE_CUDA=1 ./osu_latency D D"),
            "MV2_USE_CUDA=1 ./osu_latency D D");
  EXPECT_EQ(command("bare.txt", "./osu_latency"), "./osu_latency");
  // a remark that mentions a launcher further on is not a command either
  EXPECT_EQ(command("remark.txt", "# source: a post whose srun line ran osu_latency"), "");
}

// ---- 5. Markdown tables ----

// Azure's HC-series performance page (2019): `mpirun_rsh -np 2 -hostfile ...` in a code fence,
// the title in prose ("OSU MPI Bandwidth Test v5.4.3."), the results as a Markdown table with an
// extra Gb/s column. Before: "no OSU result table found". Its perftest table (#bytes) is no OSU
// table; its osu_latency table (three MPI libraries side by side) is not read, and said so.
TEST(OsuPastes, MarkdownTablesOfADocsPage) {
  const std::string f =
      real("osu_latency+bw_v5.4.3_azure-hc-docs_mpirun_rsh-hostfile_markdown-tables.md");
  const auto r = read_osu(f);
  ASSERT_EQ(r.measurements.size(), 22u); // osu_bw, 2 B .. 4 MiB
  for (const auto &m : r.measurements)
    EXPECT_EQ(m.method, "osu_bw");
  EXPECT_EQ(r.context.versions.at("osu"), "5.4.3"); // the prose's full stop is not the version
  EXPECT_EQ(r.context.nranks, 2);
  // the file's first osu_* command (osu_latency's), as for every paste
  EXPECT_EQ(r.context.command_line.find("./bin/mpirun_rsh -np 2 -hostfile"), 0u)
      << r.context.command_line;
  // the hosts are in ~/hostfile; "CORE" of MV2_CPU_MAPPING=[INSERT CORE #] is no host
  EXPECT_EQ(source(r, "nnodes_from"), "unknown (assumed 1)");
  const auto *m2m = osu_size(r, 2097152, "osu_bw");
  ASSERT_NE(m2m, nullptr);
  EXPECT_DOUBLE_EQ(m2m->time_us, 2097152 / 12038.7);
  EXPECT_EQ(m2m->extra.at("source_line").get<long>(), 107); // the file's line
  EXPECT_TRUE(any_contains(r.warnings, f + ":56: field 'test'", "no OSU table"));
  EXPECT_EQ(r.warnings.size(), 2u); // that, and the unknown node count
}

// Alignment rows, cells without outer bars, a '#' title: the same table as OMB prints it. A
// collective's ranks from `mpirun_rsh -np 4 -hostfile hf`, its nodes unknown (not 1 from a word).
TEST(OsuPastes, MarkdownRowsReadAsTheirLogLines) {
  const std::string f =
      write_tmp("osu_md_allreduce.txt", "`mpirun_rsh -np 4 -hostfile hf ./osu_allreduce`\n\n"
                                        "# OSU MPI Allreduce Latency Test v7.3\n\n"
                                        "| # Size | Avg Latency(us) |\n|:------|--------:|\n"
                                        "| 1024 | 20.00 |\n|2048|21.50\n| 4096 | oops |\n");
  const auto r = read_osu(f);
  ASSERT_EQ(r.measurements.size(), 2u);
  EXPECT_EQ(r.measurements.front().op, Op::allreduce);
  EXPECT_EQ(r.context.nranks, 4);
  EXPECT_EQ(source(r, "nnodes_from"), "unknown (assumed 1)");
  EXPECT_DOUBLE_EQ(osu_size(r, 2048)->time_us, 21.50);
  EXPECT_TRUE(any_contains(r.warnings, f + ":9: field 'avglatency(us)'", "'oops'"));
}

// A collective run under Flux: the ranks and nodes are only in `flux run -N4
// --tasks-per-node=96` (384 ranks on 4 nodes; Flux's -N is nodes, as Slurm's), and the page also
// times osu_barrier, one figure with no message size: skipped with a warning, not a refusal of the
// paste. Before: "unsupported OSU test 'Barrier Latency'", exit 2.
TEST(OsuPastes, FluxRunGivesRanksAndNodesAndBarrierIsSkipped) {
  const std::string f =
      real("osu_barrier+allreduce_v5.8_usernetes-azure_flux-run-N4-tasks-per-node96.md");
  const auto r = read_osu(f);
  ASSERT_EQ(r.measurements.size(), 19u); // osu_allreduce, 4 B .. 1 MiB
  for (const auto &m : r.measurements)
    EXPECT_EQ(m.op, Op::allreduce);
  EXPECT_EQ(r.context.nranks, 384);
  EXPECT_EQ(r.context.nnodes, 4);
  EXPECT_EQ(source(r, "nranks_from"), "launcher command line");
  EXPECT_EQ(source(r, "nnodes_from"), "launcher command line");
  EXPECT_DOUBLE_EQ(osu_size(r, 1048576)->time_us, 2159.77);
  EXPECT_TRUE(any_contains(r.warnings, f + ":11: field 'test'", "no message sizes"));
  // the record's title and command are the allreduce's, not the skipped barrier's
  EXPECT_NE(r.context.command_line.find("mpi/collective/osu_allreduce"), std::string::npos)
      << r.context.command_line;
  EXPECT_EQ(r.context.command_line.find("flux run -N4 --tasks-per-node=96"), 0u);
  // `flux run -N2` alone: one task per node, as `srun -N2`
  const std::string g = write_tmp("osu_flux_n2.txt", "$ flux run -N2 ./osu_allreduce\n"
                                                     "# OSU MPI Allreduce Latency Test v7.3\n"
                                                     "# Size       Avg Latency(us)\n"
                                                     "1024                   20.00\n");
  const auto two = read_osu(g);
  EXPECT_EQ(two.context.nranks, 2);
  EXPECT_EQ(two.context.nnodes, 2);
}

// ---- 6. A GitHub issue's paste: Markdown-escaped '#', OMB 7.5's tail latencies, alltoallv ----

// Aurora's MPICH team pasted osu_alltoallv (OMB 7.5, -z) into a GitHub issue without a code
// fence: every comment line is stored as "\# ...", and the ranks are only in
// `mpiexec --np 384 --ppn 12`. Before: "no OSU result table found", then "unsupported OSU test".
TEST(OsuPastes, MarkdownEscapedHashesTailLatenciesAndAlltoallv) {
  const std::string f =
      real("osu_alltoallv_v7.5_aurora_mpiexec-np384-ppn12_markdown-escaped-hash_tail-lat.txt");
  const auto r = read_osu(f);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  ASSERT_EQ(r.measurements.size(), 1u);
  const auto &m = r.measurements.front();
  EXPECT_EQ(m.op, Op::alltoallv);
  EXPECT_EQ(m.method, "uniform"); // OMB's counts are all `size`: scalefit-bench's uniform matrix
  EXPECT_EQ(m.group.nranks, 384);
  EXPECT_EQ(m.group.nnodes, 32);
  EXPECT_EQ(m.group.ranks_per_node, 12);
  EXPECT_EQ(m.bytes, 4096u * 384u); // OSU's size is the block sent to each peer
  EXPECT_DOUBLE_EQ(m.time_us, 467.38);
  EXPECT_DOUBLE_EQ(m.extra.at("p50_us").get<double>(), 407.18);
  EXPECT_DOUBLE_EQ(m.extra.at("p90_us").get<double>(), 584.22);
  EXPECT_DOUBLE_EQ(m.extra.at("p99_us").get<double>(), 634.30);
  EXPECT_DOUBLE_EQ(m.extra.at("min_us").get<double>(), 460.43);
  EXPECT_EQ(source(r, "nranks_from"), "launcher command line");
  // an indented "\#" reads as '#' too (the title here), and the command gives the ranks
  const std::string g =
      write_tmp("osu_escaped_mid.txt", "mpirun -np 4 ./osu_allreduce\n"
                                       "  \\# OSU MPI Allreduce Latency Test v7.3\n"
                                       "\\# Size       Avg Latency(us)\n"
                                       "1024                   20.00\n");
  const auto four = read_osu(g);
  ASSERT_EQ(four.measurements.size(), 1u);
  EXPECT_EQ(four.measurements.front().op, Op::allreduce);
  EXPECT_EQ(four.measurements.front().group.nranks, 4);
}

// ---- 7. OMB's non-blocking collectives, a sweep of runs in one paste ----

// Open MPI's developers pasted an osu_iallgather sweep (16, 24, 28 ranks on 4 nodes) into a
// pull request: each run's ranks only in its own mpirun line, the time in "Pure Comm.(us)".
// Before: "unsupported OSU test 'Non-blocking Allgather Latency'".
TEST(OsuPastes, NonBlockingSweepEachRunWithItsOwnRanks) {
  const std::string f = real("osu_iallgather_v5.3.2_ompi-pr7735_sweep-n16-24-28_nonblocking.txt");
  const auto r = read_osu(f);
  ASSERT_EQ(r.measurements.size(), 3u);
  const int ranks[] = {16, 24, 28};
  const double pure[] = {135.61, 184.28, 219.84};
  for (std::size_t i = 0; i < 3; ++i) {
    const auto &m = r.measurements[i];
    EXPECT_EQ(m.op, Op::allgather);
    EXPECT_EQ(m.method, "nonblocking"); // a curve apart from the blocking allgather's
    EXPECT_EQ(m.group.nranks, ranks[i]);
    EXPECT_EQ(m.bytes, static_cast<std::uint64_t>(ranks[i])); // 1 B from each rank
    EXPECT_DOUBLE_EQ(m.time_us, pure[i]);
  }
  EXPECT_DOUBLE_EQ(r.measurements[0].extra.at("overall_us").get<double>(), 216.50);
  EXPECT_DOUBLE_EQ(r.measurements[0].extra.at("compute_us").get<double>(), 140.95);
  EXPECT_DOUBLE_EQ(r.measurements[0].extra.at("overlap_pct").get<double>(), 44.29);
  EXPECT_EQ(r.measurements[0].extra.at("osu_test"), "osu_iallgather");
  // "on 4 nodes" is prose: the node count is unknown, and said
  EXPECT_TRUE(any_contains(r.warnings, "nnodes", "unknown"));
  // a table without the title is told by its binary (osu_iallreduce) and its Pure Comm. column
  const auto untitled = read_osu(write_tmp(
      "osu_iallreduce_untitled.txt",
      "mpirun -np 8 ./osu_iallreduce\n"
      "# Size           Overall(us)       Compute(us)    Pure Comm.(us)        Overlap(%)\n"
      "4                      30.00             20.00             18.00             66.67\n"));
  ASSERT_EQ(untitled.measurements.size(), 1u);
  EXPECT_EQ(untitled.measurements[0].op, Op::allreduce);
  EXPECT_EQ(untitled.measurements[0].method, "nonblocking");
  EXPECT_DOUBLE_EQ(untitled.measurements[0].time_us, 18.0);
}

// Options of `scalefit-bench comm`: size sweeps (-f, -i, suffixes), zero-count skipping,
// validation.
#include "scalefit/bench/options.hpp"
#include "scalefit/core/error.hpp"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <sstream>

using namespace scalefit;
using namespace scalefit::bench;

TEST(SizeSweep, FactorDoublesUpToMaxInclusive) {
  EXPECT_EQ(size_sweep(8, 64, 2, 0), (std::vector<std::uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(size_sweep(8, 100, 4, 0), (std::vector<std::uint64_t>{8, 32}));
  EXPECT_EQ(size_sweep(8, 8, 2, 0), (std::vector<std::uint64_t>{8}));
}

TEST(SizeSweep, StepBytesAddsAConstant) {
  EXPECT_EQ(size_sweep(100, 400, 1, 100), (std::vector<std::uint64_t>{100, 200, 300, 400}));
  EXPECT_EQ(size_sweep(0, 10, 1, 5), (std::vector<std::uint64_t>{0, 5, 10}));
}

TEST(SizeSweep, RejectsSweepsThatDoNotAdvance) {
  EXPECT_THROW(size_sweep(0, 64, 2, 0), InputError);
  EXPECT_THROW(size_sweep(8, 64, 1, 0), InputError);
  EXPECT_THROW(size_sweep(64, 8, 2, 0), InputError);
}

TEST(ParseArgs, SuffixesAre1024Based) {
  const CommOptions o = parse_comm_args({"-b", "1K", "-e", "64M", "-f", "4"});
  EXPECT_EQ(o.min_bytes, 1024u);
  EXPECT_EQ(o.max_bytes, 64u * 1024 * 1024);
  EXPECT_EQ(o.step_factor, 4u);
  const CommOptions g = parse_comm_args({"-b", "1G", "-e", "2G"});
  EXPECT_EQ(g.min_bytes, 1073741824u);
}

TEST(ParseArgs, StepBytesOption) {
  const CommOptions o = parse_comm_args({"-b", "1K", "-e", "4K", "-i", "1K"});
  EXPECT_EQ(o.step_bytes, 1024u);
  EXPECT_EQ(size_sweep(o.min_bytes, o.max_bytes, o.step_factor, o.step_bytes).size(), 4u);
}

TEST(ParseArgs, OpsAllAndLists) {
  EXPECT_EQ(parse_comm_args({"--ops", "all"}).ops, all_ops()); // 8 ops, alltoallv included
  EXPECT_EQ(all_ops().size(), 8u);
  const CommOptions o = parse_comm_args({"--ops", "allreduce,sendrecv", "-d", "float,double"});
  ASSERT_EQ(o.ops.size(), 2u);
  EXPECT_EQ(o.ops[1], Op::sendrecv);
  ASSERT_EQ(o.dtypes.size(), 2u);
  EXPECT_EQ(o.dtypes[1], DType::float64);
}

TEST(ParseArgs, BareCheckFlagMeansOne) {
  EXPECT_TRUE(parse_comm_args({"-c", "-b", "8"}).check);
  EXPECT_FALSE(parse_comm_args({"-c", "0"}).check);
  EXPECT_TRUE(parse_comm_args({"-c", "1"}).check);
  EXPECT_FALSE(parse_comm_args({}).check);
}

TEST(ParseArgs, GroupsAndEmulatedNodes) {
  const CommOptions o = parse_comm_args({"--groups", "world,intra,inter", "--emulate-nodes", "2"});
  EXPECT_EQ(o.groups.size(), 3u);
  EXPECT_EQ(o.emulate_nodes, 2);
}

namespace {
std::string field_of_error(const std::vector<std::string> &args) {
  try {
    parse_comm_args(args);
  } catch (const InputError &e) {
    return e.field();
  }
  return "(no error)";
}
} // namespace

TEST(ParseArgs, BadInputNamesTheArgument) {
  EXPECT_EQ(field_of_error({"-b", "1M", "-e", "8"}), "-b");
  EXPECT_EQ(field_of_error({"-f", "1"}), "-f");
  EXPECT_EQ(field_of_error({"-f", "0.5"}), "-f");
  EXPECT_EQ(field_of_error({"-f", "2", "-i", "8"}), "-f");
  EXPECT_EQ(field_of_error({"-i", "0"}), "-i");
  EXPECT_EQ(field_of_error({"--ops", "allreduce,foo"}), "--ops");
  EXPECT_EQ(field_of_error({"-d", "float17"}), "-d");
  EXPECT_EQ(field_of_error({"-o", "xor"}), "-o");
  EXPECT_EQ(field_of_error({"--groups", "rack"}), "--groups");
  EXPECT_EQ(field_of_error({"--backend", "gloo"}), "--backend");
  EXPECT_EQ(field_of_error({"-b", "12Q"}), "-b");
  EXPECT_EQ(field_of_error({"--resume"}), "--resume");
  EXPECT_EQ(field_of_error({"--min-time", "1", "--max-time", "0.5"}), "--min-time");
  EXPECT_EQ(field_of_error({"--min-samples", "10", "--max-samples", "5"}), "--max-samples");
  EXPECT_EQ(field_of_error({"-c", "2"}), "-c");
  EXPECT_EQ(field_of_error({"--placement", "sideways"}), "--placement");
  EXPECT_EQ(field_of_error({"--stat", "mode"}), "--stat");
  EXPECT_EQ(field_of_error({"--timer", "sundial"}), "--timer");
  EXPECT_EQ(field_of_error({"--budget", "-1"}), "--budget");
  EXPECT_EQ(field_of_error({"--timeout", "-3"}), "--timeout");
  EXPECT_EQ(field_of_error({"--max-ci", "1.5"}), "--max-ci");
  EXPECT_EQ(field_of_error({"--max-time", "nan"}), "--max-time");
  EXPECT_EQ(field_of_error({"--budget", "inf"}), "--budget");
  // -i 1 -e 8G would be 8 G sizes (the OOM of the audit): refused before any is stored.
  EXPECT_EQ(field_of_error({"-b", "1", "-e", "8G", "-i", "1"}), "-i");
  EXPECT_EQ(field_of_error({"-b", "8", "-e", "64"}), "(no error)");
}

TEST(ParseArgs, UnknownFlagIsAParseError) {
  EXPECT_THROW(parse_comm_args({"--no-such-flag"}), CLI::ParseError);
}

TEST(SizePoints, SkipsSizesWhoseCountRoundsToZero) {
  // allgather on 4 ranks of float: per-rank count = bytes / 16; 8 B -> 0 (skipped).
  const auto pts = op_size_points(Op::allgather, {8, 16, 64}, DType::float32, 4);
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[0].bytes, 16u);
  EXPECT_EQ(pts[0].count, 1u);
  EXPECT_EQ(pts[1].bytes, 64u);
  EXPECT_EQ(pts[1].count, 4u);
  // allreduce divides by the type size only: 2 B of float -> 0 (skipped), 8 B -> 2 elements.
  const auto ar = op_size_points(Op::allreduce, {2, 8}, DType::float32, 4);
  ASSERT_EQ(ar.size(), 1u);
  EXPECT_EQ(ar[0].count, 2u);
}

TEST(SizePoints, SizesRoundingToTheSameEffectiveSizeAreMeasuredOnce) {
  // 16, 20 and 24 B on 4 ranks of float all round to 16 B (1 element per rank).
  const auto pts = op_size_points(Op::alltoall, {16, 20, 24, 32}, DType::float32, 4);
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[0].bytes, 16u);
  EXPECT_EQ(pts[1].bytes, 32u);
}

TEST(ParseArgs, PlacementStatTimerBudgetTimeout) {
  const CommOptions d = parse_comm_args({});
  ASSERT_EQ(d.placements.size(), 1u); // out of place by default: what users ask for
  EXPECT_EQ(d.placements[0], Placement::out_of_place);
  EXPECT_EQ(d.statistic, Statistic::median); // robust to preempted samples (issue 20)
  EXPECT_FALSE(d.sync_barrier);               // nccl-tests' back-to-back timing
  EXPECT_EQ(parse_comm_args({"--nccl-tests"}).statistic, Statistic::mean); // nccl-tests' average
  EXPECT_EQ(parse_comm_args({"--nccl-tests", "--stat", "median"}).statistic, Statistic::median);
  EXPECT_TRUE(parse_comm_args({"--sync", "barrier"}).sync_barrier);
  EXPECT_THROW(parse_comm_args({"--sync", "sometimes"}), InputError);
  EXPECT_THROW(parse_comm_args({"--backend", "nccl", "--sync", "barrier"}), InputError);
  EXPECT_FALSE(d.events_timer);
  EXPECT_FALSE(d.hot);
  EXPECT_EQ(parse_comm_args({"--placement", "both"}).placements.size(), 2u);
  EXPECT_EQ(parse_comm_args({"--placement", "in"}).placements[0], Placement::in_place);
  EXPECT_EQ(parse_comm_args({"--stat", "median"}).statistic, Statistic::median);
  EXPECT_TRUE(parse_comm_args({"--timer", "events"}).events_timer);
  EXPECT_TRUE(parse_comm_args({"--hot"}).hot);
  const CommOptions b = parse_comm_args({"--budget", "20", "--timeout", "2"});
  EXPECT_DOUBLE_EQ(b.budget_s, 20);
  EXPECT_DOUBLE_EQ(b.timeout_s, 2);
  EXPECT_FALSE(b.max_time_given);
  EXPECT_TRUE(parse_comm_args({"--max-time", "0.5"}).max_time_given);
}

namespace {
/// Every field of the options, as text, to compare two parses.
std::string describe(const CommOptions &o) {
  std::ostringstream s;
  for (Op op : o.ops)
    s << op_name(op) << ",";
  s << "|" << o.backend << "|" << o.min_bytes << "|" << o.max_bytes << "|" << o.step_factor << "|"
    << o.step_bytes << "|";
  for (DType t : o.dtypes)
    s << dtype_name(t) << ",";
  s << "|" << o.all_dtypes << "|" << redop_name(o.redop) << "|" << o.root << "|"
    << o.warmup_iters << "|" << o.fixed_samples << "|" << o.batch << "|" << o.check << "|"
    << o.graph_launches << "|" << o.min_time_s << "|" << o.max_time_s << "|" << o.max_ci << "|"
    << o.max_noise << "|" << statistic_name(o.statistic) << "|" << o.budget_s << "|";
  for (Placement p : o.placements)
    s << placement_name(p) << ",";
  s << "|" << o.hot << "|" << o.events_timer << "|" << o.timeout_s << "|" << o.min_samples << "|"
    << o.max_samples << "|" << o.batch_time_us << "|";
  for (GroupKind g : o.groups)
    s << group_kind_name(g) << ",";
  s << "|" << o.emulate_nodes << "|" << o.out << "|" << o.resume << "|" << o.system << "|"
    << o.baseline;
  return s.str();
}
} // namespace

// What --help shows as an option's default is what the option does when absent: passing the
// shown value explicitly must change nothing (the audit found "-c,--check INT=1" beside
// "0 (default)"). Every option with a shown default is tried.
TEST(ParseArgs, HelpDefaultsAgreeWithBehaviour) {
  CLI::App app{"comm"};
  RawCommArgs raw;
  add_comm_options(app, raw);
  const std::string absent = describe(parse_comm_args({}));
  int tried = 0;
  for (const CLI::Option *opt : app.get_options()) {
    std::string shown = opt->get_default_str();
    if (shown.empty())
      continue;
    if (shown.front() == '[' && shown.back() == ']')
      shown = shown.substr(1, shown.size() - 2); // a list: CLI11 shows [a,b]
    const std::string name = opt->get_lnames().empty() ? "-" + opt->get_snames().front()
                                                        : "--" + opt->get_lnames().front();
    SCOPED_TRACE(name + " " + shown);
    EXPECT_EQ(describe(parse_comm_args({name, shown})), absent);
    ++tried;
  }
  EXPECT_GE(tried, 20);
  // -c shows no default value (a bare -c means 1) and says the default in words.
  const std::string help = app.help();
  const auto at = help.find("-c,--check");
  ASSERT_NE(at, std::string::npos) << help;
  const std::string line = help.substr(at, help.find('\n', at) - at);
  EXPECT_EQ(line.find('='), std::string::npos) << line;
  EXPECT_NE(line.find("(default 0)"), std::string::npos) << line;
  EXPECT_FALSE(parse_comm_args({}).check);
}

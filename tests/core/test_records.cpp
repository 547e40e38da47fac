#include "scalefit/core/error.hpp"
#include "scalefit/core/records.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace scalefit;

namespace {
// Per process and test: ctest runs each test as its own process, in parallel (-j), and two
// tests writing one fixed /tmp name failed each other (CI flake, 2026-11-28).
std::string temp_path(const std::string &name) {
  const auto *test = ::testing::UnitTest::GetInstance()->current_test_info();
  auto p = std::filesystem::temp_directory_path() /
           ("scalefit_test_" + std::to_string(::getpid()) + "_" +
            (test ? std::string(test->name()) + "_" : std::string()) + name);
  std::filesystem::remove(p);
  return p.string();
}
}  // namespace

TEST(Records, JsonlRoundTripKeepsEveryField) {
  ContextRecord c;
  c.system = "local";
  c.backend = "mpi";
  c.nranks = 4;
  c.nnodes = 2;
  c.ranks_per_node = 2;
  c.hosts = {"a", "b"};
  c.versions = {{"mpi", "Open MPI v4.1.4"}};
  c.env = {{"NCCL_DEBUG", "INFO"}};
  MeasurementRecord m;
  m.op = Op::reducescatter;
  m.group = {"inter", 2, 2, 1};
  m.dtype = DType::float64;
  m.placement = Placement::in_place;
  m.bytes = 1 << 20;
  m.count = m.bytes / 8;
  m.time_us = 12.5;
  m.algbw_gbps = 83.886;
  m.busbw_gbps = 41.943;
  m.wrong = 0;
  m.stats = summarize(std::vector<double>{12, 13});
  m.iters_per_sample = 10;
  m.samples_us = {12, 13};
  const std::string path = temp_path("roundtrip.jsonl");
  {
    JsonlWriter w(path);
    w.write(to_json(c));
    w.write(to_json(m));
  }
  const RecordSet set = read_records(path);
  ASSERT_EQ(set.contexts.size(), 1u);
  ASSERT_EQ(set.measurements.size(), 1u);
  EXPECT_EQ(set.contexts[0].hosts, c.hosts);
  EXPECT_EQ(set.contexts[0].env.at("NCCL_DEBUG"), "INFO");
  const MeasurementRecord &r = set.measurements[0];
  EXPECT_EQ(r.key(), m.key());
  EXPECT_EQ(r.group, m.group);
  EXPECT_DOUBLE_EQ(r.time_us, 12.5);
  EXPECT_EQ(r.wrong, 0);
  ASSERT_TRUE(r.stats.has_value());
  EXPECT_DOUBLE_EQ(r.stats->median, 12.5);
  EXPECT_EQ(r.samples_us, m.samples_us);
  EXPECT_EQ(set.origin[0], path + ":2");
  EXPECT_TRUE(r.method.empty());
}

TEST(Records, MethodIsPartOfTheKeyAndValidated) {
  MeasurementRecord m;
  m.op = Op::sendrecv;
  m.group = {"world", 2, 2, 1};
  m.dtype = DType::int8;
  m.bytes = 1024;
  m.time_us = 3;
  MeasurementRecord bw = m;
  bw.method = "osu_bw";
  EXPECT_NE(m.key(), bw.key()); // one point of osu_latency and one of osu_bw are two curves
  const auto j = to_json(bw);
  EXPECT_EQ(j.at("method"), "osu_bw");
  EXPECT_FALSE(to_json(m).contains("method"));
  EXPECT_EQ(measurement_from_json(j).key(), bw.key());
  auto bad = j;
  bad["method"] = "osu bw\n";
  try {
    measurement_from_json(bad, "m.jsonl", 3);
    FAIL() << "expected InputError";
  } catch (const InputError &e) {
    EXPECT_NE(std::string(e.what()).find("m.jsonl:3: field 'method'"), std::string::npos) << e.what();
  }
}

TEST(Records, MalformedLinesNameFileLineAndField) {
  const std::string path = temp_path("bad.jsonl");
  {
    std::ofstream o(path);
    o << R"({"type":"context","schema":"scalefit.comm/1"})" << "\n";
    o << R"({"type":"measurement","op":"allreduce","group":{"kind":"world","nranks":2},"dtype":"float","bytes":8,"time_us":"fast"})"
      << "\n";
  }
  try {
    read_records(path);
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.field(), "time_us");
    EXPECT_NE(std::string(e.what()).find(path + ":2"), std::string::npos);
  }
  {
    std::ofstream o(path);
    o << "{not json\n";
  }
  EXPECT_THROW(read_records(path), InputError);
  {
    std::ofstream o(path);
    o << R"({"type":"measurement","op":"allreduce"})" << "\n";
  }
  EXPECT_THROW(read_records(path), InputError);
  EXPECT_THROW(read_records(path + ".missing"), InputError);
}

namespace {
/// Reads a two-line file (a context, then `measurement`) and returns the InputError it raises.
InputError measurement_error(const std::string &measurement) {
  const std::string path = temp_path("checked.jsonl");
  {
    std::ofstream o(path);
    o << R"({"type":"context","schema":"scalefit.comm/1"})" << "\n" << measurement << "\n";
  }
  try {
    read_records(path);
  } catch (const InputError &e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), 2) << e.what();
    return e;
  }
  ADD_FAILURE() << "no InputError for " << measurement;
  return InputError("none");
}

std::string point(const std::string &time_us, const std::string &extra = "") {
  return R"({"type":"measurement","op":"allreduce","group":{"kind":"world","nranks":2},"dtype":"float","bytes":8,"time_us":)" +
         time_us + extra + "}";
}
}  // namespace

TEST(Records, NumbersBeyondADoubleNameTheField) {
  // nlohmann throws out_of_range.406 for 1e400; it must be an InputError naming file:line:field.
  EXPECT_EQ(measurement_error(point("1e400")).field(), "time_us");
  EXPECT_EQ(measurement_error(point("1.5", R"(,"stats":{"n":3,"min_us":-1e999})")).field(),
            "min_us");
}

TEST(Records, NonPhysicalNumbersAreRefusedWithTheField) {
  EXPECT_EQ(measurement_error(point("-1")).field(), "time_us");
  EXPECT_EQ(measurement_error(point("1e300")).field(), "time_us");
  EXPECT_EQ(measurement_error(point("1", R"(,"busbw_gbps":1e200)")).field(), "busbw_gbps");
  EXPECT_EQ(measurement_error(point("1", R"(,"count":-5)")).field(), "count");
  EXPECT_EQ(measurement_error(point("1", R"(,"root":7)")).field(), "root");
  EXPECT_EQ(measurement_error(point("1", R"(,"samples_us":[1.0,-2.0])")).field(), "samples_us[1]");
  EXPECT_EQ(measurement_error(point("1", R"(,"bytes":18446744073709551615)")).field(), "bytes");
  const std::string big_group =
      R"({"type":"measurement","op":"allreduce","group":{"kind":"world","nranks":4294967298},"dtype":"float","bytes":8,"time_us":1})";
  EXPECT_EQ(measurement_error(big_group).field(), "group.nranks");
  const std::string more_nodes_than_ranks =
      R"({"type":"measurement","op":"allreduce","group":{"kind":"world","nranks":2,"nnodes":3},"dtype":"float","bytes":8,"time_us":1})";
  EXPECT_EQ(measurement_error(more_nodes_than_ranks).field(), "group.nnodes");
}

// Issue 19: a zero or denormal time (5e-324 made the fit file hold .inf) and a 0 B point are no
// measurement: refused where records are read, with line and field.
TEST(Records, ZeroOrDenormalTimeAndZeroBytesAreRefused) {
  for (const char *t : {"0", "0.0", "5e-324", "1e-4"}) {
    const InputError e = measurement_error(point(t));
    EXPECT_EQ(e.field(), "time_us") << t;
    EXPECT_EQ(e.line(), 2) << t;
  }
  EXPECT_EQ(measurement_error(point("1", R"(,"bytes":0)")).field(), "bytes");
  EXPECT_NO_THROW(measurement_from_json(nlohmann::json::parse(point("0.001")))) << "1 ns is a time";
}

TEST(Records, InvalidUtf8IsAnInputErrorWithTheLine) {
  const InputError e = measurement_error(point("1", ",\"note\":\"caf\xE9\""));
  EXPECT_NE(std::string(e.what()).find("UTF-8"), std::string::npos) << e.what();
}

TEST(Records, WriterReplacesInvalidUtf8InsteadOfThrowing) {
  // Text from a log (a Latin-1 host name) must not make the JSON writer throw type_error.316.
  ContextRecord c;
  c.system = "sys";
  c.hosts = {"n\xE9ud-01"};
  const std::string path = temp_path("latin1.jsonl");
  {
    JsonlWriter w(path);
    w.write(to_json(c));
  }
  const RecordSet set = read_records(path);
  ASSERT_EQ(set.contexts.size(), 1u);
  EXPECT_EQ(set.contexts[0].hosts.at(0), "n\xEF\xBF\xBD" "ud-01");
  EXPECT_EQ(dump_json(nlohmann::json("\xFF")), "\"\xEF\xBF\xBD\"");
}

TEST(Records, WriterToAFullDiskIsAnInputErrorNamingThePath) {
  JsonlWriter w("/dev/full");
  try {
    w.write(nlohmann::json{{"type", "context"}});
    FAIL() << "no error";
  } catch (const InputError &e) {
    EXPECT_EQ(e.file(), "/dev/full");
  }
}

namespace {
RecordSet one_point_set(const std::string &file, double time_us, std::uint64_t bytes = 8) {
  RecordSet rs;
  ContextRecord c;
  c.system = "sys";
  rs.contexts.push_back(c);
  MeasurementRecord m;
  m.group = {"world", 2, 1, 2};
  m.bytes = bytes;
  m.time_us = time_us;
  rs.measurements.push_back(m);
  rs.context_of.push_back(0);
  rs.origin.push_back(file + ":2");
  return rs;
}
}  // namespace

TEST(Records, IdenticalDuplicatesAreMergedWithAWarningNamingBoth) {
  std::vector<RecordSet> sets{one_point_set("a.jsonl", 1.5), one_point_set("a.jsonl", 1.5),
                              one_point_set("b.jsonl", 2.0, 16)};
  const auto warnings = drop_duplicate_measurements(sets);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "a.jsonl:2: duplicates a.jsonl:2 (identical; merged)");
  EXPECT_EQ(sets[0].measurements.size(), 1u);
  EXPECT_EQ(sets[1].measurements.size(), 0u);
  EXPECT_EQ(sets[1].origin.size(), 0u);
  EXPECT_EQ(sets[2].measurements.size(), 1u);  // another size: not a duplicate
}

TEST(Records, ConflictingDuplicatesAreRefusedNamingBothLocations) {
  // Under --repeats refuse, a repeat from another file is refused as before.
  std::vector<RecordSet> sets{one_point_set("a.jsonl", 1.5), one_point_set("b.jsonl", 1.7)};
  try {
    drop_duplicate_measurements(sets, RepeatPolicy::refuse);
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.file(), "b.jsonl");
    EXPECT_EQ(e.line(), 2);
    EXPECT_NE(e.message().find("a.jsonl:2"), std::string::npos) << e.what();
  }
  // Another system's point at the same size is not a duplicate.
  std::vector<RecordSet> other{one_point_set("a.jsonl", 1.5), one_point_set("b.jsonl", 1.7)};
  other[1].contexts[0].system = "other";
  EXPECT_TRUE(drop_duplicate_measurements(other, RepeatPolicy::refuse).empty());
}

TEST(Records, RepeatsFromOtherFilesAreMergedIntoTheirMedianWithOneLinePerFilePair) {
  // The intra-node point of a multi-node job, measured again at 2 and at 4 nodes.
  std::vector<RecordSet> sets{one_point_set("comm-n1.jsonl", 10.0), one_point_set("comm-n2.jsonl", 12.0),
                              one_point_set("comm-n4.jsonl", 11.0),
                              one_point_set("comm-n2.jsonl", 5.0, 16)};
  sets[0].measurements[0].algbw_gbps = 0.8; // 8 B / 10 us
  sets[0].measurements[0].busbw_gbps = 0.8;
  sets[0].measurements[0].samples_us = {9.0, 10.0, 11.0};
  sets[0].measurements[0].stats = Summary{3, 9.0, 10.0, 10.0, 11.0, 1.0, 11.0};
  const auto lines = drop_duplicate_measurements(sets);
  ASSERT_EQ(lines.size(), 2u); // one per pair of files: (n1, n2) and (n1, n4)
  EXPECT_EQ(lines[0].find("comm-n2.jsonl repeats 1 points of comm-n1.jsonl (another run): merged"),
            0u) << lines[0];
  EXPECT_NE(lines[0].find("max 18.2%"), std::string::npos) << lines[0]; // (12-10)/11
  EXPECT_EQ(lines[1].find("comm-n4.jsonl repeats 1 points of comm-n1.jsonl"), 0u) << lines[1];
  ASSERT_EQ(sets[0].measurements.size(), 1u);
  EXPECT_EQ(sets[1].measurements.size(), 0u);
  EXPECT_EQ(sets[2].measurements.size(), 0u);
  EXPECT_EQ(sets[3].measurements.size(), 1u); // another size: its own point
  const MeasurementRecord &m = sets[0].measurements[0];
  EXPECT_DOUBLE_EQ(m.time_us, 11.0); // the median of 10, 12, 11
  EXPECT_EQ(m.repeat_time_us, (std::vector<double>{10.0, 12.0, 11.0}));
  EXPECT_NEAR(m.algbw_gbps, 0.8 * 10 / 11, 1e-12);
  EXPECT_NEAR(m.busbw_gbps, 0.8 * 10 / 11, 1e-12);
  EXPECT_FALSE(m.stats.has_value()); // one repeat's statistics no longer describe the point
  EXPECT_TRUE(m.samples_us.empty());
  // The merged point round-trips through JSONL.
  const MeasurementRecord back = measurement_from_json(to_json(m));
  EXPECT_EQ(back.repeat_time_us, m.repeat_time_us);
  RepeatStats rs;
  rs.add(m.repeat_time_us);
  EXPECT_EQ(rs.points, 1);
  EXPECT_EQ(rs.measurements, 3);
  EXPECT_NEAR(rs.max_spread_pct, 100.0 * 2 / 11, 1e-12);
}

TEST(Records, TheSamePointTwiceInOneFileIsRefusedEvenWhenRepeatsAreMerged) {
  // Two runs appended to one file: not a repeat from another job, a conflict.
  std::vector<RecordSet> one{one_point_set("a.jsonl", 1.5)};
  RecordSet second = one_point_set("a.jsonl", 1.7);
  one[0].measurements.push_back(second.measurements[0]);
  one[0].context_of.push_back(0);
  one[0].origin.push_back("a.jsonl:9");
  try {
    drop_duplicate_measurements(one);
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.file(), "a.jsonl");
    EXPECT_EQ(e.line(), 9);
    EXPECT_EQ(e.field(), "time_us");
    EXPECT_NE(e.message().find("same point as a.jsonl:2"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("two runs appended to one file"), std::string::npos) << e.what();
  }
  // ... and a file repeating another's point twice, differently, is refused at its second one.
  std::vector<RecordSet> sets{one_point_set("a.jsonl", 1.5), one_point_set("b.jsonl", 1.7)};
  sets[1].measurements.push_back(sets[1].measurements[0]);
  sets[1].measurements[1].time_us = 1.9;
  sets[1].context_of.push_back(0);
  sets[1].origin.push_back("b.jsonl:5");
  try {
    drop_duplicate_measurements(sets);
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.file(), "b.jsonl");
    EXPECT_EQ(e.line(), 5);
    EXPECT_NE(e.message().find("b.jsonl:2"), std::string::npos) << e.what();
  }
}

TEST(Records, RepeatPolicyNamesAndMedian) {
  EXPECT_EQ(parse_repeat_policy("merge"), RepeatPolicy::merge);
  EXPECT_EQ(parse_repeat_policy("refuse"), RepeatPolicy::refuse);
  EXPECT_FALSE(parse_repeat_policy("keep").has_value());
  EXPECT_STREQ(repeat_policy_name(RepeatPolicy::refuse), "refuse");
  EXPECT_DOUBLE_EQ(median_of({3, 1, 2, 10}), 2.5);
  EXPECT_DOUBLE_EQ(spread_pct({1.0}), 0.0);
  EXPECT_EQ(origin_file("dir/a:b.jsonl:12"), "dir/a:b.jsonl");
  EXPECT_EQ(origin_line("dir/a:b.jsonl:12"), 12);
  EXPECT_EQ(origin_file("nccl.log"), "nccl.log");
  EXPECT_EQ(origin_line("nccl.log"), 0);
}

TEST(Records, MergingDuplicatesKeepsEveryFieldOfTheRecordsItKeeps) {
  // The compaction must not self-move a kept record: that empties its strings and vectors.
  std::vector<RecordSet> sets{one_point_set("a.jsonl", 1.5), one_point_set("a.jsonl", 1.5)};
  sets[0].measurements[0].samples_us = {1.4, 1.5, 1.6};
  drop_duplicate_measurements(sets);
  ASSERT_EQ(sets[0].measurements.size(), 1u);
  EXPECT_EQ(sets[0].measurements[0].group.kind, "world");
  EXPECT_EQ(sets[0].measurements[0].samples_us.size(), 3u);
  EXPECT_EQ(sets[0].origin[0], "a.jsonl:2");
}

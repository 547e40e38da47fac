// `scalefit check` end to end, through the binary: real nccl-tests logs against their system
// files (numbers worked by hand below), a derived log at 60% bandwidth (failing, exit 1), an
// NVLS-like log above the link bound (flagged, not failed), thresholds, nccl-tests'
// NCCL_TESTS_MIN_BW rule, bad input (exit 2 naming the field), and the --json fields.
#include "../support/paths.hpp"
#include "../support/subprocess.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using nlohmann::json;
using scalefit::test::Result;
using scalefit::test::run_captured;
using scalefit::test::TempDir;

namespace {

const std::string kBin = scalefit::test::bin_path("scalefit", SCALEFIT_BIN);
const std::string kData = scalefit::test::test_data_dir(SCALEFIT_TEST_DATA_DIR);
const std::string kConfigs = scalefit::test::source_path("configs", SCALEFIT_CONFIG_DIR);
const std::string kA100 =
    kData + "/nccl-tests/a100-sxm4-40gb_8gpu_nvswitch_singlenode_allreduce.txt";
const std::string kA100Slow = kData + "/check/a100_allreduce_scaled60pct_derived.txt";
const std::string kNvls = kData + "/check/h100_nvls_like_allreduce_synthetic.txt";
const std::string kH100x4 =
    kData + "/nccl-tests/h100-hgx-xe9680_ib-8x400G_4node_32gpu_allreduce.txt";

Result check(const std::string &args, const TempDir &dir) {
  return run_captured(kBin + " check " + args, dir);
}

/// "PREFIX12.3%": a percentage as the check table prints it (one decimal).
std::string fmt_pct(const std::string &prefix, double pct) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f%%", pct);
  return prefix + buf;
}

/// Runs with --json; the parsed output (fails the test when it is not JSON).
json check_json(const std::string &args, const TempDir &dir, int expect_code) {
  const Result r = check(args + " --json", dir);
  EXPECT_EQ(r.code, expect_code) << r.err << r.out;
  try {
    return json::parse(r.out);
  } catch (const std::exception &e) {
    ADD_FAILURE() << "not JSON: " << e.what() << "\n" << r.out << r.err;
    return json::object();
  }
}

} // namespace

// dgx-a100.yaml: intra 277.6 GB/s per GPU, efficiency 0.85 -> expected busbw 235.96 GB/s. The log's
// best busbw is 235.26 (8 GiB, out-of-place; in-place 235.03): 235.26 / 235.96 = 99.70%.
TEST(Check, RealA100AllReduceAgainstDgxA100IsOk) {
  TempDir dir("sf_check_");
  const json j = check_json(kA100 + " --system " + kConfigs + "/systems/dgx-a100.yaml", dir, 0);
  ASSERT_EQ(j["curves"].size(), 1u);
  const json &c = j["curves"][0];
  EXPECT_EQ(c["op"], "allreduce");
  EXPECT_EQ(c["group"]["nranks"], 8);
  EXPECT_EQ(c["group"]["nnodes"], 1);
  EXPECT_DOUBLE_EQ(c["peak_busbw_gbps"].get<double>(), 235.26);
  EXPECT_EQ(c["peak_bytes"], 8589934592ull);
  EXPECT_EQ(c["link"]["link"], "intra");
  EXPECT_EQ(c["link"]["algorithm"], "ring");
  EXPECT_DOUBLE_EQ(c["link"]["busbw_factor"].get<double>(), 2.0 * 7 / 8);
  EXPECT_NEAR(c["link"]["expected_busbw_gbps"].get<double>(), 235.96, 1e-9);
  EXPECT_NEAR(c["link"]["pct_of_expected"].get<double>(), 99.703, 1e-3);
  EXPECT_FALSE(c["link"]["above_link_bound"].get<bool>());
  EXPECT_EQ(c["link"]["verdict"], "ok");
  // The default reference: results/reference/a100-sxm4-40gb-nvswitch (device A100-SXM4-40GB),
  // fitted from this very log, so within the fit's error (MAPE 1.7%) of 100%.
  ASSERT_FALSE(c["reference"].is_null());
  EXPECT_NE(c["reference"]["file"].get<std::string>().find("a100-sxm4-40gb-nvswitch"),
            std::string::npos);
  EXPECT_NEAR(c["reference"]["pct_of_reference"].get<double>(), 100, 3);
  EXPECT_EQ(c["verdict"], "ok");
  // nccl-tests' footer of this log: "# Avg bus bandwidth : 68.4048" (34 rows x 2 placements,
  // the two size-0 rows counted as 0, as nccl-tests counts them).
  EXPECT_NEAR(c["avg_busbw_gbps"].get<double>(), 68.4048, 5e-4);
}

TEST(Check, TextOutputNamesLinkAlgorithmAndVerdict) {
  TempDir dir("sf_check_");
  const Result r = check(kA100 + " --system dgx-a100", dir); // a name in configs/systems
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("allreduce"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("intra ring"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("99.7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 curves: 1 ok, 0 low, 0 failing"), std::string::npos) << r.out;
}

// The same log at 60% bandwidth: 141.16 / 235.96 = 59.8% < 75% -> failing, exit 1 (kExitCheck).
TEST(Check, LogScaledTo60PercentFailsWithExit1) {
  TempDir dir("sf_check_");
  const json j = check_json(kA100Slow + " --system dgx-a100", dir, 1);
  ASSERT_EQ(j["curves"].size(), 1u);
  const json &c = j["curves"][0];
  EXPECT_DOUBLE_EQ(c["peak_busbw_gbps"].get<double>(), 141.16);
  EXPECT_NEAR(c["link"]["pct_of_expected"].get<double>(), 100 * 141.16 / 235.96, 1e-6);
  EXPECT_EQ(c["link"]["verdict"], "failing");
  EXPECT_NEAR(c["reference"]["pct_of_reference"].get<double>(), 60, 3);
  EXPECT_EQ(c["reference"]["verdict"], "failing");
  EXPECT_EQ(c["verdict"], "failing");
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["summary"]["failing"], 1);
  // Every compared size falls short of the reference.
  ASSERT_EQ(c["reference"]["short_ranges_bytes"].size(), 1u);
  EXPECT_EQ(c["reference"]["short_ranges_bytes"][0][1], 8589934592ull);
  const Result text = check(kA100Slow + " --system dgx-a100", dir);
  EXPECT_EQ(text.code, 1);
  EXPECT_NE(text.out.find("failing"), std::string::npos) << text.out;
}

// NVLS-like: 479.62 GB/s > 450 GB/s NVLink 4 per GPU: flagged, verdict ok, exit 0.
TEST(Check, AboveLinkBoundIsFlaggedNotFailed) {
  TempDir dir("sf_check_");
  const json j = check_json(kNvls + " --system dgx-h100", dir, 0);
  ASSERT_EQ(j["curves"].size(), 1u);
  const json &c = j["curves"][0];
  EXPECT_DOUBLE_EQ(c["peak_busbw_gbps"].get<double>(), 479.62);
  EXPECT_DOUBLE_EQ(c["link"]["bound_gbps"].get<double>(), 450);
  EXPECT_TRUE(c["link"]["above_link_bound"].get<bool>());
  EXPECT_NEAR(c["link"]["pct_of_expected"].get<double>(), 100 * 479.62 / 360, 1e-6);
  EXPECT_EQ(c["verdict"], "ok");
  // No shipped H100 reference has an 8-rank AllReduce.
  EXPECT_TRUE(c["reference"].is_null());
  bool flagged = false;
  for (const auto &n : j["notes"])
    flagged |=
        n.get<std::string>().find("above link bound: in-network reduction (NVLS/SHARP) or cache") !=
        std::string::npos;
  EXPECT_TRUE(flagged) << j["notes"].dump();
}

// 4 nodes x 8 H100, 8x 400G per node: the ring crosses the NICs; 400/8 = 50 GB/s per GPU x 8
// ranks per node = 400 GB/s (below NVLink's 450), x 0.9 = 360 expected; peak 365.84 -> 101.6%.
TEST(Check, MultiNodeGroupIsBoundByTheNodesNics) {
  TempDir dir("sf_check_");
  const json j = check_json(kH100x4 + " --system dgx-h100", dir, 0);
  ASSERT_EQ(j["curves"].size(), 1u);
  const json &c = j["curves"][0];
  EXPECT_EQ(c["group"]["nnodes"], 4);
  EXPECT_EQ(c["link"]["link"], "inter");
  EXPECT_DOUBLE_EQ(c["link"]["bound_gbps"].get<double>(), 400);
  EXPECT_NEAR(c["link"]["expected_busbw_gbps"].get<double>(), 360, 1e-9);
  EXPECT_NEAR(c["link"]["pct_of_expected"].get<double>(), 100 * 365.84 / 360, 1e-6);
  EXPECT_FALSE(c["link"]["above_link_bound"].get<bool>());
  EXPECT_NE(c["reference"]["file"].get<std::string>().find("h100-hgx-ib"), std::string::npos);
  EXPECT_EQ(c["verdict"], "ok");
}

TEST(Check, ThresholdsAndStrict) {
  TempDir dir("sf_check_");
  const std::string base = kA100 + " --system dgx-a100 --no-reference";
  // 99.70% of expected: ok at --low 99.6, low at --low 99.8 (exit 0; 1 with --strict), failing at
  // --fail 99.8.
  EXPECT_EQ(check_json(base + " --low 99.6", dir, 0)["curves"][0]["verdict"], "ok");
  EXPECT_EQ(check_json(base + " --low 99.8", dir, 0)["curves"][0]["verdict"], "low");
  EXPECT_EQ(check_json(base + " --low 99.8 --strict", dir, 1)["curves"][0]["verdict"], "low");
  EXPECT_EQ(check_json(base + " --low 99.9 --fail 99.8", dir, 1)["curves"][0]["verdict"],
            "failing");
  const json j = check_json(base + " --low 95 --fail 50", dir, 0);
  EXPECT_DOUBLE_EQ(j["thresholds"]["low_pct"].get<double>(), 95);
  EXPECT_DOUBLE_EQ(j["thresholds"]["fail_pct"].get<double>(), 50);
}

// nccl-tests src/common.cu: fail when avg busbw < NCCL_TESTS_MIN_BW * 0.9. avg = 68.4048:
// 0.9 x 76 = 68.4 passes, 0.9 x 76.1 = 68.49 fails.
TEST(Check, MinBusbwFollowsNcclTestsRule) {
  TempDir dir("sf_check_");
  const json pass = check_json(kA100 + " --min-busbw 76", dir, 0);
  EXPECT_TRUE(pass["curves"][0]["min_busbw"]["pass"].get<bool>());
  EXPECT_EQ(pass["curves"][0]["min_busbw"]["zero_rows_counted"], 4);
  const json fail = check_json(kA100 + " --min-busbw 76.1", dir, 1);
  EXPECT_FALSE(fail["curves"][0]["min_busbw"]["pass"].get<bool>());
  EXPECT_EQ(fail["curves"][0]["verdict"], "failing");
}

TEST(Check, FitFileAndJsonlInputs) {
  TempDir dir("sf_check_");
  const std::string ref = scalefit::test::source_path("results", SCALEFIT_SOURCE_DIR "/results") +
                          "/reference/a100-sxm4-40gb-nvswitch";
  // The fit file: 12 entries (6 ops x 2 placements) -> 6 curves.
  const json f = check_json(ref + "/fit.yaml --system dgx-a100 --no-reference", dir, 0);
  EXPECT_EQ(f["curves"].size(), 6u);
  for (const auto &c : f["curves"]) {
    EXPECT_TRUE(c["from_fit"].get<bool>());
    EXPECT_NE(c["verdict"], "unchecked") << c.dump();
  }
  // The ingested JSONL of the same logs: the same 6 curves, the allreduce one as from the log.
  const json r = check_json(ref + "/comm.jsonl --system dgx-a100 --no-reference", dir, 0);
  ASSERT_EQ(r["curves"].size(), 6u);
  bool found = false;
  for (const auto &c : r["curves"])
    if (c["op"] == "allreduce") {
      found = true;
      EXPECT_DOUBLE_EQ(c["peak_busbw_gbps"].get<double>(), 235.26);
    }
  EXPECT_TRUE(found);
}

TEST(Check, BadInputExits2NamingTheField) {
  TempDir dir("sf_check_");
  const fs::path bad = dir.path / "bad.jsonl";
  {
    std::ofstream out(bad);
    out << R"({"type":"context","schema":"scalefit.comm/1","system":"x","backend":"nccl","nranks":2,"nnodes":1,"ranks_per_node":2})"
        << "\n"
        << R"({"type":"measurement","op":"allreduce","group":{"kind":"world","nranks":2,"nnodes":1,"ranks_per_node":2},"dtype":"float","redop":"sum","root":-1,"placement":"out-of-place","bytes":1024,"count":256,"time_us":-5,"algbw_gbps":1,"busbw_gbps":1})"
        << "\n";
  }
  Result r = check(bad.string() + " --system dgx-a100", dir);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("bad.jsonl:2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("time_us"), std::string::npos) << r.err;

  r = check(kA100 + " --system no-such-system", dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--system"), std::string::npos) << r.err;

  r = check(kA100 + " --system dgx-a100 --low 70 --fail 80", dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--fail"), std::string::npos) << r.err;

  r = check(kA100, dir); // nothing to compare with
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--system"), std::string::npos) << r.err;

  r = check(kA100 + " --reference " + (dir.path / "none.yaml").string(), dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("none.yaml"), std::string::npos) << r.err;
}

TEST(Check, JsonSchemaFields) {
  TempDir dir("sf_check_");
  const json j = check_json(kA100 + " --system dgx-a100", dir, 0);
  EXPECT_EQ(j["schema"], "scalefit.check/1");
  for (const char *k :
       {"system", "references", "thresholds", "curves", "notes", "summary", "exit_code"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_DOUBLE_EQ(j["thresholds"]["low_pct"].get<double>(), 90);
  EXPECT_DOUBLE_EQ(j["thresholds"]["fail_pct"].get<double>(), 75);
  EXPECT_TRUE(j["thresholds"]["min_busbw_gbps"].is_null());
  EXPECT_EQ(j["system"]["name"], "dgx-a100");
  const json &c = j["curves"][0];
  for (const char *k : {"system", "op", "group", "dtype", "placements", "points",
                        "size_range_bytes", "peak_busbw_gbps", "peak_bytes", "avg_busbw_gbps",
                        "link", "reference", "min_busbw", "verdict"})
    EXPECT_TRUE(c.contains(k)) << k;
  for (const char *k : {"link", "algorithm", "rule", "busbw_factor", "bound_gbps", "efficiency",
                        "expected_busbw_gbps", "pct_of_expected", "above_link_bound",
                        "short_ranges_bytes", "verdict"})
    EXPECT_TRUE(c["link"].contains(k)) << k;
  for (const char *k : {"file", "entry", "sizes_compared", "pct_of_reference", "min_pct",
                        "min_pct_bytes", "short_ranges_bytes", "verdict"})
    EXPECT_TRUE(c["reference"].contains(k)) << k;
  EXPECT_EQ(c["placements"].size(), 2u);
}

// scalefit-bench comm --repeat N records (extra.repeat): the verdict is the median run's (the
// record itself), the spread is printed and a spread above --noisy is noted (issue 17, §3).
TEST(Check, RepeatSpreadIsPrintedAndNoisyCurvesNoted) {
  TempDir dir("sf_check_");
  const std::string comm = scalefit::test::source_path("results", SCALEFIT_SOURCE_DIR "/results") +
                           "/reference/a100-sxm4-40gb-nvswitch/comm.jsonl";
  // Every allreduce point gets 3 runs: busbw -5%..+2%, and -5%..+40% at the largest size.
  std::uint64_t largest = 0;
  {
    std::ifstream in(comm);
    for (std::string line; std::getline(in, line);) {
      const json j = json::parse(line);
      if (j["type"] == "measurement" && j["op"] == "allreduce")
        largest = std::max(largest, j["bytes"].get<std::uint64_t>());
    }
  }
  ASSERT_GT(largest, 0u);
  auto spread_pct = [](double up) { return 100 * (1 / 0.95 - 1 / (1 + up)); }; // times t/bw
  const fs::path rep = dir.path / "repeat.jsonl";
  {
    std::ifstream in(comm);
    std::ofstream out(rep);
    for (std::string line; std::getline(in, line);) {
      json j = json::parse(line);
      if (j["type"] == "measurement" && j["op"] == "allreduce" && j["bytes"].get<double>() > 0) {
        const double up = j["bytes"].get<std::uint64_t>() == largest ? 0.4 : 0.02;
        const double bw = j["busbw_gbps"].get<double>();
        j["repeat"] = {{"runs", 3}, // extra fields are top-level keys on disk
                                {"run", 1},
                                {"busbw_gbps", {0.95 * bw, bw, (1 + up) * bw}},
                                {"busbw_min_gbps", 0.95 * bw},
                                {"busbw_max_gbps", (1 + up) * bw},
                                {"spread_pct", spread_pct(up)}};
      }
      out << j.dump() << "\n";
    }
  }
  const std::string args = " --system dgx-a100 --no-reference";
  const json plain = check_json(comm + args, dir, 0);
  const json j = check_json(rep.string() + args, dir, 0);
  EXPECT_DOUBLE_EQ(j["thresholds"]["noisy_pct"].get<double>(), 10);
  ASSERT_EQ(j["curves"].size(), plain["curves"].size());
  int with_repeat = 0;
  for (std::size_t i = 0; i < j["curves"].size(); ++i) {
    const json &c = j["curves"][i];
    EXPECT_EQ(c["verdict"], plain["curves"][i]["verdict"]) << c["op"]; // the median run's
    EXPECT_EQ(c["peak_busbw_gbps"], plain["curves"][i]["peak_busbw_gbps"]) << c["op"];
    if (c["op"] != "allreduce") {
      EXPECT_TRUE(c["repeat"].is_null()) << c["op"];
      continue;
    }
    ++with_repeat;
    const json &r = c["repeat"];
    EXPECT_EQ(r["runs"], 3);
    EXPECT_NEAR(r["max_spread_pct"].get<double>(), spread_pct(0.4), 1e-9);
    EXPECT_EQ(r["max_spread_bytes"].get<std::uint64_t>(), largest);
    EXPECT_NEAR(r["median_spread_pct"].get<double>(), spread_pct(0.02), 1e-9);
    EXPECT_TRUE(r["noisy"].get<bool>());
  }
  EXPECT_EQ(with_repeat, 1);
  // The text: the spread in the short column, the note naming the runs and "noisy".
  const Result t = check(rep.string() + args, dir);
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find(fmt_pct("noisy spread ", spread_pct(0.4))), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("run-to-run spread over 3 runs: max"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("noisy (above --noisy 10%)"), std::string::npos) << t.out;
  // Above the spread, --noisy lets the curve pass without the note's warning.
  const json quiet = check_json(rep.string() + args + " --noisy 50", dir, 0);
  for (const auto &c : quiet["curves"])
    if (c["op"] == "allreduce")
      EXPECT_FALSE(c["repeat"]["noisy"].get<bool>());
  const Result bad = check(rep.string() + args + " --noisy -1", dir);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--noisy"), std::string::npos) << bad.err;
}

// A repeat block's run count is read only when it is a whole number in range: 1e300 would have
// been cast to int (undefined behaviour); each bad value is exit 2 naming file:line and the field.
TEST(Check, MalformedRepeatRunCountIsRefusedWithItsLine) {
  TempDir dir("sf_check_");
  const std::string comm = scalefit::test::source_path("results", SCALEFIT_SOURCE_DIR "/results") +
                           "/reference/a100-sxm4-40gb-nvswitch/comm.jsonl";
  for (const json &runs :
       {json(1e300), json(-1e300), json(2.5), json("3"), json(0), json(std::uint64_t{1} << 63)}) {
    const fs::path bad = dir.path / "repeat_bad.jsonl";
    int line_no = 0, bad_line = 0;
    {
      std::ifstream in(comm);
      std::ofstream out(bad);
      for (std::string line; std::getline(in, line);) {
        ++line_no;
        json j = json::parse(line);
        if (bad_line == 0 && j["type"] == "measurement" && j["bytes"].get<double>() > 0) {
          const double bw = j["busbw_gbps"].get<double>();
          j["repeat"] = {
              {"runs", runs}, {"busbw_min_gbps", bw}, {"busbw_max_gbps", bw}, {"spread_pct", 0.0}};
          bad_line = line_no;
        }
        out << j.dump() << "\n";
      }
    }
    ASSERT_GT(bad_line, 0);
    const Result r = check(bad.string() + " --system dgx-a100 --no-reference", dir);
    EXPECT_EQ(r.code, 2) << runs.dump() << r.err;
    EXPECT_NE(r.err.find("repeat_bad.jsonl:" + std::to_string(bad_line)), std::string::npos)
        << runs.dump() << r.err;
    EXPECT_NE(r.err.find("extra.repeat"), std::string::npos) << runs.dump() << r.err;
  }
}

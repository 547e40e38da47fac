// scalefit's commands on bad input, through the binary: exit 2 and a message naming the file, line,
// field or option; outputs written whole or not at all.
#include "../support/paths.hpp"
#include "../support/subprocess.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using scalefit::test::Result;
using scalefit::test::run_captured;
using scalefit::test::slurp;
using scalefit::test::TempDir;

namespace {

const std::string kBin = scalefit::test::bin_path("scalefit", SCALEFIT_BIN);
const std::string kData = scalefit::test::test_data_dir(SCALEFIT_TEST_DATA_DIR);
const std::string kConfigs = scalefit::test::source_path("configs", SCALEFIT_CONFIG_DIR);

Result sf(const std::string &args, const TempDir &dir) {
  return run_captured(kBin + " " + args, dir);
}

void write(const fs::path &p, const std::string &text) {
  std::ofstream(p) << text;
}

/// Files in `dir` whose name starts with '.' (temporary outputs left behind).
int hidden_files(const fs::path &dir) {
  int n = 0;
  for (const auto &e : fs::directory_iterator(dir))
    n += e.path().filename().string().front() == '.';
  return n;
}

/// A fit file from the local MPI measurements, written into `dir`.
fs::path make_fit(const TempDir &dir) {
  const fs::path fit = dir.path / "fit.yaml";
  const Result r = sf("fit " + kData + "/fitting/local_mpi_3curves.jsonl -o " + fit.string(), dir);
  EXPECT_EQ(r.code, 0) << r.err;
  return fit;
}

}  // namespace

TEST(CliOutputs, FitToAFullDiskExits2NamingThePath) {
  TempDir dir("sf_cli_");
  const Result r = sf("fit " + kData + "/fitting/local_mpi_3curves.jsonl -o /dev/full", dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("/dev/full"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
}

TEST(CliOutputs, FitIntoAMissingDirectoryExits2AndLeavesNothing) {
  TempDir dir("sf_cli_");
  const std::string out = (dir.path / "no-such-dir" / "fit.yaml").string();
  const Result r = sf("fit " + kData + "/fitting/local_mpi_3curves.jsonl -o " + out, dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(out), std::string::npos) << r.err;
  EXPECT_EQ(hidden_files(dir.path), 0);
}

TEST(CliOutputs, FitFileCutAtAnEntryBoundaryExits2NamingTheFile) {
  TempDir dir("sf_cli_");
  const fs::path fit = make_fit(dir);
  const std::string text = slurp(fit);
  const auto second = text.find("\n  - id:", text.find("  - id:") + 1);
  ASSERT_NE(second, std::string::npos) << "needs a fit file with two entries";
  const fs::path cut = dir.path / "cut.yaml";
  write(cut, text.substr(0, second + 1));
  const Result r = sf("predict --fit " + cut.string() + " --op sendrecv --nranks 2 --bytes 1M", dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(cut.string() + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("field 'end'"), std::string::npos) << r.err;
  EXPECT_EQ(hidden_files(dir.path), 0);
}

namespace {
const std::string kSystem = kConfigs + "/systems/dgx-a100-80gb.yaml";
const std::string kModel = kConfigs + "/models/gpt-22b-korthikanti.yaml";

std::string replace_once(std::string s, const std::string &from, const std::string &to) {
  const auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

/// Runs `args`; expects exit 2 and every one of `needles` in stderr.
void expect_exit2(const std::string &args, std::initializer_list<std::string> needles) {
  TempDir dir("sf_cli_");
  const Result r = sf(args, dir);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
  for (const std::string &n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << args << "\n" << r.err;
}
}  // namespace

TEST(CliNumbers, NonFiniteOrAbsurdSystemNumbersExit2NamingTheField) {
  TempDir dir("sf_cli_");
  const std::string base = slurp(kSystem);
  struct Case {
    std::string from, to, field;
  };
  const Case cases[] = {
      {"latency_us: 20,", "latency_us: .nan,", "communication.intra.latency_us"},
      {"kernel_launch_us: 3", "kernel_launch_us: .inf", "device.kernel_launch_us"},
      {"bandwidth_gbps: 200,", "bandwidth_gbps: 4.9e-324,", "communication.inter.bandwidth_gbps"},
      {"bandwidth_gbps: 277.6,", "bandwidth_gbps: -1,", "communication.intra.bandwidth_gbps"},
      {"efficiency: 0.90", "efficiency: 1e-300", "communication.inter.efficiency"},
      {"memory_gib: 80", "memory_gib: 0", "device.memory_gib"},
      {"fp16: 312", "fp16: 1e400", "device.peak_tflops.fp16"},
      {"bandwidth_gbps: 32,", "bandwidth_gbps: .nan,", "communication.host.bandwidth_gbps"},
  };
  for (const Case &c : cases) {
    const fs::path sys = dir.path / "sys.yaml";
    write(sys, replace_once(base, c.from, c.to));
    const Result r = sf("estimate --system " + sys.string() + " --model " + kModel + " --dp 1 --tp 8", dir);
    EXPECT_EQ(r.code, 2) << c.to << "\n" << r.err;
    EXPECT_NE(r.err.find(sys.string() + ":"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("field '" + c.field + "'"), std::string::npos) << c.to << "\n" << r.err;
  }
}

TEST(CliNumbers, Latin1InAYamlIsExit2WithTheLineNotAJsonTypeError) {
  TempDir dir("sf_cli_");
  const fs::path model = dir.path / "model.yaml";
  write(model, "name: caf\xE9-22b\n" + slurp(kModel));
  const Result r = sf("estimate --system " + kSystem + " --model " + model.string() + " --dp 1 --tp 8 --json", dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(model.string() + ":1:"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << r.err;
  const fs::path sys = dir.path / "sys.yaml";
  write(sys, replace_once(slurp(kSystem), "name: A100-SXM4-80GB", "name: A100-\xC0\xAF"));
  const Result s = sf("estimate --system " + sys.string() + " --model " + kModel + " --dp 1 --tp 8 --json", dir);
  EXPECT_EQ(s.code, 2) << s.err;
  EXPECT_NE(s.err.find("UTF-8"), std::string::npos) << s.err;
}

TEST(CliNumbers, JsonlNumberBeyondADoubleExit2NamingFileLineField) {
  TempDir dir("sf_cli_");
  const std::string text = slurp(kData + "/fitting/local_mpi_3curves.jsonl");
  const fs::path bad = dir.path / "bad.jsonl";
  const auto at = text.find("\"time_us\": ", text.find('\n'));  // in the first measurement
  ASSERT_NE(at, std::string::npos);
  std::string mutated = text;
  mutated.replace(at, text.find(',', at) - at, "\"time_us\": 1e400");
  write(bad, mutated);
  const Result r = sf("fit " + bad.string() + " -o " + (dir.path / "fit.yaml").string(), dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(bad.string() + ":2: field 'time_us'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.path / "fit.yaml"));
}

TEST(CliOptions, InvalidValuesExit2NamingTheOptionAndTheRange) {
  const std::string est = "estimate --system " + kSystem + " --model " + kModel + " ";
  const std::string srch = "search --system " + kSystem + " --model " + kModel + " ";
  const struct {
    std::string args, option;
  } cases[] = {
      {est + "--bucket 0", "--bucket"},
      {est + "--bucket 1", "--bucket"},
      {est + "--global-batch 0", "--global-batch"},
      {est + "--global-batch -512", "--global-batch"},
      {est + "--gpus 0", "--gpus"},
      {est + "--layers 0", "--layers"},
      {est + "--heads 0", "--heads"},
      {est + "--seq 0", "--seq"},
      {est + "--ffn 0", "--ffn"},
      {est + "--hidden -4", "--hidden"},
      {est + "--dp -1", "--dp"},
      {est + "--micro-batch 0", "--micro-batch"},
      {est + "--interleave 0", "--interleave"},
      {est + "--dp 1 --tp 8 --scale-to 0", "--scale-to"},
      {srch + "--gpus 64 --top 0", "--top"},
      {srch + "--gpus 64 --top -1", "--top"},
      {srch + "--gpus 64 --max-tp -1", "--max-tp"},
      {srch + "--gpus 0", "--gpus"},
      {"fit " + kData + "/fitting/local_mpi_3curves.jsonl -o /dev/null --min-points -3", "--min-points"},
      {"predict --fit x.yaml --op allreduce --nranks 0 --bytes 1M", "--nranks"},
      {"predict --fit x.yaml --op allreduce --nranks 8 --nnodes -1 --bytes 1M", "--nnodes"},
      {"ingest nccl-tests " + kData + "/nccl-tests/synthetic_cutoff_allreduce.txt --nranks 0", "--nranks"},
  };
  for (const auto &c : cases) expect_exit2(c.args, {c.option});
}

TEST(CliOptions, LayoutOverflowIsRefusedNotASignal) {
  // Products of degrees used to overflow int (UBSan) and divide by zero (SIGFPE).
  const std::string est = "estimate --system " + kSystem + " --model " + kModel + " ";
  expect_exit2("search --system " + kSystem + " --model " + kModel + " --gpus 2147483647", {"--gpus"});
  expect_exit2(est + "--dp 65536 --micro-batch 65536", {"4294967296"});  // exact, not wrapped
  expect_exit2(est + "--pp 65536 --interleave 65536", {"--pp"});
  expect_exit2(est + "--dp 16777216 --tp 16777216 --pp 16777216",
               {"--dp", "16777216 x 16777216 x 16777216 x 1 exceeds"});
  expect_exit2(est + "--dp 2147483647", {"--dp"});
  expect_exit2(est + "--hidden 1073741824", {"--hidden"});
}

TEST(CliDuplicates, SameFileTwiceIsMergedWithAWarningAndFitsAsOnce) {
  TempDir dir("sf_cli_");
  const std::string in = kData + "/fitting/local_mpi_3curves.jsonl";
  const Result once = sf("fit " + in + " -o " + (dir.path / "once.yaml").string(), dir);
  ASSERT_EQ(once.code, 0) << once.err;
  const std::string once_out = once.out;
  const Result twice = sf("fit " + in + " " + in + " -o " + (dir.path / "twice.yaml").string(), dir);
  ASSERT_EQ(twice.code, 0) << twice.err;
  EXPECT_NE(twice.err.find("duplicates " + in + ":2 (identical; merged)"), std::string::npos)
      << twice.err.substr(0, 400);
  // The same points fitted once: the same table (the file names in the last line differ).
  EXPECT_EQ(once_out.substr(0, once_out.rfind("wrote")), twice.out.substr(0, twice.out.rfind("wrote")));
}

TEST(CliDuplicates, TwoRunsAppendedToOneFileAreRefusedNamingBothLines) {
  TempDir dir("sf_cli_");
  const std::string text = slurp(kData + "/fitting/local_mpi_3curves.jsonl");
  // A second run of the same points with other times, appended: every time 10% larger.
  std::string second;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    const auto t = line.find("\"time_us\": ");
    if (t != std::string::npos) {
      const auto stop = line.find_first_of(",}", t);
      const double v = std::stod(line.substr(t + 11, stop - t - 11));
      line.replace(t, stop - t, "\"time_us\": " + std::to_string(v * 1.1));
    }
    second += line + "\n";
    pos = end + 1;
  }
  const fs::path both = dir.path / "both.jsonl";
  write(both, text + second);
  const Result r = sf("fit " + both.string() + " -o " + (dir.path / "fit.yaml").string(), dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("same point as " + both.string() + ":2"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.path / "fit.yaml"));
}

namespace {
/// The intra-node points of the local measurements as a one-node job measured them: a context of
/// 2 ranks on 1 node and every intra point's time_us times `factor` (another run, another result).
std::string intra_only_run(const std::string &text, double factor) {
  std::string out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.find("\"type\": \"context\"") != std::string::npos) {
      const std::string two = "\"nnodes\": 2, \"nranks\": 4";
      const auto at = line.find(two);
      if (at != std::string::npos) line.replace(at, two.size(), "\"nnodes\": 1, \"nranks\": 2");
      out += line + "\n";
      continue;
    }
    if (line.find("\"kind\": \"intra\"") == std::string::npos) continue;
    const auto t = line.find("\"time_us\": ");
    if (t == std::string::npos) continue;
    const auto stop = line.find_first_of(",}", t);
    const double v = std::stod(line.substr(t + 11, stop - t - 11));
    line.replace(t, stop - t, "\"time_us\": " + std::to_string(v * factor));
    out += line + "\n";
  }
  return out;
}
}  // namespace

TEST(CliRepeats, IntraPointsMeasuredAgainAtEachNodeCountAreMergedAndTheFitFileSaysSo) {
  // characterize's multi-node job: comm-n1.jsonl holds the intra groups, comm-n2.jsonl the world,
  // intra and inter groups; the intra points (48: reduce and sendrecv on 1x2) were measured twice.
  TempDir dir("sf_cli_");
  const std::string text = slurp(kData + "/fitting/local_mpi_3curves.jsonl");
  const fs::path n1 = dir.path / "comm-n1.jsonl", n2 = dir.path / "comm-n2.jsonl";
  write(n1, intra_only_run(text, 1.08));
  write(n2, text);
  const fs::path fit = dir.path / "fit.yaml";
  const Result r = sf("fit " + n1.string() + " " + n2.string() + " -o " + fit.string(), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  // One summary line for the pair of files, not one per point.
  const std::string line = n2.string() + " repeats 48 points of " + n1.string() + " (another run)";
  EXPECT_NE(r.err.find("scalefit fit: " + line), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(line), r.err.rfind(line)) << r.err;
  EXPECT_EQ(r.err.find("warning: " + line), std::string::npos) << r.err;
  const std::string yaml = slurp(fit);
  EXPECT_NE(yaml.find("repeats:\n  policy: merge\n"), std::string::npos) << yaml.substr(0, 2000);
  EXPECT_NE(yaml.find("merged_points: 48\n"), std::string::npos);
  // Both intra curves (24 sizes each, every one measured in both files) state their repeats.
  const std::string entry = "repeats: {points: 24, measurements: 48, max_spread_pct: ";
  const auto first = yaml.find(entry);
  ASSERT_NE(first, std::string::npos) << yaml.substr(0, 3000);
  EXPECT_NE(yaml.find(entry, first + 1), std::string::npos);
  EXPECT_EQ(yaml.find(entry, yaml.find(entry, first + 1) + 1), std::string::npos); // world: none
  // 8% apart: the spread of every merged point.
  EXPECT_NE(yaml.find(entry + "7.6"), std::string::npos) << yaml.substr(first, 120);
  // The fit reads back (predict) and the table counts every point once.
  const Result p = sf("predict --fit " + fit.string() + " --op reduce --nranks 2 --bytes 1M", dir);
  EXPECT_EQ(p.code, 0) << p.err;

  // --repeats refuse: the behaviour before, exit 2 naming both records, no fit file.
  const fs::path refused = dir.path / "refused.yaml";
  const Result x = sf("fit " + n1.string() + " " + n2.string() + " --repeats refuse -o " +
                          refused.string(), dir);
  EXPECT_EQ(x.code, 2) << x.err;
  EXPECT_NE(x.err.find(n2.string() + ":"), std::string::npos) << x.err;
  EXPECT_NE(x.err.find("same point as " + n1.string() + ":2"), std::string::npos) << x.err;
  EXPECT_NE(x.err.find("--repeats merge"), std::string::npos) << x.err;
  EXPECT_FALSE(fs::exists(refused));
  const Result bad = sf("fit " + n1.string() + " --repeats keep -o " + refused.string(), dir);
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--repeats"), std::string::npos) << bad.err;
}

TEST(CliNumbers, CpuOffloadingOutsideMegatronCoresChecksIsExit2NamingTheFlag) {
  // Megatron-Core refuses CPU offloading with pp > 1, with recompute, and for N >= layers.
  for (const char *extra :
       {"--pp 2 --cpu-offloading-num-layers 4", "--recompute full --cpu-offloading-num-layers 4",
        "--cpu-offloading-num-layers 1000"})
    expect_exit2("estimate --system " + kSystem + " --model " + kModel + " --dp 1 --tp 4 " + extra,
                 {"--cpu-offloading-num-layers"});
  // FP8 parameters without FP8 GEMMs
  expect_exit2("estimate --system " + kSystem + " --model " + kModel +
                   " --dp 1 --tp 8 --fp8-param-gather",
               {"--fp8-param-gather"});
}

TEST(CliNumbers, PrecisionAwareOptimizerWithoutTheDistributedOptimizerIsExit2NamingTheFlag) {
  // Megatron-Core's precision-aware optimizer is its distributed optimizer's (--zero 1..3)
  expect_exit2("estimate --system " + kSystem + " --model " + kModel +
                   " --dp 1 --zero 0 --bf16-moments",
               {"--bf16-moments"});
  expect_exit2("estimate --system " + kSystem + " --model " + kModel +
                   " --dp 1 --zero 1 --framework pytorch --precision-aware-optimizer",
               {"--precision-aware-optimizer"});
}

TEST(CliNumbers, RecomputeModulesOutsideSelectiveOrUnknownIsExit2NamingTheFlag) {
  // Megatron-Core reads recompute_modules only with selective granularity; a name it does not
  // have is refused
  for (const char *extra : {"--recompute-modules mlp", "--recompute full --recompute-modules mlp",
                            "--recompute selective --recompute-modules mlp,moe_router",
                            "--recompute selective --recompute-modules ''"})
    expect_exit2("estimate --system " + kSystem + " --model " + kModel + " --dp 1 --tp 8 " + extra,
                 {"--recompute-modules"});
  TempDir dir("sf_cli_");
  const Result ok = sf("estimate --system " + kSystem + " --model " + kModel +
                           " --dp 1 --tp 8 --recompute selective --recompute-modules core_attn,mlp",
                       dir);
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("recompute=selective (core_attn,mlp)"), std::string::npos) << ok.out;
}

TEST(CliNumbers, NanOrInfinityInAFloatingPointOptionIsExit2NamingTheOption) {
  // CLI11's Range lets NaN through (every comparison with it is false): the floating-point
  // options of estimate and check take only finite numbers in their range.
  const std::string moe = "estimate --system " + kSystem + " --model " + kConfigs +
                          "/models/qwen3-30b-a3b.yaml --dp 8 --ep 8 ";
  for (const char *v : {"nan", "inf", "-inf"}) {
    expect_exit2(moe + "--capacity-factor " + v, {"--capacity-factor", "finite"});
    expect_exit2(moe + "--moe-imbalance " + v, {"--moe-imbalance", "finite"});
    for (const char *opt : {"--low", "--fail", "--min-busbw", "--noisy"})
      expect_exit2(std::string("check ") + opt + " " + v + " " + kData +
                       "/fitting/local_mpi_3curves.jsonl",
                   {opt, "finite"});
  }
  // a finite value in range still runs
  TempDir dir("sf_cli_");
  EXPECT_EQ(sf(moe + "--capacity-factor 1.25 --pad-to-capacity", dir).code, 0);
}

// `ingest`'s summary line gives the records' rank and node counts: a pasted sweep (open-mpi/ompi
// PR 7735's osu_iallgather at 16, 24 and 28 ranks) says 16-28, not the first command's 16.
TEST(CliIngest, SummaryGivesTheRecordsRanksNotOnlyTheFirstCommands) {
  TempDir dir("sf_cli_");
  const Result r =
      sf("ingest osu " + kData +
             "/real-logs/osu_iallgather_v5.3.2_ompi-pr7735_sweep-n16-24-28_nonblocking.txt"
             " -o " +
             (dir.path / "sweep.jsonl").string(),
         dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("3 records (allgather; 16-28 ranks, 1 nodes)"), std::string::npos) << r.err;
}

// A log whose every table or row was skipped has nothing to fit: exit 2 naming the file, no
// output (an IMB-NBC run that failed after its size-0 row; an OSU log of size-0 rows only).
TEST(CliIngest, ALogWithNothingReadIsExit2NotAnEmptyOutput) {
  TempDir dir("sf_cli_");
  const std::string log =
      kData + "/real-logs/imb-nbc_2018_mvapich2_2rank_ireduce_scatter_error.txt";
  const fs::path out = dir.path / "nbc.jsonl";
  const Result r = sf("ingest imb " + log + " -o " + out.string(), dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(log + ": no measurement read"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("IMB reports an error"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

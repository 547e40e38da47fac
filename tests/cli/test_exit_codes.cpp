// The exit-code scheme (README "Exit codes", scalefit/core/error.hpp), held against representative
// commands of both binaries: 0 ok; 2 bad input or environment (bad arguments, bad files, unknown
// commands, an output on a full disk); never 3 (internal error) for anything a user can cause.
// scalefit-bench runs under mpiexec -np 1.
#include "../support/paths.hpp"
#include "../support/subprocess.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using scalefit::test::Result;
using scalefit::test::run_captured;
using scalefit::test::TempDir;

namespace {

const std::string kBin = scalefit::test::bin_path("scalefit", SCALEFIT_BIN);
const std::string kBench = scalefit::test::env_or("SCALEFIT_MPIEXEC", SCALEFIT_MPIEXEC) + " -n 1 " +
                           scalefit::test::bin_path("scalefit-bench", SCALEFIT_BENCH_BIN);
const std::string kData = scalefit::test::test_data_dir(SCALEFIT_TEST_DATA_DIR);
const std::string kConfigs = scalefit::test::source_path("configs", SCALEFIT_CONFIG_DIR);
const std::string kNccl = kData + "/nccl-tests/a100-sxm4-40gb_8gpu_nvswitch_singlenode_allreduce.txt";
const std::string kJsonl = kData + "/fitting/local_mpi_3curves.jsonl";
const std::string kFit = kData + "/estimator/fit_dgx_partial.yaml";
const std::string kSystem = kConfigs + "/systems/dgx-a100.yaml";
const std::string kModel = kConfigs + "/models/gpt-1.3b.yaml";

/// Runs `command` and checks its exit code; on mismatch prints the command and its stderr.
Result expect_exit(int code, const std::string &command, const TempDir &dir) {
  const Result r = run_captured(command, dir);
  EXPECT_EQ(r.code, code) << command << "\nstderr:\n" << r.err;
  return r;
}

void write(const fs::path &p, const std::string &text) { std::ofstream(p) << text; }

} // namespace

// A named namespace, not the anonymous one: GoogleTest derives each TEST_F class from the
// fixture, and in a unity batch (this file #included into another) GCC warns about a base whose
// type has internal linkage (-Wsubobject-linkage).
namespace scalefit_exit_codes {
class ExitCodes : public ::testing::Test {
protected:
  void SetUp() override { scalefit::test::set_mpi_env(); }
  TempDir dir{"scalefit_exit_"};
  std::string out(const std::string &name) const { return (dir.path / name).string(); }
};
} // namespace scalefit_exit_codes
using scalefit_exit_codes::ExitCodes;

TEST_F(ExitCodes, RepresentativeCommandsSucceedWith0) {
  expect_exit(0, kBin + " --help", dir);
  expect_exit(0, kBin + " ingest nccl-tests " + kNccl + " -q -o " + out("a.jsonl"), dir);
  expect_exit(0, kBin + " fit " + kJsonl + " -o " + out("fit.yaml"), dir);
  expect_exit(0, kBin + " predict --fit " + out("fit.yaml") + " --op allreduce --nranks 4 --nnodes 2 --bytes 1M",
              dir);
  expect_exit(0, kBin + " estimate --system " + kSystem + " --model " + kModel + " --dp 8", dir);
  expect_exit(0, kBench + " comm --backend mpi --ops allreduce -b 8 -e 8 -n 5 --out " + out("c.jsonl"), dir);
}

TEST_F(ExitCodes, UnknownSubcommandIs2AndNamesTheWordAndTheCommands) {
  const Result r = expect_exit(2, kBin + " frobnicate", dir);
  EXPECT_NE(r.err.find("frobnicate"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("estimate"), std::string::npos) << "lists the commands: " << r.err;
  EXPECT_EQ(r.err.find("A subcommand is required"), std::string::npos) << r.err;
  const Result nested = expect_exit(2, kBin + " ingest nccltests " + kNccl, dir);
  EXPECT_NE(nested.err.find("nccltests"), std::string::npos) << nested.err;
  EXPECT_NE(nested.err.find("nccl-tests"), std::string::npos) << nested.err;
  const Result bench = expect_exit(2, kBench + " frobnicate", dir);
  EXPECT_NE(bench.err.find("frobnicate"), std::string::npos) << bench.err;
}

TEST_F(ExitCodes, BadInputIs2ForEveryCommand) {
  write(dir.path / "bad.jsonl", "{\"type\": \"context\", \"backend\": \n");
  write(dir.path / "bad.yaml", "entries: [\n");
  expect_exit(2, kBin + " ingest nccl-tests " + out("missing.txt") + " -o " + out("x.jsonl"), dir);
  expect_exit(2, kBin + " ingest osu " + kJsonl + " -o " + out("x.jsonl"), dir);
  expect_exit(2, kBin + " fit " + out("bad.jsonl") + " -o " + out("x.yaml"), dir);
  expect_exit(2, kBin + " predict --fit " + out("bad.yaml") + " --op allreduce --nranks 8 --bytes 1M", dir);
  expect_exit(2, kBin + " predict --fit " + kFit + " --op allreduce --nranks 8 --bytes 12Q", dir);
  expect_exit(2, kBin + " estimate --system " + out("bad.yaml") + " --model " + kModel + " --dp 8", dir);
  expect_exit(2, kBin + " estimate --system " + kSystem + " --model " + kModel + " --dp 8 --zero 7", dir);
  expect_exit(2, kBin + " search --system " + kSystem + " --model " + out("bad.yaml") + " --gpus 8", dir);
  expect_exit(2, kBin + " compare " + kSystem + " " + out("missing.yaml") + " --model " + kModel + " --gpus 8",
              dir);
  // MXFP8 on a device without block-scaled FP8 tensor cores; calibrating on a run not given
  const Result mx =
      expect_exit(2,
                  kBin + " estimate --system " + kConfigs + "/systems/dgx-h100.yaml --model " +
                      kModel + " --dp 8 --dtype fp8 --fp8-recipe mxfp8",
                  dir);
  EXPECT_NE(mx.err.find("--fp8-recipe"), std::string::npos) << mx.err;
  const std::string runs =
      kData + "/published-runs/nemotron4-340b-report.jsonl --root " + kConfigs + "/..";
  expect_exit(0, kBin + " validate " + runs + " --calibrate-on smallest", dir);
  const Result cal =
      expect_exit(2, kBin + " validate " + runs + " --calibrate-on no-such-run", dir);
  EXPECT_NE(cal.err.find("--calibrate-on"), std::string::npos) << cal.err;
  // 'smallest' over a source whose smallest GB200 step no efficiency reproduces (its 128k-token
  // attention alone outlasts the step at the tables' full rates): that system keeps its shipped
  // constant and says so, the other is calibrated; named, the same run is refused
  const std::string zoo = kData +
                          "/published-runs/megatron-moe-modelzoo-qwen3-gb200-gb300.jsonl "
                          "--root " +
                          kConfigs + "/..";
  const Result some = expect_exit(0, kBin + " validate " + zoo + " --calibrate-on smallest", dir);
  EXPECT_NE(some.out.find("not calibrated configs/systems/gb200-nvl72.yaml"), std::string::npos)
      << some.out;
  EXPECT_NE(some.out.find("  calibrated configs/systems/gb300-nvl72.yaml"), std::string::npos)
      << some.out;
  const Result named = expect_exit(
      2, kBin + " validate " + zoo + " --calibrate-on mz-gb200-qwen3_235b-mxfp8-128k-cp4", dir);
  EXPECT_NE(named.err.find("--calibrate-on"), std::string::npos) << named.err;
  // the system a --fit prices: its sustained efficiency scales nothing the fit prices
  expect_exit(2,
              kBin + " validate " + runs + " --calibrate-on smallest --fit " + kFit +
                  " --fit-system configs/systems/dgx-h100.yaml",
              dir);
  expect_exit(2, kBench + " comm --backend mpi -b abc", dir);
  expect_exit(2, kBench + " comm --backend nosuch", dir);
  expect_exit(2, kBench + " kernels --model " + out("missing.yaml"), dir);
}

TEST_F(ExitCodes, OutputOnAFullDiskIs2) {
  // /dev/full: every write fails with ENOSPC.
  expect_exit(2, kBin + " ingest nccl-tests " + kNccl + " -q -o /dev/full", dir);
  expect_exit(2, kBin + " fit " + kJsonl + " -o /dev/full", dir);
  // Standard output on a full disk: a subshell, so that its redirection is not the capture's.
  expect_exit(2, "(" + kBin + " estimate --system " + kSystem + " --model " + kModel + " --dp 8 >/dev/full)", dir);
  expect_exit(2, "(" + kBin + " --help >/dev/full)", dir);
  expect_exit(2, kBench + " comm --backend mpi --ops allreduce -b 8 -e 8 -n 5 --out /dev/full", dir);
  // Two ranks, of which rank 0 measures the kernels and cannot write: the other rank must not wait
  // for it forever (it did: a hang, which `timeout` turns into 124).
  expect_exit(2,
              "timeout 60 " + scalefit::test::env_or("SCALEFIT_MPIEXEC", SCALEFIT_MPIEXEC) +
                  " -n 2 " + scalefit::test::bin_path("scalefit-bench", SCALEFIT_BENCH_BIN) +
                  " kernels --engine cpu --layers 1 --hidden 64 --heads 4 --seq 64 --vocab 128"
                  " -n 3 --out /dev/full",
              dir);
}

TEST_F(ExitCodes, UnwritableOutputIs2) {
  expect_exit(2, kBin + " fit " + kJsonl + " -o " + out("no/such/dir/fit.yaml"), dir);
  expect_exit(2, kBin + " ingest nccl-tests " + kNccl + " -q -o " + out("no/such/dir/a.jsonl"), dir);
}

// Issue 19, Sec. 2: special files, pipes read once, deep nesting, outputs over inputs.
TEST_F(ExitCodes, SpecialInputsAndOutputsOverInputsAre2OrReadOnce) {
  // /dev/zero is refused at once, not read for gigabytes
  Result r = expect_exit(2, kBin + " fit /dev/zero -o " + out("z.yaml"), dir);
  EXPECT_NE(r.err.find("character device"), std::string::npos) << r.err;
  r = expect_exit(2, kBin + " estimate --system /dev/zero --model " + kModel + " --dp 8", dir);
  EXPECT_NE(r.err.find("character device"), std::string::npos) << r.err;
  // a pipe is read once although fit looks at it twice (kernel or collective records?)
  expect_exit(0, "bash -c '" + kBin + " fit <(cat " + kJsonl + ") -o " + out("p.yaml") + "'", dir);
  // a fit file through a pipe, loaded by estimate
  expect_exit(0, "bash -c '" + kBin + " estimate --system " + kSystem + " --model " + kModel +
                     " --dp 8 --fit <(cat " + out("p.yaml") + ")'",
              dir);
  // a line nested 100,000 deep: exit 2 naming file and line
  {
    std::ofstream deep(out("deep.jsonl"));
    deep << "{\"type\":\"context\",\"x\":" << std::string(100000, '[') << std::string(100000, ']')
         << "}\n";
  }
  r = expect_exit(2, kBin + " fit " + out("deep.jsonl") + " -o " + out("d.yaml"), dir);
  EXPECT_NE(r.err.find("deep.jsonl:1"), std::string::npos) << r.err;
  // an output over an input: refused, the input left as it was
  fs::copy_file(kJsonl, out("m.jsonl"));
  const auto before = fs::file_size(out("m.jsonl"));
  r = expect_exit(2, kBin + " fit " + out("m.jsonl") + " -o " + out("m.jsonl"), dir);
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  EXPECT_EQ(fs::file_size(out("m.jsonl")), before);
  r = expect_exit(2, kBin + " fit " + kJsonl + " -o " + out("f.yaml") + " --csv " + out("f.yaml"),
                  dir);
  EXPECT_NE(r.err.find("--csv"), std::string::npos) << r.err;
  fs::copy_file(kNccl, out("n.txt"));
  r = expect_exit(2, kBin + " ingest nccl-tests " + out("n.txt") + " -o " + out("n.txt"), dir);
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
}

namespace {
/// `src` with line `n` (1-based) replaced by `text`, written to `dst`.
void with_line(const std::string &src, int n, const std::string &text, const fs::path &dst) {
  std::ifstream in(src);
  std::ofstream o(dst);
  std::string line;
  for (int i = 1; std::getline(in, line); ++i)
    o << (i == n ? text : line) << "\n";
}
}  // namespace

// Issue 19, Sec. 2 (numbers): absurd figures never come with exit 0.
TEST_F(ExitCodes, AbsurdNumbersAre2NamingFileLineAndField) {
  // a compute fit of 1e308 TFLOP/s (MFU 194%) or 1e-308
  const std::string kernels = kData + "/estimator/fit_h100_kernels.yaml";
  for (const char *v : {"1e308", "1e-308"}) {
    with_line(kernels, 105, std::string("      tflops: ") + v, dir.path / "k.yaml");
    const Result r = expect_exit(2, kBin + " estimate --system " + kConfigs +
                                        "/systems/dgx-h100.yaml --model " + kModel +
                                        " --dp 8 --fit " + out("k.yaml"), dir);
    EXPECT_NE(r.err.find("k.yaml:105: field 'compute.models[1].tflops'"), std::string::npos)
        << r.err;
  }
  // a record of 5e-324 us (the fit file then held .inf)
  {
    std::ifstream in(kJsonl);
    std::string ctx, m;
    std::getline(in, ctx);
    std::getline(in, m);
    const auto at = m.find("\"time_us\":");
    ASSERT_NE(at, std::string::npos) << m;
    m.replace(at, m.find_first_of(",}", at) - at, "\"time_us\":5e-324");
    std::ofstream(out("t.jsonl")) << ctx << "\n" << m << "\n";
  }
  Result r = expect_exit(2, kBin + " fit " + out("t.jsonl") + " -o " + out("t.yaml"), dir);
  EXPECT_NE(r.err.find("t.jsonl:2: field 'time_us'"), std::string::npos) << r.err;
  // ranks that do not divide into the nodes
  r = expect_exit(2, kBin + " ingest osu " + kData + "/osu/osu_allreduce.txt --nranks 8 --nnodes 3 -o " +
                         out("o.jsonl"), dir);
  EXPECT_NE(r.err.find("--nnodes"), std::string::npos) << r.err;
  expect_exit(2, kBin + " ingest nccl-tests " + kNccl + " --nranks 8 --nnodes 3 -o " + out("o.jsonl"),
              dir);
}

TEST_F(ExitCodes, RowsWithABrokenSizeAreWarnedAboutNotDropped) {
  // nccl-tests: lines 21-23 are the 8, 16 and 32 B rows
  with_line(kNccl, 21, "          -1             2   float     sum    34.66    0.00    0.00    N/A    34.84    0.00    0.00    N/A", dir.path / "n1.txt");
  with_line(out("n1.txt"), 22, "         nan             4   float     sum    35.00    0.00    0.00    N/A    35.61    0.00    0.00    N/A", dir.path / "n2.txt");
  Result r = expect_exit(0, kBin + " ingest nccl-tests " + out("n2.txt") + " -o " + out("n.jsonl"), dir);
  EXPECT_NE(r.err.find("n2.txt:21: field 'size'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'-1'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("n2.txt:22: field 'size'"), std::string::npos) << r.err;
  // OSU: the 8 B row (line 8) as inf
  with_line(kData + "/osu/osu_allreduce.txt", 8, "inf                     0.48", dir.path / "o.txt");
  r = expect_exit(0, kBin + " ingest osu " + out("o.txt") + " --nranks 2 -o " + out("o.jsonl"), dir);
  EXPECT_NE(r.err.find("o.txt:8: field 'size'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'inf'"), std::string::npos) << r.err;
}

TEST_F(ExitCodes, CalibrateFromOneStepSaysLeaveOneOutIsNotAvailable) {
  {
    std::ifstream in(kData + "/estimator/h100_pytorch_gpt_steps.jsonl");
    std::string first;
    std::getline(in, first);
    std::ofstream(out("one.jsonl")) << first << "\n";
  }
  const Result r = expect_exit(0, kBin + " calibrate --system " + kConfigs +
                                      "/systems/dgx-h100.yaml --fit " + kData +
                                      "/estimator/fit_h100_kernels.yaml --steps " +
                                      out("one.jsonl") + " -o " + out("cal.yaml"), dir);
  EXPECT_NE(r.out.find("leave-one-out: not available with 1 step"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("leave-one-out 0.0%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("n/a"), std::string::npos) << r.out;
  // the written file loads again
  expect_exit(0, kBin + " estimate --system " + kConfigs + "/systems/dgx-h100.yaml --model " +
                     kModel + " --dp 8 --fit " + out("cal.yaml"), dir);
}

// The exit-code scheme (README "Exit codes", scalefit/core/error.hpp), held against representative
// commands of both binaries: 0 ok; 2 bad input or environment (bad arguments, bad files, unknown
// commands, an output on a full disk); never 3 (internal error) for anything a user can cause.
// scalefit-bench runs under mpiexec -np 1.
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

const std::string kBin = SCALEFIT_BIN;
const std::string kBench = std::string(SCALEFIT_MPIEXEC) + " -n 1 " + SCALEFIT_BENCH_BIN;
const std::string kData = SCALEFIT_TEST_DATA_DIR;
const std::string kConfigs = SCALEFIT_CONFIG_DIR;
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

class ExitCodes : public ::testing::Test {
protected:
  void SetUp() override { scalefit::test::set_mpi_env(); }
  TempDir dir{"scalefit_exit_"};
  std::string out(const std::string &name) const { return (dir.path / name).string(); }
};

}  // namespace

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
  expect_exit(2, "timeout 60 " + std::string(SCALEFIT_MPIEXEC) + " -n 2 " + SCALEFIT_BENCH_BIN +
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

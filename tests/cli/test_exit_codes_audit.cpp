// Issue 19, Sec. 2 (bench/ and report/): what a user can cause ends in exit 2 naming the option,
// never in exit 3 or a hang. Durations past int64 nanoseconds, a missing Python, names with
// mathtext or that slug alike, a full disk under 2 ranks, groups that do not exist, symbolic
// links planted at outputs, --resume across methods and a crash-padded tail.
#include "../support/paths.hpp"
#include "../support/subprocess.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

namespace fs = std::filesystem;
using scalefit::test::Result;
using scalefit::test::run_captured;
using scalefit::test::slurp;
using scalefit::test::TempDir;

namespace {

const std::string kBin = scalefit::test::bin_path("scalefit", SCALEFIT_BIN);
const std::string kBench = scalefit::test::env_or("SCALEFIT_MPIEXEC", SCALEFIT_MPIEXEC) + " -n 1 " +
                           scalefit::test::bin_path("scalefit-bench", SCALEFIT_BENCH_BIN);
const std::string kBench2 = scalefit::test::env_or("SCALEFIT_MPIEXEC", SCALEFIT_MPIEXEC) +
                            " -n 2 " +
                            scalefit::test::bin_path("scalefit-bench", SCALEFIT_BENCH_BIN);
const std::string kJsonl =
    scalefit::test::test_data_dir(SCALEFIT_TEST_DATA_DIR) + "/fitting/local_mpi_3curves.jsonl";
const std::string kSmall = " comm --backend mpi --ops allreduce -b 8 -e 8 -n 3 -w 1";

Result expect_exit(int code, const std::string &command, const TempDir &dir) {
  const Result r = run_captured(command, dir);
  EXPECT_EQ(r.code, code) << command << "\nstderr:\n" << r.err;
  return r;
}

void expect_names(const Result &r, const std::string &what) {
  EXPECT_NE(r.err.find(what), std::string::npos) << "names " << what << ":\n" << r.err;
}

/// kJsonl with its system renamed (every "system": "local").
void write_system(const fs::path &p, const std::string &system) {
  const std::string text =
      std::regex_replace(slurp(kJsonl), std::regex("\"system\": \"local\""),
                         "\"system\": \"" + system + "\"");
  ASSERT_NE(text.find(system), std::string::npos);
  std::ofstream(p) << text;
}

/// A Python that imports matplotlib, or "" (then the drawing tests are skipped).
std::string matplotlib_python() {
  for (const char *py : {"python3", "/usr/bin/python3"})
    if (std::system((std::string(py) + " -c 'import matplotlib' >/dev/null 2>&1").c_str()) == 0)
      return py;
  return "";
}

class Audit : public ::testing::Test {
protected:
  void SetUp() override { scalefit::test::set_mpi_env(); }
  TempDir dir{"scalefit_audit_"};
  std::string out(const std::string &name) const { return (dir.path / name).string(); }
};

} // namespace

// 1. --timeout 1e10 overflowed the watchdog's int64 nanoseconds and aborted at once with exit 3.
TEST_F(Audit, DurationsPastTheMaximumAre2NamingTheOption) {
  for (const std::string opt : {"--timeout", "--budget", "--max-time"})
    expect_names(expect_exit(2, kBench + kSmall + " " + opt + " 1e10", dir), opt);
  expect_names(expect_exit(2, kBench + kSmall + " --batch-time 1e13", dir), "--batch-time");
  expect_names(expect_exit(2, kBench + " kernels --engine cpu --layers 1 --hidden 64 --heads 4 --seq 64 "
                                     "--vocab 128 --max-time 1e10", dir), "--max-time");
  // the documented maximum itself is taken, and measures
  expect_exit(0, kBench + kSmall + " --timeout 1e6 --out " + out("t.jsonl"), dir);
  EXPECT_NE(slurp(out("t.jsonl")).find("\"measurement\""), std::string::npos);
}

// 2. A missing or unusable Python is the environment's problem: exit 2 naming --python.
TEST_F(Audit, ReportWithoutAWorkingPythonIs2NamingIt) {
  Result r = expect_exit(2, kBin + " report " + kJsonl + " --python /nonexistent/python3 -o " +
                                out("r1"), dir);
  expect_names(r, "--python");
  expect_names(r, "/nonexistent/python3");
  r = expect_exit(2, kBin + " report " + kJsonl + " --python /bin/false -o " + out("r2"), dir);
  expect_names(r, "--python");
  expect_names(r, "matplotlib");
  r = expect_exit(2, kBin + " report " + kJsonl + " --script /nonexistent/plot.py -o " + out("r3"),
                  dir);
  expect_names(r, "--script");
}

// Paths the OS cannot even stat (ENAMETOOLONG) are missing files, exit 2, not an uncaught
// std::filesystem error (found by fuzz_published_runs: a record's `system` of 4 kB).
TEST_F(Audit, PathsTooLongToStatAre2) {
  const std::string longname(5000, 'x');
  expect_names(expect_exit(2,
                           kBin + " estimate --model " + std::string(SCALEFIT_CONFIG_DIR) +
                               "/models/llama3-8b.yaml --system " + longname + " --dp 8",
                           dir),
               "cannot open");
  expect_exit(2, kBin + " check " + longname, dir);
  expect_names(
      expect_exit(2, kBin + " report " + kJsonl + " --script " + longname + " -o " + out("r4"),
                  dir),
      "--script");
}

// 3 and 4. Names are drawn literally (mathtext crashed on "a$x_y_z$b"), and systems whose names
// slug alike get a PNG each.
TEST_F(Audit, SystemNamesWithDollarsAndNamesThatSlugAlike) {
  write_system(dir.path / "a.jsonl", "DGX A100");
  write_system(dir.path / "b.jsonl", "dgx-a100");
  expect_exit(0, kBin + " report " + out("a.jsonl") + " " + out("b.jsonl") + " --data-only -o " +
                     out("alike"), dir);
  const std::string manifest = slurp(dir.path / "alike" / "plots.json");
  std::set<std::string> pngs;
  std::smatch m;
  for (auto it = manifest.cbegin();
       std::regex_search(it, manifest.cend(), m, std::regex("\"png\": \"([^\"]+)\"")); it = m[0].second)
    EXPECT_TRUE(pngs.insert(m[1]).second) << "two plots into one PNG: " << m[1];
  // 3 ops x 2 systems bandwidth plots + 2 latency plots
  EXPECT_GE(pngs.size(), 8u) << manifest;

  const std::string py = matplotlib_python();
  if (py.empty())
    GTEST_SKIP() << "no python3 with matplotlib: the drawing half is not run";
  write_system(dir.path / "c.jsonl", "my$cluster$");
  write_system(dir.path / "d.jsonl", "a$x_y_z$b"); // mathtext: "Double subscript"
  expect_exit(0, kBin + " report " + out("c.jsonl") + " " + out("d.jsonl") + " --python " + py +
                     " -o " + out("dollar"), dir);
  EXPECT_TRUE(fs::exists(dir.path / "dollar" / "latency-my-cluster.png"));
  EXPECT_TRUE(fs::exists(dir.path / "dollar" / "latency-a-x-y-z-b.png"));
}

// 5. Rank 0 on a full disk ended alone; rank 1 waited in the next collective for --timeout.
TEST_F(Audit, OutputOnAFullDiskEndsEveryRankAtOnceWith2) {
  const auto start = std::chrono::steady_clock::now();
  const Result r = expect_exit(2, "timeout 120 " + kBench2 +
                                      " comm --backend mpi --ops allreduce -b 8 -e 64K -n 3 -w 1 "
                                      "--timeout 300 --out /dev/full",
                               dir);
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(s, 30.0) << "the other rank waited for rank 0: " << r.err;
  expect_names(r, "No space left on device");
  expect_names(r, "stopping all 2 ranks"); // written at the first record, not refused before
}

// 6. --groups inter on one node measured nothing at exit 0.
TEST_F(Audit, GroupsThatDoNotExistOnTheLayout) {
  Result r = expect_exit(2, kBench + kSmall + " --groups inter --out " + out("g.jsonl"), dir);
  expect_names(r, "--groups");
  expect_names(r, "no inter-node group exists on 1 node");
  EXPECT_FALSE(fs::exists(out("g.jsonl")));
  // with another group asked for, the sweep runs and says what it skipped
  r = expect_exit(0, kBench + kSmall + " --groups world,inter", dir);
  expect_names(r, "no inter-node group");
}

// 7. A link planted in the report's directory, or at --out's lock, was written through.
TEST_F(Audit, SymbolicLinksAtOutputsAreNotWrittenThrough) {
  std::ofstream(out("victim")) << "precious\n";
  fs::create_directories(dir.path / "rep" / "data");
  fs::create_symlink(out("victim"), dir.path / "rep" / "plots.json");
  Result r = expect_exit(2, kBin + " report " + kJsonl + " --data-only -o " + out("rep"), dir);
  expect_names(r, "symbolic link");
  EXPECT_EQ(slurp(out("victim")), "precious\n");
  fs::remove(dir.path / "rep" / "plots.json");
  fs::create_symlink(out("victim"), dir.path / "rep" / "latency-local.png");
  r = expect_exit(2, kBin + " report " + kJsonl + " --data-only -o " + out("rep"), dir);
  expect_names(r, "latency-local.png");
  EXPECT_EQ(slurp(out("victim")), "precious\n");

  fs::create_symlink(out("victim"), out("m.jsonl.lock"));
  r = expect_exit(2, kBench + kSmall + " --out " + out("m.jsonl"), dir);
  expect_names(r, "--out");
  EXPECT_EQ(slurp(out("victim")), "precious\n");
}

// 8. --resume mixed statistics, buffer modes and batches in one curve; a NUL tail was kept.
TEST_F(Audit, ResumeRefusesAnotherMethodAndDropsACrashPaddedTail) {
  const std::string f = out("r.jsonl");
  expect_exit(0, kBench + kSmall + " --batch 4 --out " + f, dir);
  const std::string before = slurp(f);
  for (const auto &[args, field] :
       {std::pair<std::string, std::string>{" --batch 4 --stat mean", "--stat"},
        {" --batch 4 --hot", "--hot"},
        {" --batch 4 --sync barrier", "--sync"},
        {" --batch 7", "--batch"}}) {
    const Result r = expect_exit(2, kBench + kSmall + args + " --resume --out " + f, dir);
    expect_names(r, field);
  }
  EXPECT_EQ(slurp(f), before) << "a refused --resume leaves the file as it was";
  {
    std::ofstream pad(f, std::ios::app | std::ios::binary);
    pad << std::string(64, '\0') << "\n" << std::string(16, '\0');
  }
  const Result r = expect_exit(
      0,
      scalefit::test::env_or("SCALEFIT_MPIEXEC", SCALEFIT_MPIEXEC) + " -n 1 " +
          scalefit::test::bin_path("scalefit-bench", SCALEFIT_BENCH_BIN) +
          " comm --backend mpi --ops allreduce -b 8 -e 16 -n 3 -w 1 --batch 4 --resume --out " + f,
      dir);
  expect_names(r, "NUL");
  const std::string after = slurp(f);
  EXPECT_EQ(after.find('\0'), std::string::npos) << "the NUL tail was dropped";
  EXPECT_EQ(after.compare(0, before.size(), before), 0) << "the records before it kept";
  EXPECT_GT(after.size(), before.size()) << "the new point appended";
}

// A fit of records the reader accepts (times 1e-3 .. 1e12 us) must write a fit file its loader
// accepts: a curve missed by 1e3x at one size (MAPE with outliers 3e11 %), one whose fitted
// lift is 2.2e9 us, and one whose best fit had a step of 1e-17 GB/s once exited 3 through the
// writer's guard (the fitter now keeps to the loader's ranges, curve_bounds.hpp).
TEST_F(Audit, FitsOfExtremeButValidRecordsLoadBack) {
  for (const auto &[name, op] : {std::pair{"synthetic_fuzz_mape_beyond_1e9pct", "allgather"},
                                 std::pair{"synthetic_fuzz_lift_beyond_1e9us", "alltoall"},
                                 std::pair{"synthetic_fuzz_step_bandwidth_1e-17", "alltoall"}}) {
    const std::string in =
        scalefit::test::test_data_dir(SCALEFIT_TEST_DATA_DIR) + "/fitting/" + name + ".jsonl";
    const std::string fit = out(std::string(name) + ".yaml");
    expect_exit(0, kBin + " fit " + in + " -o " + fit + " --no-loo", dir);
    const Result r = expect_exit(
        0, kBin + " predict --fit " + fit + " --op " + op + " --nranks 4 --nnodes 1 --bytes 1M", dir);
    EXPECT_NE(r.out.find("1048576"), std::string::npos) << r.out;
  }
}

// 9. Kernel files with a field of the wrong JSON type (found by fuzz_kernels, 2026-11-28): a
//    non-string name went through nlohmann's value() to a type_error, exit 3 naming no file;
//    `fit` and `report` now exit 2 naming the file, line and field. (The report also prints the
//    context's system, device, library and command line as text.)
TEST_F(Audit, KernelFieldsOfTheWrongTypeAre2NamingTheField) {
  const std::string ctx = R"({"type":"context","schema":"scalefit.kernels/1","device":"H100")";
  const std::string kernel =
      R"({"type":"kernel","kind":"gemm","dtype":"bf16","name":"a","m":64,"n":64,"k":64,)"
      R"("batch":1,"flops":524288,"time_us":3,"tflops":0.17})";
  std::ofstream(out("name.jsonl"))
      << ctx << "}\n"
      << std::regex_replace(kernel, std::regex(R"("name":"a")"), R"("name":[1,2])") << "\n";
  Result r = expect_exit(2, kBin + " fit " + out("name.jsonl") + " -o " + out("f.yaml"), dir);
  expect_names(r, "name.jsonl:2: field 'name'");
  std::ofstream(out("system.jsonl")) << ctx << R"(,"system":5})"
                                     << "\n"
                                     << kernel << "\n";
  r = expect_exit(2, kBin + " report " + out("system.jsonl") + " --data-only -o " + out("rep"),
                  dir);
  expect_names(r, "system.jsonl:1: field 'system'");
}

// 10. An estimate JSON (`report --estimate`) whose optional fields have the wrong type (gpus as a
//     string, mfu as text, fits_memory as a number) went to nlohmann's type_error, exit 3: now
//     exit 2 naming the field. A negative or fractional GPU count is refused the same way. The
//     document itself comes from `scalefit estimate --json`.
TEST_F(Audit, EstimateFieldsOfTheWrongTypeAre2NamingTheField) {
  const std::string cfg = scalefit::test::source_path("configs", SCALEFIT_CONFIG_DIR);
  const Result est =
      expect_exit(0,
                  kBin + " estimate --system " + cfg + "/systems/dgx-h100.yaml --model " + cfg +
                      "/models/llama3-8b.yaml --dp 8 --micro-batch 1 "
                      "--global-batch 64 --json",
                  dir);
  ASSERT_NE(est.out.find("\"gpus\""), std::string::npos) << est.out.substr(0, 500);
  std::ofstream(out("ok.json")) << est.out;
  expect_exit(0, kBin + " report --estimate " + out("ok.json") + " --data-only -o " + out("r0"),
              dir);
  const std::pair<const char *, const char *> edits[] = {
      {R"("gpus":\s*8)", R"("gpus": "8")"},
      {R"("gpus":\s*8)", R"("gpus": -1e300)"},
      {R"("gpus":\s*8)", R"("gpus": 2.5)"},
      {R"("mfu":\s*[0-9.e+-]+)", R"("mfu": "high")"},
      {R"("fits_memory":\s*(true|false))", R"("fits_memory": 1)"}};
  int n = 0;
  for (const auto &[from, to] : edits) {
    const std::string text = std::regex_replace(est.out, std::regex(from), to);
    ASSERT_NE(text, est.out) << from;
    const std::string f = out("bad" + std::to_string(++n) + ".json");
    std::ofstream(f) << text;
    const Result r = expect_exit(
        2, kBin + " report --estimate " + f + " --data-only -o " + out("r" + std::to_string(n)),
        dir);
    const std::string field = std::string(from).substr(1, std::string(from).find('"', 1) - 1);
    expect_names(r, "field '" + field + "'");
  }
}

// 11. A measurement's `repeat` of the wrong shape (a string where `--repeat` writes an object,
//     a string run count; docs/records.md) ended `report` in nlohmann's type_error (exit 3); the
//     band is now drawn only from numbers, and the report is written.
TEST_F(Audit, ARepeatOfTheWrongShapeIsNotDrawnAndTheReportIsWritten) {
  std::string text = slurp(kJsonl);
  int edits = 0;
  for (const char *extra :
       {R"("repeat": "twice", )",
        R"("repeat": {"runs": "3", "busbw_min_gbps": 1, "busbw_max_gbps": 2}, )"}) {
    const auto at = text.find("\"type\": \"measurement\"",
                              text.find("\"type\": \"measurement\"") + (edits ? 1 : 0));
    ASSERT_NE(at, std::string::npos);
    text.insert(at, extra);
    ++edits;
  }
  std::ofstream(out("repeat.jsonl")) << text;
  expect_exit(0, kBin + " report " + out("repeat.jsonl") + " --data-only -o " + out("rep"), dir);
}

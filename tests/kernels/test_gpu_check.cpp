// scripts/gpu-check.sh on a machine without a GPU (a clear message, exit 77, nothing built) and
// its side-by-side table on the recorded H100 nccl-tests log (tests/data/h100) against a
// scalefit-bench comm run here: rows joined on size, ratio = scalefit time / nccl-tests time.
#include "scalefit/kernels/engine.hpp"

#include <gtest/gtest.h>

#include "../support/paths.hpp"
#include "../support/subprocess.hpp"

#include <fstream>
#include <map>
#include <sstream>

namespace {

using scalefit::test::Result;
using scalefit::test::TempDir;

std::string script() {
  return scalefit::test::source_path("scripts/gpu-check.sh",
                                     std::string(SCALEFIT_SOURCE_ROOT) + "/scripts/gpu-check.sh");
}

std::string nccl_tests_log() {
  return scalefit::test::test_data_dir(SCALEFIT_TEST_DATA) + "/h100/nccl-tests_1gpu_all_reduce.txt";
}

/// size -> out-of-place time [us] of an nccl-tests-format table (independent of the script's
/// awk: whitespace-split rows whose first field is a number and that have 13 or more fields).
std::map<long long, double> times(const std::string &text) {
  std::map<long long, double> t;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::vector<std::string> w;
    for (std::string x; f >> x;)
      w.push_back(x);
    if (w.size() < 13 || w[0].find_first_not_of("0123456789") != std::string::npos)
      continue;
    t.emplace(std::stoll(w[0]), std::stod(w[5]));
  }
  return t;
}

} // namespace

TEST(GpuCheck, NoGpuExitsSeventySevenWithMessage) {
  if (scalefit::kernels::visible_gpus() > 0)
    GTEST_SKIP() << "a GPU is visible: the script would build and run";
  TempDir d;
  const Result r = scalefit::test::run_captured("bash " + script(), d);
  EXPECT_EQ(r.code, 77) << r.out << r.err;
  EXPECT_NE(r.out.find("no GPU visible"), std::string::npos) << r.out;
}

TEST(GpuCheck, SideBySideTableOnRecordedNcclTests) {
  TempDir d;
  scalefit::test::set_mpi_env();
  // scalefit's side: the mpi backend, one rank, 8 B to 64 KiB (nccl-tests' columns).
  const Result sf = scalefit::test::run_captured(
      scalefit::test::bin_path("scalefit-bench", SCALEFIT_BENCH_BIN) +
          " comm --backend mpi --ops allreduce -b 8 -e 64K -f 2 -n 3 -w 1",
      d);
  ASSERT_EQ(sf.code, 0) << sf.out << sf.err;
  const auto sf_path = d.path / "scalefit.txt";
  std::ofstream(sf_path) << sf.out;

  const Result r = scalefit::test::run_captured(
      "bash " + script() + " --table " + sf_path.string() + " " + nccl_tests_log(), d);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto sf_t = times(sf.out), nt_t = times(scalefit::test::slurp(nccl_tests_log()));
  ASSERT_EQ(sf_t.size(), 14u); // 8 B .. 64 KiB by 2
  std::istringstream in(r.out);
  std::string line;
  std::getline(in, line);
  EXPECT_NE(line.find("ratio"), std::string::npos) << line;
  std::getline(in, line); // units
  int rows = 0;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    long long size = 0;
    double st, sa, sb, nt, na, nb, ratio;
    ASSERT_TRUE(f >> size >> st >> sa >> sb >> nt >> na >> nb >> ratio) << line;
    ASSERT_TRUE(sf_t.count(size) && nt_t.count(size)) << size;
    EXPECT_NEAR(st, sf_t.at(size), 0.006) << size;
    EXPECT_NEAR(nt, nt_t.at(size), 0.006) << size;
    EXPECT_NEAR(ratio, sf_t.at(size) / nt_t.at(size), 0.006) << size;
    ++rows;
  }
  EXPECT_EQ(rows, 14);

  const Result bad = scalefit::test::run_captured("bash " + script() + " --table /nonexistent", d);
  EXPECT_EQ(bad.code, 2) << bad.out << bad.err;
}

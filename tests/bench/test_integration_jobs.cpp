// The bench under a job's failures: a rank stopped mid-sweep is aborted by --timeout naming the
// point, and a second job on an output file that one is writing is refused.
#include "../support/subprocess.hpp"
#include "integration_support.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

using namespace scalefit;
namespace fs = std::filesystem;
using test::Result;
using test::set_mpi_env;
using test::slurp;
using test::TempDir;
using test::bench::bench_bin;
using test::bench::mpiexec;
using test::bench::processes_with;
using test::bench::run_bench;

TEST(Integration, StuckRankIsAbortedByTheTimeoutNamingThePoint) {
  TempDir d;
  const fs::path out = d.path / "stuck.jsonl";
  set_mpi_env();
  const fs::path err = d.path / "err.txt";
  const std::string cmd = "exec " + mpiexec() + " --oversubscribe -np 2 " + bench_bin() +
                          " comm --backend mpi --ops allreduce -b 8 -e 8 -n 100000000 --batch 1 "
                          "--hot --timeout 2 --out " +
                          out.string() + " >" + (d.path / "table.txt").string() + " 2>" +
                          err.string();
  const pid_t pid = test::bench::spawn_in_own_group(cmd);
  ASSERT_GT(pid, 0);
  // Wait for both ranks, then stop one (SIGSTOP: a hung rank, as in the audit).
  std::vector<pid_t> ranks;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    ranks.clear();
    for (pid_t p : processes_with(out.string()))
      if (p != pid)
        ranks.push_back(p);
    if (ranks.size() == 2 && fs::exists(out.string() + ".lock"))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(ranks.size(), 2u);
  // Into the timed samples: the table header is printed when the first point starts (under a
  // loaded CTest run start-up alone can take seconds, and a rank stopped during the warm-up
  // meets the warm-up's 120 s watchdog); then half a second more. --hot: no rotation buffers to
  // fault in during the warm-up (2x the last-level cache; on an H200 box's 300 MB L3 the
  // warm-up outlasted the half second and the test waited on the warm-up's watchdog).
  while (std::chrono::steady_clock::now() < deadline &&
         slurp(d.path / "table.txt").find("(elements)") == std::string::npos)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  kill(ranks.back(), SIGSTOP);
  const auto stopped_at = std::chrono::steady_clock::now();
  int status = 0;
  pid_t done = 0;
  while ((done = waitpid(pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() - stopped_at < std::chrono::seconds(40))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped_at).count();
  for (pid_t p : processes_with(out.string())) { // ours: never leave a stopped rank behind
    kill(p, SIGKILL);
    kill(p, SIGCONT);
  }
  if (done == 0) {
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "the job did not end within 40 s of a rank stopping (--timeout 2); its stderr:\n"
           << slurp(err) << "\ntable:\n"
           << slurp(d.path / "table.txt");
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << status;
  const std::string text = slurp(err);
  // Rank 0 names the point (and what its progress table says); a stopped rank 0 leaves the
  // message to the other rank, which names the point too.
  EXPECT_NE(text.find("timeout after 2"), std::string::npos) << text;
  EXPECT_NE(text.find(" in allreduce 8 B float out-of-place world n=2"), std::string::npos) << text;
  EXPECT_NE(text.find("rank "), std::string::npos) << text;
  EXPECT_LT(waited, 30.0);
}

TEST(Integration, TwoJobsCannotWriteOneOutputFile) {
  TempDir d;
  const fs::path out = d.path / "comm.jsonl";
  set_mpi_env();
  const std::string cmd = "exec " + mpiexec() + " --oversubscribe -np 2 " + bench_bin() +
                          " comm --backend mpi --ops allreduce -b 8 -e 8 -n 100000000 --batch 1 "
                          "--out " +
                          out.string() + " >/dev/null 2>&1";
  const pid_t pid = test::bench::spawn_in_own_group(cmd);
  ASSERT_GT(pid, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fs::exists(out.string() + ".lock") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(fs::exists(out.string() + ".lock"));
  // A second job on the same file, to append or to resume, is refused naming the file.
  for (const char *extra : {"", " --resume"}) {
    const Result second = run_bench(
        2, "--backend mpi --ops allreduce -b 8 -e 8 -n 1 --out " + out.string() + extra, d);
    EXPECT_EQ(second.code, 2) << extra << second.err;
    EXPECT_NE(second.err.find("is being written by another scalefit-bench job"), std::string::npos)
        << second.err;
    EXPECT_NE(second.err.find(out.string()), std::string::npos) << second.err;
  }
  kill(-pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  for (int tries = 0; tries < 100 && !processes_with(out.string()).empty(); ++tries) {
    for (pid_t p : processes_with(out.string()))
      kill(p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

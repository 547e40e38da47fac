/// \file integration_support.hpp
/// Helpers of the bench integration tests: scalefit-bench under mpiexec. The compiled paths
/// (SCALEFIT_MPIEXEC, SCALEFIT_BENCH_BIN from tests/bench/CMakeLists.txt) are defaults that the
/// environment overrides (tests/support/paths.hpp: SCALEFIT_MPIEXEC, SCALEFIT_BIN_DIR), so the
/// binary runs from a GPU bundle whose build tree is not where it was built.
#pragma once

#include "scalefit/core/records.hpp"

#include "../support/paths.hpp"
#include "../support/subprocess.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <spawn.h>
#include <string>
#include <sys/types.h>
#include <vector>

extern char **environ;

namespace scalefit::test::bench {

/// The mpiexec that launches ranks: $SCALEFIT_MPIEXEC, else the one CMake found.
inline std::string mpiexec() {
  return env_or("SCALEFIT_MPIEXEC", SCALEFIT_MPIEXEC);
}

/// scalefit-bench: $SCALEFIT_BIN_DIR/scalefit-bench, else the build's.
inline std::string bench_bin() {
  return bin_path("scalefit-bench", SCALEFIT_BENCH_BIN);
}

/// PIDs of processes whose command line contains `marker` (our unique temporary path).
inline std::vector<pid_t> processes_with(const std::string &marker) {
  std::vector<pid_t> pids;
  for (const auto &e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(marker) != std::string::npos)
      pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return pids;
}

/// Starts `/bin/sh -c CMD` in a process group of its own, so that a test can stop or kill the
/// whole job (kill(-pid, sig)); the shell's PID, or -1 when posix_spawn fails.
inline pid_t spawn_in_own_group(const std::string &cmd) {
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  const char *argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
  const int rc = posix_spawn(&pid, "/bin/sh", nullptr, &attr, const_cast<char **>(argv), environ);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -1;
}

/// Runs `mpiexec --oversubscribe TAIL` (a raw tail: -np N binary args), capturing stdout/stderr.
inline Result run_raw(const std::string &tail, const TempDir &d) {
  set_mpi_env();
  return run_captured(mpiexec() + " --oversubscribe " + tail, d);
}

/// Runs `scalefit-bench comm ARGS` on `np` ranks.
inline Result run_bench(int np, const std::string &args, const TempDir &d) {
  return run_raw("-np " + std::to_string(np) + " " + bench_bin() + " comm " + args, d);
}

/// Runs `scalefit-bench comm ARGS --out <d>/comm.jsonl` on `np` ranks and returns the records
/// written. A failed run (exit != 0) is a test failure, and gives an empty set; `r` (when given)
/// receives the run's exit code and output.
inline RecordSet measure(int np, const std::string &args, const TempDir &d, Result *r = nullptr) {
  const std::filesystem::path out = d.path / "comm.jsonl";
  const Result run = run_bench(np, args + " --out " + out.string(), d);
  if (r)
    *r = run;
  EXPECT_EQ(run.code, 0) << args << "\n" << run.err;
  return run.code == 0 ? read_records(out.string()) : RecordSet{};
}

} // namespace scalefit::test::bench

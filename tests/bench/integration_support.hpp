/// \file integration_support.hpp
/// Helpers of the bench integration tests: scalefit-bench under the compiled mpiexec
/// (SCALEFIT_MPIEXEC, SCALEFIT_BENCH_BIN from tests/bench/CMakeLists.txt).
#pragma once

#include "scalefit/core/records.hpp"

#include "../support/subprocess.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace scalefit::test::bench {

/// Runs `mpiexec --oversubscribe TAIL` (a raw tail: -np N binary args), capturing stdout/stderr.
inline Result run_raw(const std::string &tail, const TempDir &d) {
  set_mpi_env();
  return run_captured(std::string(SCALEFIT_MPIEXEC) + " --oversubscribe " + tail, d);
}

/// Runs `scalefit-bench comm ARGS` on `np` ranks.
inline Result run_bench(int np, const std::string &args, const TempDir &d) {
  return run_raw("-np " + std::to_string(np) + " " + SCALEFIT_BENCH_BIN + " comm " + args, d);
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

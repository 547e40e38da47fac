// Integration: scalefit-bench under mpiexec -np 2 and -np 4 on the mpi backend, records read
// back with core's read_records; a killed and resumed sweep; bad input; the nccl backend without
// NCCL or a GPU. Each run uses small sizes and -n/--batch or a tight --max-time.
#include "scalefit/core/collectives.hpp"
#include "scalefit/core/records.hpp"
#include "scalefit/core/units.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include "../support/subprocess.hpp"

#include <map>
#include <set>
#include <sstream>
#include <thread>

extern char **environ;

using namespace scalefit;
namespace fs = std::filesystem;

namespace {

using test::Result;
using test::set_mpi_env;
using test::slurp;
using test::TempDir;

/// Runs `mpiexec --oversubscribe TAIL` (a raw tail: -np N binary args), capturing stdout/stderr.
Result run_raw(const std::string &tail, const TempDir &d) {
  set_mpi_env();
  return test::run_captured(std::string(SCALEFIT_MPIEXEC) + " --oversubscribe " + tail, d);
}

Result run_bench(int np, const std::string &args, const TempDir &d) {
  return run_raw("-np " + std::to_string(np) + " " + SCALEFIT_BENCH_BIN + " comm " + args, d);
}

std::size_t occurrences(const std::string &text, const std::string &what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1))
    ++n;
  return n;
}

/// Points an op measures on n ranks for sizes 8, 32, 128, 512, 2048 (-b 8 -e 2K -f 4), derived
/// from nccl-tests' count rule: count = size / (type size * (n for the divided ops, else 1)).
std::size_t expected_points(Op op, std::size_t type_bytes, int n) {
  const bool divided = op == Op::allgather || op == Op::reducescatter || op == Op::alltoall;
  std::set<std::size_t> eff;
  for (std::size_t s : {8, 32, 128, 512, 2048}) {
    const std::size_t per = type_bytes * (divided ? static_cast<std::size_t>(n) : 1);
    if (s / per > 0)
      eff.insert(s / per * per);
  }
  return eff.size();
}

void expect_consistent(const RecordSet &set) {
  ASSERT_FALSE(set.contexts.empty());
  for (const MeasurementRecord &m : set.measurements) {
    ASSERT_TRUE(m.wrong.has_value()) << m.key();
    EXPECT_EQ(*m.wrong, 0) << m.key();
    EXPECT_GT(m.time_us, 0) << m.key();
    EXPECT_NEAR(m.algbw_gbps, gbps(static_cast<double>(m.bytes), m.time_us),
                1e-9 * std::max(1.0, m.algbw_gbps))
        << m.key();
    EXPECT_NEAR(m.busbw_gbps, m.algbw_gbps * busbw_factor(m.op, m.group.nranks),
                1e-9 * std::max(1.0, m.busbw_gbps))
        << m.key();
    ASSERT_TRUE(m.stats.has_value());
    EXPECT_EQ(m.stats->n, m.samples_us.size());
    EXPECT_NEAR(m.stats->mean, m.time_us, 1e-9 * m.time_us);
    EXPECT_LE(m.stats->min, m.stats->median);
    EXPECT_LE(m.stats->median, m.stats->max);
    EXPECT_GE(m.iters_per_sample, 1);
    // nccl-tests' count column: elements per rank; the swept sizes divide exactly.
    EXPECT_EQ(m.count, count_per_rank(m.op, m.bytes, dtype_size(m.dtype), m.group.nranks));
    EXPECT_EQ(effective_bytes(m.op, m.bytes, dtype_size(m.dtype), m.group.nranks), m.bytes);
  }
}

/// PIDs of processes whose command line contains `marker` (our unique temporary path).
std::vector<pid_t> processes_with(const std::string &marker) {
  std::vector<pid_t> pids;
  for (const auto &e : fs::directory_iterator("/proc")) {
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

const char *kFast = " -n 2 --batch 2 -w 1 -b 8 -e 2K -f 4 ";

} // namespace

TEST(Integration, TwoRanksEveryOpFloatAndDoubleChecked) {
  TempDir d;
  const fs::path out = d.path / "comm.jsonl";
  const Result r = run_bench(2,
                             std::string("--backend mpi --ops all -d float,double -c") + kFast +
                                 "--groups world,intra,inter --out " + out.string(),
                             d);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("# scalefit-bench comm: backend mpi", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("# Collective test starting: sendrecv"), std::string::npos);
  EXPECT_NE(r.out.find("# Avg bus bandwidth"), std::string::npos);
  const RecordSet set = read_records(out.string());
  expect_consistent(set);
  ASSERT_EQ(set.contexts.size(), 1u);
  EXPECT_EQ(set.contexts[0].nranks, 2);
  EXPECT_EQ(set.contexts[0].backend, "mpi");
  // One node of 2 ranks: intra n=2 is world and there is no inter shape.
  std::size_t want = 0;
  for (Op op : all_ops())
    for (std::size_t tb : {4u, 8u})
      want += 2 * expected_points(op, tb, 2);
  EXPECT_EQ(set.measurements.size(), want);
  std::map<std::string, int> placements;
  for (const auto &m : set.measurements) {
    EXPECT_EQ(m.group.label(), "world n=2 (1x2)");
    ++placements[std::string(placement_name(m.placement))];
  }
  EXPECT_EQ(placements["in-place"], placements["out-of-place"]);
}

TEST(Integration, FourRanksTwoEmulatedNodesAllGroupShapes) {
  TempDir d;
  const fs::path out = d.path / "comm.jsonl";
  const Result r =
      run_bench(4,
                std::string("--backend mpi --ops all -d float,double -c") + kFast +
                    "--groups world,intra,inter --emulate-nodes 2 --out " + out.string(),
                d);
  ASSERT_EQ(r.code, 0) << r.err;
  const RecordSet set = read_records(out.string());
  expect_consistent(set);
  EXPECT_EQ(set.contexts[0].nnodes, 2);
  EXPECT_EQ(set.contexts[0].ranks_per_node, 2);
  EXPECT_TRUE(set.contexts[0].emulated_nodes);
  std::set<std::string> shapes;
  for (const auto &m : set.measurements)
    shapes.insert(m.group.label());
  EXPECT_EQ(shapes,
            (std::set<std::string>{"world n=4 (2x2)", "intra n=2 (1x2)", "inter n=2 (2x1)"}));
  std::size_t want = 0;
  for (Op op : all_ops())
    for (std::size_t tb : {4u, 8u})
      want += 2 * (expected_points(op, tb, 4) + 2 * expected_points(op, tb, 2));
  EXPECT_EQ(set.measurements.size(), want);
  std::set<std::string> keys;
  for (const auto &m : set.measurements)
    EXPECT_TRUE(keys.insert(m.key()).second) << m.key();
  EXPECT_EQ(occurrences(r.out, "# Group shape:"), 3u * all_ops().size());
}

TEST(Integration, ReduceAndBroadcastWithANonZeroRootAndOtherReductions) {
  TempDir d;
  const fs::path out = d.path / "comm.jsonl";
  for (const char *redop : {"max", "prod"}) {
    fs::remove(out);
    const Result r = run_bench(4,
                               std::string("--backend mpi --ops reduce,broadcast,allreduce,"
                                           "reducescatter -r 1 -d int32 -c -o ") +
                                   redop + kFast + "--out " + out.string(),
                               d);
    ASSERT_EQ(r.code, 0) << r.err;
    const RecordSet set = read_records(out.string());
    expect_consistent(set);
    for (const auto &m : set.measurements)
      if (m.op == Op::reduce || m.op == Op::broadcast)
        EXPECT_EQ(m.root, 1);
  }
}

TEST(Integration, KilledSweepResumesWithoutLossOrDuplicates) {
  TempDir d;
  const fs::path out = d.path / "comm.jsonl";
  const std::string args = "comm --backend mpi --ops allreduce,allgather -b 8 -e 1M -f 2 "
                           "--min-time 0.02 --max-time 0.04 --out " +
                           out.string();
  // Start the sweep in its own process group, and SIGKILL it once a few records are on disk.
  set_mpi_env();
  const std::string cmd = std::string("exec ") + SCALEFIT_MPIEXEC + " --oversubscribe -np 2 " +
                          SCALEFIT_BENCH_BIN + " " + args + " >/dev/null 2>&1";
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  const char *argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
  ASSERT_EQ(posix_spawn(&pid, "/bin/sh", nullptr, &attr, const_cast<char **>(argv), environ), 0);
  posix_spawnattr_destroy(&attr);
  auto lines = [&] {
    std::ifstream in(out);
    std::size_t n = 0;
    for (std::string l; std::getline(in, l);)
      ++n;
    return n;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (lines() < 8 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // SIGKILL mpiexec, then its ranks: orphaned ranks of a killed mpiexec may keep running (as on
  // a cluster when a job is killed), and they are ours to stop (found by our unique path).
  kill(-pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the sweep finished before it could be killed";
  for (int tries = 0; tries < 100; ++tries) {
    const auto left = processes_with(out.string());
    if (left.empty())
      break;
    for (pid_t p : left)
      kill(p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(processes_with(out.string()).empty());

  const RecordSet first = read_records(out.string());
  ASSERT_GE(first.measurements.size(), 7u);
  // 8 B .. 1 MiB doubling is 18 sizes; on 2 ranks of float every one has a non-zero count for
  // both ops (allgather: 8 B = 1 element per rank); x2 placements.
  const std::size_t total = 2 * (18 + 18);
  ASSERT_LT(first.measurements.size(), total);

  // Without --resume the file is refused and left alone.
  const auto size_before = fs::file_size(out);
  const Result refused = run_bench(2, args.substr(5), d);
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("--resume"), std::string::npos) << refused.err;
  EXPECT_EQ(fs::file_size(out), size_before);

  const Result resumed = run_bench(2, args.substr(5) + " --resume", d);
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  const RecordSet all = read_records(out.string());
  std::map<std::string, const MeasurementRecord *> by_key;
  for (const auto &m : all.measurements)
    EXPECT_TRUE(by_key.emplace(m.key(), &m).second) << "duplicate " << m.key();
  EXPECT_EQ(all.measurements.size(), total);
  for (const auto &m : first.measurements) {
    ASSERT_EQ(by_key.count(m.key()), 1u) << "lost " << m.key();
    EXPECT_EQ(by_key[m.key()]->samples_us, m.samples_us) << "re-measured " << m.key();
  }
  EXPECT_EQ(all.contexts.size(), 2u); // the resumed run appends its own context
}

namespace {
void expect_usage_error(int np, const std::string &args, const std::string &message) {
  TempDir d;
  const fs::path out = d.path / "never.jsonl";
  const Result r = run_bench(np, args + " --out " + out.string(), d);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
  EXPECT_EQ(occurrences(r.err, "scalefit-bench: error:"), 1u) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
  EXPECT_FALSE(fs::exists(out)) << args;
  EXPECT_EQ(r.out.find("# Collective test starting"), std::string::npos) << args;
}
} // namespace

TEST(Integration, BadInputOneMessageExitTwoNoFile) {
  expect_usage_error(2, "--backend mpi -b 1M -e 8", "larger than maximum size");
  expect_usage_error(2, "--backend mpi -f 1", "step factor must be an integer > 1");
  expect_usage_error(2, "--backend mpi --ops allreduce,bogus", "unknown operation 'bogus'");
  expect_usage_error(2, "--backend mpi -d float99", "unknown data type 'float99'");
  expect_usage_error(2, "--backend mpi -d half", "not supported by the mpi backend");
  expect_usage_error(2, "--backend mpi -o avg --ops allreduce", "not supported by the mpi backend");
  expect_usage_error(4, "--backend mpi --emulate-nodes 3", "--emulate-nodes");
  expect_usage_error(2, "--backend mpi --ops reduce -r 2", "root 2 is not a rank");
}

TEST(Integration, UnwritableOutputAndForeignFile) {
  TempDir d;
  const fs::path blocker = d.path / "a_file";
  std::ofstream(blocker) << "x";
  const Result r =
      run_bench(2, "--backend mpi -b 8 -e 8 -n 1 --out " + (blocker / "c.jsonl").string(), d);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(occurrences(r.err, "scalefit-bench: error:"), 1u) << r.err;
  EXPECT_NE(r.err.find("not a directory"), std::string::npos) << r.err;

  // A file from another system is refused with --resume, and left untouched.
  const fs::path out = d.path / "comm.jsonl";
  Result first = run_bench(
      2, "--backend mpi --ops allreduce -b 8 -e 8 -n 1 --system alpha --out " + out.string(), d);
  ASSERT_EQ(first.code, 0) << first.err;
  const std::string before = slurp(out);
  const Result other = run_bench(2,
                                 "--backend mpi --ops allreduce -b 8 -e 8 -n 1 --system beta "
                                 "--resume --out " +
                                     out.string(),
                                 d);
  EXPECT_EQ(other.code, 2);
  EXPECT_NE(other.err.find("different sweep"), std::string::npos) << other.err;
  EXPECT_EQ(slurp(out), before);
}

TEST(Integration, ArgumentsThatDifferBetweenRanks) {
  TempDir d;
  const fs::path out = d.path / "never.jsonl";
  const std::string bin = SCALEFIT_BENCH_BIN;
  const Result r =
      run_raw("-np 1 " + bin + " comm --backend mpi -b 8 -e 8 --out " + out.string() + " : -np 1 " +
                  bin + " comm --backend mpi -b 8 -e 16 --out " + out.string(),
              d);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(occurrences(r.err, "scalefit-bench: error:"), 1u) << r.err;
  EXPECT_NE(r.err.find("arguments differ between ranks"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(Integration, NcclBackendWithoutNcclOrGpuIsAClearError) {
  TempDir d;
  const Result r = run_bench(2, "--backend nccl --ops allreduce -b 8 -e 8", d);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(occurrences(r.err, "scalefit-bench: error:"), 1u) << r.err;
#ifdef SCALEFIT_HAVE_NCCL
  // CUDA build: passes only on a machine without a GPU, where the message must say so.
  EXPECT_NE(r.err.find("no GPU visible"), std::string::npos) << r.err;
#else
  EXPECT_NE(r.err.find("not built with NCCL"), std::string::npos) << r.err;
#endif
}

TEST(Integration, BaselinePrintedBesideTheHarness) {
  TempDir d;
  const fs::path out = d.path / "comm.jsonl";
  const Result r = run_bench(2,
                             "--backend mpi --ops allreduce -b 8 -e 8 --max-time 0.02 "
                             "--baseline --out " +
                                 out.string(),
                             d);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("# baseline 8 B: bare MPI_Allreduce loop"), std::string::npos) << r.out;
  const RecordSet set = read_records(out.string());
  ASSERT_FALSE(set.measurements.empty());
  const auto &extra = set.measurements[0].extra;
  ASSERT_TRUE(extra.contains("baseline")) << extra.dump();
  EXPECT_GT(extra["baseline"]["bare_median_us"].get<double>(), 0);
  EXPECT_GT(extra["baseline"]["harness_median_us"].get<double>(), 0);
}

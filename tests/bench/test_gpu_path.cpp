// Issue 15, section 2: the CPU-testable logic of the GPU path's timing, with fake communicators
// in one MPI process (singleton MPI_Init: time_point combines samples over MPI_COMM_WORLD).
//  - wait_polling: the loop that replaces cudaStreamSynchronize, checking
//    ncclCommGetAsyncError between queries so a dead link ends the wait (exit 3 from main).
//  - time_point with CUDA graphs (-G N): warm-up eager (point id 0), samples timed through the
//    graph path (point id != 0), the calibrated batch sized for N launches per sample.
//  - the -c check issues its one operation through Comm::run_once (a graph under -G on nccl).
//  - --nccl-tests, --alloc and -R option rules.
#include "scalefit/bench/collective.hpp"
#include "scalefit/bench/guard.hpp"
#include "scalefit/bench/options.hpp"
#include "scalefit/bench/poll.hpp"
#include "scalefit/bench/sampling.hpp"
#include "scalefit/bench/verify.hpp"
#include "scalefit/core/error.hpp"

#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace scalefit;
using namespace scalefit::bench;

namespace {

/// One rank of host memory whose time_batch_us reports `op_us` per operation and records how
/// it was called; run_once counts the check's operations. graph_launches as given.
class RecordingComm final : public Comm {
public:
  RecordingComm(double op_us, int launches) : m_op_us(op_us), m_launches(launches) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allreduce(const void *s, void *r, std::size_t n, DType t, RedOp) override {
    if (s != r)
      std::memmove(r, s, n * dtype_size(t));
  }
  void allgather(const void *, void *, std::size_t, DType) override {}
  void reducescatter(const void *, void *, std::size_t, DType, RedOp) override {}
  void reduce(const void *, void *, std::size_t, DType, RedOp, int) override {}
  void broadcast(const void *, void *, std::size_t, DType, int) override {}
  void alltoall(const void *, void *, std::size_t, DType) override {}
  void alltoallv(const void *, void *, const AlltoallvLayout &, DType) override {}
  void sendrecv(const void *, void *, std::size_t, DType, int, int) override {}
  double time_batch_us(int batch, const std::function<void()> &op,
                       std::uint64_t point_id) override {
    calls.push_back({batch, point_id});
    for (int i = 0; i < batch; ++i)
      op();
    return m_op_us * batch;
  }
  void run_once(const std::function<void()> &op) override {
    ++run_once_calls;
    op();
  }
  int graph_launches() const override { return m_launches; }
  void synchronize() override {}
  void copy_in(void *d, const void *s, std::size_t b) override { std::memcpy(d, s, b); }
  void copy_out(void *d, const void *s, std::size_t b) override { std::memcpy(d, s, b); }
  struct Call {
    int batch;
    std::uint64_t point_id;
  };
  std::vector<Call> calls;
  int run_once_calls = 0;

private:
  double m_op_us;
  int m_launches;
};

} // namespace

TEST(WaitPolling, ReturnsOnceTheWorkIsDoneCheckingHealthBetweenQueries) {
  int queries = 0, health = 0;
  wait_polling(
      [&] { return ++queries < 4 ? WorkState::pending : WorkState::done; },
      [&] {
        ++health;
        return std::string();
      });
  EXPECT_EQ(queries, 4);
  EXPECT_EQ(health, 3); // after each of the three pending queries, never after done
}

TEST(WaitPolling, AnAsynchronousErrorEndsTheWaitNamingIt) {
  int queries = 0;
  try {
    wait_polling([&] {
      ++queries;
      return WorkState::pending; // never finishes: a dead link
    },
                 [&] { return queries >= 3 ? std::string("remote process exited") : ""; });
    FAIL() << "wait_polling returned on work that never finished";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("asynchronous error"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("remote process exited"), std::string::npos);
  }
  EXPECT_EQ(queries, 3);
}

TEST(WaitPolling, AQueryErrorPropagates) {
  EXPECT_THROW(wait_polling([]() -> WorkState { throw RuntimeError("cudaErrorIllegalAddress"); },
                            [] { return std::string(); }),
               RuntimeError);
}

TEST(TimePoint, GraphLaunchesSizeTheCalibratedBatchAndOnlySamplesUseTheGraph) {
  Watchdog watchdog(0);
  RecordingComm comm(10.0, 4); // 10 us per operation, -G 4
  int ops = 0;
  SamplingPlan plan;
  plan.warmup_iters = 5;
  plan.batch = 0;
  plan.batch_time_us = 1000;
  plan.graph_launches = 4;
  plan.rule.fixed_samples = 3;
  const PointSamples t = time_point(&comm, [&] { ++ops; }, plan, 7, watchdog);
  // A sample of 4 launches of `batch` operations lasts batch_time: batch = 1000 / 4 / 10.
  EXPECT_EQ(t.batch, 25);
  ASSERT_EQ(comm.calls.size(), 2u + 3u); // warm-up: one op, then the other -w - 1; 3 samples
  EXPECT_EQ(comm.calls[0].batch, 1);
  EXPECT_EQ(comm.calls[0].point_id, 0u); // warm-up is eager, never through a graph
  EXPECT_EQ(comm.calls[1].batch, 4);
  EXPECT_EQ(comm.calls[1].point_id, 0u);
  for (std::size_t i = 2; i < comm.calls.size(); ++i) {
    EXPECT_EQ(comm.calls[i].batch, 25);
    EXPECT_EQ(comm.calls[i].point_id, 7u);
  }
  ASSERT_EQ(t.mean_us.size(), 3u);
  EXPECT_DOUBLE_EQ(t.mean_us[0], 10.0); // time_batch_us is one batch's time: / batch per op
}

TEST(TimePoint, EagerSamplesKeepTheWholeBatchTime) {
  Watchdog watchdog(0);
  RecordingComm comm(10.0, 1);
  SamplingPlan plan;
  plan.warmup_iters = 2;
  plan.batch_time_us = 1000;
  plan.rule.fixed_samples = 2;
  const PointSamples t = time_point(&comm, [] {}, plan, 3, watchdog);
  EXPECT_EQ(t.batch, 100); // without graphs the whole sample is one batch
}

TEST(Check, TheCheckRunsItsOneOperationThroughRunOnce) {
  auto backend = make_mpi_backend(); // host memory; no MPI call is made
  RecordingComm comm(1.0, 4);
  const Collective &coll = collective(Op::allreduce);
  const CollArgs a{16, DType::float32, RedOp::sum, -1, 0, 1};
  Buffers b(*backend, 16 * 4, 16 * 4);
  EXPECT_EQ(check_point(*backend, comm, coll, b, a, Placement::out_of_place), 0);
  EXPECT_EQ(comm.run_once_calls, 1); // nccl: a graph of the operation under -G
  EXPECT_TRUE(comm.calls.empty());   // and never the timed path
}

TEST(Options, NcclTestsModeTakesItsIterationCountUnlessToldOtherwise) {
  const CommOptions o = parse_comm_args({"--nccl-tests"});
  EXPECT_TRUE(o.nccl_tests_mode);
  EXPECT_EQ(o.batch, kNcclTestsIters);
  EXPECT_EQ(o.batch, 20);
  EXPECT_EQ(o.warmup_iters, 1);
  EXPECT_EQ(parse_comm_args({"--nccl-tests", "--batch", "7"}).batch, 7);
  EXPECT_EQ(parse_comm_args({"--nccl-tests", "-w", "3"}).warmup_iters, 3);
  const CommOptions d = parse_comm_args({});
  EXPECT_FALSE(d.nccl_tests_mode);
  EXPECT_EQ(d.batch, 0); // adaptive by default
}

TEST(Options, AllocationAndRegistration) {
  const CommOptions d = parse_comm_args({});
  EXPECT_TRUE(d.nccl_mem_alloc); // ncclMemAlloc, as nccl-tests 2.19
  EXPECT_FALSE(d.alloc_given);
  EXPECT_EQ(d.registration, 0);
  const CommOptions c = parse_comm_args({"--alloc", "cuda", "-R", "1"});
  EXPECT_FALSE(c.nccl_mem_alloc);
  EXPECT_TRUE(c.alloc_given);
  EXPECT_EQ(c.registration, 1);
  EXPECT_EQ(parse_comm_args({"-R", "2"}).registration, 2);
  auto field_of = [](const std::vector<std::string> &args) {
    try {
      parse_comm_args(args);
    } catch (const InputError &e) {
      return e.field();
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(field_of({"-R", "3"}), "-R");
  EXPECT_EQ(field_of({"-R", "-1"}), "-R");
  EXPECT_EQ(field_of({"--alloc", "managed"}), "--alloc");
  EXPECT_EQ(field_of({"-R", "2", "--alloc", "cuda"}), "-R"); // symmetric needs ncclMemAlloc
  EXPECT_EQ(field_of({"-G", "-2"}), "-G");
  EXPECT_EQ(nccl_registration_name(2), "symmetric (ncclCommWindowRegister)");
  EXPECT_EQ(nccl_alloc_name(NcclSettings{}), "ncclMemAlloc");
}

TEST(HostBuffers, EveryPageIsResidentBeforeTiming) {
  // Issue 20: calloc maps large blocks lazily; the mpi backend faults every page in at alloc, so
  // the first timed pass of a rotated sweep does not time page faults. mincore tells.
  auto backend = make_mpi_backend();
  const std::size_t bytes = 16u << 20; // above glibc's mmap threshold: fresh, lazily mapped
  void *p = backend->alloc(bytes);
  const long page = sysconf(_SC_PAGESIZE);
  auto *base = reinterpret_cast<unsigned char *>(reinterpret_cast<std::uintptr_t>(p) &
                                                 ~static_cast<std::uintptr_t>(page - 1));
  const std::size_t span = static_cast<std::size_t>(static_cast<unsigned char *>(p) - base) + bytes;
  std::vector<unsigned char> resident((span + static_cast<std::size_t>(page) - 1) /
                                      static_cast<std::size_t>(page));
  ASSERT_EQ(mincore(base, span, resident.data()), 0);
  std::size_t in = 0;
  for (unsigned char r : resident)
    in += r & 1u;
  EXPECT_EQ(in, resident.size()); // every page of the buffer is mapped and resident
  EXPECT_EQ(static_cast<unsigned char *>(p)[bytes / 2], 0); // and still zero-filled
  backend->release(p);
}

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  MPI_Init(&argc, &argv);
  const int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}

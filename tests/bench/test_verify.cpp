// The -c check itself: it passes a correct single-rank implementation of every collective and
// counts the elements a broken one gets wrong.
#include "scalefit/bench/verify.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>

using namespace scalefit;
using namespace scalefit::bench;

namespace {

/// One rank, host memory. On a single rank every collective's result is its input; `mode`
/// breaks it: 0 correct, 1 does nothing, 2 corrupts element 1 of the result.
class OneRankComm final : public Comm {
public:
  explicit OneRankComm(int mode) : m_mode(mode) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allreduce(const void *s, void *r, std::size_t n, DType t, RedOp) override {
    copy(s, r, n, t);
  }
  void allgather(const void *s, void *r, std::size_t n, DType t) override { copy(s, r, n, t); }
  void reducescatter(const void *s, void *r, std::size_t n, DType t, RedOp) override {
    copy(s, r, n, t);
  }
  void reduce(const void *s, void *r, std::size_t n, DType t, RedOp, int) override {
    copy(s, r, n, t);
  }
  void broadcast(const void *s, void *r, std::size_t n, DType t, int) override { copy(s, r, n, t); }
  void alltoall(const void *s, void *r, std::size_t n, DType t) override { copy(s, r, n, t); }
  void alltoallv(const void *s, void *r, const AlltoallvLayout &l, DType t) override {
    copy(static_cast<const char *>(s) + l.send_displs[0] * dtype_size(t),
         static_cast<char *>(r) + l.recv_displs[0] * dtype_size(t), l.recv_counts[0], t);
  }
  void sendrecv(const void *s, void *r, std::size_t n, DType t, int, int) override {
    copy(s, r, n, t);
  }
  double time_batch_us(int, const std::function<void()> &, std::uint64_t) override { return 0; }
  void synchronize() override {}
  void copy_in(void *d, const void *s, std::size_t b) override {
    ++copies_in;
    std::memcpy(d, s, b);
  }
  void copy_out(void *d, const void *s, std::size_t b) override {
    ++copies_out;
    std::memcpy(d, s, b);
  }
  int copies_in = 0, copies_out = 0;

private:
  void copy(const void *s, void *r, std::size_t n, DType t) {
    if (m_mode == 1)
      return;
    if (s != r)
      std::memmove(r, s, n * dtype_size(t));
    if (m_mode == 2 && n > 1)
      store_value(t, r, 1, 1000);
  }
  int m_mode;
};

/// A backend whose memory the checks may not touch directly (as a GPU's): host memory under
/// the hood, but every exchange must go through Comm::copy_in/copy_out, and the root of an
/// out-of-place Broadcast holds its result in recv (as ncclBroadcast).
class StagedBackend final : public Backend {
public:
  std::string_view name() const override { return "staged"; }
  bool supports(DType) const override { return true; }
  bool supports(RedOp) const override { return true; }
  std::unique_ptr<Comm> make_comm(MPI_Comm, int, int) override { return nullptr; }
  void *alloc(std::size_t bytes) override { return m_mpi->alloc(bytes); }
  void release(void *p) override { m_mpi->release(p); }
  std::string device_name() const override { return "test"; }
  std::map<std::string, std::string> versions() const override { return {}; }
  std::uint64_t cache_bytes(std::string *) const override { return 0; }
  std::uint64_t available_memory_bytes() const override { return 0; }
  std::string alltoall_impl() const override { return "test"; }
  std::string timer_name() const override { return "test"; }

private:
  std::unique_ptr<Backend> m_mpi = make_mpi_backend(); // host memory only; no MPI call is made
};

std::int64_t check_on(Backend &backend, OneRankComm &comm, const Collective &coll, DType t,
                      Placement p) {
  const CollArgs a{5, t, RedOp::sum, 0, 0, 1};
  const std::size_t es = dtype_size(t);
  Buffers b(backend, coll.send_count(5, 1) * es, coll.recv_count(5, 1) * es);
  return check_point(backend, comm, coll, b, a, p);
}

std::int64_t check(int mode, const Collective &coll, DType t, Placement p) {
  auto backend = make_mpi_backend(); // host memory only; no MPI call is made
  OneRankComm comm(mode);
  return check_on(*backend, comm, coll, t, p);
}

} // namespace

TEST(Verify, CorrectResultsHaveNoWrongElement) {
  for (const Collective &coll : all_collectives())
    for (DType t : {DType::float32, DType::float64, DType::int8, DType::half})
      for (Placement p : {Placement::out_of_place, Placement::in_place})
        EXPECT_EQ(check(0, coll, t, p), 0) << op_name(coll.op) << " " << dtype_name(t);
}

TEST(Verify, AMissingResultIsWrongEverywhere) {
  for (const Collective &coll : all_collectives()) {
    // mpi's out-of-place Broadcast root keeps its result in its send buffer (MPI_Bcast from
    // there, no copy timed): on one rank nothing can be missing.
    const std::int64_t want =
        coll.op == Op::broadcast ? 0 : 5;
    EXPECT_EQ(check(1, coll, DType::float32, Placement::out_of_place), want) << op_name(coll.op);
  }
}

TEST(Verify, StagedBackendGoesThroughTheCommunicatorsCopies) {
  StagedBackend backend;
  for (const Collective &coll : all_collectives())
    for (Placement p : {Placement::out_of_place, Placement::in_place}) {
      OneRankComm good(0), missing(1), corrupt(2);
      EXPECT_EQ(check_on(backend, good, coll, DType::float32, p), 0) << op_name(coll.op);
      // Data in and the result out only by the stream-ordered copies (never a side channel).
      EXPECT_GE(good.copies_in, 1) << op_name(coll.op);
      EXPECT_EQ(good.copies_out, 1) << op_name(coll.op);
      if (p == Placement::out_of_place)
        EXPECT_EQ(check_on(backend, missing, coll, DType::float32, p), 5) << op_name(coll.op);
      EXPECT_EQ(check_on(backend, corrupt, coll, DType::int32, p), 1) << op_name(coll.op);
    }
}

TEST(Verify, OneCorruptElementIsCounted) {
  for (const Collective &coll : all_collectives())
    for (Placement p : {Placement::out_of_place, Placement::in_place})
      // (mpi's out-of-place Broadcast root: the result is the untouched send buffer.)
      EXPECT_EQ(check(2, coll, DType::int32, p),
                coll.op == Op::broadcast && p == Placement::out_of_place ? 0 : 1)
          << op_name(coll.op);
}

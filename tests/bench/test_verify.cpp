// The -c check itself: it passes a correct single-rank implementation of every collective and
// counts the elements a broken one gets wrong.
#include "scalefit/bench/verify.hpp"

#include <gtest/gtest.h>

#include <cstring>

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
  void sendrecv(const void *s, void *r, std::size_t n, DType t, int, int) override {
    copy(s, r, n, t);
  }
  double time_batch_us(int, const std::function<void()> &, std::uint64_t) override { return 0; }
  void synchronize() override {}

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

std::int64_t check(int mode, const Collective &coll, DType t, Placement p) {
  auto backend = make_mpi_backend(); // host memory only; no MPI call is made
  OneRankComm comm(mode);
  const CollArgs a{5, t, RedOp::sum, 0, 0, 1};
  const std::size_t es = dtype_size(t);
  Buffers b(*backend, coll.send_count(5, 1) * es, coll.recv_count(5, 1) * es);
  return check_point(*backend, comm, coll, b, a, p);
}

} // namespace

TEST(Verify, CorrectResultsHaveNoWrongElement) {
  for (const Collective &coll : all_collectives())
    for (DType t : {DType::float32, DType::float64, DType::int8, DType::half})
      for (Placement p : {Placement::out_of_place, Placement::in_place})
        EXPECT_EQ(check(0, coll, t, p), 0) << op_name(coll.op) << " " << dtype_name(t);
}

TEST(Verify, AMissingResultIsWrongEverywhere) {
  for (const Collective &coll : all_collectives())
    EXPECT_EQ(check(1, coll, DType::float32, Placement::out_of_place), 5) << op_name(coll.op);
}

TEST(Verify, OneCorruptElementIsCounted) {
  for (const Collective &coll : all_collectives())
    for (Placement p : {Placement::out_of_place, Placement::in_place})
      EXPECT_EQ(check(2, coll, DType::int32, p), 1) << op_name(coll.op);
}

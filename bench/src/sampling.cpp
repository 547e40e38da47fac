// The timing loop of a point and the --baseline comparison (see sampling.hpp).
#include "scalefit/bench/sampling.hpp"

#include "scalefit/bench/check.hpp"

#include <mpi.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <vector>
#include <cmath>

namespace scalefit::bench {
namespace {

constexpr int kMaxBatch = 1 << 20;

/// One number per rank combined over MPI_COMM_WORLD with one MPI_Allgather (every rank gets
/// the same values, so every rank takes the same stop decision): the mean over participating
/// ranks, the max over them, and the max over all ranks of `elapsed`. Collective.
struct Combined {
  double mean = 0, max = 0, elapsed = 0;
  double faults = 0; ///< the max over all ranks of `faults`
  int slowest = -1; ///< the world rank whose value is the max (lowest such rank)
};
Combined combine(double value, bool participates, double elapsed = 0, double faults = 0) {
  static thread_local std::vector<double> all;
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  all.resize(3 * static_cast<std::size_t>(n));
  const double mine[3] = {participates ? value : -1.0, elapsed, faults};
  SCALEFIT_MPI_CHECK(MPI_Allgather(mine, 3, MPI_DOUBLE, all.data(), 3, MPI_DOUBLE, MPI_COMM_WORLD));
  Combined c;
  double sum = 0;
  int k = 0;
  for (int r = 0; r < n; ++r) {
    const double v = all[3 * static_cast<std::size_t>(r)];
    c.elapsed = std::max(c.elapsed, all[3 * static_cast<std::size_t>(r) + 1]);
    c.faults = std::max(c.faults, all[3 * static_cast<std::size_t>(r) + 2]);
    if (v < 0)
      continue;
    sum += v;
    if (c.slowest < 0 || v > c.max) {
      c.max = v;
      c.slowest = r;
    }
    ++k;
  }
  c.mean = k > 0 ? sum / k : 0.0;
  return c;
}

/// Minor and major page faults of this process so far (getrusage; 0 where it fails).
double page_faults_so_far() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0)
    return 0;
  return static_cast<double>(u.ru_minflt + u.ru_majflt);
}

} // namespace

Rotation Rotation::make(std::size_t step, std::size_t extent, std::size_t alloc, bool hot) {
  Rotation r;
  r.step = step;
  if (hot || step == 0 || extent > alloc)
    return r;
  r.steps = (alloc - extent) / step + 1;
  return r;
}

PointSamples time_point(Comm *comm, const std::function<void()> &op, const SamplingPlan &plan,
                        std::uint64_t point_id, Watchdog &watchdog) {
  PointSamples t;
  const bool me = comm != nullptr;
  // Warm-up: one operation alone (it pays the first-touch costs), then up to -w - 1 more as one
  // batch, capped at half of the point's time cap so that warming large sizes does not dominate
  // a sweep. The second batch calibrates the sample batch size; every rank sees the same max.
  const int warm = plan.warmup_iters;
  double op_us = 0;
  if (warm > 0) {
    watchdog.arm();
    watchdog.barrier();
    op_us = combine(me ? comm->time_batch_us(1, op, 0) : 0.0, me).max;
    watchdog.disarm();
    const double budget_us = 0.5 * plan.rule.max_time_s * 1e6;
    const int more =
        static_cast<int>(std::min<double>(warm - 1, std::floor(budget_us / std::max(op_us, 1e-3))));
    if (more > 0) {
      watchdog.arm(2e-6 * more * op_us);
      watchdog.barrier();
      op_us = combine(me ? comm->time_batch_us(more, op, 0) : 0.0, me).max / more;
      watchdog.disarm();
    }
  }
  // With CUDA graphs a sample is `launches` launches of a graph of `batch` operations: the
  // calibrated batch is sized so that the whole sample lasts about batch_time_us.
  const int launches = std::max(1, plan.graph_launches); // alike on every rank
  t.batch = plan.batch > 0 ? plan.batch
                           : calibrate_batch(op_us, plan.batch_time_us / launches, kMaxBatch);
  t.warmup_op_us = op_us;
  const double start = MPI_Wtime();
  const double faults_before = page_faults_so_far();
  for (;;) {
    watchdog.arm(2e-6 * t.batch * launches * op_us);
    watchdog.barrier();
    const double local = me ? comm->time_batch_us(t.batch, op, point_id) : 0.0;
    // The elapsed time rides along, so every rank gets the same max and stops alike.
    const Combined c =
        combine(local, me, MPI_Wtime() - start, page_faults_so_far() - faults_before);
    watchdog.disarm();
    t.mean_us.push_back(c.mean / t.batch);
    op_us = std::max(op_us, c.max / t.batch); // the watchdog's expectation follows the samples
    t.max_us.push_back(c.max / t.batch);
    t.slowest_rank.push_back(c.slowest);
    t.elapsed_s = c.elapsed;
    t.page_faults = static_cast<std::int64_t>(c.faults);
    if (plan.rule.should_stop(t.mean_us, c.elapsed))
      break;
  }
  return t;
}

nlohmann::json time_baseline(Comm *comm, const std::function<void()> &op, const char *send,
                             char *recv, const CollArgs &a, const Rotation &rot, int batch,
                             double op_us, int nsamples, Watchdog &watchdog) {
  std::vector<double> harness, bare;
  const bool me = comm != nullptr;
  const MPI_Comm mc = me ? comm->mpi_comm() : MPI_COMM_NULL;
  const int count = static_cast<int>(a.count);
  const MPI_Datatype type = mpi_datatype(a.dtype);
  const MPI_Op mop = mpi_op(a.redop);
  std::size_t k = 0;
  for (int s = 0; s < nsamples; ++s) {
    watchdog.arm(4e-6 * batch * op_us);
    SCALEFIT_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    harness.push_back(combine(me ? comm->time_batch_us(batch, op, 0) : 0.0, me).mean / batch);
    SCALEFIT_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double local = 0;
    if (mc != MPI_COMM_NULL) {
      const double t0 = MPI_Wtime();
      for (int i = 0; i < batch; ++i) {
        const std::size_t shift = rot.step * k;
        if (++k == rot.steps)
          k = 0;
        MPI_Allreduce(send + shift, recv + shift, count, type, mop, mc);
      }
      local = (MPI_Wtime() - t0) * 1e6;
    }
    bare.push_back(combine(local, mc != MPI_COMM_NULL).mean / batch);
    watchdog.disarm();
  }
  const Summary h = summarize(harness), b = summarize(bare);
  const double over = h.median - b.median, pct = b.median > 0 ? over / b.median * 100 : 0.0;
  return {{"samples", nsamples},
          {"iters_per_sample", batch},
          {"across_ranks", "mean"},
          {"statistic", "median"},
          {"harness_median_us", h.median},
          {"harness_mean_us", h.mean},
          {"bare_median_us", b.median},
          {"bare_mean_us", b.mean},
          {"overhead_us", over},
          {"overhead_pct", pct},
          {"goal", "<= 2% or <= 0.1 us"},
          {"within_goal", pct <= 2.0 || over <= 0.1}};
}

Progress::Progress(std::size_t total) : m_total(total), m_start(MPI_Wtime()), m_last(m_start) {}

void Progress::advance(std::size_t n, const std::string &what, bool force) {
  m_done += n;
  const double now = MPI_Wtime();
  if (!force && now - m_last < 2.0)
    return;
  m_last = now;
  const double el = now - m_start;
  const double eta = m_done > 0 ? el / static_cast<double>(m_done) *
                                      static_cast<double>(m_total - std::min(m_total, m_done))
                                : 0;
  std::fprintf(stderr, "scalefit-bench: %zu/%zu points (%s), %.0f s elapsed, ETA %.0f s\n",
               m_done, m_total, what.c_str(), el, eta);
  std::fflush(stderr);
}

} // namespace scalefit::bench

// Real host-memory MPI curves (mpirun -np 4 on a 2-core box, scalefit-bench comm, 8 B .. 64 MiB):
// latency steps up at the eager -> rendezvous switch and bandwidth falls when buffers leave the
// cache. tests/data/fitting/local_mpi_3curves.jsonl holds three of them (allreduce world
// out-of-place, reduce intra in-place, sendrecv intra out-of-place), copied with their context.
#include "scalefit/fitting/fit_file.hpp"

#include "scalefit/core/records.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace scalefit;
using namespace scalefit::fitting;

namespace {

const std::string kFixture =
    std::string(SCALEFIT_TEST_DATA_DIR) + "/fitting/local_mpi_3curves.jsonl";

FitFile fit_fixture(const FitOptions &opt) {
  const RecordSet rs = read_records(kFixture);
  return fit_records({rs}, {kFixture}, opt);
}

} // namespace

TEST(LocalMpi, FallsBringTheCurvesWithinTenPercent) {
  FitOptions rising_only;
  rising_only.max_drops = 0;
  const FitFile before = fit_fixture(rising_only);
  const FitFile after = fit_fixture(FitOptions{});
  ASSERT_EQ(before.entries.size(), 3u);
  ASSERT_EQ(after.entries.size(), 3u);
  double sum_before = 0, sum_after = 0, sum_loo = 0;
  for (std::size_t i = 0; i < after.entries.size(); ++i) {
    const FitEntry &b = before.entries[i], &a = after.entries[i];
    ASSERT_EQ(a.id, b.id);
    std::printf("%-48s rising-only %-16s %6.2f%% | %-20s MAPE %6.2f%% LOO %6.2f%% max %6.2f%%\n",
                a.id.c_str(), model_label(b.model).c_str(), b.quality.mape_pct,
                model_label(a.model).c_str(), a.quality.mape_pct, a.quality.loo_mape_pct,
                a.quality.max_ape_pct);
    // Every one of these curves falls somewhere: the chosen model has a drop or a latency step.
    EXPECT_FALSE(a.model.drops.empty() && a.model.lifts.empty()) << a.id;
    EXPECT_LT(a.quality.mape_pct, 0.3 * b.quality.mape_pct) << a.id;
    EXPECT_LE(a.quality.mape_pct, 10.0) << a.id;
    sum_before += b.quality.mape_pct;
    sum_after += a.quality.mape_pct;
    sum_loo += a.quality.loo_mape_pct;
    // Predictions stay positive and finite inside and outside the measured range.
    for (double s = 1; s < 1e12; s *= 4) {
      const double t = a.model.time_us(std::clamp(s, a.min_bytes, a.max_bytes));
      EXPECT_TRUE(std::isfinite(t) && t > 0) << a.id << " at " << s;
      EXPECT_GT(a.model.bandwidth_gbps(s), 0) << a.id << " at " << s;
    }
  }
  std::printf("mean MAPE: rising-only %.2f%%, with falls %.2f%% (LOO %.2f%%)\n", sum_before / 3,
              sum_after / 3, sum_loo / 3);
  EXPECT_GT(sum_before / 3, 25.0); // the rising-only models miss these curves badly
  EXPECT_LE(sum_after / 3, 8.0);
  EXPECT_LE(sum_loo / 3, 20.0);
}

TEST(LocalMpi, FitFileRoundTripKeepsDropsAndLifts) {
  const FitFile f = fit_fixture(FitOptions{});
  const std::string text = to_yaml(f);
  EXPECT_NE(text.find("schema: scalefit.fit/2"), std::string::npos);
  const FitFile back = parse_fit_file(text, "local.yaml");
  ASSERT_EQ(back.entries.size(), f.entries.size());
  for (std::size_t i = 0; i < f.entries.size(); ++i) {
    const CurveModel &m = f.entries[i].model, &n = back.entries[i].model;
    ASSERT_EQ(n.drops.size(), m.drops.size());
    ASSERT_EQ(n.lifts.size(), m.lifts.size());
    for (double s = 8; s <= 1 << 26; s *= 2)
      EXPECT_NEAR(n.time_us(s), m.time_us(s), 1e-6 * m.time_us(s)) << f.entries[i].id << " " << s;
  }
}

TEST(LocalMpi, PredictionsPositiveAndFiniteIncludingExtrapolation) {
  const FitFile f = fit_fixture(FitOptions{});
  for (const FitEntry &e : f.entries) {
    const CommQuery q{e.op, e.group.nranks, e.group.nnodes, e.dtype};
    double last = 0;
    for (double s : {1.0, 4.0, 8.0, 300.0, 4096.0, 1e6, 6.7e7, 1e9, 1e12, 1e15}) {
      const auto p = predict(f, q, s);
      ASSERT_TRUE(p) << e.id << " at " << s;
      EXPECT_TRUE(std::isfinite(p->time_us) && p->time_us > 0) << e.id << " at " << s;
      EXPECT_EQ(p->extrapolated, s < e.min_bytes || s > e.max_bytes) << e.id << " at " << s;
      if (s > e.max_bytes) // beyond the data: linear in size at B(max_bytes), so it keeps growing
        EXPECT_GT(p->time_us, last) << e.id << " at " << s;
      last = p->time_us;
    }
  }
}

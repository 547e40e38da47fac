// --repeat (issue 17, section 3): the runs of a point merged into one record (repeat.hpp).
#include "scalefit/bench/repeat.hpp"

#include "scalefit/core/error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

using namespace scalefit;
using namespace scalefit::bench;

namespace {

MeasurementRecord run_of(double time_us, std::uint64_t bytes = 1 << 20) {
  MeasurementRecord m;
  m.op = Op::allreduce;
  m.group.kind = "world";
  m.group.nranks = 4;
  m.group.nnodes = 1;
  m.group.ranks_per_node = 4;
  m.bytes = bytes;
  m.count = bytes / 4;
  m.time_us = time_us;
  m.algbw_gbps = static_cast<double>(bytes) / time_us * 1e-3;
  m.busbw_gbps = m.algbw_gbps * busbw_factor(m.op, m.group.nranks);
  m.samples_us = {time_us, time_us};
  return m;
}

} // namespace

TEST(Repeat, TheRecordIsTheMedianRunsWithEveryRunBeside) {
  const std::vector<double> times = {130.0, 100.0, 110.0};
  std::vector<MeasurementRecord> runs;
  for (double t : times)
    runs.push_back(run_of(t));
  const MeasurementRecord m = merge_runs(runs);
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_DOUBLE_EQ(m.time_us, sorted[1]);
  EXPECT_EQ(m.samples_us, runs[2].samples_us); // that run's samples, untouched
  const auto &r = m.extra.at("repeat");
  EXPECT_EQ(r["runs"], 3);
  EXPECT_EQ(r["run"], 2);
  EXPECT_EQ(r["time_us"].get<std::vector<double>>(), times);
  EXPECT_DOUBLE_EQ(r["spread_pct"].get<double>(), 100 * (sorted[2] - sorted[0]) / sorted[1]);
  EXPECT_DOUBLE_EQ(r["busbw_min_gbps"].get<double>(), runs[0].busbw_gbps);
  EXPECT_DOUBLE_EQ(r["busbw_max_gbps"].get<double>(), runs[1].busbw_gbps);
  EXPECT_DOUBLE_EQ(r["busbw_median_gbps"].get<double>(), runs[2].busbw_gbps);
}

TEST(Repeat, TheClaimedIntervalHoldsAcrossTheRuns) {
  // Each run claimed 0.5% from its own samples; the runs span 100..130 us around 110: the merged
  // record claims at least half that range (13.6%), never less than the kept run's own 0.5%.
  std::vector<MeasurementRecord> runs;
  for (double t : {130.0, 100.0, 110.0}) {
    runs.push_back(run_of(t));
    runs.back().extra = {{"ci_rel", 0.005}};
  }
  const MeasurementRecord m = merge_runs(runs);
  EXPECT_NEAR(m.extra["ci_rel"].get<double>(), 30.0 / 110.0 / 2, 1e-12);
  EXPECT_NEAR(m.extra["repeat"]["ci_rel_across_runs"].get<double>(), 30.0 / 110.0 / 2, 1e-12);
  std::vector<MeasurementRecord> close;
  for (double t : {100.0, 100.2, 100.1}) {
    close.push_back(run_of(t));
    close.back().extra = {{"ci_rel", 0.02}};
  }
  EXPECT_DOUBLE_EQ(merge_runs(close).extra["ci_rel"].get<double>(), 0.02);
}

TEST(Repeat, EvenRunsKeepTheFasterMiddleRunAndOneRunIsUnchanged) {
  const MeasurementRecord m = merge_runs({run_of(40), run_of(10), run_of(30), run_of(20)});
  EXPECT_DOUBLE_EQ(m.time_us, 20);
  EXPECT_EQ(m.extra["repeat"]["run"], 3);
  EXPECT_DOUBLE_EQ(m.extra["repeat"]["spread_pct"].get<double>(), 100.0 * (40 - 10) / 25);
  const MeasurementRecord one = merge_runs({run_of(10)});
  EXPECT_FALSE(one.extra.is_object() && one.extra.contains("repeat"));
  EXPECT_THROW(merge_runs({}), InputError);
  EXPECT_DOUBLE_EQ(run_spread_pct({5}), 0);
  EXPECT_DOUBLE_EQ(run_spread_pct({0, 0}), 0);
}

TEST(Repeat, MergerHoldsAPointUntilItsLastRunAndSummarizesTheSpread) {
  RepeatMerger merger(2);
  EXPECT_FALSE(merger.add(run_of(100, 1024)).has_value());
  EXPECT_FALSE(merger.add(run_of(100, 2048)).has_value());
  const auto a = merger.add(run_of(120, 1024));
  ASSERT_TRUE(a.has_value());
  EXPECT_DOUBLE_EQ(a->time_us, 100);
  const auto b = merger.add(run_of(100, 2048));
  ASSERT_TRUE(b.has_value());
  const std::string s = merger.summary();
  EXPECT_NE(s.find("over 2 runs"), std::string::npos) << s;
  // 1024 B: 100 (120 - 100) / 110 = 18.2%; 2048 B: 0%.
  EXPECT_NE(s.find("allreduce world n=4 (1x4) float out-of-place: median 9.1%, max 18.2% at 1024 B, "
                   "over 2 points"),
            std::string::npos)
      << s;
  RepeatMerger once(1);
  EXPECT_TRUE(once.add(run_of(5)).has_value());
  EXPECT_EQ(once.summary(), "");
}

TEST(Repeat, BudgetWeightFollowsTheUncertaintyWithinAQuarterAndFourShares) {
  EXPECT_DOUBLE_EQ(budget_weight(0.01, 0.01), 1.0);
  EXPECT_DOUBLE_EQ(budget_weight(0.03, 0.01), 3.0);
  EXPECT_DOUBLE_EQ(budget_weight(0.5, 0.01), 4.0);  // at most 4 shares
  EXPECT_DOUBLE_EQ(budget_weight(0.0, 0.01), 0.25); // agreeing runs are still revisited
  EXPECT_DOUBLE_EQ(budget_weight(std::numeric_limits<double>::quiet_NaN(), 0.01), 1.0);
  EXPECT_DOUBLE_EQ(budget_weight(0.2, 0.0), 1.0); // no target: even shares
  EXPECT_LT(budget_weight(0.011, 0.01), budget_weight(0.012, 0.01));
}

TEST(Repeat, UncertaintyIsTheLargerOfTheClaimedIntervalsAndHalfTheRunsRange) {
  RepeatMerger merger(3);
  EXPECT_TRUE(std::isnan(merger.uncertainty(run_of(100).key())));
  MeasurementRecord a = run_of(100, 1024), b = run_of(100, 2048);
  a.extra = {{"ci_rel", 0.004}};
  b.extra = {{"ci_rel", 0.03}};
  merger.add(a);
  merger.add(b);
  EXPECT_DOUBLE_EQ(merger.uncertainty(a.key()), 0.004); // one run: its own interval
  EXPECT_DOUBLE_EQ(merger.uncertainty(b.key()), 0.03);
  MeasurementRecord a2 = run_of(120, 1024);
  a2.extra = {{"ci_rel", 0.002}};
  merger.add(a2);
  // Runs at 100 and 120 us: half the range over the median 110 = 9.1%, above both intervals.
  EXPECT_NEAR(merger.uncertainty(a.key()), 20.0 / 110.0 / 2, 1e-12);
  EXPECT_NEAR(merger.held_weight(0.01), budget_weight(20.0 / 110.0 / 2, 0.01) + 3.0, 1e-12);
}

TEST(Repeat, TheMergedRecordKeepsEachRunsCapAndTheUncertaintyThatSetIt) {
  std::vector<MeasurementRecord> runs;
  for (int i = 0; i < 3; ++i) {
    runs.push_back(run_of(100 + i));
    runs.back().extra = {{"time_cap_s", 0.01 * (i + 1)}};
    if (i > 0)
      runs.back().extra["uncertainty_before"] = 0.02 * i;
  }
  const MeasurementRecord m = merge_runs(runs);
  const auto &r = m.extra.at("repeat");
  EXPECT_EQ(r["time_cap_s"].get<std::vector<double>>(), (std::vector<double>{0.01, 0.02, 0.03}));
  EXPECT_TRUE(r["uncertainty_before"][0].is_null());
  EXPECT_DOUBLE_EQ(r["uncertainty_before"][2].get<double>(), 0.04);
  EXPECT_FALSE(m.extra.contains("uncertainty_before")); // per run, in extra.repeat only
}

TEST(Repeat, SweepBudgetSharesEvenlyFirstThenByWeightOverTheVisitsLeft) {
  // Two runs of three points, 12 s, every point using its whole cap and nothing else: the first
  // run gives each point 12/6 = 2 s (nothing measured yet); the second gives the time left in
  // proportion to the weights.
  SweepBudget budget(2, 0.01);
  RepeatMerger merger(2);
  double u = 0, elapsed = 0;
  const std::vector<double> ci = {0.04, 0.01, 0.0025}; // weights 4, 1, 1/4
  std::vector<MeasurementRecord> pts;
  for (std::size_t i = 0; i < ci.size(); ++i) {
    pts.push_back(run_of(100, 1024u << i));
    pts.back().extra = {{"ci_rel", ci[i]}};
    const double cap = budget.share(12, elapsed, 0, 6 - i, merger, pts[i].key(), u);
    EXPECT_DOUBLE_EQ(cap, 2.0);
    EXPECT_TRUE(std::isnan(u));
    budget.visited(cap, cap);
    elapsed += cap;
    merger.add(pts[i]);
  }
  double total = 0;
  std::vector<double> caps;
  for (std::size_t i = 0; i < ci.size(); ++i) {
    const double cap = budget.share(12, elapsed, 1, 3 - i, merger, pts[i].key(), u);
    EXPECT_DOUBLE_EQ(u, ci[i]);
    caps.push_back(cap);
    total += cap;
    budget.visited(cap, cap);
    elapsed += cap;
  }
  EXPECT_NEAR(caps[0], 6 * 4 / 5.25, 1e-12);
  EXPECT_NEAR(caps[1], 6 * 1 / 5.25, 1e-12);
  EXPECT_NEAR(caps[2], 6 * 0.25 / 5.25, 1e-12);
  EXPECT_NEAR(total, 6, 1e-12); // the last visit ends the budget, no more
  EXPECT_DOUBLE_EQ(budget.share(12, 13, 1, 1, merger, pts[0].key(), u), 0); // overspent
}

TEST(Repeat, SweepBudgetSetsAsideTheOverheadEachVisitHasShown) {
  // Each point also spends 0.5 s outside its cap (warm-up, checks): after the first visit the
  // budget keeps 0.5 s for each visit left, so the sweep still ends at 10 s.
  SweepBudget budget(1, 0.01);
  RepeatMerger merger(1);
  double u = 0, elapsed = 0;
  const std::size_t n = 4;
  for (std::size_t i = 0; i < n; ++i) {
    const double cap = budget.share(10, elapsed, 0, n - i, merger, run_of(1).key(), u);
    if (i == 0)
      EXPECT_DOUBLE_EQ(cap, 2.5); // nothing seen yet: no overhead set aside
    else
      EXPECT_LT(cap, 2.5);
    budget.visited(cap + 0.5, cap);
    elapsed += cap + 0.5;
  }
  EXPECT_NEAR(elapsed, 10.0, 1e-9);
}

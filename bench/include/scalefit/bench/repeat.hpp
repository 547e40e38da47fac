/// \file repeat.hpp
/// `scalefit-bench comm --repeat N`: the sweep runs N times and each point's N measurements are
/// merged into ONE record (a file never holds the same point twice, so readers that predate
/// --repeat read it unchanged). The record is the median run's measurement, untouched (time_us,
/// stats and samples of that run; for an even N the faster of the two middle runs), and
/// `extra.repeat` holds the runs (docs/records.md):
///   {"runs": N, "run": index of the run kept (0-based), "time_us": [per run, us],
///    "busbw_gbps": [per run, GB/s], "busbw_min_gbps", "busbw_median_gbps", "busbw_max_gbps",
///    "spread_pct": 100 (max - min) / median of the runs' time_us [%]}.
#pragma once

#include "scalefit/core/records.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace scalefit::bench {

/// The record of one point measured in several runs (`runs`: one measurement per run, in run
/// order, the same key): the median run's record with extra.repeat (see the file comment), its
/// extra.ci_rel raised to at least half the runs' relative range (extra.repeat.
/// ci_rel_across_runs: the claimed interval holds across the runs, not only within one). One
/// run: that record unchanged. \throws InputError (field --repeat) for an empty list.
MeasurementRecord merge_runs(const std::vector<MeasurementRecord> &runs);

/// 100 (max - min) / median of `values` [%] (the median of an even count: mean of the middle
/// two); 0 for fewer than two values or a median of 0.
double run_spread_pct(std::vector<double> values);

/// How much of a --budget sweep's time a point's next run gets, relative to an ordinary point
/// (--repeat N --budget B: the runs after the first are revisits that spend the budget where
/// the runs so far disagree most; issue 20). `uncertainty`: the point's relative run-to-run
/// uncertainty so far (RepeatMerger::uncertainty; NaN: nothing measured yet, weight 1);
/// `target`: the relative half-width the stop rule aims for (--max-ci, else --max-noise).
/// \returns uncertainty / target clamped to [1/4, 4]: a point whose runs agree to a quarter of
/// the target still gets a quarter share (it is timed again, at another moment), one 4x the
/// target or worse at most 4 shares. Weight 1 for a non-positive target.
double budget_weight(double uncertainty, double target);

/// Holds the points of a --repeat sweep until their last run (rank 0).
class RepeatMerger {
public:
  /// `runs` = --repeat (>= 1).
  explicit RepeatMerger(int runs) : m_runs(runs < 1 ? 1 : runs) {}
  /// Adds one run's measurement of a point. \returns the record to write once the point has
  /// `runs` measurements (merge_runs), else nullopt (held).
  std::optional<MeasurementRecord> add(const MeasurementRecord &m);
  /// The relative run-to-run uncertainty of the point `key` (MeasurementRecord::key()) from the
  /// runs held so far: the larger of their largest extra.ci_rel and half their relative range
  /// (max - min) / median (merge_runs' claimed interval). NaN when no run of it is held.
  double uncertainty(const std::string &key) const;
  /// Sum of budget_weight(uncertainty(k), target) over every point held (the points of one
  /// run of the sweep once the first run is over).
  double held_weight(double target) const;
  /// The end-of-sweep lines: per curve (op, group, dtype, placement, method) the largest
  /// run-to-run spread and its size, the median spread, and the points above 5%. "" for one run.
  std::string summary() const;

private:
  struct Curve {
    std::string label;
    std::vector<double> spreads; ///< per point [%]
    double worst = -1;
    std::uint64_t worst_bytes = 0;
  };
  int m_runs;
  std::map<std::string, std::vector<MeasurementRecord>> m_held;
  std::vector<std::string> m_order; ///< curves in the order first merged
  std::map<std::string, Curve> m_curves;
};

/// The time cap of each point of a `--budget` sweep (rank 0; issue 20). What a point spends
/// outside its cap (its warm-up and batch calibration) is set aside first: the mean of it per
/// visit so far, times the visits left (a communicator's one-off set-up is not a visit's). The first run shares the rest evenly
/// over the visits left; a later run (--repeat) is a revisit, and a point's share is its
/// budget_weight over the weight of the visits left: this run's not yet visited and, at this
/// run's weights, one run's worth for each run after it.
class SweepBudget {
public:
  /// `runs` = --repeat (>= 1); `target` the stop rule's relative half-width (budget_weight).
  SweepBudget(int runs, double target) : m_runs(runs < 1 ? 1 : runs), m_target(target) {}
  /// The cap [s] of the next point: `budget_s` the whole sweep's (--budget), `elapsed_s` the
  /// sweep's wall time so far, `sweep` the 0-based run, `points_left` the visits not yet made in
  /// all runs (this one included), `merger` the runs so far and `key` the point's
  /// MeasurementRecord::key(). Sets `uncertainty` to what weighted a revisit (NaN in the first
  /// run). Call once per point, in sweep order, and visited() after it. \returns >= 0.
  double share(double budget_s, double elapsed_s, int sweep, std::size_t points_left,
               const RepeatMerger &merger, const std::string &key, double &uncertainty);
  /// Records the point just timed: `wall_s` its whole time [s] (warm-up included), `sampled_s`
  /// the part spent sampling (PointSamples::elapsed_s), which its cap bounds.
  void visited(double wall_s, double sampled_s) {
    m_overhead_s += std::max(0.0, wall_s - sampled_s);
    ++m_visits;
  }

private:
  int m_runs;
  double m_target;
  int m_weights_run = 0;    ///< the run whose weights below were taken
  double m_run_weight = 0;  ///< one run's points, weighted
  double m_weight_left = 0; ///< this run's points not yet visited, weighted
  double m_overhead_s = 0;  ///< time of the visits so far outside their sampling [s]
  std::size_t m_visits = 0; ///< visits so far
};

} // namespace scalefit::bench

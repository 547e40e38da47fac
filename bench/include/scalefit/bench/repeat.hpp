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

/// Holds the points of a --repeat sweep until their last run (rank 0).
class RepeatMerger {
public:
  /// `runs` = --repeat (>= 1).
  explicit RepeatMerger(int runs) : m_runs(runs < 1 ? 1 : runs) {}
  /// Adds one run's measurement of a point. \returns the record to write once the point has
  /// `runs` measurements (merge_runs), else nullopt (held).
  std::optional<MeasurementRecord> add(const MeasurementRecord &m);
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

} // namespace scalefit::bench

// --repeat: one record per point from N runs of the sweep (see repeat.hpp).
#include "scalefit/bench/repeat.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace scalefit::bench {
namespace {

double median_value(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

} // namespace

double run_spread_pct(std::vector<double> values) {
  if (values.size() < 2)
    return 0;
  const double med = median_value(values);
  if (!(med > 0))
    return 0;
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return 100.0 * (*hi - *lo) / med;
}

MeasurementRecord merge_runs(const std::vector<MeasurementRecord> &runs) {
  if (runs.empty())
    throw InputError("no run to merge", "", 0, "--repeat");
  if (runs.size() == 1)
    return runs.front();
  std::vector<std::size_t> order(runs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  // By time; ties keep run order. For an even count the faster middle run (lower index).
  std::stable_sort(order.begin(), order.end(), [&runs](std::size_t a, std::size_t b) {
    return runs[a].time_us < runs[b].time_us;
  });
  const std::size_t kept = order[(runs.size() - 1) / 2];
  MeasurementRecord m = runs[kept];
  std::vector<double> time, busbw;
  nlohmann::json caps = nlohmann::json::array(), before = nlohmann::json::array();
  for (const MeasurementRecord &r : runs) {
    time.push_back(r.time_us);
    busbw.push_back(r.busbw_gbps);
    const bool has = r.extra.is_object();
    caps.push_back(has && r.extra.contains("time_cap_s") ? r.extra["time_cap_s"] : nlohmann::json());
    before.push_back(has && r.extra.contains("uncertainty_before")
                         ? r.extra["uncertainty_before"]
                         : nlohmann::json());
  }
  if (!m.extra.is_object())
    m.extra = nlohmann::json::object();
  m.extra["repeat"] = {{"runs", runs.size()},
                       {"run", kept},
                       {"time_us", time},
                       {"busbw_gbps", busbw},
                       {"busbw_min_gbps", *std::min_element(busbw.begin(), busbw.end())},
                       {"busbw_median_gbps", median_value(busbw)},
                       {"busbw_max_gbps", *std::max_element(busbw.begin(), busbw.end())},
                       {"spread_pct", run_spread_pct(time)},
                       {"time_cap_s", caps},
                       {"uncertainty_before", before}};
  m.extra.erase("uncertainty_before"); // per run: kept in extra.repeat only
  // The interval the merged record claims holds across its runs too: at least half their range
  // relative to the median (the kept run's own ci_rel saw only its samples).
  const double across = run_spread_pct(time) / 200.0;
  const nlohmann::json &own = m.extra.contains("ci_rel") ? m.extra["ci_rel"] : nlohmann::json();
  if (own.is_number())
    m.extra["ci_rel"] = std::max(own.get<double>(), across);
  m.extra["repeat"]["ci_rel_across_runs"] = across;
  return m;
}

double budget_weight(double uncertainty, double target) {
  if (!(target > 0) || !std::isfinite(uncertainty))
    return 1.0;
  return std::clamp(uncertainty / target, 0.25, 4.0);
}

double RepeatMerger::uncertainty(const std::string &key) const {
  const auto it = m_held.find(key);
  if (it == m_held.end() || it->second.empty())
    return std::numeric_limits<double>::quiet_NaN();
  double u = 0;
  std::vector<double> time;
  for (const MeasurementRecord &r : it->second) {
    time.push_back(r.time_us);
    if (r.extra.is_object() && r.extra.contains("ci_rel") && r.extra["ci_rel"].is_number())
      u = std::max(u, r.extra["ci_rel"].get<double>());
  }
  return std::max(u, run_spread_pct(time) / 200.0);
}

double RepeatMerger::held_weight(double target) const {
  double w = 0;
  for (const auto &[key, runs] : m_held)
    w += budget_weight(uncertainty(key), target);
  return w;
}

double SweepBudget::share(double budget_s, double elapsed_s, int sweep, std::size_t points_left,
                          const RepeatMerger &merger, const std::string &key,
                          double &uncertainty) {
  const double overhead_per_visit =
      m_visits > 0 ? m_overhead_s / static_cast<double>(m_visits) : 0.0;
  const double left_s = std::max(
      0.0, budget_s - elapsed_s - overhead_per_visit * static_cast<double>(points_left));
  uncertainty = std::numeric_limits<double>::quiet_NaN();
  if (sweep == 0)
    return left_s / static_cast<double>(std::max<std::size_t>(1, points_left));
  if (m_weights_run != sweep) {
    m_weights_run = sweep;
    m_run_weight = merger.held_weight(m_target);
    m_weight_left = m_run_weight;
  }
  uncertainty = merger.uncertainty(key);
  const double w = budget_weight(uncertainty, m_target);
  const double visits = std::max(w, m_weight_left) + (m_runs - 1 - sweep) * m_run_weight;
  m_weight_left -= w;
  return left_s * w / visits;
}

std::optional<MeasurementRecord> RepeatMerger::add(const MeasurementRecord &m) {
  if (m_runs == 1)
    return m;
  std::vector<MeasurementRecord> &held = m_held[m.key()];
  held.push_back(m);
  if (static_cast<int>(held.size()) < m_runs)
    return std::nullopt;
  MeasurementRecord merged = merge_runs(held);
  m_held.erase(m.key());
  const std::string curve = merged.key(false);
  auto [it, fresh] = m_curves.try_emplace(curve);
  if (fresh) {
    m_order.push_back(curve);
    it->second.label = fmt::format("{} {} {} {}{}", op_name(merged.op), merged.group.label(),
                                   dtype_name(merged.dtype), placement_name(merged.placement),
                                   merged.method.empty() ? "" : " " + merged.method);
  }
  const double spread = merged.extra["repeat"]["spread_pct"].get<double>();
  it->second.spreads.push_back(spread);
  if (spread > it->second.worst) {
    it->second.worst = spread;
    it->second.worst_bytes = merged.bytes;
  }
  return merged;
}

std::string RepeatMerger::summary() const {
  if (m_runs == 1 || m_order.empty())
    return "";
  std::string s = fmt::format("#\n# Run-to-run spread over {} runs, 100 (max - min) / median of "
                              "the runs' times per point:\n",
                              m_runs);
  for (const std::string &k : m_order) {
    const Curve &c = m_curves.at(k);
    std::vector<double> v = c.spreads;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    const double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    s += fmt::format("#  {}: median {:.1f}%, max {:.1f}% at {} B, over {} points\n", c.label, med,
                     c.worst, c.worst_bytes, n);
  }
  return s;
}

} // namespace scalefit::bench

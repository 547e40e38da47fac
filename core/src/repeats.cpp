// Repeated measurements (repeats.hpp) and the duplicate/repeat rule of measurement records
// (records.hpp: drop_duplicate_measurements).
#include "scalefit/core/repeats.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/records.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace scalefit {

const char *repeat_policy_name(RepeatPolicy p) {
  return p == RepeatPolicy::merge ? "merge" : "refuse";
}

std::optional<RepeatPolicy> parse_repeat_policy(const std::string &name) {
  if (name == "merge")
    return RepeatPolicy::merge;
  if (name == "refuse")
    return RepeatPolicy::refuse;
  return std::nullopt;
}

double median_of(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double spread_pct(const std::vector<double> &values) {
  if (values.size() < 2)
    return 0;
  const double med = median_of(values);
  if (!(med > 0))
    return 0;
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return 100.0 * (*hi - *lo) / med;
}

void RepeatStats::add(const std::vector<double> &values) {
  if (values.size() < 2)
    return;
  ++points;
  measurements += static_cast<int>(values.size());
  max_spread_pct = std::max(max_spread_pct, spread_pct(values));
}

void RepeatLog::add(const std::string &first_file, const std::string &second_file, double first,
                    double second, const std::string &what) {
  const auto key = std::make_pair(first_file, second_file);
  auto [it, fresh] = m_pairs.try_emplace(key);
  if (fresh)
    m_order.push_back(key);
  Pair &p = it->second;
  ++p.points;
  const double s = spread_pct({first, second});
  p.spreads.push_back(s);
  if (s > p.worst) {
    p.worst = s;
    p.worst_what = what;
  }
}

std::vector<std::string> RepeatLog::lines(const std::string &noun) const {
  std::vector<std::string> out;
  for (const auto &key : m_order) {
    const Pair &p = m_pairs.at(key);
    out.push_back(fmt::format(
        "{} repeats {} {} of {} (another run): merged, each point's value the median of its "
        "repeats; spread of the repeats (max-min)/median: median {:.1f}%, max {:.1f}% ({})",
        key.second, p.points, noun, key.first, median_of(p.spreads), p.worst, p.worst_what));
  }
  return out;
}

std::string origin_file(const std::string &origin) {
  const auto colon = origin.rfind(':');
  if (colon == std::string::npos || colon + 1 == origin.size())
    return origin;
  for (std::size_t i = colon + 1; i < origin.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(origin[i])))
      return origin;
  return origin.substr(0, colon);
}

long origin_line(const std::string &origin) {
  const std::string file = origin_file(origin);
  return file.size() == origin.size() ? 0 : std::atol(origin.c_str() + file.size() + 1);
}

std::vector<std::string> drop_duplicate_measurements(std::vector<RecordSet> &sets,
                                                     RepeatPolicy policy) {
  struct Seen { // one reading of a point (copied: records move when the sets are compacted)
    double time_us, algbw_gbps, busbw_gbps;
    std::string origin, file;
  };
  struct Point {
    std::size_t set = 0, index = 0; ///< the record kept
    std::vector<Seen> seen;         ///< every reading, the kept one first
    std::vector<double> values;     ///< time_us of the readings merged (kept one first)
  };
  std::map<std::string, Point> points;
  std::vector<std::vector<bool>> drop(sets.size());
  std::vector<std::string> warnings;
  RepeatLog log;
  auto origin = [&](std::size_t s, std::size_t i) {
    return i < sets[s].origin.size() ? sets[s].origin[i] : "record " + std::to_string(i + 1);
  };
  for (std::size_t s = 0; s < sets.size(); ++s) {
    const RecordSet &rs = sets[s];
    drop[s].assign(rs.measurements.size(), false);
    for (std::size_t i = 0; i < rs.measurements.size(); ++i) {
      const MeasurementRecord &m = rs.measurements[i];
      const std::size_t ci = i < rs.context_of.size() ? rs.context_of[i] : 0;
      const std::string system = ci < rs.contexts.size() ? rs.contexts[ci].system : "";
      const std::string b = origin(s, i);
      const Seen now{m.time_us, m.algbw_gbps, m.busbw_gbps, b, origin_file(b)};
      const auto [it, fresh] = points.try_emplace(system + '\x1f' + m.key(true));
      Point &p = it->second;
      if (fresh) {
        p = Point{s, i, {now}, {m.time_us}};
        continue;
      }
      drop[s][i] = true;
      const auto same = std::find_if(p.seen.begin(), p.seen.end(), [&](const Seen &x) {
        return x.time_us == m.time_us && x.algbw_gbps == m.algbw_gbps &&
               x.busbw_gbps == m.busbw_gbps;
      });
      if (same != p.seen.end()) { // the same file given twice, or a copy of it
        warnings.push_back(b + ": duplicates " + same->origin + " (identical; merged)");
        continue;
      }
      const auto in_file = std::find_if(p.seen.begin(), p.seen.end(),
                                        [&](const Seen &x) { return x.file == now.file; });
      const Seen &first = in_file != p.seen.end() ? *in_file : p.seen.front();
      const std::string what =
          fmt::format("system '{}', {} {}, {}, {}, {} B", system, op_name(m.op), m.group.label(),
                      dtype_name(m.dtype), placement_name(m.placement), m.bytes);
      if (in_file != p.seen.end() || policy == RepeatPolicy::refuse)
        throw InputError(
            fmt::format("measures the same point as {} ({}) with a different result (time_us {:g} "
                        "vs {:g}): {}",
                        first.origin, what, first.time_us, m.time_us,
                        in_file != p.seen.end()
                            ? "two runs appended to one file, or the same point measured twice "
                              "in it; keep one of them"
                            : "a repeat from another run, refused by --repeats refuse; keep one "
                              "of them, or merge them (--repeats merge)"),
            now.file, origin_line(b), "time_us");
      log.add(p.seen.front().file, now.file, p.seen.front().time_us, m.time_us,
              fmt::format("{} {} {} B", op_name(m.op), m.group.label(), m.bytes));
      p.seen.push_back(now);
      p.values.push_back(m.time_us);
    }
  }
  for (auto &[key, p] : points) {
    if (p.values.size() < 2)
      continue;
    MeasurementRecord &m = sets[p.set].measurements[p.index];
    const double t = median_of(p.values);
    if (m.time_us > 0 && t > 0) { // keep the record's own bus factor and units
      m.algbw_gbps *= m.time_us / t;
      m.busbw_gbps *= m.time_us / t;
    }
    m.time_us = t;
    m.repeat_time_us = p.values;
    m.stats.reset(); // the samples' statistics were one repeat's, not the merged point's
    m.samples_us.clear();
  }
  for (const std::string &line : log.lines("points"))
    warnings.push_back(line);
  for (std::size_t s = 0; s < sets.size(); ++s) {
    RecordSet &rs = sets[s];
    std::size_t out = 0;
    for (std::size_t i = 0; i < rs.measurements.size(); ++i) {
      if (drop[s][i])
        continue;
      if (out != i) { // a self-move would empty strings and vectors (libstdc++)
        rs.measurements[out] = std::move(rs.measurements[i]);
        if (i < rs.context_of.size())
          rs.context_of[out] = rs.context_of[i];
        if (i < rs.origin.size())
          rs.origin[out] = std::move(rs.origin[i]);
      }
      ++out;
    }
    rs.measurements.resize(out);
    if (rs.context_of.size() > out)
      rs.context_of.resize(out);
    if (rs.origin.size() > out)
      rs.origin.resize(out);
  }
  return warnings;
}

} // namespace scalefit

/// \file repeats.hpp
/// Repeated measurements of one point. A characterization job measures some points again in
/// another run: the intra-node groups (1x2, 1x4...) at every node count (comm-n1.jsonl,
/// comm-n2.jsonl...), a kernel shape on a second node of the same type. Such a repeat, read from
/// ANOTHER file, is new information about run-to-run spread, not a conflict: under
/// RepeatPolicy::merge the point's value becomes the median of the repeats' values, the repeats'
/// values are kept with it, and one summary line per pair of files says so. The same point twice
/// with different results in ONE file (two runs appended to it) stays an error under both
/// policies. The fit file records the policy and, per curve, what was merged (RepeatStats;
/// docs/fit-file.md, "Repeated measurements").
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace scalefit {

/// What `scalefit fit` does with a point measured again in another file.
enum class RepeatPolicy {
  merge,  ///< one point: the median of the repeats (default)
  refuse, ///< an error naming both records (the behaviour before repeats were merged)
};

/// "merge" or "refuse".
const char *repeat_policy_name(RepeatPolicy p);
/// Inverse of repeat_policy_name; nullopt for any other text.
std::optional<RepeatPolicy> parse_repeat_policy(const std::string &name);

/// The median of `values` (mean of the two middle ones for an even count); 0 when empty.
double median_of(std::vector<double> values);

/// The relative range of repeated values, 100 (max - min) / median [%]; 0 for fewer than two
/// values or a median of 0.
double spread_pct(const std::vector<double> &values);

/// What was merged into the points of one curve (a fit entry or a compute fit).
struct RepeatStats {
  int points = 0;            ///< points that merged two or more measurements
  int measurements = 0;      ///< measurements merged into those points (>= 2 per point)
  double max_spread_pct = 0; ///< the largest spread_pct over those points [%]

  /// Counts one point whose repeats' values are `values` (the point's unit, e.g. us); fewer than
  /// two values (a point measured once) count nothing.
  void add(const std::vector<double> &values);
  /// True when no point of the curve was merged.
  bool empty() const { return points == 0; }
};

/// The summary lines of the repeats merged, one per (first file, repeating file) pair.
class RepeatLog {
public:
  /// Notes that `second_file` repeated a point first read from `first_file`: `first` and `second`
  /// are the two values (any unit, e.g. us), `what` names the point for the message.
  void add(const std::string &first_file, const std::string &second_file, double first,
           double second, const std::string &what);
  /// One line per pair, in the order the pairs were first seen: "B repeats N points of A
  /// (another run): merged, ... spread of the repeats (max-min)/median: median X%, max Y% (at
  /// POINT)". `noun` names the points ("points", "kernel shapes").
  std::vector<std::string> lines(const std::string &noun) const;
  /// True when nothing was merged.
  bool empty() const { return m_order.empty(); }

private:
  struct Pair {
    int points = 0;
    std::vector<double> spreads; ///< spread_pct of each point's two values [%]
    double worst = -1;           ///< the largest of them [%]
    std::string worst_what;      ///< the point it belongs to
  };
  std::vector<std::pair<std::string, std::string>> m_order;
  std::map<std::pair<std::string, std::string>, Pair> m_pairs;
};

/// The file part of a record origin "file:line" (the whole text when it has no ":LINE" suffix).
std::string origin_file(const std::string &origin);
/// The line part of a record origin "file:line" (0 when it has none).
long origin_line(const std::string &origin);

} // namespace scalefit

// Plot data of `scalefit-bench comm --groups pairs`: per (system, op) one pair matrix per measured
// size, the busbw of every pair (issue 17, section 2).
#include "scalefit/report/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace scalefit::report {
namespace {

/// "pair_n0.g0-n3.g0" -> {"n0.g0", "n3.g0"}; nullopt for any other method.
std::optional<std::pair<std::string, std::string>> players_of(const std::string &method) {
  if (method.rfind("pair_", 0) != 0)
    return std::nullopt;
  const std::string rest = method.substr(5);
  const auto dash = rest.find('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == rest.size())
    return std::nullopt;
  return std::pair(rest.substr(0, dash), rest.substr(dash + 1));
}

/// Players in reading order: by node, then by local rank ("n2.g0" before "n10.g0").
bool player_less(const std::string &a, const std::string &b) {
  const auto key = [](const std::string &p) {
    long node = 0, local = 0;
    std::sscanf(p.c_str(), "n%ld.g%ld", &node, &local);
    return std::tuple(node, local, p);
  };
  return key(a) < key(b);
}

} // namespace

std::vector<Plot> pair_plots(const Inputs &in) {
  // (system, op) -> bytes -> (player a, player b) -> busbw [GB/s]
  std::map<std::pair<std::string, Op>,
           std::map<std::uint64_t, std::map<std::pair<std::string, std::string>, double>>>
      by;
  for (const RecordSet &rs : in.comm)
    for (std::size_t i = 0; i < rs.measurements.size(); ++i) {
      const MeasurementRecord &m = rs.measurements[i];
      if (m.group.kind != "pairs")
        continue;
      const auto players = players_of(m.method);
      if (!players || !(m.busbw_gbps >= 0) || !std::isfinite(m.busbw_gbps))
        continue;
      const std::string &system = rs.contexts.at(rs.context_of.at(i)).system;
      by[{system, m.op}][m.bytes][*players] = m.busbw_gbps;
    }
  std::vector<Plot> out;
  for (const auto &[key, sizes] : by) {
    const auto &[system, op] = key;
    std::set<std::string> seen;
    for (const auto &[b, pairs] : sizes)
      for (const auto &[pp, v] : pairs) {
        seen.insert(pp.first);
        seen.insert(pp.second);
      }
    std::vector<std::string> players(seen.begin(), seen.end());
    std::sort(players.begin(), players.end(), player_less);
    std::map<std::string, std::size_t> index;
    for (std::size_t k = 0; k < players.size(); ++k)
      index[players[k]] = k;
    nlohmann::json panels = nlohmann::json::array();
    std::size_t n_pairs = 0;
    for (const auto &[bytes, pairs] : sizes) {
      nlohmann::json matrix = nlohmann::json::array();
      for (std::size_t r = 0; r < players.size(); ++r)
        matrix.push_back(nlohmann::json(std::vector<std::nullptr_t>(players.size(), nullptr)));
      std::vector<double> values;
      for (const auto &[pp, v] : pairs) {
        const std::size_t a = index.at(pp.first), b = index.at(pp.second);
        matrix[a][b] = v;
        matrix[b][a] = v;
        values.push_back(v);
      }
      std::sort(values.begin(), values.end());
      const std::size_t n = values.size();
      const double median = n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
      n_pairs = std::max(n_pairs, n);
      panels.push_back({{"bytes", bytes}, {"busbw_gbps", matrix}, {"median_gbps", median}});
    }
    Plot p;
    p.name = fmt::format("pairs-{}-{}", op_name(op), system);
    for (char &c : p.name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_')
        c = '-';
    p.kind = "pairs";
    p.title = fmt::format("{}: {} busbw of every pair ({} pairs, {} sizes)", system, op_name(op),
                          n_pairs, sizes.size());
    p.caption = "Each cell is one pair's busbw at the panel's size (scalefit-bench comm --groups "
                "pairs), darker is slower: a slow node or GPU shows as a dark row and column. "
                "Players are n<node>.g<local rank>; empty cells were not measured.";
    p.width_px = std::min<int>(600 * static_cast<int>(sizes.size()) + 200, 3000);
    p.height_px = 700;
    p.data = {{"system", system}, {"op", op_name(op)}, {"players", players}, {"sizes", panels}};
    out.push_back(std::move(p));
  }
  return out;
}

} // namespace scalefit::report

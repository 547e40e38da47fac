// Inputs of `scalefit check`: link bounds, system and GPU names, input formats, curves (see
// check_inputs.hpp).
#include "check_inputs.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/units.hpp"
#include "scalefit/fitting/predict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>

#ifndef SCALEFIT_SOURCE_DIR
#define SCALEFIT_SOURCE_DIR "."
#endif

namespace scalefit::cli::check {

namespace fs = std::filesystem;
namespace est = scalefit::estimator;
using fitting::FitEntry;
using fitting::FitFile;


/// nullopt when no link carries data (1 rank).
std::optional<LinkBound> link_bound(const est::SystemConfig &sys, Op op, const GroupShape &g) {
  if (g.nranks <= 1)
    return std::nullopt;
  LinkBound b;
  const double n = g.nranks, rpn = std::max(1, g.ranks_per_node);
  const int gpn = std::max(1, sys.gpus_per_node);
  const double intra = sys.intra.bandwidth_gbps;
  const bool alltoall = op == Op::alltoall || op == Op::alltoallv;
  b.algorithm = alltoall ? "pairwise" : "ring";
  if (g.nnodes <= 1) {
    b.link = "intra";
    b.bound_gbps = intra;
    b.efficiency = sys.intra.efficiency;
    b.latency_us = sys.intra.latency_us;
    b.rule = fmt::format("intra {:g} GB/s per GPU", intra);
    return b;
  }
  b.link = "inter";
  b.efficiency = sys.inter.efficiency;
  b.latency_us = sys.inter.latency_us;
  // The group's ranks on one node use their own NICs (one NIC share per GPU, rail-aligned).
  const double nic_per_gpu = sys.inter.bandwidth_gbps / gpn;
  const double node_nic = nic_per_gpu * std::min<double>(rpn, gpn);
  if (alltoall) {
    // Each rank sends S/n to each peer: (n - rpn)/n of S leaves the node, rpn ranks per node share
    // its NICs; busbw = S (n-1)/n / t.
    b.bound_gbps = n - rpn > 0 ? node_nic * (n - 1) / (rpn * (n - rpn)) : intra;
    b.rule = fmt::format("NIC {:g} GB/s per node x (n-1)/(rpn (n-rpn)) = {:g}x(n={}, rpn={:g})",
                         node_nic, (n - 1) / (rpn * (n - rpn)), g.nranks, rpn);
    if (rpn > 1) {
      const double intra_bound = intra * (n - 1) / (rpn - 1);
      if (intra_bound < b.bound_gbps) {
        b.bound_gbps = intra_bound;
        b.link = "intra";
        b.efficiency = sys.intra.efficiency;
        b.rule = fmt::format("intra {:g} GB/s x (n-1)/(rpn-1)", intra);
      }
    }
    return b;
  }
  // A ring (or chain) crosses each node boundary once per channel; the channels share the node's
  // NICs, so the node's whole NIC bandwidth bounds busbw, and the GPU links when it is larger.
  b.bound_gbps = node_nic;
  b.rule = fmt::format("NIC {:g} GB/s per GPU x {:g} ranks per node", nic_per_gpu,
                       std::min<double>(rpn, gpn));
  if (op == Op::sendrecv) {
    // One rank per node sends across: one GPU's NIC.
    b.bound_gbps = nic_per_gpu;
    b.rule = fmt::format("NIC {:g} GB/s per GPU", nic_per_gpu);
  } else if (rpn > 1 && intra < b.bound_gbps) {
    b.bound_gbps = intra;
    b.link = "intra";
    b.efficiency = sys.intra.efficiency;
    b.latency_us = sys.intra.latency_us;
    b.rule = fmt::format("intra {:g} GB/s per GPU (below the node's NICs)", intra);
  }
  return b;
}

/// Resolves --system NAME|YAML: an existing path, else configs/systems/NAME.yaml here or in the
/// source tree.
std::string resolve_system(const std::string &s) {
  std::error_code ec; // a name the OS cannot stat (too long, a loop) is no file, not a throw
  if (fs::exists(s, ec))
    return s;
  for (const std::string dir :
       {std::string("configs/systems"), std::string(SCALEFIT_SOURCE_DIR) + "/configs/systems"}) {
    const fs::path p = fs::path(dir) / (s + ".yaml");
    if (fs::exists(p, ec))
      return p.string();
  }
  throw InputError("no such file, and no configs/systems/" + s + ".yaml", "", 0, "--system");
}

/// The GPU model token of a device name ("A100-SXM4-40GB" -> "A100", "NVIDIA H100 80GB" -> "H100").
std::string gpu_model(const std::string &device) {
  std::string up;
  for (char c : device)
    up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string tok;
  for (std::size_t i = 0; i <= up.size(); ++i) {
    const char c = i < up.size() ? up[i] : ' ';
    if (std::isalnum(static_cast<unsigned char>(c))) {
      tok += c;
      continue;
    }
    // A model token mixes letters and digits (A100, H100, MI300X, B200, GB200).
    const bool digit = tok.find_first_of("0123456789") != std::string::npos;
    const bool alpha = tok.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") != std::string::npos;
    if (digit && alpha && tok != "NVIDIA" && tok.find("GB") != tok.size() - 2)
      return tok;
    tok.clear();
  }
  return "";
}

std::string upper(std::string s) {
  for (char &c : s)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}


Format detect(const std::string &path, const std::string &forced) {
  if (forced == "jsonl")
    return Format::jsonl;
  if (forced == "nccl-tests")
    return Format::nccl_tests;
  if (forced == "osu")
    return Format::osu;
  if (forced == "fit")
    return Format::fit;
  std::ifstream in(path);
  if (!in)
    throw InputError("cannot open", path);
  std::string line;
  for (int i = 0; i < 40 && std::getline(in, line); ++i) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos)
      continue;
    if (line[first] == '{' && i == 0)
      return Format::jsonl;
    if (line.rfind("schema: scalefit.fit", first) == first)
      return Format::fit;
    if (line.find("# OSU ") != std::string::npos)
      return Format::osu;
  }
  if (path.size() > 6 && path.substr(path.size() - 6) == ".jsonl")
    return Format::jsonl;
  return Format::nccl_tests;
}

std::string curve_key(const std::string &system, Op op, const GroupShape &g, DType dt,
                      const std::string &method) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}", system, op_name(op), g.kind, g.nranks, g.nnodes,
                     g.ranks_per_node, dtype_name(dt), method);
}

void add_records(std::map<std::string, Curve> &curves, std::vector<std::string> &order,
                 const RecordSet &set, const std::string &file, long zero_rows) {
  std::set<std::string> keys;
  for (std::size_t i = 0; i < set.measurements.size(); ++i) {
    const MeasurementRecord &m = set.measurements[i];
    const std::string &sys = set.contexts[set.context_of[i]].system;
    const std::string key = curve_key(sys, m.op, m.group, m.dtype, m.method);
    auto [it, fresh] = curves.try_emplace(key);
    Curve &c = it->second;
    if (fresh) {
      c.system = sys;
      c.source = file;
      c.op = m.op;
      c.group = m.group;
      c.dtype = m.dtype;
      c.method = m.method;
      order.push_back(key);
    }
    keys.insert(key);
    if (m.bytes == 0 || !(m.time_us > 0) || !std::isfinite(m.busbw_gbps))
      continue;
    c.placements.insert(std::string(placement_name(m.placement)));
    double &b = c.busbw[m.bytes];
    b = std::max(b, gbps(static_cast<double>(m.bytes), m.time_us) *
                        busbw_factor(m.op, m.group.nranks));
    double &p = c.printed[m.bytes];
    p = std::max(p, m.busbw_gbps);
    c.busbw_sum += m.busbw_gbps;
    ++c.busbw_count;
    if (const auto sp = point_spread(m, i < set.origin.size() ? set.origin[i] : file)) {
      PointSpread &old = c.spread[m.bytes];
      if (sp->spread_pct >= old.spread_pct)
        old = *sp;
    }
  }
  // nccl-tests averages its size-0 rows (busbw 0) too; attributable when the log is one curve.
  if (zero_rows > 0 && keys.size() == 1) {
    Curve &c = curves[*keys.begin()];
    c.zero_rows += zero_rows * static_cast<long>(std::max<std::size_t>(1, c.placements.size()));
  }
}

void add_fit(std::map<std::string, Curve> &curves, std::vector<std::string> &order,
             const FitFile &fit, const std::string &file) {
  for (const FitEntry &e : fit.entries) {
    const std::string key = curve_key(e.system, e.op, e.group, e.dtype, e.method);
    auto [it, fresh] = curves.try_emplace(key);
    Curve &c = it->second;
    if (fresh) {
      c.system = e.system;
      c.source = file;
      c.op = e.op;
      c.group = e.group;
      c.dtype = e.dtype;
      c.method = e.method;
      c.from_fit = true;
      order.push_back(key);
    }
    c.placements.insert(std::string(placement_name(e.placement)));
    // The fitted curve at the powers of two of its range (and its ends).
    std::vector<double> sizes{e.min_bytes, e.max_bytes};
    for (double s = std::exp2(std::ceil(std::log2(std::max(1.0, e.min_bytes)))); s < e.max_bytes;
         s *= 2)
      sizes.push_back(s);
    for (double s : sizes) {
      bool ex = false;
      const double t = fitting::entry_time_us(e, s, ex);
      if (!(t > 0))
        continue;
      const double bb = gbps(s, t) * e.busbw_factor();
      double &b = c.busbw[static_cast<std::uint64_t>(s)];
      b = std::max(b, bb);
      double &p = c.printed[static_cast<std::uint64_t>(s)];
      p = std::max(p, bb);
      c.busbw_sum += bb;
      ++c.busbw_count;
    }
  }
}

std::optional<PointSpread> point_spread(const MeasurementRecord &m, const std::string &origin) {
  if (!m.extra.is_object() || !m.extra.contains("repeat"))
    return std::nullopt;
  const nlohmann::json &r = m.extra["repeat"];
  PointSpread p;
  try {
    // An integer count, read only when it fits: get<int>() of 1e300 would be undefined.
    const nlohmann::json &runs = r.at("runs");
    if (!runs.is_number_integer() || runs.get<double>() < 1 || runs.get<double>() > 1e6)
      throw InputError("run-to-run spread: 'runs' must be a whole number in 1..1000000, got " +
                           runs.dump(),
                       origin, 0, "extra.repeat.runs");
    p.runs = static_cast<int>(runs.get<std::int64_t>());
    p.spread_pct = r.at("spread_pct").get<double>();
    p.busbw_min_gbps = r.at("busbw_min_gbps").get<double>();
    p.busbw_max_gbps = r.at("busbw_max_gbps").get<double>();
  } catch (const nlohmann::json::exception &e) {
    throw InputError(std::string("malformed run-to-run spread: ") + e.what(), origin, 0,
                     "extra.repeat");
  }
  if (p.runs < 1 || !std::isfinite(p.spread_pct) || p.spread_pct < 0 ||
      !std::isfinite(p.busbw_min_gbps) || !std::isfinite(p.busbw_max_gbps) ||
      p.busbw_min_gbps > p.busbw_max_gbps)
    throw InputError("malformed run-to-run spread (runs >= 1, spread_pct >= 0, busbw_min_gbps <= "
                     "busbw_max_gbps)",
                     origin, 0, "extra.repeat");
  if (p.runs < 2)
    return std::nullopt;
  return p;
}

std::optional<CurveSpread> curve_spread(const Curve &c, double noisy_pct) {
  if (c.spread.empty())
    return std::nullopt;
  CurveSpread s;
  std::vector<double> v;
  for (const auto &[bytes, p] : c.spread) {
    v.push_back(p.spread_pct);
    s.runs = std::max(s.runs, p.runs);
    if (v.size() == 1 || p.spread_pct > s.max_pct) {
      s.max_pct = p.spread_pct;
      s.max_bytes = bytes;
      s.busbw_min_gbps = p.busbw_min_gbps;
      s.busbw_max_gbps = p.busbw_max_gbps;
    }
  }
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  s.points = static_cast<int>(n);
  s.median_pct = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.noisy = s.max_pct > noisy_pct;
  return s;
}

// Contiguous runs of sizes (ascending) where `short_at` holds, as [first, last] pairs.
std::vector<std::pair<std::uint64_t, std::uint64_t>>
short_ranges(const std::vector<std::uint64_t> &sizes, const std::vector<bool> &is_short) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (!is_short[i])
      continue;
    if (i > 0 && is_short[i - 1] && !out.empty())
      out.back().second = sizes[i];
    else
      out.push_back({sizes[i], sizes[i]});
  }
  return out;
}

std::string ranges_text(const std::vector<std::pair<std::uint64_t, std::uint64_t>> &r) {
  if (r.empty())
    return "-";
  std::string s;
  for (const auto &[lo, hi] : r)
    s += (s.empty() ? "" : ",") +
         (lo == hi ? format_bytes(lo) : format_bytes(lo) + "-" + format_bytes(hi));
  return s;
}

nlohmann::json ranges_json(const std::vector<std::pair<std::uint64_t, std::uint64_t>> &r) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto &[lo, hi] : r)
    j.push_back({lo, hi});
  return j;
}

nlohmann::json spread_json(const CurveSpread &s) {
  return {{"runs", s.runs},
          {"points", s.points},
          {"max_spread_pct", s.max_pct},
          {"max_spread_bytes", s.max_bytes},
          {"median_spread_pct", s.median_pct},
          {"busbw_range_gbps", {s.busbw_min_gbps, s.busbw_max_gbps}},
          {"noisy", s.noisy}};
}

std::string spread_note(const std::string &label, const CurveSpread &s, double noisy_pct) {
  return fmt::format("{}: run-to-run spread over {} runs: max {:.1f}% at {} (busbw {:.2f}..{:.2f} "
                     "GB/s), median {:.1f}% over {} points; figures and verdict are the median "
                     "run's{}",
                     label, s.runs, s.max_pct, format_bytes(s.max_bytes), s.busbw_min_gbps,
                     s.busbw_max_gbps, s.median_pct, s.points,
                     s.noisy ? fmt::format("; noisy (above --noisy {:g}%): rerun, or look for "
                                           "other jobs or a throttled link, before trusting it",
                                           noisy_pct)
                             : std::string());
}

} // namespace scalefit::cli::check

// Internal to `scalefit check` (cmd_check.cpp): the measured curves it reads (scalefit JSONL,
// nccl-tests/OSU logs through ingest, fit files) and the link bound a group shape has on a
// system (docs/check.md, "What is compared, and how").
#pragma once

#include "scalefit/core/collectives.hpp"
#include "scalefit/core/records.hpp"
#include "scalefit/estimator/config.hpp"
#include "scalefit/fitting/fit_file.hpp"

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace scalefit::cli::check {

/// The run-to-run spread of one point measured by `scalefit-bench comm --repeat N` (the record's
/// extra.repeat): the runs' busbw range and 100 (max - min) / median of their times [%].
struct PointSpread {
  int runs = 0;
  double spread_pct = 0;       ///< [%]
  double busbw_min_gbps = 0;   ///< [GB/s]
  double busbw_max_gbps = 0;   ///< [GB/s]
};

/// One measured curve: (system, op, group shape, dtype, method), both placements merged.
struct Curve {
  std::string system, source;
  Op op = Op::allreduce;
  GroupShape group;
  DType dtype = DType::float32;
  std::string method;
  std::set<std::string> placements;
  /// size [B] -> best busbw of the placements [GB/s], from bytes and time (the printed busbw is
  /// rounded to 0.01 GB/s: 0.00 at small sizes); the per-size comparisons use it.
  std::map<std::uint64_t, double> busbw;
  std::map<std::uint64_t, double> printed; ///< size [B] -> best printed busbw [GB/s] (the peak)
  double busbw_sum = 0; ///< over every point of every placement (nccl-tests' avg)
  long busbw_count = 0;
  long zero_rows = 0; ///< nccl-tests rows of size 0 (busbw 0) that nccl-tests' average counts
  bool from_fit = false;
  /// size [B] -> run-to-run spread (records of `--repeat N`, N >= 2; of the placements, the one
  /// with the larger spread). The curve's busbw is then the median run's.
  std::map<std::uint64_t, PointSpread> spread;
};

/// What --repeat says of a curve: over its points with repeat runs, the largest spread and its
/// size, the median spread, and whether the largest exceeds `noisy_pct`.
struct CurveSpread {
  int runs = 0;            ///< the largest run count of its points
  int points = 0;          ///< points with runs
  double max_pct = 0;      ///< [%]
  std::uint64_t max_bytes = 0;
  double median_pct = 0;   ///< [%]
  double busbw_min_gbps = 0, busbw_max_gbps = 0; ///< the runs' busbw at max_bytes [GB/s]
  bool noisy = false;      ///< max_pct > noisy_pct
};

/// The spread of `c` (nullopt when no point has repeat runs). `noisy_pct` [%] >= 0.
std::optional<CurveSpread> curve_spread(const Curve &c, double noisy_pct);

/// The spread reading of one record: extra.repeat of `scalefit-bench comm --repeat` (runs >= 2,
/// spread_pct, busbw_min_gbps, busbw_max_gbps); nullopt when absent. \throws InputError naming
/// `origin` and the field extra.repeat when it is present but malformed.
std::optional<PointSpread> point_spread(const MeasurementRecord &m, const std::string &origin);

/// The link bound of one group shape on a system: which link, its bandwidth per rank as busbw,
/// and the algorithm whose bus factor relates them.
struct LinkBound {
  std::string link;      ///< "intra" or "inter"
  std::string algorithm; ///< "ring" or "pairwise"
  std::string rule;      ///< the formula in words, with the numbers
  double bound_gbps = 0; ///< busbw the links allow at 100% [GB/s]
  double efficiency = 1; ///< the system file's efficiency of that tier
  double latency_us = 0; ///< the tier's latency [us] (expected curve at small sizes)
  double expected_gbps() const { return bound_gbps * efficiency; }
};

/// The link bound of group shape `g` for `op` on system `sys`: intra-node bandwidth on one node;
/// across nodes NIC per GPU x ranks per node for ring ops (capped by intra), a pairwise rule
/// for AllToAll(v), one GPU's NIC for SendRecv. nullopt when no link carries data (1 rank).
std::optional<LinkBound> link_bound(const estimator::SystemConfig &sys, Op op,
                                    const GroupShape &g);

/// Resolves --system NAME|YAML: an existing path, else configs/systems/NAME.yaml here or in the
/// source tree. \throws InputError (field --system) when none exists.
std::string resolve_system(const std::string &s);

/// The GPU model token of a device name ("A100-SXM4-40GB" -> "A100", "NVIDIA H100 80GB" ->
/// "H100"); "" when none is recognized.
std::string gpu_model(const std::string &device);

/// `s` in upper case (ASCII).
std::string upper(std::string s);

/// What an input file holds.
enum class Format { jsonl, nccl_tests, osu, fit };

/// The format of `path`: `forced` ("jsonl", "nccl-tests", "osu", "fit") when given, else from
/// its first lines. \throws InputError naming the file when it cannot be opened or recognized.
Format detect(const std::string &path, const std::string &forced);

/// The key of a curve: system, op, group shape, dtype and method.
std::string curve_key(const std::string &system, Op op, const GroupShape &g, DType dt,
                      const std::string &method);

/// Adds the measurements of `set` (read from `file`) to `curves` (new keys appended to `order`);
/// `zero_rows`: nccl-tests rows of size 0 the log held (they count in nccl-tests' average).
void add_records(std::map<std::string, Curve> &curves, std::vector<std::string> &order,
                 const RecordSet &set, const std::string &file, long zero_rows);

/// Adds the fitted curves of `fit` (read from `file`), sampled at the powers of two of each
/// entry's size range and its ends.
void add_fit(std::map<std::string, Curve> &curves, std::vector<std::string> &order,
             const fitting::FitFile &fit, const std::string &file);

/// Contiguous runs of sizes (ascending) where `is_short` holds, as [first, last] pairs [B].
std::vector<std::pair<std::uint64_t, std::uint64_t>>
short_ranges(const std::vector<std::uint64_t> &sizes, const std::vector<bool> &is_short);
/// "32M-128M,8G" for ranges [B]; "-" when there are none.
std::string ranges_text(const std::vector<std::pair<std::uint64_t, std::uint64_t>> &r);
/// [[first, last], ...] for ranges [B].
nlohmann::json ranges_json(const std::vector<std::pair<std::uint64_t, std::uint64_t>> &r);

/// The JSON of a curve's spread (check's curves[].repeat): runs, points, max_spread_pct,
/// max_spread_bytes, median_spread_pct, busbw_range_gbps [min, max] at the max, noisy.
nlohmann::json spread_json(const CurveSpread &s);
/// The note line of a curve's spread ("LABEL: run-to-run spread over N runs: max X% at SIZE
/// (busbw a..b GB/s), median Y% over P points; ...", and "noisy" above `noisy_pct` [%]).
std::string spread_note(const std::string &label, const CurveSpread &s, double noisy_pct);

} // namespace scalefit::cli::check

// Pricing a message from a fit file: entry selection, range rule, scaling trend.
#include "scalefit/fitting/predict.hpp"

#include "scalefit/core/units.hpp"
#include "scalefit/fitting/fit_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace scalefit::fitting {
namespace {

/// Preference among entries of equal shape: the measuring method (CommQuery::method), then dtype
/// match, then the placement asked for (out-of-place unless CommQuery::placement), then world
/// groups.
int score(const CommQuery &q, DType dtype, Placement placement, const std::string &kind,
          const std::string &method = "") {
  int s = 0;
  if (q.method.empty())
    // alltoallv's uniform matrix is the plain op (alltoall's traffic); skewed needs --method.
    s += method.empty() || method == "uniform" ? 24
         : method == "osu_latency"            ? 16
         : method == "osu_bw"                 ? 8
                                              : 0;
  if (q.dtype && *q.dtype == dtype)
    s += 4;
  if (placement == q.placement.value_or(Placement::out_of_place))
    s += 2;
  if (kind == "world")
    s += 1;
  return s;
}

CommPrediction finish(double bytes, double time_us, Op op, int nranks) {
  CommPrediction p;
  p.time_us = time_us;
  p.algbw_gbps = bytes > 0 ? gbps(bytes, time_us) : 0.0;
  p.busbw_gbps = p.algbw_gbps * busbw_factor(op, nranks);
  return p;
}

} // namespace

double entry_time_us(const FitEntry &e, double bytes, bool &extrapolated) {
  extrapolated = false;
  if (bytes < e.min_bytes) {
    extrapolated = true;
    return e.model.time_us(e.min_bytes);
  }
  if (bytes > e.max_bytes) {
    extrapolated = true;
    const double b_per_us = e.asymptotic_algbw_gbps() * 1e3;
    return e.model.time_us(e.max_bytes) + (bytes - e.max_bytes) / b_per_us;
  }
  return e.model.time_us(bytes);
}

std::vector<int> entry_nnodes(const FitFile &fit, Op op, int nranks) {
  std::vector<int> out;
  for (const FitEntry &e : fit.entries)
    if (e.op == op && e.group.nranks == nranks &&
        std::find(out.begin(), out.end(), e.group.nnodes) == out.end())
      out.push_back(e.group.nnodes);
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<CommPrediction> predict(const FitFile &fit, const CommQuery &q, double bytes) {
  // 1. An entry of exactly this op and group shape.
  const FitEntry *best = nullptr;
  int best_score = -1;
  for (const FitEntry &e : fit.entries) {
    if (e.op != q.op || e.group.nranks != q.nranks || e.group.nnodes != q.nnodes ||
        (!q.method.empty() && e.method != q.method))
      continue;
    const int s = score(q, e.dtype, e.placement, e.group.kind, e.method);
    if (s > best_score)
      best = &e, best_score = s;
  }
  if (best) {
    bool extrap = false;
    const double t = entry_time_us(*best, bytes, extrap);
    CommPrediction p = finish(bytes, t, q.op, q.nranks);
    p.extrapolated = extrap;
    p.entry = best->id;
    p.note =
        !extrap ? "fitted " + std::string(model_name(best->model.kind))
        : bytes < best->min_bytes
            ? fmt::format("below measured sizes ({} B): latency floor", best->min_bytes)
            : fmt::format("above measured sizes ({} B): asymptotic bandwidth", best->max_bytes);
    return p;
  }
  // 2. A scaling series of this op with the same ranks per node: the trend in log2(nnodes).
  // Series are of entries without a method (build_scaling).
  if (q.nnodes < 1 || q.nranks % q.nnodes != 0 || !q.method.empty())
    return std::nullopt;
  const int rpn = q.nranks / q.nnodes;
  const ScalingSeries *series = nullptr;
  best_score = -1;
  for (const ScalingSeries &s : fit.scaling) {
    if (s.op != q.op || s.ranks_per_node != rpn)
      continue;
    const int sc = score(q, s.dtype, s.placement, s.kind);
    if (sc > best_score)
      series = &s, best_score = sc;
  }
  if (!series)
    return std::nullopt;
  // Reference: the measured count nearest to the query in log2(nnodes).
  std::size_t ref = 0;
  for (std::size_t i = 1; i < series->nnodes.size(); ++i)
    if (std::abs(std::log2(series->nnodes[i]) - std::log2(q.nnodes)) <
        std::abs(std::log2(series->nnodes[ref]) - std::log2(q.nnodes)))
      ref = i;
  const FitEntry *e = fit.find(series->entries[ref]);
  if (!e)
    return std::nullopt;
  bool extrap = false;
  const double t_ref = entry_time_us(*e, bytes, extrap);
  const double alpha_n = series->alpha_us.at(q.nnodes);
  const double f_n = busbw_factor(q.op, q.nranks) > 0 ? busbw_factor(q.op, q.nranks) : 1.0;
  const double algbw_ref = e->asymptotic_algbw_gbps(); // as the trend (build_scaling)
  const double algbw_n = series->busbw_gbps.at(q.nnodes) / f_n;
  const double t = alpha_n + std::max(t_ref - e->latency_us(), 0.0) * algbw_ref / algbw_n;
  CommPrediction p = finish(bytes, t, q.op, q.nranks);
  p.extrapolated = true;
  p.entry = e->id;
  std::string counts;
  for (int n : series->nnodes) {
    if (!counts.empty()) counts.push_back(',');
    counts.append(std::to_string(n));
  }
  p.note =
      fmt::format("scaling trend from {} nodes (reference {} nodes){}", counts, series->nnodes[ref],
                  q.nnodes > series->busbw_gbps.hi_nnodes || q.nnodes < series->busbw_gbps.lo_nnodes
                      ? "; node count outside the trend's valid range: clamped"
                      : "");
  return p;
}

} // namespace scalefit::fitting

/// \file report.hpp
/// Tables and JSON for estimates, searches and comparisons (what `scalefit estimate | search |
/// compare` print).
#pragma once

#include "scalefit/estimator/search.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace scalefit::estimator {

/// One-line label of a layout: "dp=16 tp=4 pp=2 v=1 zero=1 recompute=selective sp b=1 B=512".
std::string strategy_label(const Strategy &s);

/// JSON object of one estimate: time_s {iteration, compute, communication, overlap, bubble},
/// memory_gib {weights, gradients, optimizer, activations, total, device}, fits_memory,
/// tflops_per_gpu, mfu, samples_per_s, params, flops, strategy, messages (op, by, bytes, nranks,
/// nnodes, ranks_per_node, count, time_us, total_s, priced_by, extrapolated), priced_by summary.
nlohmann::json estimate_json(const Estimator &est, const Strategy &s, const Estimate &e);

/// Human-readable table of one estimate (time split, memory, throughput, messages).
std::string estimate_table(const Estimator &est, const Strategy &s, const Estimate &e);

/// Lines describing a weak-scaling result (Cheng et al. 2024 speedup and efficiencies).
std::string scaling_table(const Scaling &s);
/// JSON of a weak-scaling result.
nlohmann::json scaling_json(const Scaling &s);

/// Table of a search: the top layouts and the evaluated/rejected counts by reason.
std::string search_table(const Estimator &est, const SearchResult &r);
/// JSON of a search: evaluated, accepted, rejected {reason: count}, top [estimate_json...].
nlohmann::json search_json(const Estimator &est, const SearchResult &r);

/// Side-by-side table of a comparison (Cheng et al. 2024 ratios).
std::string comparison_table(const Estimator &a, const Estimator &b, const Comparison &c);
/// JSON of a comparison: a, b (estimate_json), time_ratio, comm_ratio, comm_share_a/b.
nlohmann::json comparison_json(const Estimator &a, const Estimator &b, const Comparison &c);

}  // namespace scalefit::estimator

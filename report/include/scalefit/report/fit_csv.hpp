/// \file fit_csv.hpp
/// `scalefit fit --csv FILE`: one flat row per fitted curve (docs/records.md lists the columns).
#pragma once

#include "scalefit/fitting/fit_file.hpp"

#include <string>
#include <vector>

namespace scalefit::report {

/// Columns of a fit-entry row: id, system, op, group ..., units in the names (latency_us,
/// asym_busbw_GBps, min_bytes_B).
const std::vector<std::string> &fit_csv_header();
/// The row of one fit entry (model parameters summarized: alpha, latency floor, asymptotic
/// bandwidths; the full parameters stay in the YAML).
std::vector<std::string> fit_csv_row(const fitting::FitEntry &e);
/// The whole CSV text of a fit file's entries (header + one row per entry).
std::string fit_csv(const fitting::FitFile &fit);
/// Writes fit_csv(fit) to `path` atomically. \throws InputError when it cannot be written.
void write_fit_csv(const fitting::FitFile &fit, const std::string &path);

} // namespace scalefit::report

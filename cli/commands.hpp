/// \file commands.hpp
/// The subcommands of the `scalefit` binary. Each add_* function registers its subcommands on the
/// app; their callbacks throw scalefit::InputError for bad input (main prints it and exits 2).
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace scalefit::cli {

/// `ingest nccl-tests`, `ingest osu` (fitting/ingest/).
void add_ingest_commands(CLI::App &app);

/// `fit`, `predict` (fitting/).
void add_fitting_commands(CLI::App &app);

/// `estimate`, `search`, `compare` (estimator/).
void add_estimator_commands(CLI::App &app);

/// `report` (report/): PNG plots and index.html from measurements, fit files and estimates.
void add_report_command(CLI::App &app);

/// `scalefit calibrate`: framework constants from measured training steps (cmd_calibrate.cpp).
void add_calibrate_command(CLI::App &app);

/// `scalefit check`: measured busbw curves against the system's links and a reference fit file
/// (cmd_check.cpp; docs/check.md).
void add_check_command(CLI::App &app);

/// `scalefit check INPUTS --system SYSTEM --json` with the default thresholds and references, as
/// a value (for `scalefit report --system`): the scalefit.check/1 object (docs/check.md,
/// "Output"). \throws InputError as `check` (exit 2: bad input, unknown system).
nlohmann::json check_json(const std::vector<std::string> &inputs, const std::string &system);

/// CLI11 check of a floating-point option: a finite number in [lo, hi]. CLI::Range lets NaN
/// through (every comparison with NaN is false) and "inf" parses; both are refused here, and
/// CLI11 reports the option by name (main exits 2). \param lo, hi inclusive bounds.
inline CLI::Validator finite_range(double lo, double hi) {
  const std::string range =
      "[" + CLI::detail::to_string(lo) + " - " + CLI::detail::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string &text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !std::isfinite(v) || v < lo || v > hi)
          return "Value " + text + " is not a finite number in " + range;
        return {};
      },
      "FINITE in " + range);
}

/// The exit code a command asks main to return once it has finished normally: kExitCheck when
/// `check` found a failing curve (a measured failure, as `scalefit-bench comm -c`); kExitOk else.
int &command_exit_code();

}  // namespace scalefit::cli

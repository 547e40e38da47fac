/// \file report.hpp
/// `scalefit report`: pictures of measurements, fits and estimates for a person to read.
///
/// The C++ side reads the inputs (comm JSONL `scalefit.comm/1`, kernels JSONL
/// `scalefit.kernels/1`, fit files `scalefit.fit/1|2`, and the JSON `scalefit estimate | search |
/// compare --json` print), evaluates the fitted curves, residuals, trends and splits, and writes one
/// JSON data file per plot. A Python script (report/plot.py, matplotlib) draws each data file into
/// a PNG of the stated pixel size; index.html (written here) shows them with tables. The split
/// keeps every number a plot shows computed and tested in C++ (the script only draws), and uses
/// the plotting library engineers already read (docs/report.md says why not a C++ plot library).
#pragma once

#include "scalefit/core/records.hpp"
#include "scalefit/fitting/predict.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace scalefit::report {

/// One kernels JSONL file (schema scalefit.kernels/1): its context and kernel records.
struct KernelsFile {
  std::string path;
  nlohmann::json context;              ///< the context record (system, device, dtype, model...)
  std::vector<nlohmann::json> kernels; ///< "type": "kernel" records (name, kind, m, n, k, ...)
};

/// One JSON document printed by `scalefit estimate|search|compare --json`.
struct EstimateInput {
  std::string path;
  std::string kind; ///< "estimate", "search", "compare" or "validate" (from the document's shape)
  nlohmann::json doc;
};

/// Everything a report is drawn from.
struct Inputs {
  std::vector<std::string> comm_files;
  std::vector<RecordSet> comm; ///< per comm file
  std::vector<KernelsFile> kernels;
  std::vector<fitting::FitFilePtr> fits;
  std::vector<EstimateInput> estimates;
};

/// Loads the inputs. `results`: JSONL files or directories (their *.jsonl, sorted); each file is
/// classified by its first record's "schema" (scalefit.comm/1 or scalefit.kernels/1). `fits`:
/// fit files. `estimates`: JSON files of `scalefit estimate|search|compare --json`.
/// \throws InputError naming the file, line and field of bad input (exit 2), and when nothing at
/// all is given.
Inputs load_inputs(const std::vector<std::string> &results, const std::vector<std::string> &fits,
                   const std::vector<std::string> &estimates);

/// Reads a kernels JSONL file. \throws InputError (file, line, field) on malformed records.
KernelsFile read_kernels_file(const std::string &path);

/// One picture: what the script draws (kind), into which file (name + ".png"), at which size.
struct Plot {
  std::string name;    ///< file stem, [a-z0-9_-] only: "bw-allreduce", "kernels-tflops"
  std::string kind;    ///< bandwidth, latency, scaling, pairs, kernels, attention,
                       ///< estimate_time, estimate_memory, compare, search, validation
  std::string title;   ///< figure title
  std::string caption; ///< one sentence under the picture in index.html
  int width_px = 1200; ///< PNG width [px]
  int height_px = 800; ///< PNG height [px]
  nlohmann::json data; ///< what the plot shows (docs/report.md lists the fields per kind)
};

/// Bandwidth plots, one per (system, op): one column per group shape; top row busbw and algbw
/// [GB/s] against size [B] (measured points, outliers flagged, the fitted curve on a log2 grid and
/// the regime centres), bottom row the residuals 100 (t_meas / t_fit − 1) [%].
std::vector<Plot> bandwidth_plots(const Inputs &in);
/// Small-message latency [us] (sizes <= 64 KiB) per op, one panel per (system, group shape).
std::vector<Plot> latency_plots(const Inputs &in);
/// eff(g→n) against node count from the fit files' scaling series: measured size-weighted
/// efficiency and per band, and the fitted trend (predict() at 1..4·max nodes; extrapolated
/// beyond the measured counts).
std::vector<Plot> scaling_plots(const Inputs &in);
/// Pair matrices of `scalefit-bench comm --groups pairs`, one plot per (system, op) with a panel
/// per measured size: the busbw [GB/s] of every pair of players (n<node>.g<local rank>, from the
/// records' method `pair_A-B`), symmetric, null where a pair was not measured; data: players,
/// sizes[] {bytes, busbw_gbps (matrix), median_gbps}. Issue 17, section 2.
std::vector<Plot> pair_plots(const Inputs &in);
/// Kernels: achieved TFLOP/s against FLOPs per GEMM call (shape labels), and attention kernel
/// times per pass.
std::vector<Plot> kernel_plots(const Inputs &in);
/// Estimates: time split (compute / exposed communication / bubble) and memory per GPU against
/// device memory per layout; compare: the two systems side by side (Cheng et al.); search: top
/// layouts; validate: each published run's estimated against its published time [s] and memory
/// [GiB], per source with its out-of-sample mean and max |error|. \throws InputError naming the
/// file and field ("[i].published_s" for a validate document's run i) for missing, non-finite or
/// negative numbers.
std::vector<Plot> estimate_plots(const Inputs &in);
/// Makes every plot's name (its PNG and data file stem) unique: names that collide (systems
/// whose names differ only in case or punctuation slug alike) get "-" and 6 hex digits of a hash
/// of their title, then "-2", "-3"... if still taken; names that do not collide are kept.
void make_names_unique(std::vector<Plot> &plots);
/// All of the above, in that order, names made unique (make_names_unique).
std::vector<Plot> build_plots(const Inputs &in);

/// Human size label on the log2 axis: "8 B", "4 KiB", "64 MiB", "1 GiB".
std::string size_label(double bytes);

/// The index page: title, inputs with provenance, fit-quality table, the check verdicts (when
/// `check` is a scalefit.check/1 object, `scalefit check --json`'s; null: no such section), one
/// figure per plot (its PNG beside index.html) and a tiny inline script that records whether
/// every image loaded.
std::string index_html(const Inputs &in, const std::vector<Plot> &plots, const std::string &title,
                       const nlohmann::json &check = nullptr);

/// The "Check" section of index.html from a scalefit.check/1 object: system and thresholds, one
/// row per curve (op, group, dtype, peak busbw and size, expected, % of expected, reference and %,
/// run-to-run spread, verdict, short ranges) and the notes. "" for null.
std::string check_html(const nlohmann::json &check);

/// Options of write_report.
struct ReportOptions {
  std::string out_dir;      ///< DIR: index.html, *.png, data/*.json, plots.json
  std::string title = "scalefit report";
  std::string python;       ///< interpreter that runs the script; "" = find_python()
  std::string script;       ///< report/plot.py; "" = find_plot_script()
  bool data_only = false;   ///< write data/*.json and plots.json, do not draw
  /// `scalefit check --json`'s object over the comm inputs (`scalefit report --system`), shown
  /// as index.html's "Check" section and written to data/check.json; null: none.
  nlohmann::json check;
};

/// The Python that draws: $SCALEFIT_PYTHON, else the first of `python3` (PATH) and
/// /usr/bin/python3 (Debian's, where python3-matplotlib installs) that imports matplotlib.
std::string find_python();

/// Where plot.py is: $SCALEFIT_REPORT_SCRIPT, else <exe dir>/../share/scalefit/plot.py, else the
/// source tree's report/plot.py (compiled in). \throws InputError when none exists.
std::string find_plot_script();

/// Builds the plots, writes their data files and plots.json, runs the script (unless data_only),
/// checks that every PNG exists, writes index.html atomically. \returns the plots written.
/// \throws InputError on bad input; RuntimeError when the script fails (its output is shown).
std::vector<Plot> write_report(const Inputs &in, const ReportOptions &opt);

} // namespace scalefit::report

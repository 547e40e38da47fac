/// \file published.hpp
/// Published end-to-end training runs (tests/data/published-runs/*.jsonl, one JSON object per
/// run: model shape, GPUs, layout, precision, framework, the published figures and the iteration
/// time derived by the source's own FLOP convention) read into a model and a layout, estimated,
/// and compared: what `scalefit validate` prints and the accuracy test holds.
#pragma once

#include "scalefit/estimator/estimator.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace scalefit::estimator {

/// One published run as the estimator sees it.
struct PublishedRun {
  std::string id;          ///< unique id of the run
  std::string source;      ///< file it came from (one source per file)
  std::string system;      ///< system YAML path, relative to the repository root
  ModelConfig model;       ///< the model as run
  Strategy strategy;       ///< the layout as run
  int gpus = 0;            ///< GPUs of the run
  /// GPUs per NVLink domain as the run was scheduled, when fewer than the system's
  /// gpus_per_node (with_nvlink_domain); 0 = the system's.
  int nvlink_domain = 0;
  double iteration_s = 0;  ///< published iteration time [s]
  double memory_gib = 0;   ///< published memory per GPU [GiB]; 0 when not published
  bool no_time = false;    ///< the source publishes memory only (iteration_s is a placeholder)
  /// Why the run cannot be expressed exactly (empty when it can): a feature the estimator lacks
  /// (mixture of experts is issue 16) or a system file that does not exist.
  std::string not_expressible;
  bool held_for_calibration = false; ///< the one run a constant was derived from (in sample)
};

/// Reads one JSONL file of published runs. \param root the repository root the `system` fields
/// are relative to. \throws InputError naming the file, line and field of a malformed record.
std::vector<PublishedRun> load_published_runs(const std::string &path, const std::string &root);

/// One run's estimate against its published figures.
struct RunComparison {
  const PublishedRun *run = nullptr;
  double estimated_s = 0;   ///< estimated iteration time [s]
  double time_error = 0;    ///< (estimated - published) / published
  double estimated_gib = 0; ///< estimated peak memory per GPU [GiB]
  double memory_error = 0;  ///< relative, 0 when no memory is published
  bool fits = true;         ///< the estimate fits in device memory
  /// In sample: the run a shipped constant was derived from (PublishedRun::held_for_calibration)
  /// or one of the runs compare_published's `calibration_ids` names.
  bool calibration = false;
  std::string skipped;      ///< why it was not estimated (not expressible, bad layout)
  /// The estimate's full table (estimate_table: time and memory terms, messages, what priced
  /// each), for the run compare_published was asked to explain; else empty.
  std::string report;
};

/// Estimates `runs` (systems loaded from `root`, spec-priced). \param compute when given, the
/// compute fits (a fit file's compute section) price the runs whose system path is
/// `compute_system`. \param explain_id the id of a run whose RunComparison::report is filled
/// (`scalefit validate --explain`); "" for none. \param sustained when given, device
/// sustained_efficiency values (fraction, 0.05..1) by system path, replacing the system files'
/// (calibrate_sustained). \param calibration_ids runs counted in sample
/// (RunComparison::calibration).
std::vector<RunComparison>
compare_published(const std::vector<PublishedRun> &runs, const std::string &root,
                  const fitting::ComputeSection *compute = nullptr,
                  const std::string &compute_system = "", const std::string &explain_id = "",
                  const std::map<std::string, double> *sustained = nullptr,
                  const std::set<std::string> *calibration_ids = nullptr);

/// The device sustained_efficiency (fraction of the spec tables' GEMM and memory-bound rates,
/// config.hpp) at which `run`'s estimate equals its published iteration time: what one measured
/// step of the user's own stack gives (`scalefit validate --calibrate-on`), found by bisection
/// as scripts/derive_sustained_efficiency.py derives the shipped constants (the estimate falls
/// as the efficiency rises; 48 halvings of [0.05, 1]). \param root, compute, compute_system as
/// compare_published. \throws InputError (field --calibrate-on) when the run is not expressible,
/// publishes no time, is refused by the estimator, or no efficiency in [0.05, 1] reproduces it
/// (slower than the estimate at 0.05, or faster than at 1).
double calibrate_sustained(const PublishedRun &run, const std::string &root,
                           const fitting::ComputeSection *compute = nullptr,
                           const std::string &compute_system = "");

/// Per system path of `runs` (one source), the run `--calibrate-on smallest` picks: the
/// expressible run with a published time and the fewest GPUs (the first in the file on a tie).
/// A system with no such run is left out.
std::map<std::string, const PublishedRun *>
smallest_run_per_system(const std::vector<PublishedRun> &runs);

/// Out-of-sample error of one source (one file): runs used to derive a constant are excluded.
struct SourceSummary {
  std::string source;            ///< file name
  int runs = 0;                  ///< runs in the file
  int estimated = 0;             ///< runs estimated out of sample with a published time
  int skipped = 0;               ///< runs not expressible (reason in RunComparison::skipped)
  int calibration = 0;           ///< runs a constant was derived from (in sample)
  /// Estimated runs whose estimate exceeds device memory: the source must use memory savings it
  /// does not state (activation offload, ...), so the run is not reproduced; excluded from the
  /// error statistics and counted here.
  int not_fitting = 0;
  double mean_abs_time = 0;      ///< mean |time error| over `estimated`
  double max_abs_time = 0;       ///< max |time error|
  int memory_runs = 0;           ///< runs with a published memory figure
  double mean_abs_memory = 0;    ///< mean |memory error| over memory_runs
  double max_abs_memory = 0;     ///< max |memory error|
};

/// Summarizes the comparisons of one source.
SourceSummary summarize_published(const std::vector<RunComparison> &rows);

} // namespace scalefit::estimator

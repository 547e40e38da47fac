/// \file calibrate.hpp
/// Calibration of the framework constants from measured training steps (Cheng et al. 2024 split
/// compute time into kernel time and framework dispatch, k1 and k2): the host dispatch floor per
/// kernel, the memory-bound efficiency and a fixed memory overhead, fitted so that the
/// estimator, priced by a fit file's compute section, reproduces measured iterations.
#pragma once

#include "scalefit/estimator/estimator.hpp"

#include <string>
#include <vector>

namespace scalefit::estimator {

/// One measured step (a line of pytorch_gpt_steps.jsonl): model, layout and what was measured.
struct MeasuredStep {
  std::string name;   ///< label ("gpt-125m")
  ModelConfig model;  ///< l, h, a, V, s; bf16; untied head; attention (default fused)
  Strategy strategy;  ///< dp, tp, pp, zero (default 1, 1, 1, 0), b, recompute; Framework::pytorch
  double iter_s = 0;  ///< measured iteration time [s]
  double peak_gib = 0;///< measured peak memory (torch.cuda.max_memory_allocated) [GiB]
  std::string origin; ///< "file:line"
};

/// Reads a steps JSONL file: one object per line with l, h, a, V, s, b, recompute (bool),
/// iter_s, peak_mem_gib and optional name, dp, tp, pp, zero, attention ("fused"/"unfused").
/// \throws InputError naming file, line and field for a missing, non-finite or out-of-range
/// value.
std::vector<MeasuredStep> read_steps(const std::string &path);

/// The estimate of one step on `system` priced by `compute` (with its framework constants).
Estimate estimate_step(const MeasuredStep &step, const SystemConfig &system,
                       const fitting::ComputeSection &compute);

/// Fits dispatch_us in [0, 50] and memory_efficiency in [0.5, 2] (grid, then a finer grid around
/// the best) minimizing the sum of squared relative time errors, then memory_overhead_gib as
/// the mean of measured minus estimated peak memory (>= 0). \returns the constants (present,
/// steps, in-sample errors set). \throws InputError when `steps` is empty.
fitting::FrameworkConstants calibrate(const std::vector<MeasuredStep> &steps,
                                      const SystemConfig &system,
                                      const fitting::ComputeSection &compute);

/// One step's errors: uncalibrated, calibrated on all steps, and left out of the calibration.
struct StepErrors {
  std::string name;
  double measured_s = 0, measured_gib = 0;
  double uncalibrated_s = 0, uncalibrated_gib = 0; ///< kernel fits only (no framework section)
  double calibrated_s = 0, calibrated_gib = 0;     ///< calibrated on all steps (in sample)
  double loo_s = 0, loo_gib = 0;                   ///< calibrated on the others (held out);
                                                   ///< NaN with one step (not available)
};

/// Errors of every step, the leave-one-out column calibrating on all the others (needs >= 2
/// steps; with one step the loo columns are NaN: leave-one-out is not available, and repeating
/// the in-sample figures would report a 0% held-out error).
std::vector<StepErrors> calibration_errors(const std::vector<MeasuredStep> &steps,
                                           const SystemConfig &system,
                                           const fitting::ComputeSection &compute);

} // namespace scalefit::estimator

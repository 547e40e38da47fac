// `scalefit calibrate`: fit the framework constants (dispatch per kernel, memory-bound
// efficiency, fixed memory) to measured training steps; write a fit file that holds them.
#include "commands.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/estimator/calibrate.hpp"
#include "scalefit/fitting/fit_file.hpp"

#include <fmt/format.h>

#include <cmath>
#include <memory>

namespace scalefit::cli {
namespace {
namespace est = scalefit::estimator;

struct CalibrateArgs {
  std::string system, fit, steps, out;
};

double pct(double pred, double meas) {
  return 100 * (pred / meas - 1);
}

void run_calibrate(const CalibrateArgs &a) {
  const est::SystemConfig sys = est::load_system(a.system);
  const fitting::FitFilePtr fit = fitting::load_fit_file(a.fit);
  if (fit->compute.empty())
    throw InputError("the fit file has no compute section (run scalefit fit on "
                     "scalefit-bench kernels output first)",
                     a.fit, 0, "compute");
  const std::vector<est::MeasuredStep> steps = est::read_steps(a.steps);
  fitting::FitFile out = *fit;
  out.compute.framework = est::calibrate(steps, sys, fit->compute);
  out.compute.framework.source = a.steps;
  const std::vector<est::StepErrors> errs = est::calibration_errors(steps, sys, fit->compute);
  fitting::write_fit_file(out, a.out);
  const fitting::FrameworkConstants &k = out.compute.framework;
  fmt::print("calibrated on {} step{} ({}): dispatch {:.2f} us per kernel, memory-bound "
             "efficiency {:.3f}, fixed memory {:.2f} GiB\n",
             k.steps, k.steps == 1 ? "" : "s", a.steps, k.dispatch_us, k.memory_efficiency, k.memory_overhead_gib);
  fmt::print("{:<14} {:>9} {:>15} {:>15} {:>15} {:>8} {:>14} {:>14} {:>14}\n", "step", "iter_s",
             "kernel fits", "calibrated", "left out", "mem_GiB", "kernel fits", "calibrated",
             "left out");
  double lt = 0, lm = 0, ut = 0;
  // leave-one-out needs >= 2 steps: with one, its columns say n/a, never a 0.0% error
  const auto loo = [](double v, double meas, int width) {
    return std::isfinite(v) ? fmt::format("{:>{}.{}f} {:>+5.1f}%", v, width, width == 8 ? 4 : 2,
                                          pct(v, meas))
                            : fmt::format("{:>{}}", "n/a", width + 7);
  };
  for (const est::StepErrors &e : errs) {
    fmt::print("{:<14} {:>9.4f} {:>8.4f} {:>+5.1f}% {:>8.4f} {:>+5.1f}% {} "
               "{:>8.2f} {:>7.2f} {:>+5.1f}% {:>7.2f} {:>+5.1f}% {}\n",
               e.name, e.measured_s, e.uncalibrated_s, pct(e.uncalibrated_s, e.measured_s),
               e.calibrated_s, pct(e.calibrated_s, e.measured_s), loo(e.loo_s, e.measured_s, 8),
               e.measured_gib, e.uncalibrated_gib, pct(e.uncalibrated_gib, e.measured_gib),
               e.calibrated_gib, pct(e.calibrated_gib, e.measured_gib),
               loo(e.loo_gib, e.measured_gib, 7));
    lt = std::max(lt, std::abs(pct(e.loo_s, e.measured_s)));
    lm = std::max(lm, std::abs(pct(e.loo_gib, e.measured_gib)));
    ut = std::max(ut, std::abs(pct(e.uncalibrated_s, e.measured_s)));
  }
  if (errs.size() < 2)
    fmt::print("largest |error|: kernel fits only {:.1f}% time; leave-one-out: not available "
               "with {} step (it needs >= 2 steps: each is predicted by a calibration on the "
               "others)\n",
               ut, errs.size());
  else
    fmt::print("largest |error|: kernel fits only {:.1f}% time; leave-one-out {:.1f}% time, "
               "{:.1f}% memory\n",
               ut, lt, lm);
  fmt::print("wrote {} (estimate --fit {} --framework pytorch uses these constants)\n", a.out,
             a.out);
}

} // namespace

void add_calibrate_command(CLI::App &app) {
  auto a = std::make_shared<CalibrateArgs>();
  CLI::App *c = app.add_subcommand(
      "calibrate", "fit framework constants (dispatch, memory-bound efficiency, fixed memory) "
                   "to measured training steps; write a fit file holding them");
  c->add_option("--system", a->system, "system YAML (peaks, HBM)")->required();
  c->add_option("--fit", a->fit, "fit file with a compute section (scalefit fit of kernels)")
      ->required();
  c->add_option("--steps", a->steps,
                "JSONL of measured steps: l, h, a, V, s, b, recompute, iter_s, peak_mem_gib "
                "(optional dp, tp, pp, zero, attention)")
      ->required();
  c->add_option("-o,--out", a->out, "fit file to write (atomically)")->required();
  c->callback([a] { run_calibrate(*a); });
}

} // namespace scalefit::cli

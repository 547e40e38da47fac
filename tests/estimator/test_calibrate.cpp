// Calibration of the framework constants on real H100 PyTorch steps (tests/data/estimator):
// leave-one-out over the four steps, the constants in a fit file, bad step files.
#include "helpers.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/units.hpp"
#include "scalefit/estimator/calibrate.hpp"
#include "scalefit/fitting/fit_file.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

using namespace scalefit;
using namespace scalefit::estimator;

namespace {
const fitting::ComputeSection &h100() {
  static const fitting::FitFilePtr f =
      fitting::load_fit_file(test_paths::data_path("fit_h100_kernels.yaml"));
  return f->compute;
}
double err(double pred, double meas) {
  return std::abs(pred / meas - 1);
}
} // namespace

TEST(Calibrate, ReadsTheMeasuredSteps) {
  const auto steps = read_steps(test_paths::data_path("h100_pytorch_gpt_steps.jsonl"));
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].name, "gpt-125m");
  EXPECT_FALSE(steps[0].model.tied_embeddings);
  EXPECT_EQ(steps[0].model.attention, Attention::fused);
  EXPECT_EQ(steps[3].strategy.recompute, Recompute::full);
  // The estimator's parameter count of the script's model equals PyTorch's (untied head,
  // learned positions, biases, LayerNorms): 163037184 for GPT-125M.
  EXPECT_DOUBLE_EQ(parameter_count(steps[0].model), 163037184.0);
  EXPECT_DOUBLE_EQ(parameter_count(steps[1].model), 2777589760.0);
}

// Calibrated on three steps, the fourth predicted (each in turn). Goal (issue 8): 5% time, 10%
// memory. Seen: time +1.2, -3.7, +4.1, -0.4%; memory +3.8, -0.1, -1.1, -0.1%. Kernel fits alone
// (GEMM fits, the memory-bound rate of the 1-GPU nccl-tests copies, no calibration): -9.8, -8.2,
// +2.5, +0.2% time (goal 10%).
TEST(Calibrate, LeaveOneOutOnH100Steps) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-h100"));
  const auto steps = read_steps(test_paths::data_path("h100_pytorch_gpt_steps.jsonl"));
  const auto errs = calibration_errors(steps, sys, h100());
  ASSERT_EQ(errs.size(), 4u);
  for (const StepErrors &e : errs) {
    std::printf("[calibrate] %-12s time %.4f s: kernel fits %+.1f%%, calibrated %+.1f%%, left out "
                "%+.1f%%; memory %.2f GiB: %+.1f%%, %+.1f%%, %+.1f%%\n",
                e.name.c_str(), e.measured_s, 100 * (e.uncalibrated_s / e.measured_s - 1),
                100 * (e.calibrated_s / e.measured_s - 1), 100 * (e.loo_s / e.measured_s - 1),
                e.measured_gib, 100 * (e.uncalibrated_gib / e.measured_gib - 1),
                100 * (e.calibrated_gib / e.measured_gib - 1),
                100 * (e.loo_gib / e.measured_gib - 1));
    EXPECT_LT(err(e.loo_s, e.measured_s), 0.05) << e.name;
    EXPECT_LT(err(e.loo_gib, e.measured_gib), 0.10) << e.name;
    EXPECT_LT(err(e.uncalibrated_s, e.measured_s), 0.10) << e.name;
    EXPECT_LT(err(e.uncalibrated_gib, e.measured_gib), 0.05) << e.name;
  }
}

TEST(Calibrate, ConstantsTravelInTheFitFileAndPriceTheEstimate) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-h100"));
  const auto steps = read_steps(test_paths::data_path("h100_pytorch_gpt_steps.jsonl"));
  fitting::FitFile f;
  f.compute = h100();
  f.compute.framework = calibrate(steps, sys, h100());
  EXPECT_TRUE(f.compute.framework.present);
  EXPECT_GT(f.compute.framework.dispatch_us, 0);
  const std::string path = testing::TempDir() + "/calibrated.yaml";
  fitting::write_fit_file(f, path);
  const fitting::FitFilePtr g = fitting::load_fit_file(path);
  ASSERT_TRUE(g->compute.framework.present);
  EXPECT_NEAR(g->compute.framework.dispatch_us, f.compute.framework.dispatch_us, 1e-9);
  Estimator e(steps[0].model, sys);
  e.use_compute(g->compute);
  EXPECT_TRUE(e.calibrated());
  Estimate out;
  e.evaluate(steps[0].strategy, out);
  for (const ComputeTerm &t : out.terms)
    EXPECT_NE(std::string(t.priced_by).find("+calibrated"), std::string::npos) << t.what;
  std::remove(path.c_str());
}

TEST(Calibrate, BadStepNamesLineAndField) {
  const std::string path = testing::TempDir() + "/bad_steps.jsonl";
  {
    std::ofstream o(path);
    o << R"({"l": 2, "h": 64, "a": 4, "V": 100, "s": 32, "b": 1, "iter_s": 0.01, "peak_mem_gib": 1})"
      << "\n"
      << R"({"l": 2, "h": 64, "a": 4, "V": 100, "s": 32, "b": 1, "iter_s": -1, "peak_mem_gib": 1})"
      << "\n";
  }
  try {
    read_steps(path);
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.field(), "iter_s");
  }
  std::remove(path.c_str());
}

// Issue 19: from one step there is nothing to leave it out of; the held-out columns are NaN (the
// CLI prints n/a and says so), not the in-sample figures (which read as a 0.0% held-out error).
TEST(Calibrate, OneStepHasNoLeaveOneOut) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-h100"));
  auto steps = read_steps(test_paths::data_path("h100_pytorch_gpt_steps.jsonl"));
  steps.resize(1);
  const auto errs = calibration_errors(steps, sys, h100());
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_TRUE(std::isnan(errs[0].loo_s));
  EXPECT_TRUE(std::isnan(errs[0].loo_gib));
  EXPECT_TRUE(std::isfinite(errs[0].calibrated_s));
}

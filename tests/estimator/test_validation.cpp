// Published measurements (validation.md), predicted with configs/systems/dgx-a100-80gb.yaml.
// Tolerances from the issue: memory within 5%, iteration time within 10%, throughput within 10%.
#include "helpers.hpp"

#include "scalefit/core/units.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

using namespace scalefit;
using namespace scalefit::estimator;

namespace {
Estimate run(const char *model, Strategy s) {
  const Estimator est(test_paths::load_unfused(test_paths::model_path(model)),
                      load_system(test_paths::system_path("dgx-a100-80gb")));
  est.validate(s, s.gpus());
  Estimate e;
  est.evaluate(s, e);
  return e;
}
double rel(double pred, double pub) {
  return std::fabs(pred - pub) / pub;
}

// Korthikanti et al. 2022, Table 3 setups: 22B t=8 p=1 B=4 b=4; 175B t=8 p=8 B=64 b=1 on 64 GPUs,
// interleaved with v=3 (the (1 + (p-1)/(p v)) factor of their Sec. 4.2.3 that reproduces both of
// their 175B activation numbers). Megatron keeps fp32 gradients (18 bytes per parameter).
Strategy korthikanti(bool big, Recompute r, bool sp) {
  Strategy s;
  s.tp = 8;
  s.pp = big ? 8 : 1;
  s.dp = 1;
  s.global_batch = big ? 64 : 4;
  s.micro_batch = big ? 1 : 4;
  s.interleave = big ? 3 : 1;
  s.recompute = r;
  s.sp = sp;
  s.fp32_grads = true;
  return s;
}
} // namespace

// Source: Korthikanti et al. 2022 (validation.md C): first-stage memory per GPU, GiB.
TEST(Validation, KorthikantiMemoryWithin5Percent) {
  struct Row {
    bool big;
    double states, act_tp, act_sp_sel;
  };
  for (Row r : {Row{false, 45.56, 59.25, 9.56}, Row{true, 45.56, 66.84, 12.35}}) {
    const char *model = r.big ? "gpt-175b-korthikanti" : "gpt-22b-korthikanti";
    const Estimate tp = run(model, korthikanti(r.big, Recompute::none, false));
    const Estimate sp = run(model, korthikanti(r.big, Recompute::selective, true));
    const double states =
        (tp.memory_bytes.weights + tp.memory_bytes.gradients + tp.memory_bytes.optimizer) / kGiB;
    EXPECT_LT(rel(states, r.states), 0.05) << model << " states " << states;
    EXPECT_LT(rel(tp.memory_bytes.activations / kGiB, r.act_tp), 0.05) << model;
    EXPECT_LT(rel(sp.memory_bytes.activations / kGiB, r.act_sp_sel), 0.05) << model;
    std::printf("[validation] %s states %.2f/%.2f act(TP) %.2f/%.2f act(SP+sel) %.2f/%.2f GiB\n",
                model, states, r.states, tp.memory_bytes.activations / kGiB, r.act_tp,
                sp.memory_bytes.activations / kGiB, r.act_sp_sel);
  }
}

// Source: Korthikanti et al. 2022 (validation.md C): iteration time 22B full 1.42 s, SP+selective
// 1.10 s; 175B full 18.13 s, SP+selective 13.75 s. The A100 step tables were derived from the first
// of these alone (scripts/derive_step_efficiency.py, k = 0.7761 of Calculon's tables): it is in
// sample, the other three are not. Seen: -0.0, -6.0, +1.2, -2.0%.
TEST(Validation, KorthikantiIterationTimeWithin10Percent) {
  struct Row {
    bool big;
    Recompute r;
    bool sp;
    double seconds;
  };
  for (Row r :
       {Row{false, Recompute::full, false, 1.42}, Row{false, Recompute::selective, true, 1.10},
        Row{true, Recompute::full, false, 18.13}, Row{true, Recompute::selective, true, 13.75}}) {
    const char *model = r.big ? "gpt-175b-korthikanti" : "gpt-22b-korthikanti";
    const Estimate e = run(model, korthikanti(r.big, r.r, r.sp));
    EXPECT_LT(rel(e.time_s.iteration, r.seconds), 0.10) << model << " " << recompute_name(r.r);
    EXPECT_TRUE(e.fits_memory);
    std::printf("[validation] %s %s%s: %.3f s vs %.2f s (%+.1f%%), MFU %.1f%%\n", model,
                recompute_name(r.r), r.sp ? "+sp" : "", e.time_s.iteration, r.seconds,
                100 * (e.time_s.iteration - r.seconds) / r.seconds, 100 * e.mfu);
  }
}

// Source: Narayanan et al. 2021, Table 1 (validation.md B): TFLOP/s per GPU 137, 138, 142, 135 with
// full recomputation, s = 2048, d = n / (t p). Out of sample (seen +6.1, +2.8, -4.2, -3.0%).
// Table 1 gives no micro-batch: we use b = 4 for every row; Megatron-LM (2021) reduced gradients
// after the backward pass (no overlap).
TEST(Validation, MegatronThroughputWithin10Percent) {
  struct Row {
    const char *model;
    int t, n, B;
    double tflops;
  };
  for (Row r : {Row{"megatron-1.7b", 1, 32, 512, 137}, Row{"megatron-3.6b", 2, 64, 512, 138},
                Row{"megatron-7.5b", 4, 128, 512, 142}, Row{"megatron-18.4b", 8, 256, 1024, 135}}) {
    Strategy s;
    s.tp = r.t;
    s.dp = r.n / r.t;
    s.global_batch = r.B;
    s.micro_batch = 4;
    s.recompute = Recompute::full;
    s.fp32_grads = true;
    s.overlap_dp = false;
    const Estimate e = run(r.model, s);
    EXPECT_LT(rel(e.tflops_per_gpu, r.tflops), 0.10) << r.model;
    std::printf("[validation] %s: %.1f vs %.0f TFLOP/s per GPU (%+.1f%%)\n", r.model,
                e.tflops_per_gpu, r.tflops, 100 * (e.tflops_per_gpu - r.tflops) / r.tflops);
  }
}

// bm_fitting: cost of fitting one ~30-point curve (all models, BIC selection, outlier screening,
// leave-one-out), of single LM fits per model, and of one prediction.
// Run: build/bin/bm_fitting [--benchmark_filter=...]
#include "scalefit/fitting/fit.hpp"

#include <benchmark/benchmark.h>

#include <cmath>
#include <random>

using namespace scalefit::fitting;

namespace {

/// 30 sizes 8 B .. 4 GiB (factor 2) of a two-regime curve with 1% log-normal noise (seed 1).
std::vector<CurvePoint> curve() {
  CurveModel m;
  m.kind = ModelKind::regimes;
  m.alpha_us = 12;
  m.steps = {{6, 1.5, 65536}, {120, 1.2, 8388608}};
  std::mt19937 rng(1);
  std::normal_distribution<double> n(0, 0.01);
  std::vector<CurvePoint> pts;
  for (double s = 8; pts.size() < 30; s *= 2)
    pts.push_back({s, m.time_us(s) * std::exp(n(rng))});
  return pts;
}

void BM_FitCurveAllModelsLoo(benchmark::State &state) {
  const auto pts = curve();
  for (auto _ : state)
    benchmark::DoNotOptimize(fit_curve(pts));
  state.SetLabel("30 points, alpha_beta+logistic+regimes(2,3), outliers, LOO");
}
BENCHMARK(BM_FitCurveAllModelsLoo)->Unit(benchmark::kMillisecond);

/// 24 sizes 8 B .. 64 MiB of a host-memory MPI-like curve that falls: a 1.3 us latency step at
/// ~360 B (eager -> rendezvous) and a 60% bandwidth drop at ~16 MiB (cache), 2% noise (seed 2).
std::vector<CurvePoint> falling_curve() {
  CurveModel m;
  m.kind = ModelKind::regimes;
  m.alpha_us = 1;
  m.steps = {{10, 1.2, 16384}};
  m.drops = {{0.6, 3, 1.6e7}};
  m.lifts = {{1.3, 20, 360}};
  std::mt19937 rng(2);
  std::normal_distribution<double> n(0, 0.02);
  std::vector<CurvePoint> pts;
  for (double s = 8; pts.size() < 24; s *= 2)
    pts.push_back({s, m.time_us(s) * std::exp(n(rng))});
  return pts;
}

void BM_FitFallingCurveAllModelsLoo(benchmark::State &state) {
  const auto pts = falling_curve();
  std::string label;
  for (auto _ : state) {
    const CurveFit f = fit_curve(pts);
    label = model_label(f.model);
    benchmark::DoNotOptimize(f);
  }
  state.SetLabel("24 points with falls, chosen " + label);
}
BENCHMARK(BM_FitFallingCurveAllModelsLoo)->Unit(benchmark::kMillisecond);

void BM_FitCurveNoLoo(benchmark::State &state) {
  const auto pts = curve();
  FitOptions opt;
  opt.leave_one_out = false;
  for (auto _ : state)
    benchmark::DoNotOptimize(fit_curve(pts, opt));
}
BENCHMARK(BM_FitCurveNoLoo)->Unit(benchmark::kMillisecond);

void BM_LeaveOneOutOnly(benchmark::State &state) {
  const auto pts = curve();
  const CurveFit f = fit_curve(pts);
  for (auto _ : state)
    benchmark::DoNotOptimize(leave_one_out_mape_pct(f.kept, f.model));
  state.SetLabel(std::string(model_name(f.model.kind)) +
                 " R=" + std::to_string(f.model.num_regimes()));
}
BENCHMARK(BM_LeaveOneOutOnly)->Unit(benchmark::kMillisecond);

void BM_FitModel(benchmark::State &state) {
  const auto pts = curve();
  const auto kind = static_cast<ModelKind>(state.range(0));
  const int regimes = static_cast<int>(state.range(1));
  for (auto _ : state)
    benchmark::DoNotOptimize(fit_model(pts, kind, regimes));
  state.SetLabel(std::string(model_name(kind)) + " R=" + std::to_string(regimes));
}
BENCHMARK(BM_FitModel)
    ->Args({0, 1})
    ->Args({1, 1})
    ->Args({2, 2})
    ->Args({2, 3})
    ->Unit(benchmark::kMicrosecond);

void BM_ModelTime(benchmark::State &state) {
  CurveModel m;
  m.kind = ModelKind::regimes;
  m.alpha_us = 12;
  m.steps = {{6, 1.5, 65536}, {120, 1.2, 8388608}, {30, 2, 1e9}};
  double s = 1e6;
  for (auto _ : state)
    benchmark::DoNotOptimize(m.time_us(s));
}
BENCHMARK(BM_ModelTime);

} // namespace

BENCHMARK_MAIN();

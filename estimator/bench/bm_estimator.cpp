// Google Benchmark: how many layouts the estimator evaluates per second on one core, and how long
// a full search takes (Calculon evaluates about 50 configurations per second per core).
#include "scalefit/estimator/search.hpp"
#include "scalefit/fitting/fit_file.hpp"

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

namespace est = scalefit::estimator;

namespace {
std::string cfg(const std::string &rel) {
  return std::string(SCALEFIT_CONFIG_DIR) + "/" + rel;
}

/// Valid layouts of the 1T model on 3072 GPUs (every one evaluated in full: messages, memory).
std::vector<est::Strategy> valid_layouts(const est::Estimator &e) {
  std::vector<est::Strategy> out;
  for (int tp : {1, 2, 4, 8, 16})
    for (int pp : {1, 2, 4, 8, 16, 32, 64, 128})
      for (int z : {0, 1, 2, 3})
        for (auto rc : {est::Recompute::none, est::Recompute::selective, est::Recompute::full})
          for (int v : {1, 2, 4})
            for (int b : {1, 2}) {
              est::Strategy s;
              s.tp = tp, s.pp = pp, s.dp = 3072 / (tp * pp), s.zero = z, s.recompute = rc;
              s.interleave = v, s.micro_batch = b, s.global_batch = 3072, s.sp = tp > 1;
              if (3072 % (tp * pp) == 0 && e.check(s, 3072) == est::Reject::none)
                out.push_back(s);
            }
  return out;
}

/// The timed loop of the layout benchmarks: evaluates the valid layouts of `e` in turn, one per
/// iteration (items = layouts evaluated); `warm` evaluates each once before timing.
void evaluate_in_turn(benchmark::State &state, const est::Estimator &e, bool warm = false,
                      std::vector<est::Strategy> layouts = {}) {
  if (layouts.empty())
    layouts = valid_layouts(e);
  est::Estimate out;
  if (warm)
    for (const auto &s : layouts)
      e.evaluate(s, out);
  std::size_t i = 0;
  for (auto _ : state) {
    e.evaluate(layouts[i], out);
    benchmark::DoNotOptimize(out.time_s.iteration);
    if (++i == layouts.size())
      i = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["layouts"] = static_cast<double>(layouts.size());
}

void BM_EvaluateLayout(benchmark::State &state) {
  const est::Estimator e(est::load_model(cfg("models/megatron-1t.yaml")),
                         est::load_system(cfg("systems/dgx-a100-80gb.yaml")));
  evaluate_in_turn(state, e);
}
BENCHMARK(BM_EvaluateLayout);

/// Issue 14's dimensions: Llama 3.1 405B (GQA, SwiGLU) in FP8 on 8192 H100s, layouts over
/// tp x pp x cp x ZeRO x recompute with uneven first/last stages (126 blocks).
std::vector<est::Strategy> llama_layouts(const est::Estimator &e) {
  std::vector<est::Strategy> out;
  for (int tp : {1, 2, 4, 8})
    for (int pp : {1, 2, 4, 8, 16})
      for (int cp : {1, 2, 4, 8})
        for (int z : {0, 1, 3})
          for (auto rc : {est::Recompute::none, est::Recompute::full})
            for (int v : {1, 2}) {
              est::Strategy s;
              s.tp = tp, s.pp = pp, s.cp = cp, s.dp = 8192 / (tp * pp * cp), s.zero = z;
              s.recompute = rc, s.interleave = v, s.global_batch = 8192, s.sp = tp > 1;
              s.overlap_tp = tp > 1, s.overlap_param_gather = z == 1;
              if (pp == 16)
                s.first_stage_layers = s.last_stage_layers = 7;
              if (e.check(s, 8192) == est::Reject::none)
                out.push_back(s);
            }
  return out;
}

void BM_EvaluateLayoutLlama405bFp8Cp(benchmark::State &state) {
  est::ModelConfig m = est::load_model(cfg("models/llama3.1-405b.yaml"));
  m.fp8 = true;
  const est::Estimator e(m, est::load_system(cfg("systems/dgx-h100.yaml")));
  evaluate_in_turn(state, e, false, llama_layouts(e));
}
BENCHMARK(BM_EvaluateLayoutLlama405bFp8Cp);

// The same layouts with every GEMM, attention and memory-bound term priced by compute fits (the
// H100 kernel fits of tests/data/estimator/fit_h100_kernels.yaml) instead of the spec tables.
void BM_EvaluateLayoutComputeFit(benchmark::State &state) {
  est::Estimator e(est::load_model(cfg("models/megatron-1t.yaml")),
                   est::load_system(cfg("systems/dgx-h100.yaml")));
  e.use_compute(scalefit::fitting::load_fit_file(SCALEFIT_BM_COMPUTE_FIT)->compute);
  evaluate_in_turn(state, e);
}
BENCHMARK(BM_EvaluateLayoutComputeFit);

#ifdef SCALEFIT_BM_FIT_FILE
// The same layouts with TP collectives priced by a fit file (tabulated curves) and the rest by
// the spec tiers.
void BM_EvaluateLayoutWithFit(benchmark::State &state) {
  const est::SystemConfig sys = est::load_system(cfg("systems/dgx-a100-80gb.yaml"));
  const est::ModelConfig model = est::load_model(cfg("models/megatron-1t.yaml"));
  const est::Estimator e(model, sys,
                         est::make_fit_comm_model(SCALEFIT_BM_FIT_FILE,
                                                  std::make_shared<est::SpecCommModel>(sys),
                                                  model.dtype));
  evaluate_in_turn(state, e, /*warm=*/true); // first tabulate every (op, group) once
}
BENCHMARK(BM_EvaluateLayoutWithFit);
#endif

void BM_Search(benchmark::State &state, const char *model, const char *system, int gpus) {
  const est::Estimator e(est::load_model(cfg(std::string("models/") + model)),
                         est::load_system(cfg(std::string("systems/") + system)));
  est::SearchSpace space;
  space.gpus = gpus;
  space.global_batch = e.model().global_batch;
  long enumerated = 0, estimated = 0;
  for (auto _ : state) {
    const est::SearchResult r = est::search(e, space, 10);
    enumerated += r.enumerated;
    estimated += r.estimated;
    benchmark::DoNotOptimize(r.top.data());
  }
  // layouts/s counts layouts estimated in full; those the divisibility checks reject before any
  // estimate are counted apart (enumerated/s).
  state.counters["layouts/s"] =
      benchmark::Counter(static_cast<double>(estimated), benchmark::Counter::kIsRate);
  state.counters["enumerated/s"] =
      benchmark::Counter(static_cast<double>(enumerated), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_Search, megatron_1t_3072gpus, "megatron-1t.yaml", "dgx-a100-80gb.yaml", 3072)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Search, gpt_13b_64gpus_polaris, "gpt-13b.yaml", "polaris.yaml", 64)
    ->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();

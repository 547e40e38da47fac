// Strategy search and system comparison.
#include "helpers.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/estimator/search.hpp"

#include "../../estimator/src/detail.hpp" // LayerCostCache (search's block cache)

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

using namespace scalefit;
using namespace scalefit::estimator;

namespace {
Estimator make(const char *model, const char *system) {
  return Estimator(test_paths::load_unfused(test_paths::model_path(model)),
                   load_system(test_paths::system_path(system)));
}
} // namespace

TEST(Search, RanksFitsAndCountsRejections) {
  const Estimator est = make("gpt-13b", "dgx-a100");
  SearchSpace space;
  space.gpus = 64;
  space.global_batch = 512;
  const SearchResult r = search(est, space, 5);
  ASSERT_EQ(r.top.size(), 5u);
  long rejected = 0;
  for (long n : r.rejected)
    rejected += n;
  EXPECT_EQ(r.accepted + rejected, r.enumerated);
  // Estimated = accepted + rejected for memory; the rest never reached an estimate.
  EXPECT_EQ(r.estimated, r.accepted + r.rejected[static_cast<int>(Reject::memory)]);
  EXPECT_LT(r.estimated, r.enumerated);
  EXPECT_GT(r.rejected[static_cast<int>(Reject::memory)], 0); // 13B with plain DP on 40 GB
  EXPECT_EQ(r.rejected[static_cast<int>(Reject::gpus)], 0);
  for (std::size_t i = 0; i < r.top.size(); ++i) {
    EXPECT_TRUE(r.top[i].estimate.fits_memory);
    EXPECT_EQ(r.top[i].strategy.gpus(), 64);
    if (i > 0)
      EXPECT_LE(r.top[i - 1].estimate.time_s.iteration, r.top[i].estimate.time_s.iteration);
  }
  // No layout of the space we evaluate by hand beats the best.
  const double best = r.top.front().estimate.time_s.iteration;
  Estimate e;
  for (int tp : {1, 2, 4, 8})
    for (int z : {0, 1, 2, 3})
      for (int b : {1, 2, 4}) {
        Strategy s;
        s.tp = tp, s.dp = 64 / tp, s.zero = z, s.micro_batch = b, s.global_batch = 512;
        s.recompute = Recompute::selective, s.sp = tp > 1;
        if (est.check(s, 64) != Reject::none)
          continue;
        est.evaluate(s, e);
        if (e.fits_memory)
          EXPECT_GE(e.time_s.iteration, best);
      }
}

TEST(Search, OneTrillionOn3072Gpus) {
  const Estimator est = make("megatron-1t", "dgx-a100-80gb");
  SearchSpace space;
  space.gpus = 3072;
  space.global_batch = 3072;
  const SearchResult r = search(est, space, 3);
  ASSERT_FALSE(r.top.empty());
  EXPECT_GT(r.enumerated, 100000);
  EXPECT_GT(r.estimated, 0);
  EXPECT_LT(r.estimated, r.enumerated / 4); // most layouts fail divisibility before any estimate
  const Strategy &s = r.top.front().strategy;
  EXPECT_GT(s.pp, 1); // 1T parameters cannot fit without pipelining
  EXPECT_LE(s.tp, 8); // TP stays inside a node (Cheng et al.'s guideline) for the best layout
  EXPECT_GT(r.rejected[static_cast<int>(Reject::memory)], 0);
}

TEST(Search, RequiresGpusAndBatch) {
  const Estimator est = make("gpt-125m", "polaris");
  SearchSpace space;
  EXPECT_THROW(search(est, space, 1), InputError);
  space.gpus = 8;
  EXPECT_THROW(search(est, space, 1), InputError);
}

// Cheng et al. 2024: DGX (TG40) trains faster than Polaris, with a larger gap in communication.
TEST(Compare, DgxBeatsPolarisMostlyThroughCommunication) {
  const Estimator dgx = make("gpt-13b", "dgx-a100");
  const Estimator pol = make("gpt-13b", "polaris");
  Strategy s;
  s.dp = 64, s.zero = 3, s.micro_batch = 1, s.global_batch = 64, s.recompute = Recompute::full;
  SearchSpace space;
  space.gpus = 64;
  space.global_batch = 64;
  const Comparison c = compare(dgx, pol, s, space);
  EXPECT_GT(c.time_ratio, 1.0);
  EXPECT_GT(c.comm_ratio, c.time_ratio);
  EXPECT_GT(c.comm_share_b, c.comm_share_a);
  EXPECT_NEAR(c.time_ratio, c.b.estimate.time_s.iteration / c.a.estimate.time_s.iteration, 1e-12);
  const Comparison best = compare(dgx, pol, std::nullopt, space);
  EXPECT_LE(best.a.estimate.time_s.iteration, c.a.estimate.time_s.iteration);
  EXPECT_LE(best.b.estimate.time_s.iteration, c.b.estimate.time_s.iteration);
}

// Memory first (what search runs): over every valid layout of a dense and an MoE model with
// multi-token prediction and a GQA model with CP, evaluate_fitting gives the memory evaluate()
// gives, and for the layouts that fit every time and throughput figure too; those that do not
// fit are left untimed (NaN).
TEST(Search, MemoryFirstMatchesTheFullEstimate) {
  struct Case {
    const char *model, *system;
    int gpus;
  };
  for (const Case c :
       {Case{"megatron-1t", "dgx-a100-80gb", 3072}, Case{"deepseek-v3", "dgx-h100", 1024},
        Case{"llama3-70b", "dgx-h100", 512}}) {
    SCOPED_TRACE(c.model);
    const Estimator est = make(c.model, c.system);
    Estimate full, first;
    int fit = 0, unfit = 0;
    Strategy s;
    s.global_batch = est.model().global_batch;
    for (int cp : {1, 2})
      for (int tp : {1, 2, 4, 8})
        for (int pp : {1, 2, 4, 8, 16})
          for (int v : {1, 2})
            for (int ep : {1, 8, 64})
              for (Recompute rc : {Recompute::none, Recompute::full}) {
                s.cp = cp, s.tp = tp, s.pp = pp, s.interleave = v, s.recompute = rc, s.sp = tp > 1;
                s.ep = est.model().moe() ? ep : 1;
                s.dp = c.gpus / (cp * tp * pp);
                s.zero = 1;
                if (est.check(s, c.gpus) != Reject::none)
                  continue;
                est.evaluate(s, full, false);
                const bool fits = est.evaluate_fitting(s, first);
                EXPECT_EQ(fits, full.fits_memory);
                EXPECT_EQ(first.memory_bytes.total, full.memory_bytes.total);
                EXPECT_EQ(first.peak_stage, full.peak_stage);
                if (fits) {
                  ++fit;
                  EXPECT_EQ(first.time_s.iteration, full.time_s.iteration);
                  EXPECT_EQ(first.time_s.communication, full.time_s.communication);
                  EXPECT_EQ(first.mfu, full.mfu);
                  EXPECT_EQ(first.comm_dp_s, full.comm_dp_s);
                } else {
                  ++unfit;
                  EXPECT_TRUE(std::isnan(first.time_s.iteration));
                }
              }
    EXPECT_GT(fit, 0);
    EXPECT_GT(unfit, 0);
  }
}

// Search's block cache: each layout that fits is looked up right after a neighbour that differs
// from it in one field the block's pricing reads (tp, sp, micro-batch, cp, recompute modules,
// ep, expert TP, imbalance, framework) or does not (dp, pp, ZeRO), so a key missing a field
// would hand it the neighbour's block; every figure must equal the uncached estimate, and the
// cache must be used (hits) and filled (misses).
TEST(Search, BlockCacheMatchesTheUncachedEstimate) {
  for (const char *model : {"qwen3-30b-a3b", "deepseek-v2-lite", "llama3-70b", "gpt-13b"}) {
    SCOPED_TRACE(model);
    const Estimator est = make(model, "dgx-h100");
    const bool moe = est.model().moe();
    const auto cache = std::make_unique<LayerCostCache>();
    Estimate plain, cached;
    const int gpus = 256;
    int compared = 0;
    auto same = [&](const Strategy &s) {
      if (est.check(s, gpus) != Reject::none)
        return;
      est.evaluate(s, plain, false);
      const bool fits = est.evaluate_fitting(s, cached, cache.get());
      ASSERT_EQ(fits, plain.fits_memory);
      EXPECT_EQ(cached.memory_bytes.total, plain.memory_bytes.total);
      if (!fits)
        return;
      ++compared;
      EXPECT_EQ(cached.time_s.iteration, plain.time_s.iteration)
          << "tp " << s.tp << " sp " << s.sp << " b " << s.micro_batch << " cp " << s.cp
          << " modules " << s.recompute_modules << " ep " << s.ep << " etp " << s.etp
          << " imbalance " << s.moe_imbalance << " pytorch " << (s.framework == Framework::pytorch);
      EXPECT_EQ(cached.time_s.compute, plain.time_s.compute);
      EXPECT_EQ(cached.terms[1].seconds, plain.terms[1].seconds);
    };
    for (int tp : {1, 2, 8})
      for (int pp : {1, 2, 4})
        for (int z : {0, 1})
          for (int b : {1, 2}) {
            Strategy s;
            s.global_batch = 1024, s.tp = tp, s.pp = pp, s.zero = z, s.micro_batch = b;
            s.dp = gpus / (tp * pp), s.sp = tp > 1, s.recompute = Recompute::selective;
            s.ep = moe ? 8 : 1;
            same(s);
            // one field at a time, each right after the base layout
            auto vary = [&](auto change) {
              same(s);
              Strategy v = s;
              change(v);
              v.dp = gpus / (v.tp * v.cp * v.pp);
              same(v);
            };
            vary([](Strategy &v) { v.sp = !v.sp; });
            vary([](Strategy &v) { v.micro_batch = 3 - v.micro_batch; });
            vary([](Strategy &v) { v.cp = 2; });
            vary([](Strategy &v) { v.recompute_modules = kRecomputeMlp; });
            vary([](Strategy &v) { v.recompute = Recompute::full; });
            vary([](Strategy &v) { v.ep = v.ep == 8 ? 16 : v.ep; });
            vary([](Strategy &v) { v.etp = 1; });
            vary([](Strategy &v) { v.moe_imbalance = 1.25; });
            vary([](Strategy &v) { v.framework = Framework::pytorch; });
            // eager's bf16 model (FSDP / ZeRO MixedPrecision, pure bf16) prices its own block
            vary([](Strategy &v) { v.framework = Framework::pytorch, v.zero = 1 - v.zero; });
            vary([](Strategy &v) { v.framework = Framework::pytorch, v.pure_bf16 = true; });
            vary([](Strategy &v) { v.tp = v.tp == 8 ? 4 : 2 * v.tp; });
            vary([](Strategy &v) { v.zero = 1 - v.zero, v.pp = v.pp == 1 ? 2 : 1; });
          }
    EXPECT_GT(compared, 0) << cache->hits << " hits, " << cache->misses << " misses";
    EXPECT_GT(cache->hits, 0) << compared << " compared, " << cache->misses << " misses";
    EXPECT_GT(cache->misses, 0);
  }
}

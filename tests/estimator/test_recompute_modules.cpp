// Megatron-Core's selective recompute modules (--recompute-modules) on DeepSeek-V3: memory, time
// and executed FLOPs of each module recomputed, and the refusals (issue 16).
#include "helpers.hpp"

#include "scalefit/core/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

using namespace scalefit;
using namespace scalefit::estimator;

namespace {
/// DeepSeek-V3 on GB200 NVL72 as Megatron-Bridge's 25.11 recipe lays it out (PP 4 x VP 4, EP 64,
/// 16 / 13 blocks on the first / last stage), estimated with recompute `r` of modules `mods`.
struct DeepSeekV3Gb200 {
  const ModelConfig m = load_model(test_paths::model_path("deepseek-v3"));
  const Estimator est{m, load_system(test_paths::system_path("gb200-nvl72"))};
  static Strategy layout() {
    Strategy x;
    x.tp = 1, x.pp = 4, x.interleave = 4, x.ep = 64, x.dp = 64, x.zero = 1, x.fused_ce = true;
    x.first_stage_layers = 16, x.last_stage_layers = 13, x.global_batch = 4096;
    return x;
  }
  std::unique_ptr<Estimate> operator()(Recompute r, unsigned mods) const {
    Strategy x = layout();
    x.recompute = r, x.recompute_modules = mods;
    est.validate(x, 0);
    auto e = std::make_unique<Estimate>();
    est.evaluate(x, *e);
    return e;
  }
};
} // namespace

// Megatron-Core's selective --recompute-modules (transformer_config.py recompute_modules, read
// only with recompute_granularity "selective"), as Megatron-Bridge's DeepSeek-V3 recipes set
// them: each module's saved outputs leave, its forward runs again in backward.
TEST(RecomputeModules, ModulesDropTheirActivationsAndRunAgain) {
  const DeepSeekV3Gb200 run;
  const ModelConfig &m = run.m;
  const Estimator &est = run.est;
  const auto none = run(Recompute::none, 0);
  // core_attn (the default list): Megatron-Core checkpoints the attention core whatever its
  // backend, so the fused kernel's forward runs again in backward and its fp32 log-sum-exp
  // statistics (one per row and head) are not kept; fused attention keeps no s x s anyway
  const auto core = run(Recompute::selective, 0);
  EXPECT_LT(core->memory_bytes.activations, none->memory_bytes.activations);
  EXPECT_GT(core->memory_bytes.activations, 0.99 * none->memory_bytes.activations);
  EXPECT_GT(core->terms[1].seconds, none->terms[1].seconds); // attention: one forward more
  EXPECT_DOUBLE_EQ(core->terms[0].seconds, none->terms[0].seconds);
  // mla_up_proj: the up-projected q (a (d + d_R)), k (a (d + d_R)) and v (a d_v) per token in
  // bf16 leave: 2 x (2 x 128 x 192 + 128 x 128) B per token and block
  const auto mla = run(Recompute::selective, kRecomputeMlaUpProj);
  const double per_token = 2.0 * (2 * 128 * 192 + 128 * 128);
  const double T = 4096.0; // micro-batch 1 x sequence 4096
  const double per_block = activation_bytes_per_layer(m, 1, 1, false, Recompute::none, 1) -
                           activation_bytes_per_layer(m, 1, 1, false, Recompute::selective, 1);
  // the public helper is the default list (core_attn): 128 heads' fp32 statistics per token
  EXPECT_DOUBLE_EQ(per_block, 4.0 * 128 * T);
  const double drop = none->memory_bytes.activations - mla->memory_bytes.activations;
  // the stage-0 activations are whole blocks times in-flight micro-batches: the drop is a
  // whole multiple of one block's q, k, v
  const double blocks = drop / (per_token * T);
  EXPECT_NEAR(blocks, std::round(blocks), 1e-6) << blocks;
  EXPECT_GT(blocks, 16); // 16 blocks on stage 0, several micro-batches in flight
  // time: the q-up and kv-up GEMMs forward again, per block and micro-batch
  EXPECT_GT(mla->time_s.compute, none->time_s.compute);
  EXPECT_GT(mla->terms[0].seconds, none->terms[0].seconds);
  EXPECT_DOUBLE_EQ(mla->terms[1].seconds, none->terms[1].seconds);
  // moe_act: the routed experts' activation output (k f_e per token and MoE block) leaves and the
  // activation runs again (memory-bound)
  const auto act = run(Recompute::selective, kRecomputeMoeAct);
  EXPECT_LT(act->memory_bytes.activations, none->memory_bytes.activations);
  EXPECT_GT(act->terms[2].seconds, none->terms[2].seconds);
  EXPECT_DOUBLE_EQ(act->terms[0].seconds, none->terms[0].seconds);
  // the modules add up: both drop what each drops
  const auto both = run(Recompute::selective, kRecomputeMlaUpProj | kRecomputeMoeAct);
  EXPECT_NEAR(none->memory_bytes.activations - both->memory_bytes.activations,
              (none->memory_bytes.activations - mla->memory_bytes.activations) +
                  (none->memory_bytes.activations - act->memory_bytes.activations),
              1e-6 * none->memory_bytes.activations);
  // recompute modules without selective granularity are refused, as Megatron-Core ignores them
  Strategy bad = DeepSeekV3Gb200::layout();
  bad.recompute_modules = kRecomputeMoeAct;
  test_checks::expect_refused(est, bad, Reject::recompute, "--recompute-modules");
  // names: Megatron-Core's, round trip; a name it does not have is refused by name
  unsigned flags = 0;
  std::string unknown;
  ASSERT_TRUE(parse_recompute_modules("mla_up_proj,mlp,moe_act,moe", flags, unknown));
  EXPECT_EQ(recompute_modules_name(flags), "mla_up_proj,mlp,moe_act,moe");
  EXPECT_FALSE(parse_recompute_modules("mla_up_proj,moe_router", flags, unknown));
  EXPECT_EQ(unknown, "moe_router");
}

// "moe" (Megatron-Core's MoELayer checkpoint, moe_layer.py): the whole MoE layer's forward runs
// again in backward (router, routed and shared experts, their memory-bound kernels, and the
// dispatch and combine all-to-alls), and the layer keeps only its input: every routed-token
// activation and the router's logits leave. It covers moe_act and shared_experts.
TEST(RecomputeModules, MoeModuleRecomputesTheWholeLayer) {
  const DeepSeekV3Gb200 run;
  const ModelConfig &m = run.m;
  const Estimator &est = run.est;
  const auto none = run(Recompute::none, 0);
  const auto act = run(Recompute::selective, kRecomputeMoeAct | kRecomputeSharedExperts);
  const auto moe = run(Recompute::selective, kRecomputeMoe);
  const auto both = run(Recompute::selective, kRecomputeMoe | kRecomputeMoeAct);
  // memory: below what moe_act and shared_experts drop together (the routed inputs and up
  // outputs leave too)
  EXPECT_LT(moe->memory_bytes.activations, act->memory_bytes.activations);
  EXPECT_DOUBLE_EQ(both->memory_bytes.activations, moe->memory_bytes.activations);
  // per block: exactly the routed activations (at load 1) and the layer's own inner bytes, over
  // whole blocks times in-flight micro-batches of stage 0
  const ModelOps o = describe_model(m);
  const double per_block = (o.act.routed + o.act.moe_inner) * 4096.0; // b 1 x s 4096, tp 1
  const auto core = run(Recompute::selective, kRecomputeCoreAttn);
  const auto core_moe = run(Recompute::selective, kRecomputeCoreAttn | kRecomputeMoe);
  const double blocks =
      (core->memory_bytes.activations - core_moe->memory_bytes.activations) / per_block;
  EXPECT_NEAR(blocks, std::round(blocks), 1e-6) << blocks;
  EXPECT_GT(blocks, 16);
  // time: the layer's GEMMs and memory-bound kernels again, and two more all-to-alls per block
  EXPECT_GT(moe->terms[0].seconds, act->terms[0].seconds);
  EXPECT_GT(moe->terms[2].seconds, none->terms[2].seconds);
  EXPECT_NEAR(moe->comm_ep_s, 1.5 * none->comm_ep_s, 1e-9 * none->comm_ep_s); // 6 of 4 per block
  EXPECT_DOUBLE_EQ(both->time_s.iteration, moe->time_s.iteration);
  EXPECT_GT(moe->hardware_flops, act->hardware_flops);
}

// The executed FLOPs count the recomputed modules' GEMMs: mla_up_proj adds, per token and block,
// 2 (q_lora a (d + d_R) + kv_lora a (d + d_v)) (DeepSeek-V3: q_lora 1536, kv_lora 512, a 128).
TEST(RecomputeModules, ModulesCountInExecutedFlops) {
  const ModelConfig m = load_model(test_paths::model_path("deepseek-v3"));
  const Estimator est(m, load_system(test_paths::system_path("gb200-nvl72")));
  Strategy s;
  s.pp = 4, s.interleave = 4, s.ep = 64, s.dp = 64, s.zero = 1;
  s.first_stage_layers = 16, s.last_stage_layers = 13, s.global_batch = 4096;
  s.recompute = Recompute::selective;
  Estimate a, b;
  est.evaluate(s, a);
  s.recompute_modules = kRecomputeCoreAttn | kRecomputeMlaUpProj; // the default list + MLA up
  est.evaluate(s, b);
  const double per_token = 2.0 * (1536.0 * 128 * 192 + 512.0 * 128 * (128 + 128));
  EXPECT_NEAR(b.hardware_flops - a.hardware_flops, per_token * 4096 * 4096 * 61,
              1e-9 * b.hardware_flops);
  EXPECT_DOUBLE_EQ(b.model_flops, a.model_flops);
}

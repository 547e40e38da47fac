// One layout: message list, time identity, memory by ZeRO stage, validation errors, no allocation.
#include "helpers.hpp"

#include "scalefit/core/error.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>

// Counts heap allocations so a test can check that evaluate() makes none.
static std::atomic<long> g_allocations{0};
void *operator new(std::size_t n) {
  ++g_allocations;
  if (void *p = std::malloc(n ? n : 1))
    return p;
  throw std::bad_alloc();
}
void operator delete(void *p) noexcept {
  std::free(p);
}
void operator delete(void *p, std::size_t) noexcept {
  std::free(p);
}

using namespace scalefit;
using namespace scalefit::estimator;

namespace {
Estimator make(const char *model, const char *system = "dgx-a100-80gb") {
  return Estimator(test_paths::load_unfused(test_paths::model_path(model)),
                   load_system(test_paths::system_path(system)));
}
double volume(const Estimate &e, Parallelism a, Parallelism b) {
  // bytes each rank moves, nccl-tests' busbw convention: bytes * factor per operation
  double v = 0;
  for (int i = 0; i < e.n_messages; ++i) {
    const Message &m = e.messages[i];
    if (m.by == a || m.by == b)
      v += m.count * m.bytes * busbw_factor(m.op, m.group.nranks);
  }
  return v;
}
} // namespace

TEST(Estimate, TimeSplitIdentityAndMessagesSumToCommunication) {
  const Estimator est = make("gpt-13b", "polaris");
  Strategy s;
  s.dp = 8, s.tp = 4, s.pp = 2, s.zero = 1, s.micro_batch = 2, s.global_batch = 64;
  s.recompute = Recompute::selective;
  est.validate(s, 64);
  Estimate e;
  est.evaluate(s, e);
  const auto &t = e.time_s;
  EXPECT_NEAR(t.iteration, t.compute + t.communication - t.overlap + t.bubble, 1e-12);
  double sum = 0;
  for (int i = 0; i < e.n_messages; ++i)
    sum += e.messages[i].total_s();
  EXPECT_NEAR(sum, t.communication, 1e-9 * t.communication);
  EXPECT_GT(t.overlap, 0);
  EXPECT_LE(t.overlap, e.comm_dp_s);
  EXPECT_NEAR(e.comm_tp_s + e.comm_pp_s + e.comm_dp_s, t.communication, 1e-12);
}

TEST(Estimate, DpBucketsCarryAllGradients) {
  const Estimator est = make("gpt-1.3b", "dgx-a100");
  Strategy s;
  s.dp = 16, s.global_batch = 16;
  s.bucket_bytes = 25 << 20;
  Estimate e;
  est.evaluate(s, e);
  double bytes = 0, count = 0;
  for (int i = 0; i < e.n_messages; ++i) {
    const Message &m = e.messages[i];
    ASSERT_EQ(m.op, Op::allreduce);
    ASSERT_EQ(m.by, Parallelism::dp);
    EXPECT_EQ(m.group.nranks, 16);
    EXPECT_EQ(m.group.nnodes, 2);
    EXPECT_EQ(m.group.ranks_per_node, 8);
    bytes += m.bytes * m.count;
    count += m.count;
  }
  EXPECT_NEAR(bytes, 2 * e.params_per_gpu, 1.0); // fp16 gradients of every parameter
  EXPECT_EQ(count, std::ceil(2 * e.params_per_gpu / (25 << 20)));
}

// Anthony et al. 2024 / Rajbhandari et al. 2020: ZeRO-3 moves 3 psi, DP and ZeRO-1/2 2 psi.
TEST(Estimate, Zero3MovesOneAndAHalfTimesDp) {
  const Estimator est = make("gpt-2.7b", "dgx-a100");
  Strategy s;
  s.dp = 32, s.global_batch = 32;
  Estimate e0, e1, e3;
  est.evaluate(s, e0);
  s.zero = 1;
  est.evaluate(s, e1);
  s.zero = 3;
  est.evaluate(s, e3);
  const double v0 = volume(e0, Parallelism::dp, Parallelism::zero);
  EXPECT_NEAR(volume(e1, Parallelism::dp, Parallelism::zero) / v0, 1.0, 1e-6);
  EXPECT_NEAR(volume(e3, Parallelism::dp, Parallelism::zero) / v0, 1.5, 1e-6);
  // memory: ZeRO-3 shards weights, gradients and optimizer states over dp
  EXPECT_NEAR(e3.memory_bytes.optimizer * 32, e0.memory_bytes.optimizer, 1.0);
  EXPECT_NEAR(e3.memory_bytes.gradients * 32, e0.memory_bytes.gradients, 1.0);
  EXPECT_LT(e3.memory_bytes.weights, e0.memory_bytes.weights / 8);
}

TEST(Estimate, TensorAndPipelineMessages) {
  const Estimator est = make("gpt-22b-korthikanti");
  Strategy s;
  s.dp = 1, s.tp = 8, s.pp = 4, s.micro_batch = 2, s.global_batch = 16, s.interleave = 2;
  Estimate ar, sp;
  est.evaluate(s, ar);
  s.sp = true;
  est.evaluate(s, sp);
  const double bsh = 2.0 * 2048 * 6144 * 2; // b s h fp16
  const int m = 8, layers_per_stage = 12;
  bool saw_ar = false, saw_pp = false;
  for (int i = 0; i < ar.n_messages; ++i) {
    const Message &g = ar.messages[i];
    if (g.op == Op::allreduce && g.count == m * layers_per_stage * 4) {
      saw_ar = true;
      EXPECT_EQ(g.bytes, bsh);
      EXPECT_EQ(g.group.nnodes, 1);
    }
    if (g.op == Op::sendrecv) {
      saw_pp = true;
      EXPECT_EQ(g.bytes, bsh / 8); // scatter/gather
      EXPECT_EQ(g.count, 2 * 2 * m);
      EXPECT_EQ(g.group.nnodes, 2); // stages 8 ranks apart on 8-GPU nodes
    }
  }
  EXPECT_TRUE(saw_ar);
  EXPECT_TRUE(saw_pp);
  // SP: ReduceScatter + AllGather with the same sizes, no AllReduce.
  for (int i = 0; i < sp.n_messages; ++i)
    EXPECT_NE(sp.messages[i].op, Op::allreduce);
  // Interleaving divides the bubble by v (Narayanan et al.: (p-1)/(v m)).
  Strategy s1 = s;
  s1.interleave = 1;
  Estimate e1;
  est.evaluate(s1, e1);
  const double per_mb_v2 = sp.time_s.bubble / ((4 - 1) / 2.0);
  const double per_mb_v1 = e1.time_s.bubble / 3.0;
  EXPECT_NEAR(per_mb_v2 / per_mb_v1, 1.0, 0.05); // same stage work; only PP sends differ
  EXPECT_LT(sp.time_s.bubble, 0.6 * e1.time_s.bubble);
}

TEST(Estimate, RecomputationTradesMemoryForTime) {
  const Estimator est = make("gpt-22b-korthikanti");
  Strategy s;
  s.tp = 8, s.micro_batch = 4, s.global_batch = 4;
  Estimate none, sel, full;
  est.evaluate(s, none);
  s.recompute = Recompute::selective;
  est.evaluate(s, sel);
  s.recompute = Recompute::full;
  est.evaluate(s, full);
  EXPECT_GT(none.memory_bytes.activations, sel.memory_bytes.activations);
  EXPECT_GT(sel.memory_bytes.activations, full.memory_bytes.activations);
  EXPECT_LT(none.time_s.compute, sel.time_s.compute);
  EXPECT_LT(sel.time_s.compute, full.time_s.compute);
  EXPECT_FALSE(none.fits_memory); // Korthikanti et al.: 59 GiB activations + states > 80 GiB
  EXPECT_TRUE(full.fits_memory);
}

TEST(Estimate, ValidationNamesTheOption) {
  const Estimator est = make("gpt-22b-korthikanti");
  auto field = [&](Strategy s, int gpus) {
    try {
      est.validate(s, gpus);
    } catch (const InputError &e) {
      return e.field();
    }
    return std::string("ok");
  };
  Strategy s;
  s.tp = 8, s.micro_batch = 4, s.global_batch = 4;
  EXPECT_EQ(field(s, 8), "ok");
  EXPECT_EQ(field(s, 16), "--gpus");
  Strategy t = s;
  t.tp = 3;
  EXPECT_EQ(field(t, 0), "--tp");
  t = s;
  t.pp = 5;
  EXPECT_EQ(field(t, 0), "--pp");
  t = s;
  t.micro_batch = 3;
  EXPECT_EQ(field(t, 0), "--global-batch");
  t = s;
  t.interleave = 2;
  EXPECT_EQ(field(t, 0), "--interleave");
  t = s;
  t.pp = 2, t.zero = 3; // ZeRO-3 / FSDP with PP is expressible (issue 14)
  EXPECT_EQ(field(t, 0), "ok");
  t.zero = 4;
  EXPECT_EQ(field(t, 0), "--zero");
  t = s;
  t.dp = 4, t.global_batch = 16, t.zero = 3, t.zero_shard = 3; // 3 does not divide dp*cp = 4
  EXPECT_EQ(field(t, 0), "--zero-shard");
  t.zero = 0, t.zero_shard = 2; // a shard group needs ZeRO
  EXPECT_EQ(field(t, 0), "--zero-shard");
  t = s;
  t.cp = 3; // 2048 % 6 != 0
  EXPECT_EQ(field(t, 0), "--cp");
  t = s;
  t.pp = 4, t.first_stage_layers = 5; // 43 blocks do not split over 3 stages
  EXPECT_EQ(field(t, 0), "--pp-layers");
  t.first_stage_layers = 6; // 42 = 3 x 14
  EXPECT_EQ(field(t, 0), "ok");
}

TEST(Estimate, EvaluateDoesNotAllocate) {
  const Estimator est = make("megatron-1t");
  Strategy s;
  s.dp = 6, s.tp = 8, s.pp = 64, s.micro_batch = 1, s.global_batch = 3072, s.zero = 1;
  s.recompute = Recompute::full, s.sp = true, s.interleave = 2;
  ASSERT_EQ(est.check(s, 3072), Reject::none);
  Estimate e;
  est.evaluate(s, e); // warm
  const long before = g_allocations.load();
  for (int i = 0; i < 100; ++i) {
    s.micro_batch = 1 + i % 2;
    est.evaluate(s, e);
  }
  EXPECT_EQ(g_allocations.load() - before, 0);
  EXPECT_GT(e.time_s.iteration, 0);
}

// Step 2 (layout -> shards and messages) and step 4 (schedule, memory) for the parallelisms of
// issue 14 (context parallelism: test_context_parallel.cpp): uneven pipeline stages, ZeRO/FSDP with
// PP, hybrid sharding, overlapped parameter gather, FP8 (with delayed scaling's amax all-reduces),
// fused cross-entropy and PyTorch FSDP memory.
#include "helpers.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/units.hpp"
#include "scalefit/estimator/search.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

using namespace scalefit;
using namespace scalefit::estimator;
using test_run::find;
using test_run::llama8b;
using test_run::make;
using test_run::run;

namespace {
/// Llama 3 70B on DGX H100 twice: bf16 GEMMs and FP8 GEMMs (the FP8 tests' pair).
struct Bf16Fp8 {
  Estimator bf16, fp8;
};
Bf16Fp8 llama70b_bf16_fp8() {
  ModelConfig m = load_model(test_paths::model_path("llama3-70b"));
  const SystemConfig h100 = load_system(test_paths::system_path("dgx-h100"));
  Estimator bf16(m, h100);
  m.fp8 = true;
  return {std::move(bf16), Estimator(m, h100)};
}
} // namespace

// Llama 3.1 405B: 126 blocks on 16 stages as Megatron's --decoder-first/last-pipeline-num-layers
// 7 make them (7, 8 x 14, 7).
TEST(Parallelism, UnevenPipelineStages) {
  const Estimator est = make("llama3.1-405b");
  Strategy s;
  s.tp = 8, s.pp = 16, s.dp = 4, s.sp = true, s.zero = 1, s.global_batch = 256;
  EXPECT_EQ(est.check(s, 0), Reject::layers); // 126 % 16 != 0
  s.first_stage_layers = 7, s.last_stage_layers = 7;
  const auto e = run(est, s);
  EXPECT_EQ(e->stage_layers[0], 7);
  EXPECT_EQ(e->stage_layers[1], 8);
  EXPECT_EQ(e->stage_layers[2], 7);
  // 1F1B: stage 1 keeps 15 micro-batches of 8 blocks (120) > stage 0's 16 of 7 (112)
  EXPECT_EQ(e->peak_stage, 1);
  EXPECT_GT(e->time_s.bubble, 0);
  // the slowest stage sets the pace: a middle stage (8 blocks) or the last (7 + logits)
  EXPECT_NE(e->slowest_stage, 0);
  // one end given: the other stages share the rest (Megatron)
  Strategy one = s;
  one.last_stage_layers = 0, one.first_stage_layers = 6; // 120 = 15 x 8
  EXPECT_EQ(est.check(one, 0), Reject::none);
}

TEST(Parallelism, ZeroAndFsdpWithPipelineAndHybridSharding) {
  const Estimator est = make("llama3-70b");
  Strategy s;
  s.tp = 8, s.pp = 2, s.dp = 16, s.sp = true, s.zero = 3, s.global_batch = 128;
  const auto full = run(est, s); // ZeRO-3 with PP: refused before issue 14
  s.zero_shard = 8;              // HSDP: shard over 8 DP ranks, 2 replicas
  const auto hybrid = run(est, s);
  EXPECT_NEAR(hybrid->memory_bytes.optimizer, 2 * full->memory_bytes.optimizer,
              1e-6 * full->memory_bytes.optimizer);
  const Message *ar = find(*hybrid, Parallelism::zero, Op::allreduce);
  ASSERT_NE(ar, nullptr); // gradient shards meet across the replicas
  EXPECT_EQ(ar->group.nranks, 2);
  EXPECT_EQ(find(*full, Parallelism::zero, Op::allreduce), nullptr);
}

// HSDP as PyTorch FSDP (HYBRID_SHARD) and Megatron's distributed-optimizer instances run it: the
// replicas' AllReduce follows each unit's (bucket's) reduce-scatter inside the backward, one per
// block and micro-batch, of the block's gradient shard, and hides behind the backward like it.
TEST(Parallelism, HybridShardingAllReducesEachUnitBehindTheBackward) {
  const Estimator est = make("llama3-70b");
  Strategy s;
  s.dp = 128, s.zero = 3, s.zero_shard = 8, s.micro_batch = 1, s.global_batch = 256;
  s.recompute = Recompute::full;
  const auto e = run(est, s);
  const Message *rs = find(*e, Parallelism::zero, Op::reducescatter);
  const Message *ar = find(*e, Parallelism::zero, Op::allreduce);
  ASSERT_NE(rs, nullptr);
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->group.nranks, 16);        // one rank of each of the 16 shard groups
  EXPECT_DOUBLE_EQ(ar->count, rs->count); // per block and micro-batch, as the reduce-scatter
  EXPECT_NEAR(ar->bytes, rs->bytes / 8, 1.0); // the block's gradient shard
  // the backward (full recompute of 80 blocks) hides the AllReduces but the last unit's, as
  // much as the system lets overlapped collectives hide (communication.overlap_efficiency)
  Strategy serial = s;
  serial.overlap_dp = false;
  const double dp_hidden = e->time_s.overlap - run(est, serial)->time_s.overlap;
  const double ov = est.system().overlap_efficiency;
  EXPECT_GT(dp_hidden, ov * (ar->total_s() + rs->total_s()) * (1 - 2.0 / 80));
  // ZeRO-1 with replicas: one AllReduce per gradient bucket, hidden in the last backward
  s.zero = 1, s.tp = 8, s.dp = 16, s.sp = true, s.recompute = Recompute::none;
  const auto z1 = run(est, s);
  const Message *ar1 = find(*z1, Parallelism::zero, Op::allreduce);
  ASSERT_NE(ar1, nullptr);
  EXPECT_EQ(ar1->group.nranks, 2);
  EXPECT_NEAR(ar1->bytes, s.bucket_bytes / 8, 1.0);
  EXPECT_GT(z1->time_s.overlap, 0);
}

// Megatron's --overlap-param-gather hides the distributed optimizer's all-gather behind the next
// forward: the published Megatron-Core 32B run's case.
TEST(Parallelism, OverlapParamGatherHidesTheAllGather) {
  const Estimator est = make("gpt-13b");
  Strategy s;
  s.tp = 8, s.dp = 48, s.sp = true, s.zero = 1, s.fp32_grads = true, s.overlap_tp = true;
  s.global_batch = 192;
  const auto plain = run(est, s);
  s.overlap_param_gather = true;
  const auto hidden = run(est, s);
  EXPECT_GT(hidden->time_s.overlap, plain->time_s.overlap);
  EXPECT_LT(hidden->time_s.iteration, plain->time_s.iteration);
  EXPECT_DOUBLE_EQ(hidden->time_s.communication, plain->time_s.communication);
}

TEST(Parallelism, Fp8GemmsAndMemory) {
  const auto [bf16, fp8] = llama70b_bf16_fp8();
  Strategy s;
  s.tp = 8, s.pp = 4, s.dp = 2, s.sp = true, s.zero = 1, s.global_batch = 64;
  const auto a = run(bf16, s), b = run(fp8, s);
  // GEMMs at the FP8 peak (1979 vs 989 TFLOP/s, same table): about half the time
  EXPECT_LT(b->terms[0].seconds, 0.6 * a->terms[0].seconds);
  EXPECT_GT(b->terms[0].seconds, 0.4 * a->terms[0].seconds);
  EXPECT_NE(std::string(b->terms[0].priced_by).find("fp8"), std::string::npos);
  // attention and the logits stay in 16-bit
  EXPECT_DOUBLE_EQ(b->terms[1].seconds, a->terms[1].seconds);
  // FP8 weight copies and transposes: 2 bytes per local matrix parameter
  EXPECT_GT(b->memory_bytes.weights, a->memory_bytes.weights);
  EXPECT_LT(b->memory_bytes.activations, a->memory_bytes.activations);
  // no FP8 on an A100: refused naming --dtype
  const Estimator a100(fp8.model(), load_system(test_paths::system_path("dgx-a100-80gb")));
  try {
    a100.validate(s, 0);
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "--dtype");
  }
}

// FP8 delayed scaling (Transformer Engine's DelayedScaling, Megatron-Core's default --fp8-recipe):
// each model chunk's amaxes are all-reduced (MAX) over the stage's TP x DP x CP ranks when its
// forward leaves the fp8_autocast and when its backward ends, on the compute stream: 2 v blocking
// all-reduces per micro-batch on every stage, 3 fp32 amaxes per GEMM forward and 2 backward.
// Current scaling (tensorwise) reduces none; a bf16 model none.
TEST(Parallelism, Fp8DelayedScalingAllReducesTheAmaxesOfEachChunk) {
  const auto [bf16, fp8] = llama70b_bf16_fp8();
  Strategy s;
  s.tp = 4, s.pp = 4, s.interleave = 5, s.dp = 4, s.cp = 2, s.sp = true, s.zero = 1;
  s.global_batch = 64;
  const int mb = 64 / 4, v = 5, blocks = 80 / (4 * v), n_lin = fp8.ops().n_linear;
  auto amax_messages = [](const Estimate &e, double &seconds) {
    int n = 0;
    seconds = 0;
    for (int i = 0; i < e.n_messages; ++i)
      if (std::strstr(e.messages[i].what, "amax")) {
        ++n;
        seconds += e.messages[i].count * e.messages[i].time_us * 1e-6;
      }
    return n;
  };
  s.fp8_recipe = Fp8Recipe::delayed;
  const auto d = run(fp8, s);
  double t_delayed = 0;
  ASSERT_EQ(amax_messages(*d, t_delayed), 2);
  int seen = 0;
  for (int i = 0; i < d->n_messages; ++i) {
    const Message &msg = d->messages[i];
    if (!std::strstr(msg.what, "amax"))
      continue;
    ++seen;
    EXPECT_EQ(msg.op, Op::allreduce);
    EXPECT_EQ(msg.group.nranks, s.tp * s.cp * s.dp); // the stage's ranks
    EXPECT_EQ(msg.group.nnodes, 4);
    EXPECT_DOUBLE_EQ(msg.count, double(mb) * v); // one per chunk and micro-batch
    const bool forward = std::strstr(msg.what, "forward") != nullptr;
    EXPECT_DOUBLE_EQ(msg.bytes, 4.0 * (forward ? 3 : 2) * n_lin * blocks);
  }
  EXPECT_EQ(seen, 2);
  s.fp8_recipe = Fp8Recipe::tensorwise;
  const auto c = run(fp8, s);
  double t_none = 0;
  EXPECT_EQ(amax_messages(*c, t_none), 0);
  // not hidden: communication and the DP-group share grow by exactly the amax all-reduces
  EXPECT_GT(t_delayed, 0);
  EXPECT_NEAR(d->time_s.communication - c->time_s.communication, t_delayed, 1e-12);
  EXPECT_NEAR(d->comm_dp_s - c->comm_dp_s, t_delayed, 1e-12);
  EXPECT_DOUBLE_EQ(d->time_s.overlap, c->time_s.overlap);
  EXPECT_GT(d->time_s.iteration, c->time_s.iteration);
  s.fp8_recipe = Fp8Recipe::delayed;
  double t_bf16 = 0;
  EXPECT_EQ(amax_messages(*run(bf16, s), t_bf16), 0);
  EXPECT_EQ(parse_fp8_recipe("tensorwise"), Fp8Recipe::tensorwise);
  EXPECT_FALSE(parse_fp8_recipe("FP8-CS")); // the published-runs reader maps Megatron-Bridge's
}

TEST(Parallelism, FusedCrossEntropyKeepsNoFp32Logits) {
  const Estimator est = make("llama3-8b");
  Strategy s;
  s.dp = 8, s.global_batch = 64;
  const auto plain = run(est, s);
  s.fused_ce = true;
  const auto fused = run(est, s);
  const double logits = 8192.0 * 128256; // b s V (128256 is a multiple of 128)
  EXPECT_NEAR(plain->memory_bytes.activations - fused->memory_bytes.activations, 4 * logits,
              1e-6 * logits);
  EXPECT_LT(fused->terms[4].seconds, plain->terms[4].seconds);
}

// Megatron-Core's precision-aware optimizer (optimizer_config.py, Transformer Engine's FusedAdam):
// of Adam's 12 B per parameter the fp32 master weights shrink to their 2-byte remainder where TE
// owns them (a bf16 model), and the moments to 2 + 2 B with --exp-avg(-sq)-dtype bf16; under FP8
// current scaling Megatron-Core keeps the fp32 master (4 B) and only the moments shrink.
TEST(Parallelism, PrecisionAwareOptimizerShrinksAdamState) {
  const Estimator est = make("llama3-8b");
  Strategy s;
  s.dp = 8, s.zero = 1, s.global_batch = 64;
  const double adam12 = run(est, s)->memory_bytes.optimizer;
  s.precision_aware_optimizer = true;
  EXPECT_NEAR(run(est, s)->memory_bytes.optimizer, adam12 * 10 / 12, 1e-9 * adam12);
  s.bf16_moments = true;
  const auto pa = run(est, s);
  EXPECT_NEAR(pa->memory_bytes.optimizer, adam12 * 6 / 12, 1e-9 * adam12);
  // the optimizer step streams less state, both ways
  Strategy plain = s;
  plain.precision_aware_optimizer = plain.bf16_moments = false;
  EXPECT_LT(pa->time_s.compute, run(est, plain)->time_s.compute);

  ModelConfig m8 = est.model();
  m8.fp8 = true;
  const Estimator fp8(m8, est.system());
  s.fp8_recipe = Fp8Recipe::tensorwise;
  EXPECT_NEAR(run(fp8, s)->memory_bytes.optimizer, adam12 * 8 / 12, 1e-9 * adam12);

  // Megatron's distributed optimizer only: refused without ZeRO or under PyTorch, naming the flag
  s.zero = 0;
  test_checks::expect_refused(est, s, Reject::zero, "--bf16-moments");
  s.zero = 1, s.framework = Framework::pytorch, s.bf16_moments = false;
  test_checks::expect_refused(est, s, Reject::zero, "--precision-aware-optimizer");
}

// Issue 14's bug: with --framework pytorch, --zero was ignored in memory (GPT-13B on 64 GPUs
// with ZeRO-3 came out at 191 GiB). FSDP full shard keeps 16 B / 64 per parameter sharded plus
// the bf16 blocks in flight and the root unit.
TEST(Parallelism, PytorchFsdpMemoryIsSharded) {
  const Estimator est = make("gpt-13b");
  Strategy s;
  s.dp = 64, s.zero = 3, s.framework = Framework::pytorch, s.global_batch = 64;
  const auto fsdp = run(est, s);
  s.zero = 0;
  const auto ddp = run(est, s);
  const double psi = parameter_count(est.model());
  const double states =
      fsdp->memory_bytes.weights + fsdp->memory_bytes.gradients + fsdp->memory_bytes.optimizer;
  EXPECT_GT(states, 16 * psi / 64);
  EXPECT_LT(states, 16 * psi / 64 + 8 * psi / 40 * 2); // + a few blocks of bf16 params/grads
  EXPECT_TRUE(fsdp->fits_memory);
  EXPECT_FALSE(ddp->fits_memory); // 16 B x 12.9B parameters unsharded
  EXPECT_GT(ddp->memory_bytes.total, 10 * fsdp->memory_bytes.total / 2);
}

// A measured FP8 GEMM fit (`scalefit fit` of `scalefit-bench kernels -d fp8` records) prices the
// FP8 model's GEMMs and says so; the bf16 model keeps its own pricing.
TEST(Parallelism, Fp8GemmFitPricesFp8Gemms) {
  ModelConfig m = load_model(test_paths::model_path("llama3-8b"));
  m.fp8 = true;
  Estimator est(m, load_system(test_paths::system_path("dgx-h100")));
  Strategy s;
  s.dp = 8, s.global_batch = 64;
  const auto spec = run(est, s);
  fitting::ComputeSection c;
  fitting::ComputeFit f;
  f.kind = fitting::KernelKind::gemm;
  f.dtype = "fp8";
  f.sms = 132;
  f.tflops = 1000; // a slower FP8 rate than the spec table's 0.8 x 1979 x sustained
  c.fits.push_back(f);
  est.use_compute(c);
  const auto fit = run(est, s);
  EXPECT_STREQ(fit->terms[0].priced_by, "fit:gemm:fp8");
  EXPECT_GT(fit->terms[0].seconds, spec->terms[0].seconds);
  EXPECT_DOUBLE_EQ(fit->terms[1].seconds, spec->terms[1].seconds); // attention stays bf16
}

// Mixture of experts (issue 16's first part): parameters total and active, expert parallelism's
// all-to-all, expert states sharded over EP and reduced over the expert-data-parallel ranks.
TEST(Parallelism, MixtureOfExpertsParametersAndExpertParallelism) {
  const ModelConfig mix = load_model(test_paths::model_path("mixtral-8x7b"));
  EXPECT_DOUBLE_EQ(parameter_count(mix), 46702792704.0); // HF safetensors total
  EXPECT_NEAR(active_parameter_count(mix), 12.9e9, 0.05e9); // "12.9B active"
  const ModelConfig qwen = load_model(test_paths::model_path("qwen3-30b-a3b"));
  EXPECT_NEAR(active_parameter_count(qwen), 3.3e9, 0.06e9); // "3.3B activated" (rounded)
  const Estimator est(mix, load_system(test_paths::system_path("dgx-h100")));
  Strategy s;
  s.tp = 1, s.dp = 8, s.zero = 1, s.global_batch = 64;
  const auto no_ep = run(est, s);
  s.ep = 8;
  const auto ep8 = run(est, s);
  const Message *a2a = find(*ep8, Parallelism::ep, Op::alltoall);
  ASSERT_NE(a2a, nullptr);
  EXPECT_DOUBLE_EQ(a2a->bytes, 2 * 4096.0 * 4096 * 2); // k T h bf16
  EXPECT_DOUBLE_EQ(a2a->count, ep8->micro_batches * 32.0 * 4); // dispatch+combine, fwd+bwd
  EXPECT_EQ(find(*no_ep, Parallelism::ep, Op::alltoall), nullptr);
  // experts sharded over 8 EP ranks: an eighth of their weights and gradients per GPU; their
  // Adam state was already sharded 8 ways by ZeRO-1 over DP and is now unsharded over the
  // expert-data-parallel group of 8 / 8 = 1 rank: the same bytes
  EXPECT_LT(ep8->memory_bytes.weights, 0.2 * no_ep->memory_bytes.weights);
  EXPECT_NEAR(ep8->memory_bytes.optimizer, no_ep->memory_bytes.optimizer,
              0.01 * no_ep->memory_bytes.optimizer);
  EXPECT_GT(ep8->comm_ep_s, 0);
  s.ep = 3; // 8 experts
  EXPECT_EQ(est.check(s, 0), Reject::experts);
  const Estimator dense = make("llama3-8b");
  s.ep = 2;
  EXPECT_EQ(dense.check(s, 0), Reject::experts);
}

TEST(Parallelism, SearchEnumeratesExpertParallelism) {
  const Estimator est = make("mixtral-8x7b");
  SearchSpace space;
  space.gpus = 16;
  space.global_batch = 64;
  space.micro_batches = {1};
  space.max_interleave = 1;
  space.max_cp = 1;
  const SearchResult r = search(est, space, 50);
  ASSERT_FALSE(r.top.empty());
  bool seen = false;
  for (const Ranked &x : r.top)
    seen |= x.strategy.ep > 1;
  EXPECT_TRUE(seen); // experts sharded: the layouts that fit in 80 GB use EP
  space.max_ep = 1;
  EXPECT_LT(search(est, space, 50).enumerated, r.enumerated);
}

// Megatron-Core's activation CPU offloading (--cpu-offloading-num-layers N, Transformer Engine's
// cpu_offload): N blocks' activations leave the GPU but for the one in transit, and each costs a
// copy each way over the host link, hidden behind the neighbouring block's pass up to its length.
TEST(Parallelism, CpuOffloadingMovesActivationsOverTheHostLink) {
  ModelConfig m = load_model(test_paths::model_path("llama3-70b"));
  m.fp8 = true;
  const SystemConfig gb200 = load_system(test_paths::system_path("gb200-nvl72"));
  const SystemConfig h100 = load_system(test_paths::system_path("dgx-h100"));
  ASSERT_GT(gb200.host.bandwidth_gbps, 3 * h100.host.bandwidth_gbps); // C2C vs PCIe
  Strategy s;
  s.dp = 64, s.zero = 3, s.micro_batch = 2, s.global_batch = 256, s.fused_ce = true;
  s.overlap_param_gather = true, s.fp8_param_gather = true;
  for (const SystemConfig *sys : {&gb200, &h100}) {
    const Estimator est(m, *sys);
    const auto plain = run(est, s);
    Strategy o = s;
    o.offload_layers = 40;
    const auto off = run(est, o);
    // 39 of 80 blocks' activations leave (one stays in transit)
    const double per_block = activation_bytes_per_layer(m, 2, 1, false, Recompute::none, 1);
    EXPECT_NEAR(plain->memory_bytes.activations - off->memory_bytes.activations, 39 * per_block,
                1e-6 * per_block)
        << sys->name;
    // copies: 2 x 40 x micro-batches x (bytes / host bandwidth), part of the communication
    const double copy = per_block / (sys->host.bandwidth_gbps * 1e9 * sys->host.efficiency) +
                        sys->host.latency_us * 1e-6;
    EXPECT_NEAR(off->comm_offload_s, 2 * 40 * 2 * copy, 1e-9) << sys->name;
    EXPECT_NEAR(off->time_s.communication - plain->time_s.communication, off->comm_offload_s, 1e-9)
        << sys->name;
    EXPECT_GE(off->time_s.iteration, plain->time_s.iteration) << sys->name;
    EXPECT_DOUBLE_EQ(off->time_s.compute, plain->time_s.compute) << sys->name;
  }
  // Over NVLink-C2C most of the copies hide; over PCIe (under a third of the rate) far more stick
  // out.
  const Estimator on_gb(m, gb200), on_h(m, h100);
  Strategy o = s;
  o.offload_layers = 40;
  const auto gb = run(on_gb, o), h = run(on_h, o), gb0 = run(on_gb, s), h0 = run(on_h, s);
  const double gb_exposed = (gb->time_s.iteration - gb0->time_s.iteration) / gb->comm_offload_s;
  const double h_exposed = (h->time_s.iteration - h0->time_s.iteration) / h->comm_offload_s;
  EXPECT_LT(gb_exposed, 0.25); // the forward copies stick out a little; backward ones hide
  EXPECT_GT(h_exposed, 2 * gb_exposed);
  // Megatron-Core's checks: N < layers, pp 1, no recompute; a system without a host link
  for (auto change :
       {+[](Strategy &x) { x.offload_layers = 80; }, +[](Strategy &x) { x.pp = 2, x.dp = 32; },
        +[](Strategy &x) { x.recompute = Recompute::selective; }}) {
    Strategy bad = o;
    change(bad);
    test_checks::expect_refused(on_gb, bad, Reject::offload, "--cpu-offloading-num-layers");
  }
  SystemConfig no_host = gb200;
  no_host.host = CommTier{};
  const Estimator bare(m, no_host);
  try {
    bare.validate(o, 0);
    ADD_FAILURE();
  } catch (const InputError &e) {
    EXPECT_NE(std::string(e.what()).find("communication.host"), std::string::npos) << e.what();
  }
}

// Megatron-Core's --fp8-param-gather (Megatron-Bridge's FP8 recipes): the weight matrices are kept
// in FP8 with their transposes (2 B, as bf16) instead of bf16 plus FP8 copies (4 B), and the
// parameter all-gathers move them in FP8.
TEST(Parallelism, Fp8ParametersReplaceTheBf16Weights) {
  ModelConfig m = load_model(test_paths::model_path("llama3-70b"));
  m.fp8 = true;
  const Estimator est(m, load_system(test_paths::system_path("dgx-h100")));
  Strategy s;
  s.tp = 8, s.pp = 4, s.dp = 2, s.sp = true, s.zero = 1, s.global_batch = 64;
  s.overlap_param_gather = true;
  const auto copies = run(est, s);
  s.fp8_param_gather = true;
  const auto params = run(est, s);
  // one stage's weight matrices on one TP rank: 2 B each less
  const double drop = copies->memory_bytes.weights - params->memory_bytes.weights;
  const double matrices_per_rank = 0.95 * parameter_count(m) / (8 * 4); // about 95%+ matrices
  EXPECT_GT(drop, 2 * 0.9 * matrices_per_rank);
  EXPECT_LT(drop, 2 * 1.1 * parameter_count(m) / (8 * 4));
  const Message *ag_c = find(*copies, Parallelism::zero, Op::allgather);
  const Message *ag_p = find(*params, Parallelism::zero, Op::allgather);
  ASSERT_NE(ag_c, nullptr);
  ASSERT_NE(ag_p, nullptr);
  double bytes_c = 0, bytes_p = 0;
  for (int i = 0; i < copies->n_messages; ++i)
    if (copies->messages[i].op == Op::allgather && copies->messages[i].by == Parallelism::zero)
      bytes_c += copies->messages[i].bytes * copies->messages[i].count;
  for (int i = 0; i < params->n_messages; ++i)
    if (params->messages[i].op == Op::allgather && params->messages[i].by == Parallelism::zero)
      bytes_p += params->messages[i].bytes * params->messages[i].count;
  EXPECT_GT(bytes_p, 0.5 * bytes_c); // norms, embeddings stay bf16
  EXPECT_LT(bytes_p, 0.6 * bytes_c); // the matrices (most bytes) go in FP8
  // Megatron-FSDP (ZeRO-3): FP8 copies only for the gathered blocks, not for every weight
  Strategy f;
  f.dp = 64, f.zero = 3, f.global_batch = 128;
  const auto fsdp_copies = run(est, f);
  f.fp8_param_gather = true;
  const auto fsdp_params = run(est, f);
  // (shards 2 psi / 64 + two gathered blocks in bf16 and FP8: about 0.13 psi; FP8 copies of
  // every weight, as before, would be about 2 psi)
  const double psi = parameter_count(m);
  EXPECT_LT(fsdp_copies->memory_bytes.weights, 0.25 * psi);
  EXPECT_GT(fsdp_copies->memory_bytes.weights, 0.05 * psi);
  EXPECT_LT(fsdp_params->memory_bytes.weights, fsdp_copies->memory_bytes.weights);
  // without FP8 GEMMs there are no FP8 parameters
  ModelConfig b = m;
  b.fp8 = false;
  const Estimator bf16(b, load_system(test_paths::system_path("dgx-h100")));
  test_checks::expect_refused(bf16, s, Reject::offload, "--fp8-param-gather");
}

// FSDP's MixedPrecision(param_dtype=bf16) runs the whole model in bf16 (no autocast), so with
// full recompute each block keeps a bf16 input, as pure bf16 does; DDP's autocast keeps the fp32
// residual stream (4 B per element): the IBM fms-fsdp 70B run came out at 93 GiB on an 80 GB A100
// while the bf16 inputs were counted as fp32.
TEST(Parallelism, FsdpMixedPrecisionKeepsBf16BlockInputs) {
  const Estimator est = make("llama2-70b", "dgx-a100-80gb");
  Strategy s;
  s.dp = 128, s.zero = 3, s.framework = Framework::pytorch, s.recompute = Recompute::full;
  s.micro_batch = 2, s.global_batch = 256;
  const auto mixed = run(est, s);
  s.pure_bf16 = true;
  const auto pure = run(est, s);
  EXPECT_DOUBLE_EQ(mixed->memory_bytes.activations, pure->memory_bytes.activations);
  EXPECT_GT(mixed->memory_bytes.optimizer, pure->memory_bytes.optimizer); // fp32 vs bf16 moments
  // 80 block inputs of b s h = 2 x 4096 x 8192 in bf16 (5.4 GB) are most of it; in fp32 the
  // run would not fit
  const double inputs = 2.0 * 2 * 4096 * 8192 * 80;
  EXPECT_GT(mixed->memory_bytes.activations, inputs);
  EXPECT_LT(mixed->memory_bytes.activations, 2 * inputs);
  EXPECT_TRUE(mixed->fits_memory);
}

// --attention-backend flash (FlashAttention-2 under Transformer Engine): only the attention term
// changes, by the flash / fused table ratio on dgx-h100 at 8k (one forward, 2.5 backward: cuDNN
// 9.19 1.76x faster than FlashAttention-2), and the label says so; and the layer-cost cache keeps
// the two backends apart.
TEST(Parallelism, FlashAttentionBackendPricesOnlyTheAttentionCore) {
  const Estimator est = make("llama3-8b");
  Strategy fused = llama8b(8, 1);
  Strategy flash = fused;
  flash.attention_backend = AttentionBackend::flash;
  const auto a = run(est, fused), b = run(est, flash);
  EXPECT_STREQ(a->terms[1].what, "attention (fused)");
  EXPECT_STREQ(b->terms[1].what, "attention (flash)");
  EXPECT_STREQ(b->terms[1].priced_by, "spec:flash_attention_table");
  const DeviceConfig &d = est.system().device;
  const double s8 = 8192,
               ratio = (1 / d.flash_fwd_efficiency.at(s8) + 2.5 / d.flash_bwd_efficiency.at(s8)) /
                       (1 / d.attention_fwd_efficiency.at(s8) +
                        2.5 / d.attention_bwd_efficiency.at(s8));
  EXPECT_GT(ratio, 1.5);
  EXPECT_NEAR(b->terms[1].seconds / a->terms[1].seconds, ratio, 0.02 * ratio);
  EXPECT_DOUBLE_EQ(b->terms[0].seconds, a->terms[0].seconds);
  // the step is longer by at most the attention difference (more compute may hide more DP traffic)
  EXPECT_GT(b->time_s.iteration, a->time_s.iteration);
  EXPECT_LE(b->time_s.iteration - a->time_s.iteration,
            b->terms[1].seconds - a->terms[1].seconds + 1e-9);
  // the same layout again, fused: not served the flash block from the cache
  EXPECT_DOUBLE_EQ(run(est, fused)->terms[1].seconds, a->terms[1].seconds);
}

// Pipeline stage boundaries: while the pp stages fit in one node together (pp x tp cp dp <= GPUs
// per node) every boundary is NVLink; once they do not, some boundary crosses nodes, and the
// stage that sends over the NICs paces every micro-batch, so the boundary is priced inter-node
// (a GB200 NVL72 job with tp 4 cp 2 dp 2 pp 8 spans two 64-GPU domains).
TEST(Parallelism, PipelineBoundariesCrossNodesOnceTheStagesSpanThem) {
  const Estimator est = make("llama3-8b");
  Strategy one_node;
  one_node.tp = 2, one_node.pp = 4, one_node.global_batch = 64;
  Strategy two_nodes = one_node;
  two_nodes.pp = 8;
  const auto a = run(est, one_node), b = run(est, two_nodes);
  const Message *pa = find(*a, Parallelism::pp, Op::sendrecv);
  const Message *pb = find(*b, Parallelism::pp, Op::sendrecv);
  ASSERT_NE(pa, nullptr);
  ASSERT_NE(pb, nullptr);
  EXPECT_EQ(pa->group.nnodes, 1);
  EXPECT_EQ(pa->group.ranks_per_node, 2);
  EXPECT_EQ(pb->group.nnodes, 2);
  EXPECT_EQ(pb->group.ranks_per_node, 1);
  EXPECT_DOUBLE_EQ(pa->bytes, pb->bytes);
  EXPECT_GT(pb->time_us, 2 * pa->time_us); // a 50 GB/s NIC share against NVLink
}

// A rack cut into smaller NVLink domains (Slurm --segment): gpus_per_node becomes the domain, the
// per-GPU NIC share stays (inter bandwidth per domain scales with it), out-of-range is refused.
TEST(Parallelism, NvlinkDomainCutsTheRackKeepingEachGpusNicShare) {
  const SystemConfig nvl72 = load_system(test_paths::system_path("gb200-nvl72"));
  const SystemConfig seg = with_nvlink_domain(nvl72, 64);
  EXPECT_EQ(seg.gpus_per_node, 64);
  EXPECT_DOUBLE_EQ(seg.inter.bandwidth_gbps / 64, nvl72.inter.bandwidth_gbps / 72);
  EXPECT_DOUBLE_EQ(seg.intra.bandwidth_gbps, nvl72.intra.bandwidth_gbps);
  EXPECT_THROW(with_nvlink_domain(nvl72, 0), InputError);
  EXPECT_THROW(with_nvlink_domain(nvl72, 73), InputError);
  // 8 pipeline stages of 16 ranks: 128 GPUs over two 64-GPU domains, a boundary over the NICs
  ModelConfig m = load_model(test_paths::model_path("llama3-8b"));
  m.layers = 32;
  Strategy s;
  s.tp = 4, s.cp = 2, s.dp = 2, s.pp = 8, s.global_batch = 64;
  Estimate e;
  Estimator(m, seg).evaluate(s, e);
  const Message *pp = find(e, Parallelism::pp, Op::sendrecv);
  ASSERT_NE(pp, nullptr);
  EXPECT_EQ(pp->group.nnodes, 2);
}

// Megatron's overlap_p2p_comm (Strategy::overlap_p2p_comm, --overlap-p2p-comm; off by default):
// in the interleaved schedule the steady state's stage-boundary send/recv hides behind compute,
// times the system's overlap efficiency; the warmup's and the flush's transfers do not (at most
// 2 (pp - 1) + (v - 1) pp of the v m chunk passes). The traffic is the same; without
// interleaving nothing changes.
TEST(Parallelism, InterleavedPipelineHidesItsSteadyStateSendRecvWhenAsked) {
  const Estimator est = make("llama3-70b");
  const double ov = load_system(test_paths::system_path("dgx-h100")).overlap_efficiency;
  Strategy s;
  s.tp = 8, s.pp = 4, s.dp = 2, s.sp = true, s.zero = 1, s.global_batch = 64;
  s.interleave = 2;
  const auto off = run(est, s);
  s.overlap_p2p_comm = true;
  const auto on = run(est, s);
  ASSERT_GT(off->comm_pp_s, 0);
  EXPECT_DOUBLE_EQ(on->comm_pp_s, off->comm_pp_s);
  EXPECT_DOUBLE_EQ(on->time_s.communication, off->time_s.communication);
  const double hidden = on->time_s.overlap - off->time_s.overlap;
  const double v = 2, p = 4, m = off->micro_batches;
  const double warmup_max = 2 * (p - 1) + (v - 1) * p;
  EXPECT_LE(hidden, ov * off->comm_pp_s * (1 + 1e-12));
  EXPECT_GE(hidden, ov * off->comm_pp_s * (1 - warmup_max / (v * m)) * (1 - 1e-12));
  EXPECT_LT(on->time_s.iteration, off->time_s.iteration);
  // no interleaving: the plain 1F1B schedule posts its transfers in line (batch_p2p_comm)
  s.interleave = 1;
  const auto plain_on = run(est, s);
  s.overlap_p2p_comm = false;
  const auto plain_off = run(est, s);
  EXPECT_DOUBLE_EQ(plain_on->time_s.iteration, plain_off->time_s.iteration);
}

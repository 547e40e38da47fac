// Context parallelism (issue 14, Sec. 3): Megatron-Core's ring attention, its messages, the
// kernels each ring step runs, what hides its exchanges, and the search over cp.
#include "helpers.hpp"

#include "scalefit/estimator/search.hpp"

#include <gtest/gtest.h>

#include <memory>

using namespace scalefit;
using namespace scalefit::estimator;
using test_run::find;
using test_run::llama8b;
using test_run::make;
using test_run::run;

// Ring attention (Megatron-Core p2p CP): per block and micro-batch cp - 1 exchanges of the local
// K,V forward and of K,V and their gradients backward, in a ring of cp ranks stride tp.
TEST(ContextParallel, RingMessagesAndActivations) {
  const Estimator est = make("llama3-8b");
  const auto one = run(est, llama8b(8, 1));
  const auto cp2 = run(est, llama8b(4, 2));
  const auto cp4 = run(est, llama8b(2, 4));
  EXPECT_EQ(find(*one, Parallelism::cp, Op::sendrecv), nullptr);
  const Message *f = find(*cp4, Parallelism::cp, Op::sendrecv);
  ASSERT_NE(f, nullptr);
  const double T = 8192.0 / 4, kv = 2 * 8 * 128 * 2.0; // tokens per rank; K and V bf16 bytes
  EXPECT_DOUBLE_EQ(f->bytes, T * kv);
  EXPECT_DOUBLE_EQ(f->count, cp4->micro_batches * 32.0 * 3); // m x layers x (cp - 1)
  EXPECT_EQ(f->group.nranks, 4);
  EXPECT_GT(cp4->comm_cp_s, cp2->comm_cp_s);
  // activations per GPU divide by cp (same micro-batch), states do not
  EXPECT_NEAR(cp2->memory_bytes.activations, one->memory_bytes.activations / 2,
              0.02 * one->memory_bytes.activations);
  // gradients are reduced over dp x cp: the same 8 ranks
  const Message *rs = find(*cp2, Parallelism::zero, Op::reducescatter);
  ASSERT_NE(rs, nullptr);
  EXPECT_EQ(rs->group.nranks, 8);
  // 8192 % (2 cp) == 0 for cp 1..4096; an odd split is refused naming --cp
  Strategy bad = llama8b(1, 3);
  bad.global_batch = 8;
  test_checks::expect_refused(est, bad, Reject::context, "--cp");
}

TEST(ContextParallel, SearchEnumeratesCp) {
  const Estimator est = make("llama3-8b");
  SearchSpace space;
  space.gpus = 16;
  space.global_batch = 64;
  space.max_cp = 4;
  space.micro_batches = {1};
  space.max_interleave = 1;
  const SearchResult all = search(est, space, 200);
  space.max_cp = 1;
  const SearchResult none = search(est, space, 200);
  EXPECT_GT(all.enumerated, none.enumerated);
  bool seen = false;
  for (const Ranked &r : all.top)
    seen |= r.strategy.cp > 1;
  EXPECT_TRUE(seen);
}

// Ring attention's forward: the step on the rank's own K,V runs the causal kernel over 1/cp of
// the rank's work, the cp - 1 others unmasked kernels (the forward_noncausal row); without that
// row every step is priced as causal. The backward row is the same either way.
TEST(ContextParallel, RingStepsOnOtherRanksKeysRunUnmaskedKernels) {
  const SystemConfig h100 = load_system(test_paths::system_path("dgx-h100"));
  SystemConfig causal_only = h100;
  causal_only.device.attention_fwd_noncausal_efficiency = {};
  const Estimator est(load_model(test_paths::model_path("llama3-8b")), h100);
  const Estimator ref(load_model(test_paths::model_path("llama3-8b")), causal_only);
  for (int cp : {1, 2, 4}) {
    const auto a = run(est, llama8b(8 / cp, cp)), b = run(ref, llama8b(8 / cp, cp));
    ASSERT_STREQ(a->terms[1].what, "attention (fused)");
    if (cp == 1) {
      EXPECT_DOUBLE_EQ(a->terms[1].seconds, b->terms[1].seconds);
      continue;
    }
    // the forward's share of the attention time (backward 2.5x the FLOPs, at its own rate);
    // cp - 1 of cp of it runs at the unmasked rate instead of the causal one, at s / cp
    EXPECT_LT(a->terms[1].seconds, b->terms[1].seconds);
    const DeviceConfig &d = h100.device;
    const double sc = 8192.0 / cp, f = d.attention_fwd_efficiency.at(sc);
    const double gain = 1 - f / d.attention_fwd_noncausal_efficiency.at(sc);
    EXPECT_GT(gain, 0.1);
    // (to 10%: each of the cp calls per pass also pays the kernel launch, the same in both)
    const double fwd_share = (1 / f) / (1 / f + 2.5 / d.attention_bwd_efficiency.at(sc));
    const double unmasked = (cp - 1.0) / cp;
    const double expected = fwd_share * unmasked * gain;
    EXPECT_NEAR(1 - a->terms[1].seconds / b->terms[1].seconds, expected, 0.1 * expected)
        << "cp " << cp;
  }
}

// Ring attention's send/recv moves one peer's K,V chunk on a channel or two, not the many SMs
// and the HBM traffic of a collective: it hides whole up to the attention step beside it,
// whatever fraction the system lets collectives hide (communication.overlap_efficiency).
TEST(ContextParallel, RingExchangesHideWholeBehindTheirAttentionStep) {
  const SystemConfig h100 = load_system(test_paths::system_path("dgx-h100"));
  SystemConfig low = h100, high = h100;
  low.overlap_efficiency = 0.2, high.overlap_efficiency = 1.0;
  const ModelConfig md = load_model(test_paths::model_path("llama3-8b"));
  Strategy s = llama8b(2, 4);
  s.overlap_dp = false; // no TP, no PP, DP not overlapped: the ring is all that hides
  const auto a = run(Estimator(md, low), s), b = run(Estimator(md, high), s);
  ASSERT_GT(a->comm_cp_s, 0);
  EXPECT_GT(a->time_s.overlap, 0);
  EXPECT_LE(a->time_s.overlap, a->comm_cp_s * (1 + 1e-12));
  EXPECT_DOUBLE_EQ(a->time_s.overlap, b->time_s.overlap);
  // while a DP-overlapped layout's hidden part does follow the efficiency
  s.overlap_dp = true;
  EXPECT_LT(run(Estimator(md, low), s)->time_s.overlap,
            run(Estimator(md, high), s)->time_s.overlap);
}

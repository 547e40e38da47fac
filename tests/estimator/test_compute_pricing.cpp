// The estimator priced by compute fits (H100 kernels): what prices each term, fused vs unfused
// attention in memory and time.
#include "helpers.hpp"

#include "scalefit/core/units.hpp"
#include "scalefit/estimator/constants.hpp"
#include "scalefit/fitting/fit_file.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace scalefit;
using namespace scalefit::estimator;

namespace {
ModelConfig gpt125m(Attention att) {
  ModelConfig m;
  m.name = "gpt-125m";
  m.layers = 12;
  m.hidden = 768;
  m.heads = 12;
  m.sequence = 1024;
  m.vocabulary = 50257;
  m.dtype = DType::bfloat16;
  m.attention = att;
  return m;
}
Strategy single(int b) {
  Strategy s;
  s.micro_batch = b;
  return s;
}
const fitting::ComputeSection &h100() {
  static const fitting::FitFilePtr f =
      fitting::load_fit_file(test_paths::data_path("fit_h100_kernels.yaml"));
  return f->compute;
}
} // namespace

TEST(ComputePricing, EveryTermSaysWhatPricedIt) {
  Estimator spec(gpt125m(Attention::unfused), load_system(test_paths::system_path("dgx-h100")));
  Estimator fit = spec;
  fit.use_compute(h100());
  Estimate a, b;
  spec.evaluate(single(8), a);
  fit.evaluate(single(8), b);
  double sum = 0;
  for (const ComputeTerm &t : b.terms) {
    EXPECT_EQ(std::string(t.priced_by).rfind("fit:", 0), 0u) << t.what << " " << t.priced_by;
    EXPECT_GT(t.seconds, 0) << t.what;
    sum += t.seconds;
  }
  EXPECT_NEAR(sum, b.time_s.compute, 1e-12);
  for (const ComputeTerm &t : a.terms)
    EXPECT_EQ(std::string(t.priced_by).rfind("spec:", 0), 0u) << t.what;
  // Megatron pads V = 50257 to 50304 (a multiple of 128 t): aligned logits GEMMs. PyTorch runs
  // the odd V, at about a fifth of the aligned rate in the fit; the spec table cannot know it:
  // the fit prices them several times higher.
  EXPECT_DOUBLE_EQ(b.vocab_padded, 50304);
  Strategy eager = single(8);
  eager.framework = Framework::pytorch;
  spec.evaluate(eager, a);
  fit.evaluate(eager, b);
  EXPECT_DOUBLE_EQ(b.vocab_padded, 50257);
  EXPECT_GT(b.terms[3].seconds, 2.5 * a.terms[3].seconds);
}

TEST(ComputePricing, FusedAttentionStoresNoScores) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-h100"));
  const ModelConfig fm = gpt125m(Attention::fused), um = gpt125m(Attention::unfused);
  const double s = 1024, b = 8, h = 768, a = 12;
  // Korthikanti et al. Table 2 (t = 1): s b h (34 + 5 a s / h) unfused; fused drops 5as/h and
  // keeps one fp32 log-sum-exp per row and head, 4 a s b bytes.
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(um, 8, 1, false, Recompute::none),
                   s * b * h * (34 + 5 * a * s / h));
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(fm, 8, 1, false, Recompute::none),
                   s * b * h * 34 + 4 * a * s * b);
  Estimator f(fm, sys), u(um, sys);
  f.use_compute(h100());
  u.use_compute(h100());
  Estimate ef, eu;
  f.evaluate(single(8), ef);
  u.evaluate(single(8), eu);
  EXPECT_LT(ef.memory_bytes.activations, 0.5 * eu.memory_bytes.activations);
  EXPECT_STREQ(ef.terms[1].what, "attention (fused)");
  EXPECT_STREQ(ef.terms[1].priced_by, "spec:fused_attention_table"); // dgx-h100 has a table
  EXPECT_STREQ(eu.terms[1].priced_by, "fit:batched_gemm:bf16");
}

TEST(ComputePricing, Fp16BorrowsTheBf16Fit) {
  ModelConfig m = gpt125m(Attention::fused);
  m.dtype = DType::half;
  Estimator e(m, load_system(test_paths::system_path("dgx-h100")));
  e.use_compute(h100());
  EXPECT_EQ(e.gemm_source(), "fit:gemm:bf16 for fp16");
}

// The roofline's memory ceiling (Williams et al. 2009): a spec-priced GEMM takes at least the HBM
// time of its operands. It binds for an FP8 expert GEMM with a few hundred columns (Qwen3-30B-A3B's
// experts: f_e 768) and not for a large square one.
TEST(ComputePricing, SpecGemmsAreBoundedByTheirOperandsHbmTime) {
  const SystemConfig gb200 = load_system(test_paths::system_path("gb200-nvl72"));
  const ComputePricer P(gb200, DType::bfloat16);
  const double thin = P.gemm_s(16384, 2048, 768, 16, true);
  const double thin_hbm = P.gemm_roofline_s(16384, 2048, 768, 16, 1.0);
  EXPECT_GE(thin, thin_hbm);
  EXPECT_NEAR(thin, thin_hbm + gb200.device.kernel_launch_us * 1e-6, 1e-9); // memory-bound
  const double square = P.gemm_s(8192, 8192, 8192, 1, true);
  EXPECT_GT(square, 2 * P.gemm_roofline_s(8192, 8192, 8192, 1, 1.0)); // compute-bound
  // bf16 operands move twice the bytes of FP8 ones (the 16-bit output is the same)
  EXPECT_GT(P.gemm_roofline_s(16384, 2048, 768, 16, 2.0), thin_hbm);
}

// Which kernels price fused attention: Transformer Engine's (fused_attention_efficiency) under
// Megatron-Core, PyTorch SDPA's flash backend (sdpa_attention_efficiency) under PyTorch; without a
// table, the PyTorch step constant. The A100 files carry FlashAttention-2's published rates
// (Dao 2023, Fig. 4(d)) for both; dgx-h100 has cuDNN's for Transformer Engine only.
TEST(ComputePricing, PyTorchAttentionIsPricedBySdpasTable) {
  const SystemConfig a100 = load_system(test_paths::system_path("dgx-a100-80gb"));
  ASSERT_FALSE(a100.device.sdpa_fwd_efficiency.steps.empty());
  const ComputePricer P(a100, DType::bfloat16);
  const double flops = 1e12, peak = 312e12;
  const double launch = a100.device.kernel_launch_us * 1e-6;
  // s = 4096: 173 TFLOP/s forward + backward x k = 0.7761 -> 0.43 of the peak
  EXPECT_NEAR(P.attention_s(flops, 4096, false, AttentionKernel::sdpa),
              flops / (peak * 0.43) + launch, 1e-12);
  EXPECT_NEAR(P.attention_s(flops, 4096, true, AttentionKernel::fused),
              flops / (peak * 0.43) + launch, 1e-12);
  EXPECT_EQ(P.fused_source(AttentionKernel::sdpa), "spec:sdpa_attention_table");
  // a longer sequence runs nearer the peak
  EXPECT_LT(P.attention_s(flops, 16384, false, AttentionKernel::sdpa),
            P.attention_s(flops, 1024, false, AttentionKernel::sdpa));
  // dgx-h100: no SDPA table, so PyTorch keeps the measured constant and TE the cuDNN table
  const SystemConfig h100s = load_system(test_paths::system_path("dgx-h100"));
  const ComputePricer H(h100s, DType::bfloat16);
  EXPECT_NEAR(H.attention_s(flops, 4096, false, AttentionKernel::sdpa),
              flops / (989e12 * scalefit::estimator::constants::kFusedAttentionEfficiency) +
                  h100s.device.kernel_launch_us * 1e-6,
              1e-12);
  EXPECT_LT(H.attention_s(flops, 4096, false, AttentionKernel::fused),
            0.5 * H.attention_s(flops, 4096, false, AttentionKernel::sdpa));
  EXPECT_EQ(H.fused_source(AttentionKernel::fused), "spec:fused_attention_table");
}

// Megatron-Core's --attention-backend flash (Transformer Engine with NVTE_FUSED_ATTN=0): the
// flash-attn package's FlashAttention-2 kernels, priced by flash_attention_efficiency (dgx-h100:
// FlashAttention-3 paper Fig. 5(d), FA2 forward 319 TFLOP/s at 4k) at the table's isolated rate
// (the sustained efficiency derates GEMMs and memory-bound kernels, not attention); a system
// without that table prices it as fused, a fit of measured (cuDNN) attention does not price it.
TEST(ComputePricing, FlashBackendIsPricedByTheFlashAttentionTable) {
  const SystemConfig h100 = load_system(test_paths::system_path("dgx-h100"));
  ASSERT_FALSE(h100.device.flash_fwd_efficiency.steps.empty());
  const ComputePricer H(h100, DType::bfloat16);
  const double flops = 1e12, launch = h100.device.kernel_launch_us * 1e-6;
  EXPECT_NEAR(H.attention_s(flops, 4096, false, AttentionKernel::flash),
              flops / (989e12 * 0.323) + launch, 1e-12);
  EXPECT_NEAR(H.attention_s(flops, 4096, true, AttentionKernel::flash),
              flops / (989e12 * 0.313) + launch, 1e-12);
  // cuDNN's fused attention runs at its own table's rate (cuDNN 9.19: 0.598 at 4k, 1.85x FA2's)
  const double fused4k = h100.device.attention_fwd_efficiency.at(4096);
  EXPECT_GT(fused4k, 1.5 * 0.323);
  EXPECT_NEAR(H.attention_s(flops, 4096, false, AttentionKernel::flash) - launch,
              (fused4k / 0.323) *
                  (H.attention_s(flops, 4096, false, AttentionKernel::fused) - launch),
              1e-12);
  EXPECT_EQ(H.fused_source(AttentionKernel::flash), "spec:flash_attention_table");
  // B200 has no FlashAttention-2 table: flash is priced (and labelled) as fused
  const SystemConfig b200 = load_system(test_paths::system_path("dgx-b200"));
  ASSERT_TRUE(b200.device.flash_fwd_efficiency.steps.empty());
  const ComputePricer B(b200, DType::bfloat16);
  EXPECT_EQ(B.attention_s(flops, 4096, false, AttentionKernel::flash),
            B.attention_s(flops, 4096, false, AttentionKernel::fused));
  EXPECT_EQ(B.fused_source(AttentionKernel::flash), B.fused_source(AttentionKernel::fused));
}

// The unmasked forward (ring attention's steps on other ranks' K,V) is priced by the table's
// forward_noncausal row (FA2: FlashAttention-3 paper Fig. 5, non-causal head dim 128, 368
// TFLOP/s at 4k; cuDNN: NVIDIA's cuDNN 9.19 measurement, 671 TFLOP/s at 4k); backward and a
// system without the row keep the causal pricing.
TEST(ComputePricing, UnmaskedForwardIsPricedByTheNoncausalRow) {
  const SystemConfig h100 = load_system(test_paths::system_path("dgx-h100"));
  ASSERT_FALSE(h100.device.flash_fwd_noncausal_efficiency.steps.empty());
  ASSERT_FALSE(h100.device.attention_fwd_noncausal_efficiency.steps.empty());
  const ComputePricer H(h100, DType::bfloat16);
  const double flops = 1e12, launch = h100.device.kernel_launch_us * 1e-6;
  EXPECT_NEAR(H.attention_s(flops, 4096, false, AttentionKernel::flash, true),
              flops / (989e12 * 0.372) + launch, 1e-12);
  EXPECT_NEAR(H.attention_s(flops, 4096, false, AttentionKernel::fused, true),
              flops / (989e12 * 0.678) + launch, 1e-12);
  EXPECT_LT(H.attention_s(flops, 16384, false, AttentionKernel::fused, true),
            H.attention_s(flops, 16384, false, AttentionKernel::fused));
  EXPECT_EQ(H.attention_s(flops, 4096, true, AttentionKernel::flash, true),
            H.attention_s(flops, 4096, true, AttentionKernel::flash));
  // B200's file has a measured unmasked row (cuDNN on GB200); a file without one: the causal
  // forward prices it
  SystemConfig b200 = load_system(test_paths::system_path("dgx-b200"));
  ASSERT_FALSE(b200.device.attention_fwd_noncausal_efficiency.steps.empty());
  EXPECT_NE(
      ComputePricer(b200, DType::bfloat16)
          .attention_s(flops, 4096, false, AttentionKernel::fused, true),
      ComputePricer(b200, DType::bfloat16).attention_s(flops, 4096, false, AttentionKernel::fused));
  b200.device.attention_fwd_noncausal_efficiency.steps.clear();
  const ComputePricer B(b200, DType::bfloat16);
  EXPECT_EQ(B.attention_s(flops, 4096, false, AttentionKernel::fused, true),
            B.attention_s(flops, 4096, false, AttentionKernel::fused));
}

// The sustained efficiency (one published step's derate of the isolated-kernel tables) scales the
// GEMMs and the memory-bound kernels, not attention: a flash or cuDNN attention kernel runs its
// tensor cores at 30-60% of peak, below the power at which a GEMM-bound step clocks down
// (DeviceConfig::sustained_efficiency).
TEST(ComputePricing, SustainedEfficiencyDeratesGemmsAndMemoryNotAttention) {
  SystemConfig h100 = load_system(test_paths::system_path("dgx-h100"));
  h100.device.sustained_efficiency = 1.0;
  SystemConfig slow = h100;
  slow.device.sustained_efficiency = 0.5;
  const ComputePricer A(h100, DType::bfloat16), B(slow, DType::bfloat16);
  const double launch = h100.device.kernel_launch_us * 1e-6;
  EXPECT_NEAR(B.gemm_s(8192, 8192, 8192, 1) - launch, 2 * (A.gemm_s(8192, 8192, 8192, 1) - launch),
              1e-12);
  EXPECT_NEAR(B.mem_s(1e9) - launch, 2 * (A.mem_s(1e9) - launch), 1e-12);
  for (const AttentionKernel k : {AttentionKernel::fused, AttentionKernel::flash}) {
    EXPECT_EQ(B.attention_s(1e12, 8192, false, k), A.attention_s(1e12, 8192, false, k));
    EXPECT_EQ(B.attention_s(1e12, 8192, true, k), A.attention_s(1e12, 8192, true, k));
    EXPECT_EQ(B.attention_s(1e12, 8192, false, k, true), A.attention_s(1e12, 8192, false, k, true));
  }
}

// MXFP8 (--fp8-recipe mxfp8): the FP8 GEMMs of the step take 1 / device.mxfp8_relative_efficiency
// as long as under per-tensor FP8, nothing else moves; a device without the key (no MXFP8 tensor
// cores: H100) refuses the recipe, naming --fp8-recipe.
TEST(ComputePricing, Mxfp8GemmsTakeTheDevicesMxfp8Factor) {
  ModelConfig m = load_model(test_paths::model_path("llama3-8b"));
  m.fp8 = true;
  const SystemConfig b200 = load_system(test_paths::system_path("dgx-b200"));
  const double f = b200.device.mxfp8_relative_efficiency;
  ASSERT_GT(f, 0.5);
  ASSERT_LT(f, 1.0);
  const Estimator est(m, b200);
  Strategy s;
  s.dp = 8, s.micro_batch = 2, s.global_batch = 128;
  s.fp8_recipe = Fp8Recipe::tensorwise;
  const auto cs = test_run::run(est, s);
  s.fp8_recipe = Fp8Recipe::mxfp8;
  const auto mx = test_run::run(est, s);
  EXPECT_STREQ(mx->terms[0].what, "layer GEMMs");
  EXPECT_NEAR(mx->terms[0].seconds, cs->terms[0].seconds / f, 1e-9 * cs->terms[0].seconds);
  EXPECT_NE(std::string(mx->terms[0].priced_by).find("x mxfp8 factor"), std::string::npos);
  EXPECT_EQ(std::string(cs->terms[0].priced_by).find("mxfp8"), std::string::npos);
  for (std::size_t i = 1; i < mx->terms.size(); ++i)
    EXPECT_DOUBLE_EQ(mx->terms[i].seconds, cs->terms[i].seconds) << mx->terms[i].what;
  EXPECT_NEAR(mx->time_s.compute - cs->time_s.compute, cs->terms[0].seconds * (1 / f - 1), 1e-9);

  const Estimator hopper(m, load_system(test_paths::system_path("dgx-h100")));
  EXPECT_EQ(load_system(test_paths::system_path("dgx-h100")).device.mxfp8_relative_efficiency, 0);
  try {
    hopper.validate(s, 0);
    ADD_FAILURE() << "MXFP8 on H100 accepted";
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "--fp8-recipe");
    EXPECT_NE(std::string(e.what()).find("H100"), std::string::npos) << e.what();
  }
  s.fp8_recipe = Fp8Recipe::tensorwise;
  EXPECT_NO_THROW(hopper.validate(s, 0));
}

// Megatron-Core's fp8_output_proj: under MXFP8 the LM head's logits GEMMs are priced as the
// blocks' MXFP8 GEMMs (FP8 rate, the device's MXFP8 factor); nothing else moves. Megatron-Core
// activates it with the mxfp8 recipe only: under per-tensor FP8 (and in bf16) it changes nothing.
TEST(ComputePricing, Fp8OutputProjPricesTheLogitsGemmsInMxfp8) {
  ModelConfig m = load_model(test_paths::model_path("llama3-8b"));
  m.fp8 = true;
  const SystemConfig b200 = load_system(test_paths::system_path("dgx-b200"));
  const Estimator est(m, b200);
  Strategy s;
  s.dp = 8, s.micro_batch = 2, s.global_batch = 128;
  s.fp8_recipe = Fp8Recipe::mxfp8;
  const auto bf16_head = test_run::run(est, s);
  s.fp8_output_proj = true;
  const auto mx_head = test_run::run(est, s);
  EXPECT_STREQ(mx_head->terms[3].what, "logits GEMMs");
  // FP8 peak twice the bf16 one: at least 1.5x faster at these sizes, at most twice / the factor
  const double ratio = mx_head->terms[3].seconds / bf16_head->terms[3].seconds;
  EXPECT_LT(ratio, 0.67);
  EXPECT_GT(ratio, 0.5 / b200.device.mxfp8_relative_efficiency - 1e-9);
  EXPECT_NE(std::string(mx_head->terms[3].priced_by).find("mxfp8"), std::string::npos);
  EXPECT_EQ(std::string(bf16_head->terms[3].priced_by).find("mxfp8"), std::string::npos);
  for (std::size_t i = 0; i < mx_head->terms.size(); ++i)
    if (i != 3)
      EXPECT_DOUBLE_EQ(mx_head->terms[i].seconds, bf16_head->terms[i].seconds)
          << mx_head->terms[i].what;
  s.fp8_recipe = Fp8Recipe::tensorwise; // not active outside MXFP8
  const auto cs_on = test_run::run(est, s);
  s.fp8_output_proj = false;
  const auto cs_off = test_run::run(est, s);
  EXPECT_DOUBLE_EQ(cs_on->terms[3].seconds, cs_off->terms[3].seconds);
  EXPECT_DOUBLE_EQ(cs_off->terms[3].seconds, bf16_head->terms[3].seconds);
}

// FP8 attention (Megatron-Core fp8_dot_product_attention): the fused kernels at the system's FP8
// rows (GB200: NVIDIA's cuDNN 9.22 measurements, fractions of the FP8 peak), MXFP8's under the
// mxfp8 recipe, per-tensor FP8's otherwise; nothing but the attention term moves; no effect
// without FP8 GEMMs or on a system without the rows (priced at the 16-bit rows).
TEST(ComputePricing, Fp8AttentionIsPricedByTheFp8Rows) {
  const SystemConfig gb = load_system(test_paths::system_path("gb200-nvl72"));
  ASSERT_FALSE(gb.device.attention_fwd_mxfp8_efficiency.steps.empty());
  ASSERT_FALSE(gb.device.attention_bwd_fp8_efficiency.steps.empty());
  const ComputePricer P(gb, DType::bfloat16);
  const double flops = 1e12, launch = gb.device.kernel_launch_us * 1e-6;
  EXPECT_NEAR(P.attention_s(flops, 8192, false, AttentionKernel::fused, false, true, true),
              flops / (5000e12 * gb.device.attention_fwd_mxfp8_efficiency.at(8192)) + launch,
              1e-12);
  EXPECT_NEAR(P.attention_s(flops, 8192, true, AttentionKernel::fused, false, true, false),
              flops / (5000e12 * gb.device.attention_bwd_fp8_efficiency.at(8192)) + launch, 1e-12);
  ModelConfig m = load_model(test_paths::model_path("llama3-8b"));
  m.fp8 = true;
  Strategy s;
  s.dp = 8, s.micro_batch = 1, s.global_batch = 64;
  s.fp8_recipe = Fp8Recipe::mxfp8;
  const Estimator est(m, gb);
  const auto bf16_attn = test_run::run(est, s);
  s.fp8_attention = true;
  const auto mx_attn = test_run::run(est, s);
  EXPECT_NE(std::string(mx_attn->terms[1].priced_by).find("mxfp8 rows"), std::string::npos);
  EXPECT_NE(mx_attn->terms[1].seconds, bf16_attn->terms[1].seconds);
  for (std::size_t i = 0; i < mx_attn->terms.size(); ++i)
    if (i != 1)
      EXPECT_DOUBLE_EQ(mx_attn->terms[i].seconds, bf16_attn->terms[i].seconds)
          << mx_attn->terms[i].what;
  // per-tensor FP8: the fp8 rows, faster than MXFP8's at 8k (measured)
  s.fp8_recipe = Fp8Recipe::tensorwise;
  const auto cs_attn = test_run::run(est, s);
  EXPECT_NE(std::string(cs_attn->terms[1].priced_by).find("fp8/backward_fp8 rows"),
            std::string::npos);
  EXPECT_LT(cs_attn->terms[1].seconds, mx_attn->terms[1].seconds);
  // bf16 GEMMs: fp8_dot_product_attention changes nothing (Megatron-Core needs the FP8 autocast)
  ModelConfig b = m;
  b.fp8 = false;
  const Estimator bf(b, gb);
  Strategy sb = s;
  sb.fp8_recipe = Fp8Recipe::delayed;
  const auto on = test_run::run(bf, sb);
  sb.fp8_attention = false;
  EXPECT_DOUBLE_EQ(on->terms[1].seconds, test_run::run(bf, sb)->terms[1].seconds);
  // a system without FP8 rows (dgx-h100 with its rows taken off): the 16-bit rows
  SystemConfig h100 = load_system(test_paths::system_path("dgx-h100"));
  ASSERT_FALSE(h100.device.attention_fwd_fp8_efficiency.steps.empty()); // cuDNN 9.19's, H200
  h100.device.attention_fwd_fp8_efficiency.steps.clear();
  h100.device.attention_bwd_fp8_efficiency.steps.clear();
  const Estimator h(m, h100);
  Strategy sh = s;
  const auto h_on = test_run::run(h, sh);
  sh.fp8_attention = false;
  EXPECT_DOUBLE_EQ(h_on->terms[1].seconds, test_run::run(h, sh)->terms[1].seconds);
}

// PyTorch eager Llama-style blocks: RMSNorm, RoPE and a gated MLP as plain PyTorch composes them
// (constants.hpp, fms) add memory-bound work to pytorch_gpt_step.py's fused LayerNorm and GELU.
// RoPE adds exactly its ten kernels forward and ten backward over q and k of every token, in
// every block of every micro-batch; the composite RMSNorm and the gated product only add.
TEST(ComputePricing, EagerLlamaBlocksPriceTheirCompositeKernels) {
  const SystemConfig h100 = load_system(test_paths::system_path("dgx-h100"));
  ModelConfig base = gpt125m(Attention::fused);
  base.kv_heads = 4; // GQA: k is 4 of 12 heads wide
  Strategy s = single(4);
  s.framework = Framework::pytorch;
  s.global_batch = 8; // two micro-batches
  auto layers_term = [&](const ModelConfig &m) {
    Estimate e;
    Estimator(m, h100).evaluate(s, e);
    EXPECT_STREQ(e.terms[2].what, "memory-bound (layers)");
    return e.terms[2].seconds;
  };
  const double t0 = layers_term(base);
  ModelConfig rope = base;
  rope.position = Position::rope;
  const Estimator rope_est(rope, h100);
  const ComputePricer &P = rope_est.pricer();
  const double qk = 4.0 * base.sequence * base.head_dim() * (base.heads + 4);
  const double per_block =
      P.mem_n_s(constants::kEagerRopeFwdKernels, constants::kEagerRopeFwdBytes * qk) +
      P.mem_n_s(constants::kEagerRopeBwdKernels, constants::kEagerRopeBwdBytes * qk);
  EXPECT_NEAR(layers_term(rope) - t0, 2 * base.layers * per_block, 1e-9 * t0);
  ModelConfig rms = base;
  rms.norm = Norm::rmsnorm;
  EXPECT_GT(layers_term(rms), t0 + 0.1 * t0); // 2 x (36 + 76) B against 2 x (8 + 12) B per th
  ModelConfig glu = base;
  glu.mlp = Mlp::swiglu;
  glu.ffn = 2048; // the GeLU model's 4h = 3072 at 2/3, as Llama sizes it
  ModelConfig gelu2048 = base;
  gelu2048.ffn = 2048;
  EXPECT_GT(layers_term(glu), layers_term(gelu2048)); // 10 + 18 B against 4 + 6 B per element
}

// PyTorch eager under FSDP / ZeRO MixedPrecision(param_dtype=bf16) or pure bf16 runs the whole
// model in bf16 (no autocast): its block moves bf16 LayerNorms and residual adds, no casts at an
// autocast boundary and no per-forward weight casts, so its memory-bound time is smaller than
// the autocast step's by at least those weight casts; the megatron pricing does not change.
TEST(ComputePricing, EagerBf16ModelHasNoAutocastCasts) {
  const SystemConfig h100 = load_system(test_paths::system_path("dgx-h100"));
  const Estimator est(gpt125m(Attention::fused), h100);
  Strategy s = single(4);
  s.framework = Framework::pytorch;
  Estimate autocast, bf16;
  est.evaluate(s, autocast);
  s.pure_bf16 = true;
  est.evaluate(s, bf16);
  const double w_block = est.ops().block_matrix_params;
  const double casts = 2 * est.pricer().mem_n_s(4, constants::kEagerCastBytesPerParam * w_block);
  EXPECT_LT(bf16.terms[2].seconds, autocast.terms[2].seconds - 12 * casts);
  EXPECT_GT(bf16.terms[2].seconds, 0);
  s.framework = Framework::megatron;
  Estimate m1, m2;
  est.evaluate(s, m1);
  s.pure_bf16 = false;
  est.evaluate(s, m2);
  EXPECT_DOUBLE_EQ(m1.terms[2].seconds, m2.terms[2].seconds);
}

// Expert GEMMs without a measured grouped fit: one GEMM per expert, each at its own size, as
// Transformer Engine's GroupedLinear launches them (one cuBLAS call per expert). Priced as one
// kernel of all the experts' FLOPs, 16 small experts would take the large-GEMM efficiency.
TEST(ComputePricing, ExpertGemmsArePricedOneGemmPerExpert) {
  const SystemConfig h100 = load_system(test_paths::system_path("dgx-h100"));
  const ComputePricer H(h100, DType::bfloat16);
  // Qwen3-235B at TP 4, EP 8: 16 local experts of 512 rows, fc1 512 x 3072 x 4096
  const double m = 512, n = 3072, k = 4096;
  EXPECT_DOUBLE_EQ(H.grouped_gemm_s(m, n, k, 16), 16 * H.gemm_s(m, n, k, 1));
  EXPECT_DOUBLE_EQ(H.grouped_gemm_s(m, n, k, 16, true), 16 * H.gemm_s(m, n, k, 1, true));
  // 12.9 GFLOP each sits below the table's 16-GFLOP row; 206 GFLOP together above its top row
  const double one_kernel = H.gemm_s(m, n, k, 16);
  EXPECT_GT(H.grouped_gemm_s(m, n, k, 16), 1.1 * one_kernel);
  // one expert is one GEMM either way
  EXPECT_DOUBLE_EQ(H.grouped_gemm_s(m, n, k, 1), H.gemm_s(m, n, k, 1));
}

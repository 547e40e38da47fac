// Sliding-window attention (Mistral 7B, gpt-oss; Megatron-Core's --window-size W,0 and
// --window-attn-skip-freq): the work of the mask's non-zeros, and the windowed kernels' own rate
// (docs/estimator.md, "Sliding-window attention"). Split from test_moe_mla.cpp.
#include "helpers.hpp"

#include "scalefit/core/error.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

using namespace scalefit;
using namespace scalefit::estimator;
using test_run::run;

namespace {

/// The model with its sliding windows off (every block full attention): the A/B of the windows.
ModelConfig without_windows(ModelConfig m) {
  m.sliding_window = 0;
  m.window_skip_freq = 0;
  return m;
}

/// gpt-oss-120b's layout in the window tests: 8 GPUs, EP 8, ZeRO-1, MBS 1, GBS 64.
Strategy oss_layout() {
  Strategy st;
  st.dp = 8, st.ep = 8, st.zero = 1, st.micro_batch = 1, st.global_batch = 64;
  return st;
}

} // namespace

// Sliding-window attention (Mistral 7B, gpt-oss; Megatron-Core's --window-size W,0 and
// --window-attn-skip-freq): the fused kernel's work is the mask's non-zeros, so the attention
// term scales by (1 - w) + w nz_W / nz_causal for the windowed share w of the blocks; nothing
// else changes; context parallelism with windows is refused (not modeled).
TEST(MoeMla, SlidingWindowsPriceTheMaskNonZeros) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-h100"));
  const ModelConfig oss = load_model(test_paths::model_path("gpt-oss-120b"));
  EXPECT_EQ(oss.windowed_layers(), 18); // blocks 2, 4, ..., 36 keep full attention
  const double s = 8192, W = 128;
  const double nz_w = W * (W + 1) / 2 + (s - W) * (W + 1), nz_c = s * (s + 1) / 2;
  EXPECT_NEAR(describe_model(oss).attention_work, 0.5 + 0.5 * nz_w / nz_c, 1e-15);
  const ModelConfig full = without_windows(oss);
  Strategy st = oss_layout();
  const auto win = run(Estimator(oss, sys), st);
  const auto ref = run(Estimator(full, sys), st);
  // (each kernel's launch time does not scale: the ratio lies just above the work's)
  const double ratio = win->terms[1].seconds / ref->terms[1].seconds;
  EXPECT_GE(ratio, 0.5 + 0.5 * nz_w / nz_c);
  EXPECT_NEAR(ratio, 0.5 + 0.5 * nz_w / nz_c, 2e-3);
  EXPECT_DOUBLE_EQ(win->terms[0].seconds, ref->terms[0].seconds); // GEMMs unchanged
  EXPECT_DOUBLE_EQ(win->model_flops, ref->model_flops); // Megatron-LM's formula counts in full
  EXPECT_LT(win->model_flops_causal, ref->model_flops_causal);
  // every block windowed (Mistral): three quarters of the causal work at W = s / 2
  const ModelConfig mistral = load_model(test_paths::model_path("mistral-7b"));
  EXPECT_EQ(mistral.windowed_layers(), 32);
  EXPECT_NEAR(describe_model(mistral).attention_work, 0.75, 1e-3);
  // refused: a window with cp > 1, a skip frequency without a window
  st.cp = 2;
  st.global_batch = 32;
  try {
    run(Estimator(oss, sys), st);
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "--cp");
  }
  ModelConfig bad = oss;
  bad.sliding_window = 0;
  try {
    validate_model(bad, "test");
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "window_skip_freq");
  }
}

// A windowed block's kernel runs at its window's measured rate (the fused table's forward_window /
// backward_window rows, keyed by W: cuDNN 9.22 on GB200 runs W = 128 at 0.064 / 0.074 of peak),
// the full blocks at the sequence's; a device without the rows keeps the sequence's rate for both.
TEST(MoeMla, WindowedBlocksArePricedAtTheWindowsKernelRate) {
  const SystemConfig gb = load_system(test_paths::system_path("gb200-nvl72"));
  ASSERT_FALSE(gb.device.attention_fwd_window_efficiency.steps.empty());
  const double launch = gb.device.kernel_launch_us * 1e-6, flops = 1e11;
  const ComputePricer P(gb, DType::bfloat16);
  EXPECT_NEAR(P.window_attention_s(flops, 128, 4096, false), flops / (2500e12 * 0.064) + launch,
              1e-12);
  EXPECT_NEAR(P.window_attention_s(flops, 128, 4096, true), flops / (2500e12 * 0.074) + launch,
              1e-12);
  // the flash backend (a table of its own on this device? none: it prices as fused) and SDPA
  EXPECT_EQ(P.window_attention_s(flops, 128, 4096, false, AttentionKernel::sdpa),
            P.attention_s(flops, 4096, false, AttentionKernel::sdpa));
  SystemConfig plain = gb;
  plain.device.attention_fwd_window_efficiency.steps.clear();
  plain.device.attention_bwd_window_efficiency.steps.clear();
  const ComputePricer Q(plain, DType::bfloat16);
  EXPECT_EQ(Q.window_attention_s(flops, 128, 4096, false), Q.attention_s(flops, 4096, false));
  // gpt-oss-120b: 18 of 36 blocks windowed; the attention term is the full blocks' half of the
  // full-attention model's plus the windowed blocks' kernels at the window's rate
  const ModelConfig oss = load_model(test_paths::model_path("gpt-oss-120b"));
  const ModelConfig full = without_windows(oss);
  const Strategy st = oss_layout();
  const auto measured = run(Estimator(oss, gb), st);
  const auto unmeasured = run(Estimator(oss, plain), st);
  const auto dense = run(Estimator(full, gb), st);
  const double s = oss.sequence, W = 128;
  const double nz_w = W * (W + 1) / 2 + (s - W) * (W + 1), nz_c = s * (s + 1) / 2;
  const double f = nz_w / nz_c; // a windowed block's work relative to a full one's
  const double mean_rate = 0.5 * (1.0 / 0.064) + 0.5 * (2.5 / 0.074); // 1 fwd + 2.5 bwd
  const auto at = [&](const EfficiencyTable &t) { return t.at(s); };
  const double full_rate = 0.5 * (1.0 / at(gb.device.attention_fwd_efficiency)) +
                           0.5 * (2.5 / at(gb.device.attention_bwd_efficiency));
  // half the blocks full, half windowed: work f at the window's rate against 1 at the sequence's
  const double ratio = measured->terms[1].seconds / dense->terms[1].seconds;
  EXPECT_NEAR(ratio, 0.5 * (1 + f * mean_rate / full_rate), 0.01);
  EXPECT_GT(measured->terms[1].seconds, unmeasured->terms[1].seconds * 1.2);
  EXPECT_DOUBLE_EQ(measured->terms[0].seconds, unmeasured->terms[0].seconds); // GEMMs unchanged
  // the rows are read only under fused_attention_efficiency (exit 2 naming the field)
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/window_rows.yaml";
  std::string text;
  {
    std::ifstream in(test_paths::system_path("dgx-h100"));
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto pos = text.find("  flash_attention_efficiency:\n");
  ASSERT_NE(pos, std::string::npos);
  text.insert(text.find('\n', pos) + 1, "    forward_window: [[128, 0.1]]\n");
  {
    std::ofstream out(path);
    out << text;
  }
  try {
    load_system(path);
    FAIL() << "forward_window under flash_attention_efficiency accepted";
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "device.flash_attention_efficiency.forward_window") << e.what();
    EXPECT_GT(e.line(), 0);
  }
}

// FP8 attention on a windowed block (fp8_dot_product_attention): the FP8 window rows, keyed by the
// sequence (cuDNN 9.22's FP8 windowed backward does not skip the tiles outside the window: on
// GB200 at W = 128, 4.5x slower than the 16-bit window kernel at 4k, 29x at 32k); the forward,
// the full blocks and every other term as before. Without the rows: the 16-bit window rows.
TEST(MoeMla, Fp8WindowedKernelsArePricedByTheirRowsAtTheSequence) {
  const SystemConfig gb = load_system(test_paths::system_path("gb200-nvl72"));
  const DeviceConfig &d = gb.device;
  ASSERT_FALSE(d.attention_bwd_window_mxfp8_efficiency.steps.empty());
  ASSERT_FALSE(d.attention_fwd_window_fp8_efficiency.steps.empty());
  const double launch = d.kernel_launch_us * 1e-6, flops = 1e11;
  const ComputePricer P(gb, DType::bfloat16);
  const auto win = [&](double seq, bool bwd, bool fp8, bool mx) {
    return P.window_attention_s(flops, 128, seq, bwd, AttentionKernel::fused, fp8, mx);
  };
  EXPECT_NEAR(win(4096, true, true, true),
              flops / (5000e12 * d.attention_bwd_window_mxfp8_efficiency.at(4096)) + launch, 1e-12);
  EXPECT_NEAR(win(8192, false, true, false),
              flops / (5000e12 * d.attention_fwd_window_fp8_efficiency.at(8192)) + launch, 1e-12);
  // the measured shape: the FP8 backward slows with the sequence, the 16-bit one does not
  EXPECT_GT(win(4096, true, true, true), 4 * win(4096, true, false, false));
  EXPECT_GT(win(32768, true, true, true), 3 * win(8192, true, true, true));
  EXPECT_EQ(win(32768, true, false, false), win(8192, true, false, false));
  // below the shortest measured sequence (2k): 2k's rate
  EXPECT_EQ(win(1024, true, true, true), win(2048, true, true, true));
  // a device with FP8 rows but no FP8 window rows: the 16-bit window rows
  SystemConfig plain = gb;
  plain.device.attention_fwd_window_mxfp8_efficiency.steps.clear();
  plain.device.attention_bwd_window_mxfp8_efficiency.steps.clear();
  const ComputePricer Q(plain, DType::bfloat16);
  EXPECT_EQ(Q.window_attention_s(flops, 128, 4096, true, AttentionKernel::fused, true, true),
            Q.window_attention_s(flops, 128, 4096, true));
  // gpt-oss-120b in MXFP8 with FP8 attention: only the attention term moves, and up
  ModelConfig oss = load_model(test_paths::model_path("gpt-oss-120b"));
  oss.fp8 = true;
  Strategy st = oss_layout();
  st.fp8_recipe = Fp8Recipe::mxfp8;
  st.fp8_attention = true;
  const auto with_rows = run(Estimator(oss, gb), st);
  const auto without = run(Estimator(oss, plain), st);
  EXPECT_GT(with_rows->terms[1].seconds, without->terms[1].seconds * 1.1);
  for (std::size_t i = 0; i < with_rows->terms.size(); ++i)
    if (i != 1)
      EXPECT_DOUBLE_EQ(with_rows->terms[i].seconds, without->terms[i].seconds)
          << with_rows->terms[i].what;
  // bf16 attention (fp8_dot_product_attention off): the rows change nothing
  st.fp8_attention = false;
  EXPECT_DOUBLE_EQ(run(Estimator(oss, gb), st)->terms[1].seconds,
                   run(Estimator(oss, plain), st)->terms[1].seconds);
}

// fp8 without a GPU: the precision's name and parsing, which kernels run in fp8 (dense aligned
// GEMMs) and which in bf16, the sm_89 rule, the host model of the E4M3 rounding, the -c check of
// an FP8 GEMM on a fake engine that computes as the device does (and on broken ones), and the
// refusals of the cpu engine and of cublas without a GPU.
#include "scalefit/core/error.hpp"
#include "scalefit/kernels/engine.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace scalefit;
using namespace scalefit::kernels;

TEST(Fp8, NameParseAndSize) {
  EXPECT_EQ(precision_name(Precision::fp8), "fp8");
  EXPECT_EQ(parse_precision("fp8"), Precision::fp8);
  EXPECT_EQ(parse_precision("FP8"), Precision::fp8);
  EXPECT_EQ(parse_precision("e4m3"), Precision::fp8);
  EXPECT_EQ(parse_precision("fp8_e4m3"), Precision::fp8);
  EXPECT_FALSE(parse_precision("fp8_e5m2").has_value());
  EXPECT_EQ(precision_bytes(Precision::fp8), 1u);
}

TEST(Fp8, OnlyAlignedDenseGemmsRunInFp8) {
  const auto kp = [](KernelKind kind, std::int64_t m, std::int64_t n, std::int64_t k,
                     std::int64_t batch = 1) {
    return kernel_precision(Precision::fp8, {"x", kind, Pass::fwd, m, n, k, batch});
  };
  EXPECT_EQ(kp(KernelKind::gemm, 2048, 6144, 2048), Precision::fp8);
  EXPECT_EQ(kp(KernelKind::gemm, 16, 16, 16), Precision::fp8);
  EXPECT_EQ(kp(KernelKind::gemm, 2048, 50257, 2048), Precision::bf16); // odd vocabulary
  EXPECT_EQ(kp(KernelKind::gemm, 1, 8192, 8192), Precision::bf16);     // m = 1
  EXPECT_EQ(kp(KernelKind::gemm, 2048, 2048, 8), Precision::bf16);
  EXPECT_EQ(kp(KernelKind::batched_gemm, 512, 512, 64, 16), Precision::bf16); // attention
  EXPECT_EQ(kp(KernelKind::softmax, 512, 512, 0, 16), Precision::bf16);
  EXPECT_EQ(kp(KernelKind::attention, 512, 512, 64, 16), Precision::bf16);
  // Other precisions run every kernel as they are.
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
    EXPECT_EQ(kernel_precision(p, {"x", KernelKind::softmax, Pass::fwd, 8, 8, 0, 1}), p);
  // The -c slice runs in what the shape runs in: an fp8 GEMM's slice is fp8, an unaligned one's
  // stays unaligned (bf16).
  for (std::int64_t d : {16, 32, 48, 64, 4096}) {
    const KernelShape s{"x", KernelKind::gemm, Pass::fwd, d, 3 * d, 4 * d, 1};
    EXPECT_EQ(kernel_precision(Precision::fp8, check_slice(s)), Precision::fp8) << d;
  }
  const KernelShape logits{"logits", KernelKind::gemm, Pass::fwd, 2048, 50257, 2048, 1};
  EXPECT_EQ(check_slice(logits).n, 33); // 50257 = 1 mod 16
  EXPECT_EQ(kernel_precision(Precision::fp8, check_slice(logits)), Precision::bf16);
  const KernelShape odd_k{"wgrad", KernelKind::gemm, Pass::bwd, 2048, 2048, 50257, 1};
  EXPECT_EQ(check_slice(odd_k).k, 49);
  EXPECT_EQ(kernel_precision(Precision::fp8, check_slice(odd_k)), Precision::bf16);
}

TEST(Fp8, NeedsComputeCapability89) {
  for (int sm : {70, 75, 80, 86, 87})
    EXPECT_FALSE(fp8_supported(sm)) << sm;
  for (int sm : {89, 90, 100, 120})
    EXPECT_TRUE(fp8_supported(sm)) << sm;
  EXPECT_EQ(fp8_refusal("GPU 0 (NVIDIA H100 80GB HBM3)", 90), "");
  const std::string why = fp8_refusal("GPU 0 (NVIDIA A100-SXM4-40GB)", 80);
  EXPECT_NE(why.find("--dtype fp8"), std::string::npos) << why;
  EXPECT_NE(why.find("8.9"), std::string::npos) << why;
  EXPECT_NE(why.find("GPU 0 (NVIDIA A100-SXM4-40GB) is sm_80"), std::string::npos) << why;
  EXPECT_NE(fp8_refusal("NVIDIA RTX A6000", 86).find("is sm_86"), std::string::npos);
}

TEST(Fp8, E4m3Rounding) {
  EXPECT_EQ(fp8_e4m3_round(0.0), 0.0);
  EXPECT_EQ(fp8_e4m3_round(1.0), 1.0);
  EXPECT_EQ(fp8_e4m3_round(448.0), 448.0);
  EXPECT_EQ(fp8_e4m3_round(464.0), 448.0); // saturates (SATFINITE), no inf
  EXPECT_EQ(fp8_e4m3_round(-1e6), -448.0);
  EXPECT_EQ(fp8_e4m3_round(1.1), 1.125);   // spacing 2^-3 in [1, 2)
  EXPECT_EQ(fp8_e4m3_round(-1.1), -1.125);
  EXPECT_EQ(fp8_e4m3_round(17.0), 16.0);   // a tie: to the even mantissa (16 = 1.000b 2^4)
  EXPECT_EQ(fp8_e4m3_round(19.0), 20.0);   // a tie: 20 = 1.010b 2^4 is the even one
  EXPECT_EQ(fp8_e4m3_round(15.9), 16.0);   // rounds up into the next binade
  EXPECT_EQ(fp8_e4m3_round(std::ldexp(1.0, -6)), std::ldexp(1.0, -6)); // smallest normal
  EXPECT_EQ(fp8_e4m3_round(std::ldexp(1.0, -9)), std::ldexp(1.0, -9)); // smallest subnormal
  EXPECT_EQ(fp8_e4m3_round(std::ldexp(3.0, -10)), std::ldexp(1.0, -8)); // tie 1.5 steps -> 2
  EXPECT_EQ(fp8_e4m3_round(std::ldexp(1.0, -11)), 0.0);
  // Every value in [2^-6, 448] within 2^-4 relative (3 mantissa bits).
  for (double x = 0.015625; x < 448; x *= 1.0137)
    EXPECT_LE(std::abs(fp8_e4m3_round(x) - x), x / 16) << x;
}

TEST(Fp8, QuantizeDequantizeUsesThePerTensorScale) {
  const std::vector<double> x = {0.5, -2.0, 1.0, 0.3, -0.01};
  const std::vector<double> q = fp8_quantize_dequantize(x);
  ASSERT_EQ(q.size(), x.size());
  EXPECT_FLOAT_EQ(fp8_scale(2.0), 224.0f);
  EXPECT_FLOAT_EQ(fp8_scale(0.0), 1.0f);
  EXPECT_NEAR(q[1], -2.0, 1e-6); // amax -> 448, exact
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_LE(std::abs(q[i] - x[i]), std::abs(x[i]) / 16 + 1e-7) << i;
}

namespace {

/// bf16 of x (round to nearest even), as the FP8 GEMM's output is stored.
double to_bf16(double x) {
  float f = static_cast<float>(x);
  std::uint32_t bits = 0;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  bits &= 0xffff0000u;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// An fp8 engine without a GPU: GEMMs computed as the device does them (each operand quantized
/// with its own scale, exact products, bf16 output), or broken in one way.
class FakeFp8 final : public GemmEngine {
public:
  enum class Fault { none, transposed_b, no_quantization, no_descale };
  explicit FakeFp8(Fault f) : m_fault(f) {}
  std::string_view name() const override { return "fake-fp8"; }
  Precision precision() const override { return Precision::fp8; }
  std::string device() const override { return "none"; }
  std::string library() const override { return "none"; }
  void prepare(const KernelShape &) override {}
  double run_us(int) override { return 1; }
  std::vector<double> evaluate(const KernelShape &s, std::span<const double> a,
                               std::span<const double> b) override {
    if (kernel_precision(Precision::fp8, s) != Precision::fp8) { // bf16 GEMMs: exact here
      auto c = naive_gemm(a, b, s.m, s.n, s.k, s.batch);
      for (double &v : c)
        v = to_bf16(v);
      return c;
    }
    std::vector<double> qa(a.begin(), a.end()), qb(b.begin(), b.end());
    if (m_fault != Fault::no_quantization) {
      qa = fp8_quantize_dequantize(a);
      qb = fp8_quantize_dequantize(b);
    }
    if (m_fault == Fault::transposed_b) { // B (k x n) read as if it were W (n x k)
      std::vector<double> t(qb.size());
      for (std::int64_t p = 0; p < s.k; ++p)
        for (std::int64_t j = 0; j < s.n; ++j)
          t[static_cast<std::size_t>(p * s.n + j)] = qb[static_cast<std::size_t>(j * s.k + p)];
      qb = t;
    }
    auto c = naive_gemm(qa, qb, s.m, s.n, s.k, s.batch);
    for (double &v : c)
      v = to_bf16(m_fault == Fault::no_descale ? v * 448.0 : v);
    return c;
  }
  std::string fused_attention_unavailable(std::int64_t) const override { return ""; }

private:
  Fault m_fault;
};

} // namespace

TEST(Fp8, CheckPassesTheDeviceModelAndCatchesBrokenOnes) {
  const std::vector<KernelShape> shapes = {
      {"qkv.fwd", KernelKind::gemm, Pass::fwd, 2048, 6144, 2048, 1},
      {"small", KernelKind::gemm, Pass::fwd, 16, 32, 16, 1},
      {"logits.fwd", KernelKind::gemm, Pass::fwd, 2048, 50257, 2048, 1}, // runs in bf16
      {"attn_score.fwd", KernelKind::batched_gemm, Pass::fwd, 1024, 1024, 64, 16}};
  FakeFp8 good(FakeFp8::Fault::none);
  for (const KernelShape &s : shapes)
    for (std::uint64_t seed : {1, 2, 3}) {
      const CheckResult r = check_shape(good, s, seed);
      EXPECT_GT(r.checked, 0) << s.name;
      EXPECT_EQ(r.wrong, 0) << s.name << " seed " << seed << " max error " << r.max_abs_error;
    }
  for (auto fault : {FakeFp8::Fault::transposed_b, FakeFp8::Fault::no_quantization,
                     FakeFp8::Fault::no_descale}) {
    FakeFp8 bad(fault);
    const CheckResult r = check_shape(bad, shapes[0]);
    // A layout or scale error is off by about |C| itself: nearly every element. Skipping the
    // quantization (not computing in FP8 at all) is off by the E4M3 rounding: many elements.
    EXPECT_GT(r.wrong, fault == FakeFp8::Fault::no_quantization ? 0 : r.checked / 2)
        << static_cast<int>(fault);
  }
}

TEST(Fp8, CpuEngineRefusesAndCublasNeedsAGpu) {
  try {
    make_engine("cpu", Precision::fp8);
    ADD_FAILURE() << "cpu must refuse fp8";
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "--dtype");
    const std::string what = e.what();
    EXPECT_NE(what.find("FP8 E4M3 is a GPU tensor-core format"), std::string::npos) << what;
  }
  if (visible_gpus() == 0) {
    try {
      make_engine("cublas", Precision::fp8);
      ADD_FAILURE() << "cublas without a GPU must throw";
    } catch (const InputError &e) {
      EXPECT_EQ(e.field(), "--engine");
      const std::string what = e.what();
      EXPECT_NE(what.find(cuda_built() ? "no GPU visible" : "not built with CUDA"),
                std::string::npos)
          << what;
    }
  }
}

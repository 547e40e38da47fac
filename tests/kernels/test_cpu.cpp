// The Eigen engine against naive double references (values), the stable softmax, the -c check
// (including that it catches a wrong engine), precisions and engine selection.
#include "scalefit/core/error.hpp"
#include "scalefit/kernels/cpu_engine.hpp"
#include "scalefit/kernels/engine.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace scalefit;
using namespace scalefit::kernels;

namespace {

std::vector<double> random_values(std::size_t n, std::uint64_t seed, double lo = -1,
                                  double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (double &x : v)
    x = d(rng);
  return v;
}

template <class T> std::vector<T> cast(const std::vector<double> &v) {
  return {v.begin(), v.end()};
}

} // namespace

TEST(NaiveReference, GemmHandComputed) {
  // [1 2; 3 4] [5 6; 7 8] = [19 22; 43 50]; second batch the identity times [1 2; 3 4].
  const std::vector<double> a = {1, 2, 3, 4, 1, 0, 0, 1}, b = {5, 6, 7, 8, 1, 2, 3, 4};
  const auto c = naive_gemm(a, b, 2, 2, 2, 2);
  EXPECT_EQ(c, (std::vector<double>{19, 22, 43, 50, 1, 2, 3, 4}));
  const auto s = naive_softmax(std::vector<double>{0, std::log(3.0)}, 1, 2);
  EXPECT_NEAR(s[0], 0.25, 1e-15);
  EXPECT_NEAR(s[1], 0.75, 1e-15);
}

TEST(CpuGemm, MatchesNaiveFloatAndDouble) {
  const std::int64_t m = 37, n = 53, k = 71, batch = 3; // odd sizes: no tile multiple
  const auto a = random_values(batch * m * k, 1), b = random_values(batch * k * n, 2);
  const auto ref = naive_gemm(a, b, m, n, k, batch);
  std::vector<double> cd(ref.size());
  cpu_gemm(a.data(), b.data(), cd.data(), m, n, k, batch);
  const auto af = cast<float>(a), bf = cast<float>(b);
  std::vector<float> cf(ref.size());
  cpu_gemm(af.data(), bf.data(), cf.data(), m, n, k, batch);
  for (std::size_t i = 0; i < ref.size(); ++i) {
    EXPECT_NEAR(cd[i], ref[i], 1e-12) << i;
    EXPECT_NEAR(cf[i], ref[i], 1e-4) << i;
  }
  // Row-major: element (1, 2) of batch 2 is row 1 of A times column 2 of B.
  double e = 0;
  for (std::int64_t p = 0; p < k; ++p)
    e += a[2 * m * k + 1 * k + p] * b[2 * k * n + p * n + 2];
  EXPECT_NEAR(cd[2 * m * n + 1 * n + 2], e, 1e-12);
}

TEST(CpuSoftmax, RowsSumToOneAndMatchNaive) {
  const std::int64_t rows = 9, cols = 33;
  const auto x = random_values(rows * cols, 3, -5, 5);
  const auto ref = naive_softmax(x, rows, cols);
  auto xf = cast<float>(x);
  cpu_softmax_rows(xf.data(), rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      sum += xf[r * cols + j];
      EXPECT_NEAR(xf[r * cols + j], ref[r * cols + j], 1e-6);
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
}

TEST(CpuSoftmax, StableForLargeInputs) {
  // exp(1e4) overflows float and double; a stable softmax gives the same result as for x - 1e4.
  std::vector<float> big = {1e4f, 1e4f - 1.0f, 1e4f - 2.0f, -1e4f};
  std::vector<float> small = {0.0f, -1.0f, -2.0f, -2e4f};
  cpu_softmax_rows(big.data(), 1, 4);
  cpu_softmax_rows(small.data(), 1, 4);
  double sum = 0;
  for (int j = 0; j < 4; ++j) {
    ASSERT_TRUE(std::isfinite(big[j])) << j;
    EXPECT_NEAR(big[j], small[j], 1e-6);
    sum += big[j];
  }
  EXPECT_NEAR(sum, 1.0, 1e-6);
  EXPECT_NEAR(big[0], 1.0 / (1.0 + std::exp(-1.0) + std::exp(-2.0)), 1e-6);
  std::vector<double> huge = {1e300, 1e300};
  cpu_softmax_rows(huge.data(), 1, 2);
  EXPECT_DOUBLE_EQ(huge[0], 0.5);
}

TEST(CpuAttention, MatchesNaive) {
  const std::int64_t batch = 3, s = 17, d = 8;
  const auto q = random_values(batch * s * d, 4), k = random_values(batch * s * d, 5),
             v = random_values(batch * s * d, 6);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const auto ref = naive_attention(q, k, v, batch, s, d, scale);
  std::vector<double> out(ref.size());
  cpu_attention(q.data(), k.data(), v.data(), out.data(), batch, s, d, scale);
  const auto qf = cast<float>(q), kf = cast<float>(k), vf = cast<float>(v);
  std::vector<float> outf(ref.size());
  cpu_attention(qf.data(), kf.data(), vf.data(), outf.data(), batch, s, d,
                static_cast<float>(scale));
  for (std::size_t i = 0; i < ref.size(); ++i) {
    EXPECT_NEAR(out[i], ref[i], 1e-12);
    EXPECT_NEAR(outf[i], ref[i], 1e-5);
  }
}

TEST(CpuEngine, EvaluateAndCheckPass) {
  for (Precision p : {Precision::fp32, Precision::fp64}) {
    auto e = make_engine("cpu", p);
    EXPECT_EQ(e->name(), "cpu");
    EXPECT_EQ(e->precision(), p);
    for (const KernelShape &s :
         {KernelShape{"g", KernelKind::gemm, Pass::fwd, 100, 70, 200, 1},
          KernelShape{"bg", KernelKind::batched_gemm, Pass::bwd, 40, 30, 20, 5},
          KernelShape{"sm", KernelKind::softmax, Pass::fwd, 60, 60, 0, 3}}) {
      const CheckResult r = check_shape(*e, s);
      const KernelShape slice = check_slice(s);
      EXPECT_EQ(r.checked, slice.batch * slice.m * slice.n) << s.name;
      EXPECT_EQ(r.wrong, 0) << s.name;
      e->prepare(s);
      EXPECT_GT(e->run_us(2), 0.0);
    }
  }
}

namespace {
/// A broken engine: the cpu result with one element off by one.
class OffByOne final : public GemmEngine {
public:
  std::unique_ptr<GemmEngine> inner = make_engine("cpu", Precision::fp32);
  std::string_view name() const override { return "broken"; }
  Precision precision() const override { return Precision::fp32; }
  std::string device() const override { return "none"; }
  std::string library() const override { return "none"; }
  void prepare(const KernelShape &) override {}
  double run_us(int) override { return 1; }
  std::vector<double> evaluate(const KernelShape &s, std::span<const double> a,
                               std::span<const double> b) override {
    auto c = inner->evaluate(s, a, b);
    c[c.size() / 2] += 1.0;
    return c;
  }
  std::string fused_attention_unavailable(std::int64_t) const override { return ""; }
};
} // namespace

TEST(Check, CatchesAWrongElement) {
  OffByOne e;
  const CheckResult g = check_shape(e, {"g", KernelKind::gemm, Pass::fwd, 64, 64, 64, 1});
  EXPECT_EQ(g.wrong, 1);
  EXPECT_DOUBLE_EQ(g.max_abs_error, 1.0);
  const CheckResult s = check_shape(e, {"sm", KernelKind::softmax, Pass::fwd, 8, 8, 0, 1});
  EXPECT_EQ(s.wrong, 1);
  for (Pass p : {Pass::fwd, Pass::bwd}) {
    KernelShape a{"attn", KernelKind::attention, p, 40, 40, 16, 2};
    a.causal = true;
    EXPECT_EQ(check_shape(e, a).wrong, 1) << pass_name(p);
  }
}

TEST(Check, SliceIsSmall) {
  const KernelShape s =
      check_slice({"x", KernelKind::batched_gemm, Pass::fwd, 4096, 4096, 128, 96});
  EXPECT_EQ(s.m, 48);
  EXPECT_EQ(s.n, 48);
  EXPECT_EQ(s.k, 64);
  EXPECT_EQ(s.batch, 2);
}

TEST(Engines, PrecisionNamesAndSelection) {
  for (Precision p :
       {Precision::fp64, Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
    EXPECT_EQ(parse_precision(precision_name(p)), p);
  EXPECT_EQ(parse_precision("Half"), Precision::fp16);
  EXPECT_EQ(parse_precision("bfloat16"), Precision::bf16);
  EXPECT_EQ(parse_precision("float"), Precision::fp32);
  EXPECT_FALSE(parse_precision("int8").has_value());
  EXPECT_EQ(precision_bytes(Precision::bf16), 2u);
  EXPECT_EQ(default_precision("cpu", DType::half), Precision::fp32);
  EXPECT_EQ(default_precision("cublas", DType::bfloat16), Precision::bf16);
  EXPECT_THROW(make_engine("cpu", Precision::fp16), InputError);
  EXPECT_THROW(make_engine("tpu", Precision::fp32), InputError);
  if (visible_gpus() == 0) {
    try {
      make_engine("cublas", Precision::fp16);
      ADD_FAILURE() << "cublas without a GPU must throw";
    } catch (const InputError &e) {
      EXPECT_EQ(e.field(), "--engine");
      const std::string what = e.what();
      EXPECT_TRUE(what.find(cuda_built() ? "no GPU visible" : "not built with CUDA") !=
                  std::string::npos)
          << what;
      EXPECT_NE(what.find("--engine cpu"), std::string::npos) << what;
    }
    EXPECT_EQ(default_engine_name(), "cpu");
  }
}

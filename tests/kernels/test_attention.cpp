// Fused (flash-style) causal attention on the CPU against the naive double reference, the naive
// backward against finite differences, the engine's attention path and its -c check, FLOP counts
// of the fused layer, the sweep grid and the counter-based fill.
#include "scalefit/kernels/attention.hpp"
#include "scalefit/kernels/engine.hpp"
#include "scalefit/kernels/fill.hpp"
#include "scalefit/kernels/sweep.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

using namespace scalefit;
using namespace scalefit::kernels;

namespace {

std::vector<double> uniform(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> v(n);
  for (double &x : v)
    x = d(rng);
  return v;
}

template <class T> std::vector<T> cast(const std::vector<double> &v) {
  return {v.begin(), v.end()};
}

struct Problem {
  std::int64_t batch, s, d;
  std::vector<double> q, k, v, dout;
  double scale;
  Problem(std::int64_t b, std::int64_t s_, std::int64_t d_, std::uint64_t seed)
      : batch(b), s(s_), d(d_), q(uniform(b * s_ * d_, seed)), k(uniform(b * s_ * d_, seed + 1)),
        v(uniform(b * s_ * d_, seed + 2)), dout(uniform(b * s_ * d_, seed + 3)),
        scale(1.0 / std::sqrt(static_cast<double>(d_))) {}
};

/// Runs the flash forward and backward in T; returns out | dq | dk | dv.
template <class T> std::vector<double> flash(const Problem &p, bool causal) {
  const std::size_t n = p.q.size();
  const auto q = cast<T>(p.q), k = cast<T>(p.k), v = cast<T>(p.v), g = cast<T>(p.dout);
  std::vector<T> out(n), lse(static_cast<std::size_t>(p.batch * p.s)), dq(n), dk(n), dv(n);
  cpu_flash_attention_forward(q.data(), k.data(), v.data(), out.data(), lse.data(), p.batch, p.s,
                              p.d, static_cast<T>(p.scale), causal);
  cpu_flash_attention_backward(q.data(), k.data(), v.data(), out.data(), lse.data(), g.data(),
                               dq.data(), dk.data(), dv.data(), p.batch, p.s, p.d,
                               static_cast<T>(p.scale), causal);
  std::vector<double> all;
  for (const auto *x : {&out, &dq, &dk, &dv})
    all.insert(all.end(), x->begin(), x->end());
  return all;
}

} // namespace

TEST(FlashAttention, MatchesNaiveForwardAndBackward) {
  // s = 150: three query/key tiles of 64, the last partial; causal and not.
  for (bool causal : {true, false}) {
    const Problem p(2, 150, 16, causal ? 10 : 20);
    std::vector<double> ref = naive_attention(p.q, p.k, p.v, p.batch, p.s, p.d, p.scale, causal);
    const auto grads =
        naive_attention_backward(p.q, p.k, p.v, p.dout, p.batch, p.s, p.d, p.scale, causal);
    ref.insert(ref.end(), grads.begin(), grads.end());
    const auto got_d = flash<double>(p, causal);
    const auto got_f = flash<float>(p, causal);
    ASSERT_EQ(got_d.size(), ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) {
      ASSERT_NEAR(got_d[i], ref[i], 1e-11) << "causal " << causal << " element " << i;
      ASSERT_NEAR(got_f[i], ref[i], 2e-5 * (1 + std::abs(ref[i]))) << i;
    }
  }
}

TEST(FlashAttention, CausalFirstRowIsItsValue) {
  // Query 0 sees only key 0: out[0] = v[0] whatever the scores; with a huge scale too.
  Problem p(1, 70, 8, 3);
  p.scale = 1e3; // online softmax must stay finite
  const auto out = naive_attention(p.q, p.k, p.v, 1, p.s, p.d, p.scale, true);
  std::vector<double> o(p.q.size()), lse(static_cast<std::size_t>(p.s));
  cpu_flash_attention_forward(p.q.data(), p.k.data(), p.v.data(), o.data(), lse.data(), 1, p.s,
                              p.d, p.scale, true);
  for (std::int64_t j = 0; j < p.d; ++j)
    EXPECT_DOUBLE_EQ(o[static_cast<std::size_t>(j)], p.v[static_cast<std::size_t>(j)]);
  for (std::size_t i = 0; i < o.size(); ++i) {
    ASSERT_TRUE(std::isfinite(o[i])) << i;
    ASSERT_NEAR(o[i], out[i], 1e-9) << i;
  }
}

TEST(NaiveAttention, BackwardMatchesFiniteDifferences) {
  // L = sum(dout o out): dL/dx by central differences equals the chain-rule gradients.
  const Problem p(1, 9, 4, 7);
  const auto grads = naive_attention_backward(p.q, p.k, p.v, p.dout, 1, p.s, p.d, p.scale, true);
  const std::size_t n = p.q.size();
  auto loss = [&](const std::vector<double> &q, const std::vector<double> &k,
                  const std::vector<double> &v) {
    const auto o = naive_attention(q, k, v, 1, p.s, p.d, p.scale, true);
    double l = 0;
    for (std::size_t i = 0; i < n; ++i)
      l += o[i] * p.dout[i];
    return l;
  };
  const double h = 1e-6;
  for (int which = 0; which < 3; ++which)
    for (std::size_t i = 0; i < n; i += 5) {
      std::vector<double> x[3] = {p.q, p.k, p.v}, y[3] = {p.q, p.k, p.v};
      x[which][i] += h;
      y[which][i] -= h;
      const double fd = (loss(x[0], x[1], x[2]) - loss(y[0], y[1], y[2])) / (2 * h);
      EXPECT_NEAR(grads[which * n + i], fd, 1e-7) << which << " " << i;
    }
}

TEST(CpuEngineAttention, CheckPassesAndTimes) {
  for (Precision prec : {Precision::fp32, Precision::fp64}) {
    auto e = make_engine("cpu", prec);
    EXPECT_EQ(e->fused_attention_unavailable(64), "");
    for (Pass pass : {Pass::fwd, Pass::bwd}) {
      KernelShape a{"attention", KernelKind::attention, pass, 96, 96, 32, 3};
      a.causal = true;
      const CheckResult r = check_shape(*e, a);
      EXPECT_EQ(r.checked, (pass == Pass::fwd ? 1 : 3) * 2 * 64 * 32); // slice: 2 heads, s 64
      EXPECT_EQ(r.wrong, 0) << pass_name(pass) << " max err " << r.max_abs_error;
      e->prepare(a);
      EXPECT_GT(e->run_us(1), 0.0);
    }
  }
}

TEST(FusedShapes, FlopsAndLayerSum) {
  ModelConfig m;
  m.name = "t";
  m.layers = 2;
  m.hidden = 256;
  m.heads = 8;
  m.sequence = 128;
  m.vocabulary = 1000;
  const auto shapes = transformer_gemms(m, 2, 3, true, Attention::fused);
  double fwd_model = 0, fwd_exec = 0;
  int attention = 0;
  for (const KernelShape &s : shapes) {
    EXPECT_NE(s.kind, KernelKind::softmax) << s.name; // fused: no s x s softmax kernel
    if (s.kind == KernelKind::attention) {
      ++attention;
      EXPECT_TRUE(s.causal);
      EXPECT_EQ(s.batch, 3 * 8 / 2);
      EXPECT_EQ(s.m, 128);
      EXPECT_EQ(s.n, 128);
      EXPECT_EQ(s.k, 32);
      const double full = 4.0 * 128 * 128 * 32 * 12; // 4 b s^2 h / t
      EXPECT_DOUBLE_EQ(full, 4.0 * 3 * 128 * 128 * 256 / 2);
      EXPECT_DOUBLE_EQ(s.model_flops(), s.pass == Pass::fwd ? full : 2 * full);
      const double causal = 4.0 * (128.0 * 129 / 2) * 32 * 12;
      EXPECT_DOUBLE_EQ(s.flops(), s.pass == Pass::fwd ? causal : 2.5 * causal);
    }
    if (s.pass == Pass::fwd && s.per_layer) {
      fwd_model += s.model_flops();
      fwd_exec += s.flops();
    }
  }
  EXPECT_EQ(attention, 2);
  EXPECT_DOUBLE_EQ(fwd_model * 2, layer_forward_flops(m, 3)); // times t
  EXPECT_LT(fwd_exec, fwd_model);
  EXPECT_EQ(shapes.size(), transformer_gemms(m, 2, 3).size() - 5); // 3+4 unfused -> 2 fused
}

TEST(Sweep, GridsCoverTheFamilies) {
  for (SweepGrid g : {SweepGrid::small, SweepGrid::full}) {
    EXPECT_EQ(parse_sweep_grid(sweep_grid_name(g)), g);
    const auto shapes = sweep_shapes(g);
    EXPECT_EQ(shapes.size(), g == SweepGrid::small ? 19u : 53u);
    std::set<std::string> names, families;
    bool odd_v = false, padded_v = false, small_k = false, small_m = false, batched = false;
    for (const KernelShape &s : shapes) {
      names.insert(s.name);
      families.insert(s.name.substr(0, s.name.find('.')));
      EXPECT_GT(s.flops(), 0.0) << s.name;
      EXPECT_FALSE(s.per_layer);
      EXPECT_EQ(s.kind, s.batch > 1 ? KernelKind::batched_gemm : KernelKind::gemm);
      odd_v = odd_v || s.n == 50257;
      padded_v = padded_v || s.n == 50304;
      small_k = small_k || (s.k <= 32 && s.m >= 256);
      small_m = small_m || (s.m == 1);
      batched = batched || s.batch >= 8;
      if (g == SweepGrid::small)
        EXPECT_LT(s.flops(), 0.5e9) << s.name; // CPU-sized
    }
    EXPECT_EQ(names.size(), shapes.size()); // unique names
    EXPECT_EQ(families, (std::set<std::string>{"square", "square_odd", "small_m", "small_k",
                                               "odd_n", "tall", "batched", "context"}));
    EXPECT_TRUE(odd_v && padded_v && small_k && small_m && batched);
  }
  EXPECT_FALSE(parse_sweep_grid("medium").has_value());
}

TEST(Fill, CounterBasedUniform) {
  double sum = 0, lo = 1, hi = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float u = uniform_hash_value(7, static_cast<std::uint64_t>(i));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    lo = std::min<double>(lo, u);
    hi = std::max<double>(hi, u);
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005); // 3 sigma of the mean is 0.0027
  EXPECT_LT(lo, 1e-3);
  EXPECT_GT(hi, 1 - 1e-3);
  EXPECT_EQ(uniform_hash_value(7, 42), uniform_hash_value(7, 42)); // a pure function
  EXPECT_NE(uniform_hash_value(7, 42), uniform_hash_value(8, 42));
}

// The shape list of a layer against Narayanan et al. 2021: 24bsh^2 + 4bs^2h forward FLOPs per
// layer (+ 2bshV logits), split over t GPUs; backward GEMMs have twice the forward FLOPs.
#include "scalefit/core/error.hpp"
#include "scalefit/core/model.hpp"
#include "scalefit/kernels/engine.hpp"
#include "scalefit/kernels/shapes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

using namespace scalefit;
using namespace scalefit::kernels;

namespace {

ModelConfig model(int l, int h, int a, int s, int v, int ffn = 0) {
  ModelConfig m;
  m.name = "t";
  m.layers = l;
  m.hidden = h;
  m.heads = a;
  m.sequence = s;
  m.vocabulary = v;
  m.ffn = ffn;
  return m;
}

double sum_flops(const std::vector<KernelShape> &shapes, Pass pass, bool per_layer) {
  double f = 0;
  for (const auto &s : shapes)
    if (s.pass == pass && s.per_layer == per_layer)
      f += s.flops();
  return f;
}

} // namespace

TEST(Shapes, ForwardFlopsMatchNarayanan) {
  struct Case {
    ModelConfig m;
    int tp, b;
  };
  const Case cases[] = {
      {model(12, 768, 12, 1024, 50304), 1, 1}, // GPT-125M (V padded to 128 * 393)
      {model(12, 768, 12, 1024, 50304), 4, 2},
      {model(40, 5120, 40, 2048, 51200), 8, 1}, // GPT-13B-like
      {model(24, 2048, 16, 2048, 51200), 2, 4}, // GPT-1.3B-like
      {model(2, 64, 4, 32, 128), 4, 3},
  };
  for (const Case &c : cases) {
    const double b = c.b, s = c.m.sequence, h = c.m.hidden, V = c.m.vocabulary;
    const auto shapes = transformer_gemms(c.m, c.tp, c.b);
    const double layer = 24 * b * s * h * h + 4 * b * s * s * h; // Narayanan et al. eq. (2)
    EXPECT_DOUBLE_EQ(sum_flops(shapes, Pass::fwd, true) * c.tp, layer)
        << "h=" << h << " t=" << c.tp;
    EXPECT_DOUBLE_EQ(layer_forward_flops(c.m, c.b), layer);
    EXPECT_DOUBLE_EQ(sum_flops(shapes, Pass::fwd, false) * c.tp, 2 * b * s * h * V);
    EXPECT_DOUBLE_EQ(logits_forward_flops(c.m, c.b), 2 * b * s * h * V);
    // Each forward GEMM has a dgrad and a wgrad of the same FLOPs: backward = 2 x forward.
    EXPECT_DOUBLE_EQ(sum_flops(shapes, Pass::bwd, true), 2 * sum_flops(shapes, Pass::fwd, true));
    EXPECT_DOUBLE_EQ(sum_flops(shapes, Pass::bwd, false), 2 * sum_flops(shapes, Pass::fwd, false));
  }
}

TEST(Shapes, MegatronLayoutForTp2) {
  const auto m = model(1, 1024, 16, 512, 32000, 3072);
  const auto shapes = transformer_gemms(m, 2, 4);
  std::map<std::string, KernelShape> by;
  for (const auto &s : shapes)
    by[s.name] = s;
  ASSERT_EQ(by.size(), shapes.size()) << "names are unique";
  auto expect = [&](const std::string &name, std::int64_t mm, std::int64_t n, std::int64_t k,
                    std::int64_t batch) {
    ASSERT_TRUE(by.count(name)) << name;
    EXPECT_EQ(by[name].m, mm) << name;
    EXPECT_EQ(by[name].n, n) << name;
    EXPECT_EQ(by[name].k, k) << name;
    EXPECT_EQ(by[name].batch, batch) << name;
  };
  const std::int64_t bs = 4 * 512;
  expect("qkv.fwd", bs, 3 * 1024 / 2, 1024, 1);
  expect("qkv.dgrad", bs, 1024, 3 * 1024 / 2, 1);
  expect("qkv.wgrad", 1024, 3 * 1024 / 2, bs, 1);
  expect("attn_proj.fwd", bs, 1024, 512, 1);
  expect("mlp_up.fwd", bs, 1536, 1024, 1);
  expect("mlp_down.fwd", bs, 1024, 1536, 1);
  expect("mlp_down.wgrad", 1536, 1024, bs, 1);
  expect("logits.fwd", bs, 16000, 1024, 1);
  expect("attn_score.fwd", 512, 512, 64, 4 * 16 / 2);
  expect("attn_context.fwd", 512, 64, 512, 32);
  expect("softmax.fwd", 512, 512, 0, 32);
  EXPECT_EQ(by["softmax.fwd"].kind, KernelKind::softmax);
  EXPECT_EQ(by["softmax.fwd"].flops(), 0.0);
  EXPECT_FALSE(by["logits.fwd"].per_layer);
  EXPECT_DOUBLE_EQ(by["qkv.fwd"].flops(), 2.0 * bs * 1536 * 1024);
  // ffn != 4h: the generalized count 2bs(4h^2 + 2h ffn) + 4bs^2h.
  EXPECT_DOUBLE_EQ(sum_flops(shapes, Pass::fwd, true) * 2, layer_forward_flops(m, 4));
}

TEST(Shapes, VocabularyNotDividedIsPadded) {
  const auto shapes = transformer_gemms(model(1, 768, 12, 128, 50257), 4, 1);
  for (const auto &s : shapes)
    if (s.name == "logits.fwd")
      EXPECT_EQ(s.n, 12565); // ceil(50257 / 4)
}

TEST(Shapes, BadTpAndMicroBatch) {
  const auto m = model(2, 64, 4, 32, 128);
  EXPECT_THROW(transformer_gemms(m, 3, 1), InputError);
  EXPECT_THROW(transformer_gemms(m, 0, 1), InputError);
  EXPECT_THROW(transformer_gemms(m, 1, 0), InputError);
  try {
    transformer_gemms(m, 3, 1);
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "--tp");
    EXPECT_NE(std::string(e.what()).find("must divide heads"), std::string::npos);
  }
}

TEST(Shapes, ScaleShrinksDimensionsKeepsBatch) {
  const auto shapes = transformer_gemms(model(1, 768, 12, 1024, 50304), 1, 1);
  const auto scaled = scale_shapes(shapes, 0.25);
  ASSERT_EQ(scaled.size(), shapes.size());
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    EXPECT_EQ(scaled[i].m, std::max<std::int64_t>(1, std::llround(shapes[i].m * 0.25)));
    EXPECT_EQ(scaled[i].batch, shapes[i].batch);
    EXPECT_EQ(scaled[i].k == 0, shapes[i].k == 0);
  }
  EXPECT_THROW(scale_shapes(shapes, 0.0), InputError);
  EXPECT_THROW(scale_shapes(shapes, 1.5), InputError);
}

TEST(DeviceBytes, OperandsOfEachKindAndTheRefusalNamesTheLargest) {
  using namespace scalefit::kernels;
  KernelShape g;
  g.name = "qkv.fwd";
  g.m = 1024, g.n = 3072, g.k = 1024, g.batch = 1;
  EXPECT_EQ(kernel_device_bytes(g, Precision::bf16), (1024ull * 1024 + 1024 * 3072 + 1024 * 3072) * 2);
  KernelShape sm;
  sm.name = "softmax.fwd";
  sm.kind = KernelKind::softmax;
  sm.m = sm.n = 4096, sm.batch = 32;
  EXPECT_EQ(kernel_device_bytes(sm, Precision::fp32), 4096ull * 4096 * 32 * 4);
  KernelShape at;
  at.name = "attention.bwd";
  at.kind = KernelKind::attention;
  at.pass = Pass::bwd;
  at.m = at.n = 2048, at.k = 128, at.batch = 16;
  EXPECT_EQ(kernel_device_bytes(at, Precision::bf16), 8ull * 16 * 2048 * 128 * 2 + 16ull * 2048 * 4);
  // Nothing saturates silently into a small number.
  KernelShape huge = sm;
  huge.m = huge.n = std::int64_t{1} << 40;
  EXPECT_EQ(kernel_device_bytes(huge, Precision::fp32), UINT64_MAX);

  const std::vector<KernelShape> shapes = {g, sm};
  EXPECT_EQ(memory_refusal(shapes, Precision::fp32, 0, "x"), "");  // unknown: no refusal
  EXPECT_EQ(memory_refusal(shapes, Precision::fp32, 1ull << 32, "x"), ""); // 2 GiB fit in 4
  const std::string why = memory_refusal(shapes, Precision::fp32, 1ull << 30, "GPU 0 free memory");
  EXPECT_NE(why.find("softmax.fwd"), std::string::npos) << why; // 2 GiB, the larger
  EXPECT_NE(why.find("GPU 0 free memory (1.00 GiB)"), std::string::npos) << why;
  EXPECT_NE(why.find("--attention fused"), std::string::npos) << why;
}

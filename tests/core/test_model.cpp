// The model config in core: YAML fields and defaults, overrides, errors with file, line, field.
#include "scalefit/core/error.hpp"
#include "scalefit/core/model.hpp"

#include <gtest/gtest.h>

using namespace scalefit;

namespace {
std::string data(const std::string &f) {
  return std::string(SCALEFIT_TEST_DATA_DIR) + "/core/" + f;
}
} // namespace

TEST(Model, OptionalFieldsRead) {
  const ModelConfig m = load_model(data("model_flags.yaml"));
  EXPECT_EQ(m.name, "tiny");
  EXPECT_EQ(m.ffn_size(), 128);
  EXPECT_EQ(m.dtype, DType::bfloat16);
  EXPECT_EQ(m.attention, Attention::unfused);
  EXPECT_FALSE(m.tied_embeddings);
}

TEST(Model, DefaultsAreFusedAndTied) {
  ModelConfig m;
  EXPECT_EQ(m.attention, Attention::fused);
  EXPECT_TRUE(m.tied_embeddings);
}

TEST(Model, BadAttentionNamesLineAndField) {
  try {
    load_model(data("model_bad_attention.yaml"));
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "attention");
    EXPECT_EQ(e.line(), 8);
  }
}

TEST(Model, OverridesApplyAndValidate) {
  ModelOverrides o;
  o.layers = 4;
  o.attention = "fused";
  o.dtype = "fp16";
  const ModelConfig m = build_model(data("model_flags.yaml"), o);
  EXPECT_EQ(m.layers, 4);
  EXPECT_EQ(m.hidden, 64);
  EXPECT_EQ(m.attention, Attention::fused);
  EXPECT_EQ(m.dtype, DType::half);
  o.attention = "sparse";
  EXPECT_THROW(build_model(data("model_flags.yaml"), o), InputError);
  ModelOverrides partial;
  partial.layers = 2;
  try {
    build_model("", partial);
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "--model");
  }
  ModelOverrides bad_heads{2, 64, 5, 32, 1000, 0, "", ""};
  EXPECT_THROW(build_model("", bad_heads), InputError); // 5 does not divide 64
}

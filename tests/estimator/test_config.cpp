// YAML loading: every shipped config loads; bad input names file, line and field.
#include "helpers.hpp"

#include "scalefit/core/error.hpp"

#include <gtest/gtest.h>

#include <filesystem>

using namespace scalefit;
using namespace scalefit::estimator;

TEST(Config, EveryShippedModelAndSystemLoads) {
  int models = 0, systems = 0;
  for (const auto &e :
       std::filesystem::directory_iterator(std::string(SCALEFIT_CONFIG_DIR) + "/models")) {
    const ModelConfig m = load_model(e.path().string());
    EXPECT_NO_THROW(validate_model(m, e.path().string()));
    ++models;
  }
  for (const auto &e :
       std::filesystem::directory_iterator(std::string(SCALEFIT_CONFIG_DIR) + "/systems")) {
    const SystemConfig s = load_system(e.path().string());
    EXPECT_GT(s.gpus_per_node, 0);
    EXPECT_FALSE(s.device.gemm_efficiency.steps.empty()) << e.path();
    ++systems;
  }
  EXPECT_GE(models, 15);
  EXPECT_GE(systems, 4);
}

TEST(Config, ModelFieldsAndDefaults) {
  const ModelConfig m = load_model(test_paths::model_path("megatron-1t"));
  EXPECT_EQ(m.layers, 128);
  EXPECT_EQ(m.hidden, 25600);
  EXPECT_EQ(m.heads, 160);
  EXPECT_EQ(m.sequence, 2048);
  EXPECT_EQ(m.vocabulary, 51200);
  EXPECT_EQ(m.ffn_size(), 4 * 25600);
  const SystemConfig p = load_system(test_paths::system_path("polaris"));
  EXPECT_EQ(p.gpus_per_node, 4);
  EXPECT_DOUBLE_EQ(p.intra.bandwidth_gbps, 80.5);
  EXPECT_DOUBLE_EQ(p.inter.bandwidth_gbps, 25);
}

TEST(Config, BadModelNamesFileLineAndField) {
  try {
    load_model(test_paths::data_path("bad_model.yaml"));
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "hidden");
    EXPECT_EQ(e.line(), 4);
    EXPECT_NE(e.file().find("bad_model.yaml"), std::string::npos);
  }
}

TEST(Config, BadSystemNamesTheTableRow) {
  try {
    load_system(test_paths::data_path("bad_system.yaml"));
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "device.gemm_efficiency[1]");
    EXPECT_EQ(e.line(), 10);
  }
  EXPECT_THROW(load_system(test_paths::data_path("no_such_file.yaml")), InputError);
}

TEST(Config, EfficiencyTableStepsAsCalculon) {
  EfficiencyTable t{{{128, 0.95}, {16, 0.9}, {1, 0.6}, {0, 0.1}}};
  EXPECT_DOUBLE_EQ(t.at(200), 0.95);
  EXPECT_DOUBLE_EQ(t.at(128), 0.95);
  EXPECT_DOUBLE_EQ(t.at(127.9), 0.9);
  EXPECT_DOUBLE_EQ(t.at(1), 0.6);
  EXPECT_DOUBLE_EQ(t.at(0.5), 0.1);
}

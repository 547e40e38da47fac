// Shared helpers of the estimator tests: the repository's configs.
#pragma once
#include "scalefit/estimator/estimator.hpp"

#include <string>

namespace scalefit::estimator::test_paths {
inline std::string model_path(const std::string &name) {
  return std::string(SCALEFIT_CONFIG_DIR) + "/models/" + name + ".yaml";
}
inline std::string system_path(const std::string &name) {
  return std::string(SCALEFIT_CONFIG_DIR) + "/systems/" + name + ".yaml";
}
inline std::string data_path(const std::string &name) {
  return std::string(SCALEFIT_TEST_DATA_DIR) + "/estimator/" + name;
}
/// A model YAML with attention set to unfused: the 2022 papers (Korthikanti, Megatron-LM, ZeRO,
/// Cheng et al.) ran Megatron's unfused attention, so their validation points select it.
inline ModelConfig load_unfused(const std::string &path) {
  ModelConfig m = load_model(path);
  m.attention = Attention::unfused;
  return m;
}
} // namespace scalefit::estimator::test_paths

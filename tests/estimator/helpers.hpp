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
} // namespace scalefit::estimator::test_paths

// Shared helpers of the estimator tests: the repository's configs.
#pragma once
#include "scalefit/core/error.hpp"
#include "scalefit/estimator/estimator.hpp"

#include <gtest/gtest.h>

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

namespace scalefit::estimator::test_checks {
/// Expects `est` to refuse `s` with Estimator::check's `why` and validate's InputError naming
/// `field` (a CLI flag such as "--cp").
inline void expect_refused(const Estimator &est, const Strategy &s, Reject why,
                           const std::string &field) {
  EXPECT_EQ(est.check(s, 0), why);
  try {
    est.validate(s, 0);
    ADD_FAILURE() << "accepted; expected a refusal naming " << field;
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), field) << e.what();
  }
}
} // namespace scalefit::estimator::test_checks

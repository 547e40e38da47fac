// Shared helpers of the estimator tests: the repository's configs.
#pragma once
#include "scalefit/core/error.hpp"
#include "scalefit/estimator/estimator.hpp"

#include <gtest/gtest.h>

#include <memory>
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

namespace scalefit::estimator::test_run {
/// The estimator of configs/models/`model`.yaml on configs/systems/`system`.yaml.
inline Estimator make(const char *model, const char *system = "dgx-h100") {
  return Estimator(load_model(test_paths::model_path(model)),
                   load_system(test_paths::system_path(system)));
}
/// `s` validated (an InputError if refused) and evaluated with its messages recorded.
inline std::unique_ptr<Estimate> run(const Estimator &est, const Strategy &s) {
  est.validate(s, 0);
  auto e = std::make_unique<Estimate>();
  est.evaluate(s, *e);
  return e;
}
/// The first recorded message of parallelism `by` and collective `op`; nullptr when none.
inline const Message *find(const Estimate &e, Parallelism by, Op op) {
  for (int i = 0; i < e.n_messages; ++i)
    if (e.messages[i].by == by && e.messages[i].op == op)
      return &e.messages[i];
  return nullptr;
}
/// Llama 3 8B's layout over dp x cp ranks (s = 8192): ZeRO-1, global batch 64.
inline Strategy llama8b(int dp, int cp) {
  Strategy s;
  s.dp = dp, s.cp = cp, s.zero = 1, s.global_batch = 64;
  return s;
}
} // namespace scalefit::estimator::test_run

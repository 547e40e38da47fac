// Pricing by a measured fit file (fitting/predict.hpp) with spec fallback, and the "priced by"
// record. Fixture: tests/data/estimator/fit_dgx_partial.yaml (hand-written alpha-beta entries).
#include "helpers.hpp"

#include "scalefit/core/error.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace scalefit;
using namespace scalefit::estimator;

#ifdef SCALEFIT_TEST_FIT
TEST(FitPricing, FitCoversWhatItHasAndSpecTheRest) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-a100-80gb"));
  auto spec = std::make_shared<SpecCommModel>(sys);
  auto fit = make_fit_comm_model(test_paths::data_path("fit_dgx_partial.yaml"), spec, DType::half);
  const CommGroup tp8 = group_shape(8, 1, 8);
  for (double bytes : {4096.0, 1e6, 1.0e8, 3.3e9}) {
    const CommPrice p = fit->price(Op::allreduce, tp8, bytes);
    EXPECT_NEAR(p.time_us, 25.0 + bytes / 130e3, 0.005 * (25.0 + bytes / 130e3)) << bytes;
    EXPECT_TRUE(fit->source_is_fit(p.source));
    EXPECT_NE(fit->source_name(p.source).find("allreduce:world:8=1x8"), std::string::npos);
    EXPECT_FALSE(p.extrapolated);
  }
  EXPECT_TRUE(fit->price(Op::allreduce, tp8, 100).extrapolated); // below the measured range
  // AllGather is not in the file; neither is any inter-node group: spec curves.
  const CommPrice ag = fit->price(Op::allgather, tp8, 1e8);
  EXPECT_FALSE(fit->source_is_fit(ag.source));
  EXPECT_DOUBLE_EQ(ag.time_us, spec->price(Op::allgather, tp8, 1e8).time_us);
  const CommGroup dp = group_shape(16, 8, 8);
  EXPECT_EQ(fit->source_name(fit->price(Op::allreduce, dp, 1e8).source), "spec:inter");

  // In an estimate: TP messages priced by the fit, DP by the spec, and the time follows the fit.
  Estimator est(test_paths::load_unfused(test_paths::model_path("gpt-22b-korthikanti")), sys, fit);
  Strategy s;
  s.tp = 8, s.dp = 2, s.micro_batch = 4, s.global_batch = 8, s.recompute = Recompute::full;
  Estimate e;
  est.evaluate(s, e);
  int by_fit = 0, by_spec = 0;
  for (int i = 0; i < e.n_messages; ++i) {
    const Message &m = e.messages[i];
    if (m.by == Parallelism::tp) {
      EXPECT_TRUE(fit->source_is_fit(m.source));
      EXPECT_NEAR(m.time_us, 25.0 + m.bytes / 130e3, 0.005 * m.time_us);
      ++by_fit;
    } else {
      EXPECT_FALSE(fit->source_is_fit(m.source));
      ++by_spec;
    }
  }
  EXPECT_GT(by_fit, 0);
  EXPECT_GT(by_spec, 0);
}

// MoE dispatch/combine (Op::alltoall messages): the fit file's alltoallv of the chosen matrix
// (skewed falls back to uniform), else its alltoall, else the spec. Fixtures: hand-written
// alpha-beta entries on 8 ranks of one node (tests/data/estimator/fit_a2a_*.yaml).
TEST(FitPricing, AlltoallvCurvePricesDispatchThenAlltoallThenSpec) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-a100-80gb"));
  auto spec = std::make_shared<SpecCommModel>(sys);
  const CommGroup ep8 = group_shape(8, 1, 8);
  const double bytes = 256e6;
  const double t_a2a = 30.0 + bytes / 100e3, t_uni = 40.0 + bytes / 90e3,
               t_skw = 50.0 + bytes / 60e3;
  auto price = [&](const char *file, AlltoallMatrix mx, const CommGroup &g) {
    auto fit = make_fit_comm_model(test_paths::data_path(file), spec, DType::bfloat16, mx);
    const CommPrice p = fit->price(Op::alltoall, g, bytes);
    return std::make_pair(p.time_us, fit->source_name(p.source));
  };
  using M = AlltoallMatrix;
  // only alltoall
  auto r = price("fit_a2a_alltoall_only.yaml", M::uniform, ep8);
  EXPECT_NEAR(r.first, t_a2a, 0.005 * t_a2a);
  EXPECT_EQ(r.second, "fit:alltoall:world:8=1x8:half:out-of-place");
  r = price("fit_a2a_alltoall_only.yaml", M::skewed, ep8);
  EXPECT_NEAR(r.first, t_a2a, 0.005 * t_a2a);
  // only alltoallv: uniform by default, skewed when asked
  r = price("fit_a2a_alltoallv_only.yaml", M::uniform, ep8);
  EXPECT_NEAR(r.first, t_uni, 0.005 * t_uni);
  EXPECT_NE(r.second.find("alltoallv:world:8=1x8:half:out-of-place:uniform"), std::string::npos);
  r = price("fit_a2a_alltoallv_only.yaml", M::skewed, ep8);
  EXPECT_NEAR(r.first, t_skw, 0.005 * t_skw);
  EXPECT_NE(r.second.find(":skewed"), std::string::npos);
  // both: uniform alltoallv first; skewed asked but not measured falls back to uniform
  r = price("fit_a2a_both.yaml", M::uniform, ep8);
  EXPECT_NEAR(r.first, t_uni, 0.005 * t_uni);
  r = price("fit_a2a_both.yaml", M::skewed, ep8);
  EXPECT_NEAR(r.first, t_uni, 0.005 * t_uni);
  EXPECT_NE(r.second.find(":uniform"), std::string::npos);
  // a group no file measured (16 ranks on 2 nodes): the spec
  const CommGroup ep16 = group_shape(16, 1, 8);
  r = price("fit_a2a_both.yaml", M::uniform, ep16);
  EXPECT_DOUBLE_EQ(r.first, spec->price(Op::alltoall, ep16, bytes).time_us);
  EXPECT_EQ(r.second, "spec:inter");
  // other ops never take the alltoallv curve
  auto fit = make_fit_comm_model(test_paths::data_path("fit_a2a_alltoallv_only.yaml"), spec,
                                 DType::bfloat16);
  EXPECT_FALSE(fit->source_is_fit(fit->price(Op::allgather, ep8, bytes).source));

  // In an estimate: the EP messages say which curve priced them.
  Estimator est(test_paths::load_unfused(test_paths::model_path("mixtral-8x7b")), sys,
                make_fit_comm_model(test_paths::data_path("fit_a2a_alltoallv_only.yaml"), spec,
                                    DType::bfloat16, M::skewed));
  Strategy s;
  s.tp = 1, s.dp = 8, s.ep = 8, s.pp = 1, s.zero = 1, s.micro_batch = 1, s.global_batch = 8;
  s.recompute = Recompute::full;
  Estimate e;
  est.evaluate(s, e);
  int n_ep = 0;
  for (int i = 0; i < e.n_messages; ++i)
    if (e.messages[i].by == Parallelism::ep) {
      ++n_ep;
      EXPECT_NEAR(e.messages[i].time_us, 50.0 + e.messages[i].bytes / 60e3,
                  0.005 * e.messages[i].time_us);
    }
  EXPECT_GT(n_ep, 0);
}

TEST(FitPricing, BadFitFileIsAnInputError) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-a100-80gb"));
  auto spec = std::make_shared<SpecCommModel>(sys);
  EXPECT_THROW(make_fit_comm_model(test_paths::data_path("bad_model.yaml"), spec, DType::half),
               InputError);
}
#else
TEST(FitPricing, WithoutFittingTheFitOptionIsAnInputError) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-a100-80gb"));
  EXPECT_FALSE(fit_support_available());
  EXPECT_THROW(make_fit_comm_model(test_paths::data_path("fit_dgx_partial.yaml"),
                                   std::make_shared<SpecCommModel>(sys), DType::half),
               InputError);
}
#endif

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

// Fit file: build from records, YAML round trip, loader errors, predict with range and trend.
#include "scalefit/fitting/fit_file.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/units.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <random>

using namespace scalefit;
using namespace scalefit::fitting;

namespace {

/// Allreduce curves on `nnodes` x 8 ranks: latency 20 + 5 log2(nnodes) us, bandwidth 200/nnodes^0.5
/// GB/s.
RecordSet synthetic_set(int nnodes, unsigned seed) {
  RecordSet rs;
  ContextRecord c;
  c.system = "synthetic";
  c.backend = "test";
  c.nranks = 8 * nnodes;
  c.nnodes = nnodes;
  c.ranks_per_node = 8;
  rs.contexts.push_back(c);
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 0.005);
  CurveModel m;
  m.kind = ModelKind::logistic;
  m.alpha_us = 20 + 5 * std::log2(nnodes);
  m.steps = {{200 / std::sqrt(nnodes), 0.8, 1 << 20}};
  for (double s = 8; s <= (1 << 30); s *= 2) {
    MeasurementRecord r;
    r.op = Op::allreduce;
    r.group = {"world", 8 * nnodes, nnodes, 8};
    r.bytes = static_cast<std::uint64_t>(s);
    r.time_us = m.time_us(s) * std::exp(noise(rng));
    r.busbw_gbps = gbps(s, r.time_us) * busbw_factor(r.op, 8 * nnodes);
    rs.measurements.push_back(r);
    rs.context_of.push_back(0);
  }
  return rs;
}

FitFile synthetic_fit() {
  return fit_records({synthetic_set(2, 1), synthetic_set(4, 2)}, {"a.jsonl", "b.jsonl"});
}

std::string replace(std::string s, const std::string &from, const std::string &to) {
  const auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos)
    s.replace(pos, from.size(), to);
  return s;
}

InputError parse_error(const std::string &text) {
  try {
    parse_fit_file(text, "bad.yaml");
  } catch (const InputError &e) {
    return e;
  }
  ADD_FAILURE() << "no InputError";
  return InputError("none");
}

} // namespace

TEST(FitFile, BuildsEntriesAndScalingSeries) {
  const FitFile f = synthetic_fit();
  ASSERT_EQ(f.entries.size(), 2u);
  EXPECT_EQ(f.entries[0].id, "allreduce:world:16=2x8:float:sum:out-of-place");
  ASSERT_EQ(f.scaling.size(), 1u);
  EXPECT_EQ(f.scaling[0].nnodes, (std::vector<int>{2, 4}));
  ASSERT_EQ(f.scaling[0].efficiency.size(), 1u);
  EXPECT_LT(f.scaling[0].efficiency[0].size_weighted, 1.0); // 4 nodes are slower
  EXPECT_GT(f.scaling[0].alpha_us.slope, 0);
  EXPECT_LT(f.scaling[0].busbw_gbps.slope, 0 + 1e9);
}

TEST(FitFile, YamlRoundTrip) {
  const FitFile f = synthetic_fit();
  const FitFile g = parse_fit_file(to_yaml(f), "mem.yaml");
  EXPECT_EQ(g.schema, kFitSchema);
  ASSERT_EQ(g.entries.size(), f.entries.size());
  for (std::size_t i = 0; i < f.entries.size(); ++i) {
    const FitEntry &a = f.entries[i], &b = g.entries[i];
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.model.kind, b.model.kind);
    EXPECT_EQ(a.group, b.group);
    EXPECT_DOUBLE_EQ(a.min_bytes, b.min_bytes);
    EXPECT_DOUBLE_EQ(a.max_bytes, b.max_bytes);
    for (double s : {8.0, 4096.0, 1e6, 1e9})
      EXPECT_NEAR(a.model.time_us(s), b.model.time_us(s), 1e-8 * a.model.time_us(s));
    EXPECT_NEAR(a.quality.mape_pct, b.quality.mape_pct, 1e-8);
  }
  ASSERT_EQ(g.scaling.size(), 1u);
  EXPECT_NEAR(g.scaling[0].alpha_us.slope, f.scaling[0].alpha_us.slope, 1e-8);
  const CommQuery q{Op::allreduce, 64, 8, std::nullopt};
  EXPECT_NEAR(predict(f, q, 1e6)->time_us, predict(g, q, 1e6)->time_us, 1e-6);
}

TEST(FitFile, LoadFromDiskNamesThePath) {
  const std::string path = ::testing::TempDir() + "fit_roundtrip.yaml";
  write_fit_file(synthetic_fit(), path);
  const FitFilePtr p = load_fit_file(path);
  EXPECT_EQ(p->path, path);
  EXPECT_EQ(p->entries.size(), 2u);
  EXPECT_THROW(load_fit_file(path + ".missing"), InputError);
}

TEST(FitFile, LoaderErrors) {
  const std::string good = to_yaml(synthetic_fit());
  {
    const InputError e =
        parse_error(replace(good, "schema: scalefit.fit/2", "schema: scalefit.fit/9"));
    EXPECT_EQ(e.field(), "schema");
    EXPECT_EQ(e.line(), 1);
    EXPECT_EQ(e.file(), "bad.yaml");
  }
  {
    const InputError e = parse_error(replace(good, "    model: logistic\n", ""));
    EXPECT_EQ(e.field(), "entries[0].model");
    EXPECT_GT(e.line(), 1);
    EXPECT_NE(std::string(e.what()).find("allreduce:world:16=2x8"), std::string::npos);
  }
  {
    const InputError e = parse_error(replace(good, "model: logistic", "model: spline"));
    EXPECT_EQ(e.field(), "entries[0].model");
    EXPECT_NE(e.message().find("unknown model 'spline'"), std::string::npos);
  }
  {
    const InputError e = parse_error(replace(good, "alpha_us: {value: ", "alpha_us: {value: abc"));
    EXPECT_EQ(e.field(), "entries[0].parameters.alpha_us.value");
    EXPECT_GT(e.line(), 1);
  }
  {
    const InputError e = parse_error(replace(good, "entries:", "entries: 3\nold_entries:"));
    EXPECT_EQ(e.field(), "entries");
  }
  EXPECT_THROW(parse_fit_file("schema: [unclosed", "x.yaml"), InputError);
}

TEST(Predict, ExactEntryInsideAndOutsideTheRange) {
  const FitFile f = synthetic_fit();
  const FitEntry &e = f.entries[0];
  const CommQuery q{Op::allreduce, 16, 2, DType::float32};
  const auto in = predict(f, q, 65536);
  ASSERT_TRUE(in);
  EXPECT_FALSE(in->extrapolated);
  EXPECT_EQ(in->entry, e.id);
  EXPECT_NEAR(in->time_us, e.model.time_us(65536), 1e-9);
  EXPECT_NEAR(in->algbw_gbps, 65536 / (in->time_us * 1e3), 1e-9);
  EXPECT_NEAR(in->busbw_gbps, in->algbw_gbps * 2 * 15 / 16.0, 1e-9);
  const auto below = predict(f, q, 2);
  ASSERT_TRUE(below);
  EXPECT_TRUE(below->extrapolated);
  EXPECT_NEAR(below->time_us, e.model.time_us(e.min_bytes), 1e-9); // latency floor
  const auto above = predict(f, q, 4.0 * e.max_bytes);
  ASSERT_TRUE(above);
  EXPECT_TRUE(above->extrapolated);
  // Above the range: continue at the algbw of the largest measured size, A = s_max / t(s_max),
  // so 4 s_max takes t(s_max) + 3 s_max / A = 4 t(s_max).
  EXPECT_NEAR(above->time_us, 4.0 * e.model.time_us(e.max_bytes), 1e-6 * above->time_us);
  EXPECT_NEAR(e.asymptotic_algbw_gbps(), e.max_bytes / (e.model.time_us(e.max_bytes) * 1e3), 1e-9);
}

TEST(Predict, ScalingTrendForUnmeasuredNodeCounts) {
  const FitFile f = synthetic_fit();
  const auto p8 = predict(f, CommQuery{Op::allreduce, 64, 8, std::nullopt}, 1 << 26);
  const auto p4 = predict(f, CommQuery{Op::allreduce, 32, 4, std::nullopt}, 1 << 26);
  ASSERT_TRUE(p8 && p4);
  EXPECT_TRUE(p8->extrapolated);
  EXPECT_NE(p8->note.find("scaling trend"), std::string::npos);
  EXPECT_GT(p8->time_us, p4->time_us); // bandwidth falls with nodes in the synthetic data
  EXPECT_FALSE(predict(f, CommQuery{Op::allgather, 16, 2, std::nullopt}, 1024));
  EXPECT_FALSE(
      predict(f, CommQuery{Op::allreduce, 12, 3, std::nullopt}, 1024)); // 4 ranks/node: no series
}

TEST(FitFile, UnfittableCurveIsListedWithItsId) {
  RecordSet rs = synthetic_set(2, 3);
  MeasurementRecord r = rs.measurements.front();
  r.op = Op::broadcast;
  r.root = 0;
  for (std::uint64_t b : {8u}) { // one point: fewer than any model needs
    r.bytes = b;
    rs.measurements.push_back(r);
    rs.context_of.push_back(0);
  }
  const FitFile f = fit_records({rs}, {"c.jsonl"});
  ASSERT_EQ(f.unfitted.size(), 1u);
  EXPECT_EQ(f.unfitted[0].id, "broadcast:world:16=2x8:float:root0:out-of-place@synthetic");
  EXPECT_EQ(f.unfitted[0].points, 1);
  EXPECT_NE(f.unfitted[0].reason.find("usable points"), std::string::npos);
  const FitFile g = parse_fit_file(to_yaml(f), "mem.yaml");
  ASSERT_EQ(g.unfitted.size(), 1u);
  EXPECT_EQ(g.unfitted[0].id, f.unfitted[0].id);
}

TEST(FitFile, DropsAndLiftsRoundTripAndValidation) {
  FitFile f = synthetic_fit();
  CurveModel &m = f.entries[0].model;
  m.kind = ModelKind::regimes;
  m.steps = {{150, 0.9, 65536}};
  m.drops = {{0.4, 2.0, 3e7}};
  m.lifts = {{6.5, 3.0, 4096}};
  f.entries[0].stderrs.clear();
  const std::string good = to_yaml(f);
  const FitFile back = parse_fit_file(good, "good.yaml");
  const CurveModel &n = back.entries[0].model;
  ASSERT_EQ(n.drops.size(), 1u);
  ASSERT_EQ(n.lifts.size(), 1u);
  EXPECT_NEAR(n.drops[0].fraction, 0.4, 1e-9);
  EXPECT_NEAR(n.lifts[0].delta_us, 6.5, 1e-9);
  for (double s : {8.0, 4096.0, 1e6, 1e9})
    EXPECT_NEAR(n.time_us(s), m.time_us(s), 1e-8 * m.time_us(s)) << s;
  {
    const InputError e =
        parse_error(replace(good, "fraction: {value: 0.4", "fraction: {value: 1.4"));
    EXPECT_EQ(e.field(), "entries[0].parameters.drops[0].fraction");
    EXPECT_NE(std::string(e.what()).find("allreduce:world:16=2x8"), std::string::npos);
  }
  {
    const InputError e =
        parse_error(replace(good, "delta_us: {value: 6.5", "delta_us: {value: -6.5"));
    EXPECT_EQ(e.field(), "entries[0].parameters.lifts[0].delta_us");
  }
  {
    // A /1 file cannot carry drops: an old reader would ignore them and mis-predict.
    const InputError e =
        parse_error(replace(good, "schema: scalefit.fit/2", "schema: scalefit.fit/1"));
    EXPECT_EQ(e.field(), "entries[0].parameters.drops");
    EXPECT_NE(e.message().find("scalefit.fit/2"), std::string::npos);
  }
  {
    // ... while a /1 file without them still loads.
    const std::string v1 =
        replace(to_yaml(synthetic_fit()), "schema: scalefit.fit/2", "schema: scalefit.fit/1");
    EXPECT_EQ(parse_fit_file(v1, "v1.yaml").entries.size(), 2u);
  }
  {
    const InputError e = parse_error(replace(good, "model: regimes", "model: logistic"));
    EXPECT_EQ(e.field(), "entries[0].parameters.drops");
  }
}

TEST(FitFile, FileCutShortIsRefusedEvenAtAnEntryBoundary) {
  const std::string good = to_yaml(synthetic_fit());
  ASSERT_EQ(good.substr(good.size() - 10), "end: true\n");
  // Each cut leaves valid YAML that an unguarded loader would read as a smaller, complete file.
  for (const std::string at : {"id: allreduce:world:32=4x8", "unfitted:", "scaling:", "end: true"}) {
    const auto pos = good.find(at);
    ASSERT_NE(pos, std::string::npos) << at;
    const std::string cut = good.substr(0, good.rfind('\n', pos) + 1);
    const InputError e = parse_error(cut);
    EXPECT_EQ(e.file(), "bad.yaml");
    EXPECT_EQ(e.field(), "end") << at;
    EXPECT_NE(e.message().find("truncated"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_error(replace(good, "end: true", "end: false")).field(), "end");
  // The marker must be the last key: moved to the top, a cut file would still carry it.
  const std::string moved =
      "end: true\n" + replace(good, "end: true\n", "");
  EXPECT_EQ(parse_error(moved).field(), "end");
}

TEST(FitFile, WriteIsAtomicAndNamesThePathOnFailure) {
  const std::string path = ::testing::TempDir() + "fit_atomic.yaml";
  write_fit_file(synthetic_fit(), path);
  const std::string before = load_fit_file(path)->created;
  try {
    write_fit_file(synthetic_fit(), "/nonexistent-scalefit-dir/fit.yaml");
    ADD_FAILURE() << "no InputError";
  } catch (const InputError &e) {
    EXPECT_EQ(e.file(), "/nonexistent-scalefit-dir/fit.yaml");
  }
  try {
    write_fit_file(synthetic_fit(), "/dev/full");
    ADD_FAILURE() << "no InputError";
  } catch (const InputError &e) {
    EXPECT_EQ(e.file(), "/dev/full");
  }
  EXPECT_EQ(load_fit_file(path)->created, before);
  // A fit its own loader would refuse (here a scaling trend slope of 3.5e14 GB/s, as a noisy
  // 1-vs-2-node run once produced) is a bug: reported, and the old file is kept.
  FitFile bad = synthetic_fit();
  ASSERT_FALSE(bad.scaling.empty());
  bad.scaling[0].busbw_gbps.slope = 3.5e14;
  EXPECT_THROW(write_fit_file(bad, path), std::logic_error);
  EXPECT_NE(load_fit_file(path)->scaling.at(0).busbw_gbps.slope, 3.5e14);
}

TEST(FitFile, NonFiniteAndDenormalNumbersAreRefusedWithTheField) {
  const std::string good = to_yaml(synthetic_fit());
  {
    // A NaN in a scaling trend made `predict` print nan.
    const auto at = good.find("intercept: ");
    ASSERT_NE(at, std::string::npos);
    std::string bad = good;
    bad.replace(at, good.find(',', at) - at, "intercept: .nan");
    const InputError e = parse_error(bad);
    EXPECT_EQ(e.field(), "scaling[0].trend.alpha_us.intercept");
    EXPECT_NE(e.message().find("finite"), std::string::npos) << e.what();
  }
  {
    const InputError e = parse_error(replace(good, "alpha_us: {value: ", "alpha_us: {value: .inf, was: "));
    EXPECT_EQ(e.field(), "entries[0].parameters.alpha_us.value");
  }
  {
    const InputError e =
        parse_error(replace(good, "bmax_gbps: {value: ", "bmax_gbps: {value: 4.9e-324, was: "));
    EXPECT_EQ(e.field(), "entries[0].parameters.steps[0].bmax_gbps");
  }
  {
    const auto at = good.find("size_range_bytes: [");
    ASSERT_NE(at, std::string::npos);
    std::string bad = good;
    bad.replace(at, good.find(']', at) + 1 - at, "size_range_bytes: [8, .inf]");
    EXPECT_EQ(parse_error(bad).field(), "entries[0].size_range_bytes[1]");
  }
}

TEST(FitFile, InvalidUtf8IsRefusedWithTheLine) {
  const std::string good = to_yaml(synthetic_fit());
  const InputError e = parse_error(replace(good, "system: synthetic", "system: synth\xE9tic"));
  EXPECT_GT(e.line(), 1);
  EXPECT_NE(e.message().find("0xE9"), std::string::npos) << e.what();
}

// Two benchmarks of one op on one group (OSU's osu_latency and osu_bw in one file) are two entries;
// predict prefers the single-message one unless --method names the other.
TEST(FitFile, MethodsAreSeparateEntriesAndPredictChoosesByMethod) {
  RecordSet rs;
  ContextRecord c;
  c.system = "osu";
  c.nranks = 2;
  c.nnodes = 2;
  c.ranks_per_node = 1;
  rs.contexts.push_back(c);
  for (const char *method : {"osu_bw", "osu_latency"})
    for (double s = 1; s <= (1 << 22); s *= 2) {
      MeasurementRecord r;
      r.op = Op::sendrecv;
      r.group = {"world", 2, 2, 1};
      r.dtype = DType::int8;
      r.method = method;
      r.bytes = static_cast<std::uint64_t>(s);
      // osu_bw: no latency per message in a window; osu_latency: 2 us per message.
      r.time_us = (std::string(method) == "osu_bw" ? 0.1 : 2.0) + s / 10e3;
      rs.measurements.push_back(r);
      rs.context_of.push_back(0);
    }
  const FitFile fit = fit_records({rs}, {"osu.jsonl"});
  ASSERT_EQ(fit.entries.size(), 2u);
  EXPECT_NE(fit.entries[0].id, fit.entries[1].id);
  EXPECT_TRUE(fit.scaling.empty());
  const FitFile back = parse_fit_file(to_yaml(fit), "osu.yaml");
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[0].method, "osu_bw");
  EXPECT_EQ(back.entries[1].method, "osu_latency");
  CommQuery q;
  q.op = Op::sendrecv;
  q.nranks = 2;
  q.nnodes = 2;
  auto p = predict(back, q, 8);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->entry, back.entries[1].id); // osu_latency by default
  EXPECT_NEAR(p->time_us, 2.0, 0.05);
  q.method = "osu_bw";
  p = predict(back, q, 8);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->entry, back.entries[0].id);
  EXPECT_NEAR(p->time_us, 0.1, 0.05);
  q.method = "osu_bibw";
  EXPECT_FALSE(predict(back, q, 8));
  EXPECT_THROW(parse_fit_file(replace(to_yaml(fit), "method: osu_bw", "method: \"a b\""),
                              "bad.yaml"),
               InputError);
}

// Issue 19: a misspelled key read as absent showed `nan` in the report; unknown keys are refused
// with file, line and field, and quality figures must be finite and in range.
TEST(FitFile, UnknownKeysAndNonFiniteQualityAreRefused) {
  const std::string good = to_yaml(synthetic_fit());
  {
    const InputError e = parse_error(replace(good, "mape_pct:", "mape_pcnt:"));
    EXPECT_EQ(e.field(), "entries[0].quality.mape_pcnt");
    EXPECT_GT(e.line(), 1);
    EXPECT_EQ(e.file(), "bad.yaml");
    EXPECT_NE(e.message().find("unknown key"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_error(replace(good, "    model: logistic\n", "    model: logistic\n    modle: x\n"))
                .field(),
            "entries[0].modle");
  EXPECT_EQ(parse_error(replace(good, "entries:", "entires: []\nentries:")).field(), "entires");
  EXPECT_EQ(parse_error(replace(good, "alpha_us:", "alpha_usec: {value: 1}\n      alpha_us:"))
                .field(),
            "entries[0].parameters.alpha_usec");
  {
    const auto at = good.find("mape_pct: ");
    ASSERT_NE(at, std::string::npos);
    std::string bad = good;
    bad.replace(at, good.find(',', at) - at, "mape_pct: .nan");
    EXPECT_EQ(parse_error(bad).field(), "entries[0].quality.mape_pct");
    bad = good;
    // An error in percent has no physical ceiling (a fit may miss a point it left out by any
    // factor): negative and infinite figures are what is refused.
    bad.replace(at, good.find(',', at) - at, "mape_pct: -5");
    EXPECT_EQ(parse_error(bad).field(), "entries[0].quality.mape_pct");
    bad = good;
    bad.replace(at, good.find(',', at) - at, "mape_pct: .inf");
    EXPECT_EQ(parse_error(bad).field(), "entries[0].quality.mape_pct");
  }
}

// Every value the writer writes, the loader accepts: a figure not available (NaN) is written as
// `~` (null), which loads as "not available", never as `.nan`, which the loader refuses.
TEST(FitFile, QualityNotAvailableRoundTripsAsNull) {
  FitFile f = synthetic_fit();
  f.entries[0].quality.mape_pct = std::nan("");
  f.entries[0].quality.rmse_log = std::numeric_limits<double>::infinity();
  const std::string text = to_yaml(f);
  EXPECT_EQ(text.find(".nan"), std::string::npos);
  EXPECT_EQ(text.find(".inf"), std::string::npos);
  const FitFile g = parse_fit_file(text, "null.yaml");
  EXPECT_TRUE(std::isnan(g.entries[0].quality.mape_pct));
  EXPECT_TRUE(std::isnan(g.entries[0].quality.rmse_log));
}

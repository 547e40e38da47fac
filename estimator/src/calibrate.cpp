// Framework constants from measured steps: grid search on relative time error, mean memory gap.
#include "scalefit/estimator/calibrate.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/jsonl.hpp"
#include "scalefit/core/units.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <cstdint>
#include <fstream>

namespace scalefit::estimator {
namespace {

double sq_time_error(const std::vector<MeasuredStep> &steps, const SystemConfig &sys,
                     const fitting::ComputeSection &c) {
  double sum = 0;
  for (const MeasuredStep &st : steps) {
    const double r = estimate_step(st, sys, c).time_s.iteration / st.iter_s - 1;
    sum += r * r;
  }
  return sum;
}

} // namespace

std::vector<MeasuredStep> read_steps(const std::string &path) {
  std::vector<MeasuredStep> out;
  for_each_json_line(path, [&](const nlohmann::json &j, long no) {
    auto num = [&](const char *field, bool required, double fallback, double lo,
                   double hi) -> double {
      if (!j.contains(field)) {
        if (required)
          throw InputError("missing field", path, no, field);
        return fallback;
      }
      if (!j[field].is_number())
        throw InputError("expected a number", path, no, field);
      const double v = j[field].get<double>();
      if (!std::isfinite(v) || v < lo || v > hi)
        throw InputError("out of range", path, no, field);
      return v;
    };
    auto whole = [&](const char *field, bool required, int fallback, int lo) -> int {
      const double v = num(field, required, fallback, lo, 1e9);
      if (v != std::floor(v))
        throw InputError("expected an integer", path, no, field);
      return static_cast<int>(v);
    };
    MeasuredStep s;
    s.origin = path + ":" + std::to_string(no);
    s.name = j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>()
                                                          : "step " + std::to_string(no);
    ModelConfig &m = s.model;
    m.name = s.name;
    m.layers = whole("l", true, 0, 1);
    m.hidden = whole("h", true, 0, 1);
    m.heads = whole("a", true, 0, 1);
    m.vocabulary = whole("V", true, 0, 1);
    m.sequence = whole("s", true, 0, 1);
    m.dtype = DType::bfloat16;
    m.tied_embeddings = false;
    if (j.contains("attention")) {
      const auto a = j["attention"].is_string()
                         ? parse_attention(j["attention"].get<std::string>())
                         : std::nullopt;
      if (!a)
        throw InputError("expected \"fused\" or \"unfused\"", path, no, "attention");
      m.attention = *a;
    }
    if (m.hidden % m.heads != 0)
      throw InputError("a must divide h", path, no, "a");
    Strategy &st = s.strategy;
    st.framework = Framework::pytorch;
    st.micro_batch = whole("b", true, 0, 1);
    st.dp = whole("dp", false, 1, 1);
    st.tp = whole("tp", false, 1, 1);
    st.pp = whole("pp", false, 1, 1);
    st.zero = whole("zero", false, 0, 0);
    if (st.zero > 3)
      throw InputError("out of range", path, no, "zero");
    const std::int64_t batch = std::int64_t{st.dp} * st.micro_batch; // no int overflow
    if (batch > (1 << 30))
      throw InputError("dp * b = " + std::to_string(batch) + " exceeds 2^30", path, no, "b");
    st.global_batch = static_cast<int>(batch);
    validate_model(m, s.origin); // dimension ranges (4 h and s^2 h stay finite and exact)
    if (j.contains("recompute")) {
      if (!j["recompute"].is_boolean())
        throw InputError("expected true or false", path, no, "recompute");
      st.recompute = j["recompute"].get<bool>() ? Recompute::full : Recompute::none;
    }
    s.iter_s = num("iter_s", true, 0, 1e-9, 1e6);
    s.peak_gib = num("peak_mem_gib", true, 0, 1e-9, 1e6);
    out.push_back(std::move(s));
    return true;
  });
  if (out.empty())
    throw InputError("no steps in the file", path);
  return out;
}

Estimate estimate_step(const MeasuredStep &step, const SystemConfig &system,
                       const fitting::ComputeSection &compute) {
  Estimator e(step.model, system);
  e.use_compute(compute);
  e.validate(step.strategy, 0);
  Estimate out;
  e.evaluate(step.strategy, out);
  return out;
}

fitting::FrameworkConstants calibrate(const std::vector<MeasuredStep> &steps,
                                      const SystemConfig &system,
                                      const fitting::ComputeSection &compute) {
  if (steps.empty())
    throw InputError("no steps to calibrate on");
  fitting::ComputeSection c = compute;
  fitting::FrameworkConstants &k = c.framework;
  k.present = true;
  k.memory_overhead_gib = 0;
  double best = INFINITY, best_d = 0, best_e = 1;
  auto scan = [&](double d0, double d1, double dd, double e0, double e1, double de) {
    for (double d = d0; d <= d1 + 1e-9; d += dd)
      for (double e = e0; e <= e1 + 1e-9; e += de) {
        if (d < 0 || e < 0.5 || e > 2)
          continue;
        k.dispatch_us = d;
        k.memory_efficiency = e;
        const double err = sq_time_error(steps, system, c);
        if (err < best) {
          best = err;
          best_d = d;
          best_e = e;
        }
      }
  };
  scan(0, 50, 1, 0.5, 2, 0.05);
  scan(best_d - 1, best_d + 1, 0.1, best_e - 0.05, best_e + 0.05, 0.005);
  k.dispatch_us = best_d;
  k.memory_efficiency = best_e;
  double gap = 0;
  for (const MeasuredStep &st : steps)
    gap += st.peak_gib - estimate_step(st, system, c).memory_bytes.total / kGiB;
  k.memory_overhead_gib = std::max(0.0, gap / steps.size());
  double et = 0, em = 0;
  for (const MeasuredStep &st : steps) {
    const Estimate e = estimate_step(st, system, c);
    et += std::abs(e.time_s.iteration / st.iter_s - 1);
    em += std::abs(e.memory_bytes.total / kGiB / st.peak_gib - 1);
  }
  k.steps = static_cast<int>(steps.size());
  k.time_mape_pct = 100 * et / steps.size();
  k.memory_mape_pct = 100 * em / steps.size();
  return k;
}

std::vector<StepErrors> calibration_errors(const std::vector<MeasuredStep> &steps,
                                           const SystemConfig &system,
                                           const fitting::ComputeSection &compute) {
  fitting::ComputeSection raw = compute, all = compute;
  raw.framework = {};
  all.framework = calibrate(steps, system, compute);
  std::vector<StepErrors> out;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    StepErrors r;
    const MeasuredStep &st = steps[i];
    r.name = st.name;
    r.measured_s = st.iter_s;
    r.measured_gib = st.peak_gib;
    const Estimate u = estimate_step(st, system, raw), c = estimate_step(st, system, all);
    r.uncalibrated_s = u.time_s.iteration;
    r.uncalibrated_gib = u.memory_bytes.total / kGiB;
    r.calibrated_s = c.time_s.iteration;
    r.calibrated_gib = c.memory_bytes.total / kGiB;
    // one step: nothing to leave it out of; NaN says "not available" (not 0% error)
    r.loo_s = std::numeric_limits<double>::quiet_NaN();
    r.loo_gib = std::numeric_limits<double>::quiet_NaN();
    if (steps.size() >= 2) {
      std::vector<MeasuredStep> rest;
      for (std::size_t j = 0; j < steps.size(); ++j)
        if (j != i)
          rest.push_back(steps[j]);
      fitting::ComputeSection loo = compute;
      loo.framework = calibrate(rest, system, compute);
      const Estimate l = estimate_step(st, system, loo);
      r.loo_s = l.time_s.iteration;
      r.loo_gib = l.memory_bytes.total / kGiB;
    }
    out.push_back(r);
  }
  return out;
}

} // namespace scalefit::estimator

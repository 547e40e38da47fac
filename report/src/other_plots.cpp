// Plot data of kernels measurements and of estimates (estimate, search, compare, validate).
#include "scalefit/core/error.hpp"
#include "scalefit/fitting/fit_file.hpp"
#include "scalefit/report/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>

namespace scalefit::report {
namespace {

std::string str(const nlohmann::json &j, const char *field, const std::string &dflt = "") {
  return j.contains(field) && j[field].is_string() ? j[field].get<std::string>() : dflt;
}

/// A finite, non-negative number at `path` (e.g. {"time_s","compute"}) of an estimate document.
double num(const nlohmann::json &j, std::initializer_list<const char *> path,
           const std::string &file) {
  const nlohmann::json *p = &j;
  std::string name;
  for (const char *k : path) {
    name += name.empty() ? k : std::string(".") + k;
    if (!p->is_object() || !p->contains(k))
      throw InputError("missing field", file, 0, name);
    p = &(*p)[k];
  }
  if (!p->is_number() || !std::isfinite(p->get<double>()) || p->get<double>() < 0)
    throw InputError("expected a finite non-negative number", file, 0, name);
  return p->get<double>();
}

/// "dp=8 tp=4 pp=2 zero=1 sel sp b=1" from an estimate's strategy object.
std::string layout_label(const nlohmann::json &s) {
  if (!s.is_object())
    return "?";
  auto i = [&](const char *k) { // an int-ranged number, else 0 (a label, not a figure)
    if (!s.contains(k) || !s[k].is_number())
      return 0;
    const double v = s[k].get<double>();
    return std::isfinite(v) && std::abs(v) < 1e9 ? static_cast<int>(v) : 0;
  };
  std::string l = fmt::format("dp={} tp={} pp={}", i("dp"), i("tp"), i("pp"));
  if (i("interleave") > 1)
    l += fmt::format(" v={}", i("interleave"));
  if (i("zero") > 0)
    l += fmt::format(" zero={}", i("zero"));
  const std::string rc = str(s, "recompute", "none");
  if (rc != "none")
    l += " recompute=" + rc;
  if (s.contains("sp") && s["sp"].is_boolean() && s["sp"].get<bool>())
    l += " sp";
  l += fmt::format(" b={}", i("micro_batch"));
  return l;
}

/// An optional field of an estimate document: absent gives `dflt`; present, a finite
/// non-negative number (num's rules), else bad input naming the field.
double opt_num(const nlohmann::json &j, const char *field, double dflt, const std::string &file) {
  return j.is_object() && j.contains(field) ? num(j, {field}, file) : dflt;
}

/// An optional boolean field of an estimate document (absent: `dflt`).
bool opt_bool(const nlohmann::json &j, const char *field, bool dflt, const std::string &file) {
  if (!j.is_object() || !j.contains(field))
    return dflt;
  if (!j[field].is_boolean())
    throw InputError("expected true or false", file, 0, field);
  return j[field].get<bool>();
}

/// One layout bar: time split and memory split, from one estimate_json document.
nlohmann::json layout_json(const nlohmann::json &e, const std::string &file) {
  const double compute = num(e, {"time_s", "compute"}, file);
  const double comm = num(e, {"time_s", "communication"}, file);
  const double overlap = num(e, {"time_s", "overlap"}, file);
  const double bubble = num(e, {"time_s", "bubble"}, file);
  const double iteration = num(e, {"time_s", "iteration"}, file);
  nlohmann::json mem = nlohmann::json::object();
  for (const char *k : {"weights", "gradients", "optimizer", "activations"})
    mem[k] = num(e, {"memory_gib", k}, file);
  const double g = opt_num(e, "gpus", 0, file);
  if (g > 1e9 || g != std::floor(g))
    throw InputError("expected a whole number of GPUs", file, 0, "gpus");
  const int gpus = static_cast<int>(g);
  return {{"system", str(e, "system")},
          {"model", str(e, "model")},
          {"layout", layout_label(e.value("strategy", nlohmann::json()))},
          {"gpus", gpus},
          {"compute_s", compute},
          {"exposed_comm_s", std::max(0.0, comm - overlap)},
          {"bubble_s", bubble},
          {"communication_s", comm},
          {"overlap_s", overlap},
          {"comm_by_s",
           {{"tp", num(e, {"communication_s", "tp"}, file)},
            {"pp", num(e, {"communication_s", "pp"}, file)},
            {"dp", num(e, {"communication_s", "dp"}, file)}}},
          {"iteration_s", iteration},
          {"memory_gib", mem},
          {"total_gib", num(e, {"memory_gib", "total"}, file)},
          {"device_gib", num(e, {"memory_gib", "device"}, file)},
          {"fits_memory", opt_bool(e, "fits_memory", true, file)},
          {"mfu", opt_num(e, "mfu", 0.0, file)}};
}

/// The first fit file's compute fit for (dtype, kind) of GEMM kinds, or nullptr.
const fitting::ComputeFit *compute_fit(const Inputs &in, const std::string &dtype,
                                       const std::string &kind) {
  const auto k = fitting::parse_kernel_kind(kind);
  if (!k || (*k != fitting::KernelKind::gemm && *k != fitting::KernelKind::batched_gemm))
    return nullptr;
  for (const auto &f : in.fits)
    if (const fitting::ComputeFit *c = f->compute.find(dtype, *k))
      return c;
  return nullptr;
}

bool is_attention(const std::string &name) {
  return name.rfind("attn_score", 0) == 0 || name.rfind("attn_context", 0) == 0 ||
         name.rfind("softmax", 0) == 0;
}

} // namespace

std::vector<Plot> kernel_plots(const Inputs &in) {
  std::vector<Plot> plots;
  if (in.kernels.empty())
    return plots;
  nlohmann::json sets = nlohmann::json::array(), att = nlohmann::json::array();
  for (const KernelsFile &f : in.kernels) {
    const nlohmann::json &c = f.context;
    const std::string model = c.contains("model") ? str(c["model"], "name") : "";
    const std::string label =
        fmt::format("{}{}{} {} {}", str(c, "system"), str(c, "system").empty() ? "" : " ",
                    str(c, "device", "?"), str(c, "dtype", "?"), model);
    nlohmann::json pts = nlohmann::json::array(), atts = nlohmann::json::array();
    for (const nlohmann::json &k : f.kernels) {
      const std::string name = k["name"].get<std::string>();
      const std::string kind = str(k, "kind", "gemm");
      const double flops = k["flops"].get<double>();
      const std::string shape =
          fmt::format("{}x{}x{}{}", k["m"].get<long long>(), k["n"].get<long long>(),
                      k["k"].get<long long>(),
                      k["batch"].get<long long>() > 1
                          ? fmt::format(" x{}", k["batch"].get<long long>())
                          : std::string());
      if (kind != "softmax" && flops > 0) {
        nlohmann::json pt = {{"name", name},
                             {"kind", kind},
                             {"pass", str(k, "pass")},
                             {"shape", shape},
                             {"flops", flops},
                             {"time_us", k["time_us"]},
                             {"tflops", k["tflops"]},
                             {"fit_tflops", nullptr}};
        // The compute fit's prediction for this shape (fit files with a `compute` section).
        if (const fitting::ComputeFit *cf = compute_fit(in, str(k, "dtype"), kind)) {
          const double t = cf->gemm_us(k["m"].get<double>(), k["n"].get<double>(),
                                       k["k"].get<double>(), k["batch"].get<double>());
          if (t > 0)
            pt["fit_tflops"] = flops / (t * 1e-6) / 1e12;
        }
        pts.push_back(pt);
      }
      if (is_attention(name))
        atts.push_back({{"name", name},
                        {"pass", str(k, "pass")},
                        {"shape", shape},
                        {"time_us", k["time_us"]},
                        {"tflops", k["tflops"]}});
    }
    sets.push_back({{"label", label}, {"file", f.path}, {"points", pts}});
    if (!atts.empty())
      att.push_back({{"label", label}, {"kernels", atts}});
  }
  // The compute fits of the fit files (GEMM kinds): full-wave rate R and quality per dtype.
  nlohmann::json fits = nlohmann::json::array();
  for (const auto &f : in.fits)
    for (const fitting::ComputeFit &c : f->compute.fits)
      if (c.kind == fitting::KernelKind::gemm || c.kind == fitting::KernelKind::batched_gemm)
        fits.push_back({{"dtype", c.dtype},
                        {"kind", fitting::kernel_kind_name(c.kind)},
                        {"tflops", c.tflops},
                        {"tflops_odd", c.tflops_odd},
                        {"mape_pct", c.quality.mape_pct},
                        {"loo_mape_pct", c.quality.loo_mape_pct},
                        {"file", f->path}});
  Plot p;
  p.kind = "kernels";
  p.name = "kernels-tflops";
  p.title = "Kernels: achieved TFLOP/s against FLOPs per call";
  p.caption = "Each transformer GEMM (and batched attention GEMM) of the measured layer: achieved "
              "TFLOP/s against the FLOPs of one call, labelled with its name and m x n x k "
              "(x batch); one colour per device/dtype/model, filled forward, hollow backward.";
  p.width_px = 1200;
  p.height_px = 720;
  p.data = {{"sets", sets}, {"compute_fits", fits}};
  if (!fits.empty())
    p.caption += " Black +: the compute fit's prediction for the same shape; dashed: its "
                 "full-wave rate R per dtype and kind.";
  plots.push_back(std::move(p));
  if (!att.empty()) {
    Plot a;
    a.kind = "attention";
    a.name = "kernels-attention";
    a.title = "Attention kernels: time per call";
    a.caption = "Unfused attention of one layer (score GEMM, softmax, context GEMM and their "
                "backward): time per call [us], one bar group per device/dtype/model.";
    a.width_px = 1200;
    a.height_px = 600;
    a.data = {{"sets", att}};
    plots.push_back(std::move(a));
  }
  return plots;
}

/// The parity plot of one `scalefit validate --json` document: per source, each estimated run's
/// published and estimated iteration time [s] (memory-only runs left out of time) and, where
/// the source publishes it, memory per GPU [GiB]; with the source's out-of-sample mean and max
/// |error| (calibration runs drawn, not counted). Bad rows are InputError naming "[i].field".
Plot validation_plot(const EstimateInput &e, int n) {
  nlohmann::json sources = nlohmann::json::object();
  int skipped = 0;
  for (std::size_t i = 0; i < e.doc.size(); ++i) {
    const nlohmann::json &r = e.doc[i];
    try {
      if (!r.is_object())
        throw InputError("expected an object (a run of scalefit validate --json)", e.path, 0, "");
      if (!r.contains("source") || !r["source"].is_string() || !r.contains("id") ||
          !r["id"].is_string())
        throw InputError("expected the run's id and source as strings", e.path, 0,
                         r.contains("id") ? "source" : "id");
      if (r.contains("skipped")) { // not expressible: no estimate to draw
        ++skipped;
        continue;
      }
      const double pub = num(r, {"published_s"}, e.path), est = num(r, {"estimated_s"}, e.path);
      const bool no_time = opt_bool(r, "no_time", false, e.path);
      if (!no_time && !(pub > 0 && est > 0))
        throw InputError("expected a positive time", e.path, 0,
                         pub > 0 ? "estimated_s" : "published_s");
      const double pg = opt_num(r, "published_gib", 0, e.path);
      const double eg = opt_num(r, "estimated_gib", 0, e.path);
      nlohmann::json run = {{"id", r["id"]},
                            {"calibration", opt_bool(r, "calibration", false, e.path)}};
      if (!no_time)
        run["published_s"] = pub, run["estimated_s"] = est;
      if (pg > 0 && eg > 0)
        run["published_gib"] = pg, run["estimated_gib"] = eg;
      if (!run.contains("published_s") && !run.contains("published_gib"))
        continue;
      nlohmann::json &src = sources[r["source"].get<std::string>()];
      src["runs"].push_back(std::move(run));
    } catch (const InputError &x) {
      throw InputError(x.message(), e.path, 0,
                       fmt::format("[{}]{}{}", i, x.field().empty() ? "" : ".", x.field()));
    }
  }
  // Each source's out-of-sample errors, as `scalefit validate` summarizes them.
  nlohmann::json list = nlohmann::json::array();
  for (auto &[name, src] : sources.items()) {
    double tsum = 0, tmax = 0, mmax = 0;
    int tn = 0, mn = 0;
    for (const nlohmann::json &run : src["runs"]) {
      if (run.contains("published_s") && !run["calibration"].get<bool>()) {
        const double err =
            std::abs(run["estimated_s"].get<double>() / run["published_s"].get<double>() - 1);
        tsum += err, tmax = std::max(tmax, err), ++tn;
      }
      if (run.contains("published_gib")) {
        mmax = std::max(
            mmax,
            std::abs(run["estimated_gib"].get<double>() / run["published_gib"].get<double>() - 1));
        ++mn;
      }
    }
    list.push_back({{"source", name},
                    {"runs", src["runs"]},
                    {"out_of_sample", tn},
                    {"mean_time_pct", tn ? 100 * tsum / tn : 0.0},
                    {"max_time_pct", 100 * tmax},
                    {"memory_runs", mn},
                    {"max_memory_pct", 100 * mmax}});
  }
  Plot p;
  p.kind = "validation";
  p.name = fmt::format("validation-{}", n);
  p.title = fmt::format("published runs: estimated against published ({} source{})", list.size(),
                        list.size() == 1 ? "" : "s");
  p.caption = fmt::format(
      "`scalefit validate --json`: each run's estimated against its published iteration time "
      "(left) and, where the source publishes it, memory per GPU (right), one colour per source "
      "(hollow: a calibration run, in sample); the diagonal is exact, the bands +-5% and +-15% "
      "(issue 14's goal: per source mean <= 5%, max <= 15%). The legend gives each source's "
      "out-of-sample mean and max |time error|.{}",
      skipped ? fmt::format(" {} run(s) not expressible are left out.", skipped) : "");
  p.width_px = 1500;
  p.height_px = std::clamp(560 + 22 * static_cast<int>(list.size()), 600, 1100);
  p.data = {{"sources", list}, {"file", e.path}};
  return p;
}

std::vector<Plot> estimate_plots(const Inputs &in) {
  std::vector<Plot> plots;
  nlohmann::json layouts = nlohmann::json::array();
  int nsearch = 0, ncompare = 0, nvalidate = 0;
  for (const EstimateInput &e : in.estimates) {
    if (e.kind == "validate") {
      Plot p = validation_plot(e, ++nvalidate);
      if (!p.data["sources"].empty())
        plots.push_back(std::move(p));
    } else if (e.kind == "estimate") {
      layouts.push_back(layout_json(e.doc, e.path));
    } else if (e.kind == "search") {
      nlohmann::json top = nlohmann::json::array();
      for (const nlohmann::json &t : e.doc["top"])
        top.push_back(layout_json(t, e.path));
      if (top.empty())
        continue;
      ++nsearch;
      Plot p;
      p.kind = "search";
      p.name = fmt::format("search-{}", nsearch);
      p.title = fmt::format("search: top {} layouts of {} on {} x{} GPUs", top.size(),
                            top[0]["model"].get<std::string>(), top[0]["system"].get<std::string>(),
                            top[0]["gpus"].get<int>());
      p.caption = fmt::format("The best layouts `scalefit search` found ({} evaluated, {} "
                              "accepted): iteration time split into compute, exposed "
                              "communication and pipeline bubble; memory per GPU on the right.",
                              opt_num(e.doc, "evaluated", 0, e.path),
                              opt_num(e.doc, "accepted", 0, e.path));
      p.width_px = 1300;
      p.height_px = std::clamp(160 + 48 * static_cast<int>(top.size()), 420, 1400);
      p.data = {{"layouts", top}, {"file", e.path}};
      plots.push_back(std::move(p));
    } else if (e.kind == "compare") {
      ++ncompare;
      const nlohmann::json a = layout_json(e.doc["a"], e.path), b = layout_json(e.doc["b"], e.path);
      Plot p;
      p.kind = "compare";
      p.name = fmt::format("compare-{}", ncompare);
      p.title = fmt::format("compare: {} on {} vs {} ({} GPUs)", a["model"].get<std::string>(),
                            a["system"].get<std::string>(), b["system"].get<std::string>(),
                            a["gpus"].get<int>());
      const double tr = opt_num(e.doc, "time_ratio", 0.0, e.path),
                   cr = opt_num(e.doc, "comm_ratio", 0.0, e.path);
      p.caption = fmt::format(
          "Two systems side by side as Cheng et al. plot them: iteration time split (left), "
          "communication time by parallelism, hidden or not (middle), memory per GPU against "
          "device memory (right); B/A "
          "training time {:.2f}x, communication time {:.2f}x.",
          tr, cr);
      p.width_px = 1400;
      p.height_px = 560;
      p.data = {{"a", a}, {"b", b}, {"time_ratio", tr}, {"comm_ratio", cr}, {"file", e.path}};
      plots.push_back(std::move(p));
    }
  }
  if (!layouts.empty()) {
    Plot t;
    t.kind = "estimate_time";
    t.name = "estimate-time";
    t.title = "Estimated time per iteration";
    t.caption = "Per layout: compute, exposed communication (communication not hidden behind "
                "compute) and pipeline bubble, stacked to the iteration time [s].";
    t.width_px = 1100;
    t.height_px = std::clamp(200 + 60 * static_cast<int>(layouts.size()), 420, 1400);
    t.data = {{"layouts", layouts}};
    plots.push_back(t);
    Plot m = t;
    m.kind = "estimate_memory";
    m.name = "estimate-memory";
    m.title = "Estimated memory per GPU";
    m.caption = "Per layout: weights, gradients, optimizer state and activations per GPU (first "
                "pipeline stage) [GiB], against the device memory (line).";
    plots.push_back(std::move(m));
  }
  return plots;
}

void make_names_unique(std::vector<Plot> &plots) {
  std::map<std::string, int> count;
  for (const Plot &p : plots)
    ++count[p.name];
  std::set<std::string> taken;
  for (const Plot &p : plots)
    if (count[p.name] == 1)
      taken.insert(p.name);
  for (Plot &p : plots) {
    if (count[p.name] == 1)
      continue;
    // Names differing only in case or punctuation slug alike ("DGX A100", "dgx-a100"): a short
    // FNV-1a hash of the title (which holds the name as written) tells them apart, stably.
    std::uint32_t h = 2166136261u;
    for (unsigned char c : p.title)
      h = (h ^ c) * 16777619u;
    std::string name = fmt::format("{}-{:06x}", p.name, h & 0xffffffu);
    for (int k = 2; taken.count(name); ++k)
      name = fmt::format("{}-{:06x}-{}", p.name, h & 0xffffffu, k);
    taken.insert(name);
    p.name = name;
  }
}

std::vector<Plot> build_plots(const Inputs &in) {
  std::vector<Plot> all;
  for (auto f :
       {bandwidth_plots, latency_plots, scaling_plots, pair_plots, kernel_plots, estimate_plots})
    for (Plot &p : f(in))
      all.push_back(std::move(p));
  make_names_unique(all);
  return all;
}

} // namespace scalefit::report

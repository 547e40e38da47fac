// `scalefit check`: measured collective curves against what the system's links allow and against a
// reference fit file of the same system class; a verdict per curve and an exit status for burn-in
// scripts (docs/check.md).
//
// Expected bus bandwidth (nccl-tests doc/PERFORMANCE.md: busbw "should reflect the speed of the
// hardware bottleneck: NVLink, PCI, QPI, or network"): the bottleneck link's bandwidth per rank as
// the estimator's spec tiers define it (estimator/comm_model.hpp), times the system file's
// `efficiency` (the fraction of the link nccl-tests busbw reaches). AllToAll(v) is priced as a
// direct pairwise exchange, where only part of each rank's bytes cross the NICs.
#include "commands.hpp"
#include "check_inputs.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/records.hpp"
#include "scalefit/core/units.hpp"
#include "scalefit/estimator/config.hpp"
#include "scalefit/fitting/fit_file.hpp"
#include "scalefit/fitting/predict.hpp"
#include "scalefit/ingest/ingest.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#ifndef SCALEFIT_SOURCE_DIR
#define SCALEFIT_SOURCE_DIR "."
#endif

namespace scalefit::cli {

int &command_exit_code() {
  static int code = kExitOk;
  return code;
}

namespace {

namespace fs = std::filesystem;
namespace est = scalefit::estimator;
using namespace check;
using fitting::FitEntry;
using fitting::FitFile;

struct CheckArgs {
  std::vector<std::string> inputs;
  std::string format = "auto";
  std::string system;
  std::string reference;
  std::string reference_dir;
  bool no_reference = false;
  double low_pct = 90;
  double fail_pct = 75;
  double min_busbw = -1; ///< GB/s; < 0: not set (nccl-tests' NCCL_TESTS_MIN_BW unset is -1)
  bool strict = false;
  bool json = false;
  double noisy_pct = 10; ///< --noisy: a run-to-run spread above this is noted noisy [%]
  int nranks = 0, nnodes = 0;
};


enum class Verdict { unchecked, ok, low, failing };
const char *verdict_name(Verdict v) {
  switch (v) {
  case Verdict::ok:
    return "ok";
  case Verdict::low:
    return "low";
  case Verdict::failing:
    return "failing";
  default:
    return "unchecked";
  }
}
Verdict worst(Verdict a, Verdict b) {
  return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}

Verdict grade(double pct, const CheckArgs &a) {
  if (pct < a.fail_pct)
    return Verdict::failing;
  if (pct < a.low_pct)
    return Verdict::low;
  return Verdict::ok;
}

/// A reference fit file with the name it is known by.
struct Reference {
  std::string file;
  fitting::FitFilePtr fit;
};

/// The reference entry for a curve: same op, ranks, nodes and method; the curve's dtype, then
/// out-of-place, preferred.
const FitEntry *reference_entry(const FitFile &fit, const Curve &c) {
  const FitEntry *best = nullptr;
  int best_score = -1;
  for (const FitEntry &e : fit.entries) {
    if (e.op != c.op || e.group.nranks != c.group.nranks || e.group.nnodes != c.group.nnodes ||
        e.method != c.method)
      continue;
    const int score = (e.dtype == c.dtype) * 4 + (e.placement == Placement::out_of_place) * 2 +
                      (e.group.kind == c.group.kind);
    if (score > best_score) {
      best = &e;
      best_score = score;
    }
  }
  return best;
}

/// Reference fit files from results/reference/*/fit.yaml whose device or name carries the
/// system's GPU model ("A100", "H100").
std::vector<Reference> default_references(const est::SystemConfig &sys, const std::string &dir_opt,
                                          std::vector<std::string> &notes) {
  std::vector<Reference> out;
  const std::string model = gpu_model(sys.device.name);
  if (model.empty())
    return out;
  std::vector<std::string> dirs;
  if (!dir_opt.empty())
    dirs.push_back(dir_opt);
  else
    dirs = {"results/reference", std::string(SCALEFIT_SOURCE_DIR) + "/results/reference"};
  for (const std::string &d : dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) {
      if (!dir_opt.empty())
        throw InputError("not a directory", d, 0, "--reference-dir");
      continue;
    }
    std::vector<fs::path> files;
    for (const auto &e : fs::directory_iterator(d))
      if (std::error_code ec; fs::exists(e.path() / "fit.yaml", ec))
        files.push_back(e.path() / "fit.yaml");
    std::sort(files.begin(), files.end());
    for (const fs::path &f : files) {
      fitting::FitFilePtr fit = fitting::load_fit_file(f.string());
      const auto dev = fit->system.find("device");
      const auto name = fit->system.find("name");
      const std::string text = upper((dev != fit->system.end() ? dev->second : "") + " " +
                                     (name != fit->system.end() ? name->second : ""));
      if (text.find(model) != std::string::npos)
        out.push_back({f.string(), fit});
    }
    if (!files.empty())
      break;
  }
  if (out.empty())
    notes.push_back("no reference fit file in results/reference/ names a " + model +
                    " (pass --reference FIT)");
  return out;
}

struct Result {
  nlohmann::json json;
  Verdict verdict = Verdict::unchecked;
  std::string row;
  std::vector<std::string> notes;
};

Result check_curve(Curve c, const CheckArgs &a, const est::SystemConfig *sys,
                   const std::vector<Reference> &refs) {
  Result r;
  std::vector<std::uint64_t> sizes;
  std::vector<double> bw, printed;
  for (const auto &[s, b] : c.busbw) {
    sizes.push_back(s);
    bw.push_back(b);
    printed.push_back(c.printed[s]);
  }
  std::size_t ipeak = 0;
  for (std::size_t i = 0; i < printed.size(); ++i)
    if (printed[i] > printed[ipeak])
      ipeak = i;
  const double peak = printed.empty() ? 0 : printed[ipeak];
  const std::uint64_t peak_bytes = sizes.empty() ? 0 : sizes[ipeak];
  // A log that does not say its nodes reads as one node; more ranks than a node of the system has
  // GPUs cannot be one node.
  if (sys && c.group.nnodes == 1 && c.group.nranks > sys->gpus_per_node && sys->gpus_per_node > 0 &&
      c.group.nranks % sys->gpus_per_node == 0) {
    r.notes.push_back(fmt::format(
        "{} {}: {} ranks on 1 node, but {} has {} GPUs per node: taken as {} nodes (pass "
        "--nnodes when the log does not say)",
        op_name(c.op), c.group.label(), c.group.nranks, sys->name, sys->gpus_per_node,
        c.group.nranks / sys->gpus_per_node));
    c.group.nnodes = c.group.nranks / sys->gpus_per_node;
    c.group.ranks_per_node = sys->gpus_per_node;
    if (c.group.kind == "intra")
      c.group.kind = "world";
  }
  const long avg_n = c.busbw_count + c.zero_rows;
  const double avg = avg_n > 0 ? c.busbw_sum / avg_n : 0;
  const std::string label = fmt::format("{} {} {}", c.method.empty() ? op_name(c.op) : c.method,
                                        c.group.label(), dtype_name(c.dtype));
  nlohmann::json placements = nlohmann::json::array();
  for (const auto &p : c.placements)
    placements.push_back(p);
  r.json = {{"system", c.system},
            {"source", c.source},
            {"op", op_name(c.op)},
            {"method", c.method},
            {"group",
             {{"kind", c.group.kind},
              {"nranks", c.group.nranks},
              {"nnodes", c.group.nnodes},
              {"ranks_per_node", c.group.ranks_per_node}}},
            {"dtype", dtype_name(c.dtype)},
            {"placements", placements},
            {"from_fit", c.from_fit},
            {"points", sizes.size()},
            {"size_range_bytes",
             sizes.empty() ? nlohmann::json(nullptr) : nlohmann::json{sizes.front(), sizes.back()}},
            {"peak_busbw_gbps", peak},
            {"peak_bytes", peak_bytes},
            {"avg_busbw_gbps", avg},
            {"link", nullptr},
            {"reference", nullptr},
            {"min_busbw", nullptr}};
  std::string link_col = "-", exp_col = "-", pexp_col = "-", ref_col = "-", pref_col = "-",
              short_col;
  if (sizes.empty()) {
    r.notes.push_back(label + ": no point with a positive size and time");
  }
  // (a) the links.
  if (sys && !sizes.empty()) {
    if (auto lb = link_bound(*sys, c.op, c.group)) {
      const double expected = lb->expected_gbps();
      const double pct = expected > 0 ? 100 * peak / expected : 0;
      const bool above = peak > lb->bound_gbps;
      const double f = busbw_factor(c.op, c.group.nranks);
      std::vector<bool> is_short(sizes.size());
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        // The spec tier's alpha-beta curve (the estimator's): t = latency + S f / expected. Only
        // its bandwidth regime is compared (sizes where it is at >= low% of `expected`): the
        // links say nothing of latency.
        const double s = static_cast<double>(sizes[i]);
        const double t_us = lb->latency_us + s * f / (expected * 1e3);
        const double exp_bw = f > 0 ? gbps(s, t_us) * f : 0;
        is_short[i] = exp_bw >= a.low_pct / 100 * expected && bw[i] < a.low_pct / 100 * exp_bw;
      }
      const auto ranges = short_ranges(sizes, is_short);
      const Verdict v = above ? Verdict::ok : grade(pct, a);
      r.verdict = worst(r.verdict, v);
      r.json["link"] = {{"link", lb->link},
                        {"algorithm", lb->algorithm},
                        {"rule", lb->rule},
                        {"busbw_factor", f},
                        {"bound_gbps", lb->bound_gbps},
                        {"efficiency", lb->efficiency},
                        {"latency_us", lb->latency_us},
                        {"expected_busbw_gbps", expected},
                        {"pct_of_expected", pct},
                        {"above_link_bound", above},
                        {"short_ranges_bytes", ranges_json(ranges)},
                        {"verdict", verdict_name(v)}};
      link_col = fmt::format("{} {}", lb->link, lb->algorithm);
      exp_col = fmt::format("{:.1f}", expected);
      pexp_col = fmt::format("{:.1f}", pct);
      short_col = "link " + ranges_text(ranges);
      if (above)
        r.notes.push_back(fmt::format(
            "{}: above link bound: in-network reduction (NVLS/SHARP) or cache (peak {:.1f} GB/s > "
            "{} bound {:.1f} GB/s{}); not an error",
            label, peak, lb->link, lb->bound_gbps,
            c.group.nnodes > 1 ? "; or a hierarchical (tree) algorithm, which sends less than the "
                                 "ring over the NICs"
                               : ""));
    } else {
      r.notes.push_back(label + ": 1 rank: no link carries data; not compared with the links");
    }
  }
  // (b) the reference.
  for (const Reference &ref : refs) {
    if (sizes.empty())
      break;
    const FitEntry *e = reference_entry(*ref.fit, c);
    if (!e)
      continue;
    std::vector<std::uint64_t> common;
    std::vector<double> ratio;
    double sum_m = 0, sum_r = 0, min_ratio = 1e300;
    std::uint64_t min_at = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const double s = static_cast<double>(sizes[i]);
      if (s < e->min_bytes || s > e->max_bytes)
        continue;
      bool ex = false;
      const double t = fitting::entry_time_us(*e, s, ex);
      const double rb = gbps(s, t) * busbw_factor(c.op, c.group.nranks);
      if (!(rb > 0))
        continue;
      common.push_back(sizes[i]);
      ratio.push_back(bw[i] / rb);
      sum_m += bw[i];
      sum_r += rb;
      if (bw[i] / rb < min_ratio) {
        min_ratio = bw[i] / rb;
        min_at = sizes[i];
      }
    }
    if (common.empty())
      continue;
    const double pct = 100 * sum_m / sum_r;
    std::vector<bool> is_short(common.size());
    for (std::size_t i = 0; i < common.size(); ++i)
      is_short[i] = ratio[i] * 100 < a.low_pct;
    const auto ranges = short_ranges(common, is_short);
    const Verdict v = grade(pct, a);
    r.verdict = worst(r.verdict, v);
    r.json["reference"] = {{"file", ref.file},
                           {"entry", e->id},
                           {"sizes_compared", common.size()},
                           {"size_range_bytes", {common.front(), common.back()}},
                           {"pct_of_reference", pct},
                           {"min_pct", 100 * min_ratio},
                           {"min_pct_bytes", min_at},
                           {"short_ranges_bytes", ranges_json(ranges)},
                           {"verdict", verdict_name(v)}};
    ref_col = fs::path(ref.file).parent_path().filename().string();
    if (ref_col.empty())
      ref_col = fs::path(ref.file).filename().string();
    pref_col = fmt::format("{:.1f}", pct);
    short_col += (short_col.empty() ? "" : " ") + std::string("ref ") + ranges_text(ranges);
    break;
  }
  // nccl-tests' NCCL_TESTS_MIN_BW: fail when the average busbw < 0.9 x the threshold.
  r.json["group"] = {{"kind", c.group.kind},
                     {"nranks", c.group.nranks},
                     {"nnodes", c.group.nnodes},
                     {"ranks_per_node", c.group.ranks_per_node}};
  if (a.min_busbw >= 0 && !sizes.empty()) {
    const bool pass = !(avg < a.min_busbw * 0.9);
    const Verdict v = pass ? Verdict::ok : Verdict::failing;
    r.verdict = worst(r.verdict, v);
    r.json["min_busbw"] = {
        {"threshold_gbps", a.min_busbw},    {"avg_busbw_gbps", avg}, {"points_averaged", avg_n},
        {"zero_rows_counted", c.zero_rows}, {"pass", pass},          {"verdict", verdict_name(v)}};
    if (!pass)
      r.notes.push_back(fmt::format("{}: average busbw {:.2f} GB/s < 0.9 x --min-busbw {:g}", label,
                                    avg, a.min_busbw));
  }
  // --repeat: the record is the median run's (so is every figure above); the spread is shown.
  r.json["repeat"] = nullptr;
  if (const auto sp = curve_spread(c, a.noisy_pct)) {
    r.json["repeat"] = spread_json(*sp);
    r.notes.push_back(spread_note(label, *sp, a.noisy_pct));
    short_col = fmt::format("{}spread {:.1f}%{}", sp->noisy ? "noisy " : "", sp->max_pct,
                            short_col.empty() ? "" : " " + short_col);
  }
  r.json["verdict"] = verdict_name(r.verdict);
  r.row =
      fmt::format("{:<14} {:<20} {:<9} {:>9.2f} {:>7} {:<15} {:>8} {:>6} {:<24} {:>6} {:<8} {}",
                  c.method.empty() ? std::string(op_name(c.op)) : c.method, c.group.label(),
                  dtype_name(c.dtype), peak, format_bytes(peak_bytes), link_col, exp_col, pexp_col,
                  ref_col, pref_col, verdict_name(r.verdict), short_col.empty() ? "-" : short_col);
  return r;
}

/// Reads the inputs, checks every curve and returns `--json`'s object (schema scalefit.check/1),
/// notes included; `rows` (when given) receives the table rows in curve order. \throws
/// InputError as run_check.
nlohmann::json evaluate(const CheckArgs &a, std::vector<std::string> *rows) {
  if (!(a.fail_pct >= 0 && a.fail_pct <= a.low_pct))
    throw InputError(
        fmt::format("--fail {:g} must be between 0 and --low {:g}", a.fail_pct, a.low_pct), "", 0,
        "--fail");
  // Inputs: JSONL records, nccl-tests/OSU logs (through ingest), fit files.
  std::map<std::string, Curve> curves;
  std::vector<std::string> order;
  std::vector<std::string> notes;
  ingest::IngestOptions iopt;
  if (a.nranks > 0)
    iopt.nranks = a.nranks;
  if (a.nnodes > 0)
    iopt.nnodes = a.nnodes;
  std::vector<std::string> files;
  for (const std::string &in : a.inputs) {
    std::error_code ec; // a path the OS cannot stat (too long, a loop) is no such file
    if (fs::is_directory(in, ec)) {
      for (const std::string &f : expand_jsonl_inputs({in}))
        files.push_back(f);
    } else if (!fs::exists(in, ec)) {
      throw InputError("no such file or directory", in);
    } else {
      files.push_back(in);
    }
  }
  std::vector<RecordSet> sets;
  std::vector<std::string> set_files;
  std::vector<long> set_zero_rows;
  for (const std::string &f : files) {
    switch (detect(f, a.format)) {
    case Format::jsonl:
      sets.push_back(read_records(f));
      set_files.push_back(f);
      set_zero_rows.push_back(0);
      break;
    case Format::fit:
      add_fit(curves, order, *fitting::load_fit_file(f), f);
      break;
    case Format::nccl_tests:
    case Format::osu: {
      const bool osu = detect(f, a.format) == Format::osu;
      ingest::IngestResult res = osu ? ingest::read_osu(f, iopt) : ingest::read_nccl_tests(f, iopt);
      for (const std::string &w : res.warnings)
        fmt::print(stderr, "scalefit check: warning: {}\n", w);
      long zeros = 0;
      if (!osu)
        for (const std::string &n : res.notes)
          zeros += n.find("size 0 row skipped") != std::string::npos;
      RecordSet s;
      s.contexts.push_back(res.context);
      s.measurements = std::move(res.measurements);
      s.context_of.assign(s.measurements.size(), 0);
      s.origin.assign(s.measurements.size(), f);
      sets.push_back(std::move(s));
      set_files.push_back(f);
      set_zero_rows.push_back(zeros);
      break;
    }
    }
  }
  for (const std::string &w : drop_duplicate_measurements(sets))
    fmt::print(stderr, "scalefit check: warning: {}\n", w);
  for (std::size_t i = 0; i < sets.size(); ++i)
    add_records(curves, order, sets[i], set_files[i], set_zero_rows[i]);
  if (order.empty())
    throw InputError("no measurement in the input", files.empty() ? "" : files[0]);

  std::optional<est::SystemConfig> sys;
  std::string sys_path;
  if (!a.system.empty()) {
    sys_path = resolve_system(a.system);
    sys = est::load_system(sys_path);
  }
  std::vector<Reference> refs;
  if (!a.reference.empty()) {
    refs.push_back({a.reference, fitting::load_fit_file(a.reference)});
  } else if (sys && !a.no_reference) {
    refs = default_references(*sys, a.reference_dir, notes);
  }
  if (!sys && refs.empty() && a.min_busbw < 0)
    throw InputError("nothing to compare with: give --system, --reference or --min-busbw", "", 0,
                     "--system");

  nlohmann::json list = nlohmann::json::array();
  std::map<Verdict, int> counts;
  std::vector<Result> results;
  for (const std::string &key : order) {
    results.push_back(check_curve(curves.at(key), a, sys ? &*sys : nullptr, refs));
    list.push_back(results.back().json);
    ++counts[results.back().verdict];
  }
  const bool fail = counts[Verdict::failing] > 0 || (a.strict && counts[Verdict::low] > 0);
  {
    nlohmann::json refs_json = nlohmann::json::array();
    for (const Reference &r : refs)
      refs_json.push_back(r.file);
    nlohmann::json out = {
        {"schema", "scalefit.check/1"},
        {"system", sys ? nlohmann::json{{"name", sys->name},
                                        {"file", sys_path},
                                        {"gpus_per_node", sys->gpus_per_node},
                                        {"intra",
                                         {{"bandwidth_gbps", sys->intra.bandwidth_gbps},
                                          {"efficiency", sys->intra.efficiency},
                                          {"latency_us", sys->intra.latency_us}}},
                                        {"inter",
                                         {{"bandwidth_gbps", sys->inter.bandwidth_gbps},
                                          {"efficiency", sys->inter.efficiency},
                                          {"latency_us", sys->inter.latency_us}}}}
                       : nlohmann::json(nullptr)},
        {"references", refs_json},
        {"thresholds",
         {{"low_pct", a.low_pct},
          {"fail_pct", a.fail_pct},
          {"min_busbw_gbps",
           a.min_busbw >= 0 ? nlohmann::json(a.min_busbw) : nlohmann::json(nullptr)},
          {"strict", a.strict},
          {"noisy_pct", a.noisy_pct}}},
        {"curves", list},
        {"notes", notes},
        {"summary",
         {{"curves", results.size()},
          {"ok", counts[Verdict::ok]},
          {"low", counts[Verdict::low]},
          {"failing", counts[Verdict::failing]},
          {"unchecked", counts[Verdict::unchecked]}}},
        {"exit_code", fail ? kExitCheck : kExitOk}};
    for (const Result &r : results)
      for (const std::string &n : r.notes)
        out["notes"].push_back(n);
    if (rows)
      for (const Result &r : results)
        rows->push_back(r.row);
    return out;
  }
}

void run_check(const CheckArgs &a) {
  std::vector<std::string> rows;
  const nlohmann::json out = evaluate(a, &rows);
  command_exit_code() = out["exit_code"].get<int>();
  if (a.json) {
    fmt::print("{}\n", dump_json(out, 2));
    return;
  }
  const nlohmann::json &sys = out["system"];
  std::string refs;
  for (const auto &r : out["references"])
    refs += (refs.empty() ? "" : ", ") + r.get<std::string>();
  fmt::print("# scalefit check: {}; reference {}; verdict vs expected: ok >= {:g}%, low >= {:g}%, "
             "failing below{}\n",
             sys.is_null() ? std::string("no system")
                           : fmt::format("system {} ({})", sys["name"].get<std::string>(),
                                         sys["file"].get<std::string>()),
             refs.empty() ? std::string("none") : refs, a.low_pct, a.fail_pct,
             a.min_busbw >= 0 ? fmt::format("; --min-busbw {:g} GB/s (avg < 0.9x fails)", a.min_busbw)
                              : std::string());
  fmt::print("{:<14} {:<20} {:<9} {:>9} {:>7} {:<15} {:>8} {:>6} {:<24} {:>6} {:<8} {}\n", "op",
             "group", "dtype", "peak", "at", "link algo", "expected", "%exp", "reference", "%ref",
             "verdict", "short (< low)");
  fmt::print("{:<14} {:<20} {:<9} {:>9} {:>7} {:<15} {:>8} {:>6} {:<24} {:>6} {:<8} {}\n", "", "",
             "", "[GB/s]", "[B]", "", "[GB/s]", "[%]", "", "[%]", "", "[B]");
  for (const std::string &r : rows)
    fmt::print("{}\n", r);
  for (const auto &n : out["notes"])
    fmt::print("note: {}\n", n.get<std::string>());
  const nlohmann::json &sum = out["summary"];
  fmt::print("{} curves: {} ok, {} low, {} failing, {} unchecked; exit {}\n",
             sum["curves"].get<int>(), sum["ok"].get<int>(), sum["low"].get<int>(),
             sum["failing"].get<int>(), sum["unchecked"].get<int>(), command_exit_code());
}

} // namespace

nlohmann::json check_json(const std::vector<std::string> &inputs, const std::string &system) {
  CheckArgs a;
  a.inputs = inputs;
  a.system = system;
  return evaluate(a, nullptr);
}

void add_check_command(CLI::App &app) {
  auto a = std::make_shared<CheckArgs>();
  CLI::App *c = app.add_subcommand(
      "check", "compare measured busbw curves with the system's links and a reference fit file; "
               "verdict ok/low/failing per curve, exit 1 on a failing one (docs/check.md)");
  c->add_option("inputs", a->inputs,
                "scalefit JSONL files or directories of *.jsonl, nccl-tests or OSU logs, fit files")
      ->required();
  c->add_option("--format", a->format, "input format: auto (default), jsonl, nccl-tests, osu, fit")
      ->check(CLI::IsMember({"auto", "jsonl", "nccl-tests", "osu", "fit"}));
  c->add_option("--system", a->system,
                "system YAML or name in configs/systems (link-based expectation)");
  c->add_option(
      "--reference", a->reference,
      "reference fit file (default: results/reference/*/fit.yaml naming the system's GPU)");
  c->add_option("--reference-dir", a->reference_dir,
                "folder of <system>/fit.yaml references (default: results/reference)");
  c->add_flag("--no-reference", a->no_reference, "compare with the links only");
  c->add_option("--low", a->low_pct, "below this % of expected a curve is low")
      ->default_val(90)
      ->check(finite_range(0.0, 1000.0));
  c->add_option("--fail", a->fail_pct, "below this % of expected a curve is failing")
      ->default_val(75)
      ->check(finite_range(0.0, 1000.0));
  c->add_option("--min-busbw", a->min_busbw,
                "GB/s: failing when a curve's average busbw < 0.9 x this (nccl-tests' "
                "NCCL_TESTS_MIN_BW)")
      ->check(finite_range(0.0, 1e6));
  c->add_option("--noisy", a->noisy_pct,
                "%: a curve measured with scalefit-bench comm --repeat whose run-to-run spread "
                "(100 (max - min) / median of the runs' times) exceeds this at a point is noted "
                "noisy; verdicts are judged on the median run")
      ->default_val(10)
      ->check(finite_range(0.0, 1e6));
  c->add_flag("--strict", a->strict, "exit 1 on a low verdict too");
  c->add_flag("--json", a->json, "print JSON (schema scalefit.check/1)");
  c->add_option("--nranks", a->nranks, "ranks, for logs that do not reveal them")
      ->check(CLI::Range(1, 1 << 24));
  c->add_option("--nnodes", a->nnodes, "nodes, for logs that do not reveal them")
      ->check(CLI::Range(1, 1 << 24));
  c->callback([a] { run_check(*a); });
}

} // namespace scalefit::cli

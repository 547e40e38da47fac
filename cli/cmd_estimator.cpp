// `scalefit estimate | search | compare`: the training estimator (estimator/).
#include "commands.hpp"
#include "estimator_args.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/records.hpp"
#include "scalefit/core/units.hpp"
#include "scalefit/estimator/published.hpp"
#include "scalefit/estimator/report.hpp"
#include "scalefit/fitting/fit_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace scalefit::cli {
namespace {

est::Estimator make_estimator(const std::string &system_path, const std::string &fit_path,
                              const est::ModelConfig &model,
                              est::AlltoallMatrix matrix = est::AlltoallMatrix::uniform,
                              int nvlink_domain = 0) {
  est::SystemConfig sys = est::load_system(system_path);
  if (nvlink_domain > 0) {
    try {
      sys = est::with_nvlink_domain(sys, nvlink_domain);
    } catch (const InputError &e) { // name the option, not the library's field
      throw InputError(e.message(), system_path, 0, "--nvlink-domain");
    }
  }
  std::shared_ptr<const est::CommModel> comm = std::make_shared<est::SpecCommModel>(sys);
  fitting::FitFilePtr fit;
  if (!fit_path.empty()) {
    fit = fitting::load_fit_file(fit_path);
    // A file with only compute/framework sections prices no message: keep the spec tiers.
    if (!fit->entries.empty())
      comm = est::make_fit_comm_model(fit_path, comm, model.dtype, matrix);
  }
  est::Estimator e(model, std::move(sys), comm);
  if (fit)
    e.use_compute(fit->compute);
  return e;
}

void print(const std::string &s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
}

struct EstimateCmd {
  std::string system, fit;
  ModelArgs model;
  StrategyArgs strat;
  int gpus = 0;
  int global_batch = 0;
  int scale_to = 0;
  int nvlink_domain = 0;
  bool json = false;
  void run() {
    const est::ModelConfig m = model.build();
    est::Estimator e = make_estimator(system, fit, m, strat.matrix(), nvlink_domain);
    est::Strategy s = strat.build();
    s.global_batch = global_batch > 0 ? global_batch : m.global_batch;
    e.validate(s, gpus);
    est::Estimate r;
    e.evaluate(s, r);
    std::optional<est::Scaling> sc;
    if (scale_to > 0)
      sc = est::scale_layout(e, s, r, scale_to);
    if (json) {
      nlohmann::json j = est::estimate_json(e, s, r);
      if (sc)
        j["scaling"] = est::scaling_json(*sc);
      print(dump_json(j, 2) + "\n");
    } else {
      print(est::estimate_table(e, s, r));
      if (sc)
        print(est::scaling_table(*sc));
    }
  }
};

struct SearchCmd {
  std::string system, fit;
  ModelArgs model;
  StrategyArgs strat;
  int gpus = 0, global_batch = 0, top = 10, max_tp = 0, max_cp = 8, max_ep = 64;
  int nvlink_domain = 0;
  bool json = false;
  void run() {
    const est::ModelConfig m = model.build();
    est::Estimator e = make_estimator(system, fit, m, strat.matrix(), nvlink_domain);
    est::SearchSpace space;
    space.base = strat.build();
    space.gpus = gpus;
    space.global_batch = global_batch > 0 ? global_batch : m.global_batch;
    space.max_tp = max_tp;
    space.max_cp = max_cp;
    space.max_ep = max_ep;
    const est::SearchResult r = est::search(e, space, top);
    if (json)
      print(dump_json(est::search_json(e, r), 2) + "\n");
    else
      print(est::search_table(e, r));
  }
};

struct CompareCmd {
  std::string system_a, system_b, fit_a, fit_b;
  ModelArgs model;
  StrategyArgs strat;
  int gpus = 0, global_batch = 0;
  bool json = false;
  CLI::App *app = nullptr;
  void run() {
    const est::ModelConfig m = model.build();
    est::Estimator a = make_estimator(system_a, fit_a, m, strat.matrix());
    est::Estimator b = make_estimator(system_b, fit_b, m, strat.matrix());
    est::SearchSpace space;
    space.base = strat.build();
    space.gpus = gpus;
    space.global_batch = global_batch > 0 ? global_batch : m.global_batch;
    std::optional<est::Strategy> s;
    if (app->count("--dp") || app->count("--tp") || app->count("--pp")) {
      est::Strategy st = space.base;
      st.global_batch = space.global_batch;
      s = st;
    }
    const est::Comparison c = est::compare(a, b, s, space);
    if (json)
      print(dump_json(est::comparison_json(a, b, c), 2) + "\n");
    else
      print(est::comparison_table(a, b, c));
  }
};

/// `scalefit validate RUNS.jsonl...`: published runs estimated with their own configuration.
struct ValidateCmd {
  std::vector<std::string> files;
  std::string root = ".";
  std::string fit_path, fit_system;
  std::string explain; ///< --explain ID: print that run's full estimate
  /// --calibrate-on: run ids, or "smallest" (per file and system, the run with the fewest GPUs)
  std::vector<std::string> calibrate_on;
  bool json = false;
  bool verbose = false;
  void run() {
    fitting::FitFilePtr fit;
    if (!fit_path.empty()) {
      if (fit_system.empty())
        throw InputError("--fit needs --fit-system (the system path the fit was measured on)", "",
                         0, "--fit-system");
      fit = fitting::load_fit_file(fit_path);
    }
    std::vector<std::vector<est::PublishedRun>> all;
    for (const std::string &f : files)
      all.push_back(est::load_published_runs(f, root));
    nlohmann::json j = nlohmann::json::array();
    std::string o, explained_report;
    bool explained = false;
    const bool smallest =
        std::find(calibrate_on.begin(), calibrate_on.end(), "smallest") != calibrate_on.end();
    std::set<std::string> ids_found;
    const fitting::ComputeSection *compute = fit ? &fit->compute : nullptr;
    for (const auto &runs : all) {
      // --calibrate-on: one step per system of this source sets its sustained efficiency
      std::map<std::string, const est::PublishedRun *> picks;
      if (smallest)
        picks = est::smallest_run_per_system(runs);
      for (const est::PublishedRun &r : runs) {
        if (std::find(calibrate_on.begin(), calibrate_on.end(), r.id) == calibrate_on.end())
          continue;
        ids_found.insert(r.id);
        auto [it, added] = picks.emplace(r.system, &r);
        if (!added && it->second != &r) {
          if (!smallest)
            throw InputError("runs '" + it->second->id + "' and '" + r.id + "' both run on " +
                                 r.system + ": calibrate on one step per system",
                             "", 0, "--calibrate-on");
          it->second = &r; // a named run replaces the smallest one
        }
      }
      std::map<std::string, double> sustained;
      std::set<std::string> in_sample;
      for (auto p = picks.begin(); p != picks.end();) {
        const auto &[system, run] = *p;
        if (fit && system == fit_system)
          throw InputError("run '" + run->id + "' runs on " + system +
                               ", whose compute the --fit prices: the sustained efficiency "
                               "--calibrate-on derives scales the spec tables only",
                           "", 0, "--calibrate-on");
        const double shipped = est::load_system((std::filesystem::path(root) / system).string())
                                   .device.sustained_efficiency;
        const bool named =
            std::find(calibrate_on.begin(), calibrate_on.end(), run->id) != calibrate_on.end();
        try {
          sustained[system] = est::calibrate_sustained(*run, root, compute, fit_system);
        } catch (const InputError &e) {
          if (named) // a run the user named: refused, naming it
            throw;
          // 'smallest' picked it: that system keeps its shipped constant, and the output says so
          if (!json)
            o += fmt::format("  not calibrated {}: {}; its runs keep the shipped "
                             "sustained_efficiency {:.4f}\n",
                             system, e.message(), shipped);
          p = picks.erase(p);
          continue;
        }
        in_sample.insert(run->id);
        if (!json)
          o += fmt::format("  calibrated {}: sustained_efficiency {:.4f} (shipped {:.4f}) from "
                           "{} alone; the source's other runs on it are out of sample\n",
                           system, sustained[system], shipped, run->id);
        ++p;
      }
      const std::vector<est::RunComparison> rows = est::compare_published(
          runs, root, compute, fit_system, explain, picks.empty() ? nullptr : &sustained,
          picks.empty() ? nullptr : &in_sample);
      for (const est::RunComparison &c : rows) {
        if (!explain.empty() && c.run->id == explain) {
          explained = true;
          if (!c.skipped.empty())
            throw InputError("run '" + explain + "' is not estimated: " + c.skipped, "", 0,
                             "--explain");
          std::string head = fmt::format(
              "{}: published {:.3f} s, estimated {:.3f} s ({:+.1f}%)\n{}\n", c.run->id,
              c.run->iteration_s, c.estimated_s, 100 * c.time_error, c.run->source);
          if (!json)
            o += head + c.report + "\n";
          else
            explained_report = head + c.report;
        }
        nlohmann::json r = {{"id", c.run->id},
                            {"source", c.run->source},
                            {"published_s", c.run->iteration_s}};
        if (!c.skipped.empty()) {
          r["skipped"] = c.skipped;
        } else {
          r["estimated_s"] = c.estimated_s;
          r["time_error"] = c.time_error;
          r["estimated_gib"] = c.estimated_gib;
          r["fits_memory"] = c.fits;
          r["calibration"] = c.calibration;
          if (c.run->no_time) // memory only: published_s is the file's placeholder
            r["no_time"] = true;
          if (auto s = sustained.find(c.run->system); s != sustained.end())
            r["calibrated_sustained_efficiency"] = s->second;
          if (c.run->memory_gib > 0) {
            r["published_gib"] = c.run->memory_gib;
            r["memory_error"] = c.memory_error;
          }
        }
        if (json)
          j.push_back(r);
        if (!verbose || json)
          continue;
        if (!c.skipped.empty()) {
          o += fmt::format("  {:<48} skipped: {}\n", c.run->id, c.skipped);
          continue;
        }
        o += fmt::format("  {:<48} {:9.3f} s  est {:9.3f} s  {:+6.1f}%  {:6.1f} GiB", c.run->id,
                         c.run->iteration_s, c.estimated_s, 100 * c.time_error, c.estimated_gib);
        if (c.run->memory_gib > 0)
          o += fmt::format(" (published {:.1f}, {:+.1f}%)", c.run->memory_gib,
                           100 * c.memory_error);
        o += fmt::format("{}{}{}\n", c.fits ? "" : " DOES NOT FIT",
                         c.calibration ? " (calibration run: in sample)" : "",
                         c.run->no_time ? " (memory only)" : "");
      }
      const est::SourceSummary sm = est::summarize_published(rows);
      if (sm.runs == 0)
        continue;
      o += fmt::format("{:<44} runs {:3}  out of sample {:3}: mean |time error| {:5.1f}%  max "
                       "{:5.1f}%",
                       sm.source, sm.runs, sm.estimated, 100 * sm.mean_abs_time,
                       100 * sm.max_abs_time);
      if (sm.memory_runs)
        o += fmt::format("; memory ({} runs) mean {:.1f}% max {:.1f}%", sm.memory_runs,
                         100 * sm.mean_abs_memory, 100 * sm.max_abs_memory);
      if (sm.calibration)
        o += fmt::format("; {} calibration", sm.calibration);
      if (sm.skipped)
        o += fmt::format("; {} not expressible", sm.skipped);
      if (sm.not_fitting)
        o += fmt::format("; {} estimated not to fit (not counted)", sm.not_fitting);
      o += "\n";
    }
    if (!explain.empty() && !explained)
      throw InputError("no run with id '" + explain + "' in the given files", "", 0, "--explain");
    for (const std::string &id : calibrate_on)
      if (id != "smallest" && !ids_found.count(id))
        throw InputError("no run with id '" + id + "' in the given files", "", 0, "--calibrate-on");
    if (json && !explained_report.empty()) // the table goes to stderr beside the JSON
      std::fprintf(stderr, "%s\n", explained_report.c_str());
    print(json ? dump_json(j, 2) + "\n" : o);
  }
};

} // namespace

void add_estimator_commands(CLI::App &app) {
  auto val = std::make_shared<ValidateCmd>();
  CLI::App *cv = app.add_subcommand(
      "validate", "estimate published training runs (JSONL) with their own configuration and "
                  "report the error per source");
  cv->add_option("runs", val->files, "published-runs JSONL files (tests/data/published-runs)")
      ->required()
      ->check(CLI::ExistingFile);
  cv->add_option("--root", val->root,
                 "directory the runs' system paths are relative to (default: .)")
      ->check(CLI::ExistingDirectory);
  cv->add_option("--fit", val->fit_path,
                 "fit file whose compute section prices the runs on --fit-system");
  cv->add_option("--fit-system", val->fit_system,
                 "system path (as the runs name it) the --fit was measured on");
  cv->add_flag("--runs-table,-v", val->verbose, "print every run");
  cv->add_flag("--json", val->json, "print JSON");
  cv->add_option("--explain", val->explain,
                 "also print this run's whole estimate (time and memory terms, every message and "
                 "what priced it) under its published time, to see where an error comes from "
                 "(with --json: on stderr)");
  cv->add_option("--calibrate-on", val->calibrate_on,
                 "derive the sustained_efficiency of a run's system from that one run (the "
                 "published step as a user's own measured step) and estimate the source's other "
                 "runs on that system with it; run ids, or 'smallest' (per file and system, the "
                 "run with the fewest GPUs); the calibration runs are in sample")
      ->delimiter(',');
  cv->callback([val] { val->run(); });

  auto estimate = std::make_shared<EstimateCmd>();
  CLI::App *ce =
      app.add_subcommand("estimate", "estimate one training layout: time, memory, messages");
  ce->add_option("--system", estimate->system, "system YAML (configs/systems/...)")->required();
  ce->add_option("--fit", estimate->fit, "fit file pricing the ops and group shapes it covers");
  estimate->model.add(ce);
  estimate->strat.add(ce, true);
  ce->add_option("--global-batch", estimate->global_batch,
                 "global batch B (default: the model's, else dp*b)")
      ->check(CLI::Range(1, 1 << 30));
  ce->add_option("--gpus", estimate->gpus, "check dp*tp*pp against this GPU count")
      ->check(CLI::Range(1, est::kMaxGpus));
  ce->add_option("--scale-to", estimate->scale_to,
                 "also scale the layout to this many GPUs by growing dp (Cheng et al.)")
      ->check(CLI::Range(1, est::kMaxGpus));
  add_nvlink_domain(ce, estimate->nvlink_domain);
  ce->add_flag("--json", estimate->json, "print JSON instead of a table");
  ce->callback([estimate] { estimate->run(); });

  auto srch = std::make_shared<SearchCmd>();
  CLI::App *cs =
      app.add_subcommand("search", "rank DP x TP x PP / ZeRO / recompute / SP / b / v layouts");
  cs->add_option("--system", srch->system, "system YAML")->required();
  cs->add_option("--fit", srch->fit, "fit file");
  srch->model.add(cs);
  srch->strat.add(cs, false);
  cs->add_option("--gpus", srch->gpus, "GPU count N")
      ->required()
      ->check(CLI::Range(1, est::kMaxGpus));
  cs->add_option("--global-batch", srch->global_batch, "global batch B (default: the model's)")
      ->check(CLI::Range(1, 1 << 30));
  cs->add_option("--top", srch->top, "how many layouts to print")->check(CLI::Range(1, 1 << 20));
  add_nvlink_domain(cs, srch->nvlink_domain);
  cs->add_option("--max-cp", srch->max_cp, "largest CP degree to try (powers of 2; 1 = none)")
      ->check(CLI::Range(1, 1 << 16));
  cs->add_option("--max-ep", srch->max_ep,
                 "MoE models: largest expert-parallel degree to try (powers of 2)")
      ->check(CLI::Range(1, 1 << 16));
  cs->add_option("--max-tp", srch->max_tp, "largest TP degree to try (0 = any)")
      ->check(CLI::Range(0, est::kMaxGpus));
  cs->add_flag("--json", srch->json, "print JSON");
  cs->callback([srch] { srch->run(); });

  auto cmp = std::make_shared<CompareCmd>();
  CLI::App *cc =
      app.add_subcommand("compare", "one model on two systems side by side (Cheng et al.)");
  cc->add_option("system_a", cmp->system_a, "system A YAML")->required();
  cc->add_option("system_b", cmp->system_b, "system B YAML")->required();
  cc->add_option("--fit-a", cmp->fit_a, "fit file for system A");
  cc->add_option("--fit-b", cmp->fit_b, "fit file for system B");
  cmp->model.add(cc);
  cmp->strat.add(cc, true);
  cc->add_option("--gpus", cmp->gpus, "GPU count N")
      ->required()
      ->check(CLI::Range(1, est::kMaxGpus));
  cc->add_option("--global-batch", cmp->global_batch, "global batch B (default: the model's)")
      ->check(CLI::Range(1, 1 << 30));
  cc->add_flag("--json", cmp->json, "print JSON");
  cmp->app = cc;
  cc->callback([cmp] { cmp->run(); });
}

} // namespace scalefit::cli

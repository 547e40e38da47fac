// `scalefit report`: PNG plots and index.html from measurements, fit files and estimates.
#include "commands.hpp"

#include "scalefit/report/report.hpp"

#include "scalefit/core/error.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <memory>

namespace scalefit::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> results, fits, estimates;
  std::string system; ///< --system: add `scalefit check`'s verdicts over the comm inputs
  report::ReportOptions opt;
};

void run_report(const ReportArgs &a) {
  const report::Inputs in = report::load_inputs(a.results, a.fits, a.estimates);
  report::ReportOptions opt = a.opt;
  if (!a.system.empty()) {
    if (in.comm_files.empty())
      throw InputError("--system checks the comm measurements, but no comm JSONL was given", "",
                       0, "--system");
    opt.check = check_json(in.comm_files, a.system);
  }
  const std::vector<report::Plot> plots = report::write_report(in, opt);
  const std::string index =
      (std::filesystem::path(a.opt.out_dir) / "index.html").lexically_normal().string();
  fmt::print("scalefit report: {} plot(s){}; open {}\n", plots.size(),
             a.opt.data_only ? " (data only, not drawn)" : "", index);
}

} // namespace

void add_report_command(CLI::App &app) {
  auto ra = std::make_shared<ReportArgs>();
  CLI::App *r = app.add_subcommand(
      "report", "Draw measurements, fits and estimates into PNGs and an index.html");
  r->add_option("results", ra->results,
                "comm or kernels JSONL files (scalefit.comm/1, scalefit.kernels/1), or "
                "directories of *.jsonl");
  r->add_option("--fit", ra->fits, "fit file(s) whose curves, residuals and scaling to draw");
  r->add_option("--estimate", ra->estimates,
                "JSON written by `scalefit estimate|search|compare|validate --json` (repeatable)");
  r->add_option("-o,--out", ra->opt.out_dir, "output directory (index.html, *.png, data/)")
      ->required();
  r->add_option("--title", ra->opt.title, "page title")->capture_default_str();
  r->add_option("--system", ra->system,
                "system YAML or name in configs/systems: add `scalefit check`'s verdict table "
                "(links, reference, run-to-run spread) for the comm measurements");
  r->add_option("--python", ra->opt.python,
                "Python with matplotlib (default: $SCALEFIT_PYTHON, else python3 or "
                "/usr/bin/python3, whichever imports matplotlib)");
  r->add_option("--script", ra->opt.script,
                "plot script (default: $SCALEFIT_REPORT_SCRIPT, share/scalefit/plot.py beside the "
                "binaries, or the source tree's report/plot.py)");
  r->add_flag("--data-only", ra->opt.data_only,
              "write data/*.json, plots.json and index.html; do not run the plot script");
  r->callback([ra] { run_report(*ra); });
}

} // namespace scalefit::cli

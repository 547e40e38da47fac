// `scalefit fit` (JSONL records → fit file) and `scalefit predict` (fit file → time per size).
#include "commands.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/input_file.hpp"
#include "scalefit/core/records.hpp"
#include "scalefit/core/units.hpp"
#include "scalefit/fitting/fit_file.hpp"
#include "scalefit/fitting/predict.hpp"
#include "scalefit/report/fit_csv.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <sstream>

namespace scalefit::cli {
namespace {

namespace fs = std::filesystem;
using namespace scalefit::fitting;

struct FitArgs {
  std::vector<std::string> inputs;
  std::string out;
  std::string csv; // --csv: one row per entry (report/fit_csv.hpp)
  int min_points = 2; ///< int, not size_t: CLI11 would wrap "-3" to 2^64 - 3
  std::vector<std::string> models;
  int max_regimes = 3;
  int max_drops = 3;
  int max_lifts = 1;
  bool keep_outliers = false;
  bool no_loo = false;
  std::string repeats = "merge"; ///< --repeats: a point measured again in another file
};

struct PredictArgs {
  std::string fit;
  std::string op;
  int nranks = 0;
  int nnodes = 0; ///< 0: not given (the one entry with --nranks ranks, else 1)
  std::string dtype;
  std::string method; ///< "" any
  std::vector<std::string> bytes;
  bool json = false;
};

void run_fit(const FitArgs &a) {
  FitOptions opt;
  opt.min_points = static_cast<std::size_t>(a.min_points);
  opt.max_regimes = a.max_regimes;
  opt.max_drops = a.max_drops;
  opt.max_lifts = std::min(a.max_lifts, a.max_drops);
  opt.reject_outliers = !a.keep_outliers;
  opt.leave_one_out = !a.no_loo;
  if (!a.models.empty()) {
    opt.models.clear();
    for (const std::string &m : a.models) {
      auto k = parse_model(m);
      if (!k)
        throw InputError("unknown model '" + m + "' (known: alpha_beta, logistic, regimes)", "", 0,
                         "--models");
      opt.models.push_back(*k);
    }
  }
  const auto policy = parse_repeat_policy(a.repeats);
  if (!policy)
    throw InputError("expected merge or refuse, got '" + a.repeats + "'", "", 0, "--repeats");
  const std::vector<std::string> all = expand_jsonl_inputs(a.inputs);
  refuse_outputs_over_inputs({{a.out, "--out"}, {a.csv, "--csv"}}, all);
  std::vector<std::string> files, kernel_files; // scalefit.comm/1 and scalefit.kernels/1 files
  for (const std::string &f : all)
    (is_kernels_file(f) ? kernel_files : files).push_back(f);
  std::vector<RecordSet> sets;
  for (const std::string &f : files)
    sets.push_back(read_records(f));
  // No point is counted twice: the same file twice is read once, a point repeated in another
  // file (another run) is merged into the median of its repeats (or refused: --repeats refuse),
  // the same point twice in one file with different results is refused (core/repeats.hpp).
  for (const std::string &w : drop_duplicate_measurements(sets, *policy))
    fmt::print(stderr, "scalefit fit: {}{}\n",
               w.find(" repeats ") != std::string::npos ? "" : "warning: ", w);
  FitFile fit = files.empty() ? FitFile{} : fit_records(sets, files, opt);
  std::vector<std::string> kernel_notes;
  fit.compute =
      fit_kernel_files(kernel_files, opt.leave_one_out, sets, files, *policy, &kernel_notes);
  for (const std::string &n : kernel_notes)
    fmt::print(stderr, "scalefit fit: {}\n", n);
  fit.repeat_policy = repeat_policy_name(*policy);
  for (const UnfittedEntry &u : fit.unfitted)
    fmt::print(stderr, "scalefit fit: entry {}: not fitted: {}\n", u.id, u.reason);
  if (fit.entries.empty() && fit.compute.empty())
    throw InputError("no curve could be fitted from the input", all.front());
  write_fit_file(fit, a.out);
  if (!a.csv.empty())
    report::write_fit_csv(fit, a.csv);
  fmt::print("{}", compute_table(fit.compute));

  // MAPE and LOO over the points fitted; "outl" points screened out as outliers (listed in the fit
  // file's `excluded`) and MAPE+o the error with them put back.
  const char *header = "{:<14} {:<22} {:<8} {:<12} {:>6} {:>10} {:>9} {:>9} {:>10} {:>10} {:<20} "
                       "{:>7} {:>7} {:>4} {:>7}\n";
  if (!fit.entries.empty()) { // a fit of kernel records alone has no curve table
    fmt::print(fmt::runtime(header), "op", "group", "dtype", "placement", "points", "peak_busbw",
               "alpha", "t(min)", "asym_algbw", "asym_busbw", "model", "MAPE", "LOO", "outl",
               "MAPE+o");
    fmt::print(fmt::runtime(header), "", "", "", "", "", "[GB/s]", "[us]", "[us]", "[GB/s]",
               "[GB/s]", "", "[%]", "[%]", "", "[%]");
  }
  for (const FitEntry &e : fit.entries) {
    const std::string model = model_label(e.model);
    const std::string loo = e.quality.cross_validated && e.quality.loo_mape_pct >= 0
                                ? fmt::format("{:.2f}", e.quality.loo_mape_pct)
                                : std::string("n/a");
    fmt::print("{:<14} {:<22} {:<8} {:<12} {:>6} {:>10.2f} {:>9.2f} {:>9.2f} {:>10.2f} {:>10.2f} "
               "{:<20} {:>7.2f} {:>7} {:>4} {:>7.2f}\n",
               e.method.empty() ? std::string(op_name(e.op)) : e.method, e.group.label(),
               dtype_name(e.dtype), placement_name(e.placement), e.points, e.peak_busbw_gbps, e.model.alpha_us, e.latency_us(),
               e.asymptotic_algbw_gbps(), e.asymptotic_algbw_gbps() * e.busbw_factor(), model,
               e.quality.mape_pct, loo, e.quality.outliers, e.quality.mape_all_pct);
  }
  for (const FitEntry &e : fit.entries)
    if (!e.quality.cross_validated)
      fmt::print(stderr,
                 "scalefit fit: warning: entry {}: only {} points: alpha-beta fitted, quality not "
                 "cross-validated\n",
                 e.id, e.points);
  for (const ScalingSeries &s : fit.scaling)
    for (const ScalingEfficiency &ef : s.efficiency) {
      std::string bands;
      for (const BandEfficiency &b : ef.bands)
        if (b.sizes)
          bands += fmt::format(" {} {:.3f}", b.band.name, b.efficiency);
      fmt::print("scaling {} {} {} {} {} ranks/node: eff({}->{} nodes) size-weighted {:.3f};{}\n",
                 s.system, op_name(s.op), dtype_name(s.dtype), placement_name(s.placement),
                 s.ranks_per_node, ef.from_nnodes, ef.to_nnodes, ef.size_weighted, bands);
    }
  fmt::print("wrote {} ({} entries, {} not fitted)\n", a.out, fit.entries.size(),
             fit.unfitted.size());
}

std::vector<std::uint64_t> parse_byte_list(const std::vector<std::string> &items) {
  std::vector<std::uint64_t> out;
  for (const std::string &item : items) {
    std::stringstream ss(item);
    std::string tok;
    while (std::getline(ss, tok, ','))
      if (!tok.empty())
        out.push_back(parse_bytes(tok, "--bytes"));
  }
  if (out.empty())
    throw InputError("no sizes given", "", 0, "--bytes");
  return out;
}

void run_predict(const PredictArgs &a) {
  const FitFilePtr fit = load_fit_file(a.fit);
  CommQuery q;
  if (auto op = parse_op(a.op))
    q.op = *op;
  else
    throw InputError("unknown operation '" + a.op + "'", "", 0, "--op");
  if (a.nranks < 1)
    throw InputError("expected a positive rank count", "", 0, "--nranks");
  q.nranks = a.nranks;
  q.nnodes = a.nnodes;
  if (a.nnodes == 0) {
    // No --nnodes: the one entry with this many ranks, when there is exactly one shape.
    const std::vector<int> shapes = entry_nnodes(*fit, q.op, q.nranks);
    if (shapes.size() == 1) {
      q.nnodes = shapes.front();
      fmt::print(stderr,
                 "scalefit predict: no --nnodes given: using the one {} entry on {} ranks "
                 "({} nodes)\n",
                 op_name(q.op), q.nranks, q.nnodes);
    } else if (shapes.size() > 1) {
      std::string list;
      for (int n : shapes)
        list += (list.empty() ? "" : ", ") + std::to_string(n);
      throw InputError(fmt::format("the fit file has {} entries on {} ranks for {} nodes: pass "
                                   "--nnodes",
                                   op_name(q.op), q.nranks, list),
                       a.fit, 0, "--nnodes");
    } else {
      q.nnodes = 1;
    }
  }
  if (q.nnodes < 1 || q.nnodes > q.nranks)
    throw InputError("expected 1 <= nnodes <= nranks", "", 0, "--nnodes");
  if (!a.dtype.empty()) {
    if (auto d = parse_dtype(a.dtype))
      q.dtype = *d;
    else
      throw InputError("unknown dtype '" + a.dtype + "'", "", 0, "--dtype");
  }
  q.method = a.method;
  const std::vector<std::uint64_t> sizes = parse_byte_list(a.bytes);
  nlohmann::json list = nlohmann::json::array();
  std::vector<CommPrediction> preds;
  for (std::uint64_t b : sizes) {
    auto p = predict(*fit, q, static_cast<double>(b));
    if (!p)
      throw InputError(
          fmt::format("no entry for {}{} on {} ranks / {} nodes, and no scaling trend reaches it{}",
                      op_name(q.op), q.method.empty() ? "" : " measured by " + q.method, q.nranks,
                      q.nnodes, [&] {
                        std::string have;
                        for (const FitEntry &e : fit->entries)
                          if (e.op == q.op && have.find(e.group.label()) == std::string::npos)
                            have += (have.empty() ? "" : "; ") + e.group.label();
                        return have.empty() ? std::string()
                                            : " (entries for " + std::string(op_name(q.op)) +
                                                  ": " + have + ")";
                      }()),
          a.fit);
    preds.push_back(*p);
  }
  // A size the fit left out (an outlier, issue 19): say what was measured there and why it is
  // not what the curve predicts.
  std::vector<const ExcludedPoint *> left_out(sizes.size(), nullptr);
  for (std::size_t i = 0; i < sizes.size(); ++i)
    if (const FitEntry *e = fit->find(preds[i].entry))
      for (const ExcludedPoint &x : e->excluded)
        if (x.bytes == static_cast<double>(sizes[i]))
          left_out[i] = &x;
  if (a.json) {
    for (std::size_t i = 0; i < sizes.size(); ++i)
      list.push_back({{"bytes", sizes[i]},
                      {"time_us", preds[i].time_us},
                      {"algbw_gbps", preds[i].algbw_gbps},
                      {"busbw_gbps", preds[i].busbw_gbps},
                      {"extrapolated", preds[i].extrapolated},
                      {"entry", preds[i].entry},
                      {"note", preds[i].note}});
    for (std::size_t i = 0; i < sizes.size(); ++i)
      if (left_out[i])
        list[i]["excluded"] = {{"time_us", left_out[i]->time_us},
                               {"reason", left_out[i]->reason}};
    fmt::print("{}\n", dump_json(list, 2));
    return;
  }
  fmt::print("# {} nranks={} nnodes={} from {} (entry {})\n", op_name(q.op), q.nranks, q.nnodes,
             a.fit, preds.front().entry);
  fmt::print("{:>14} {:>12} {:>10} {:>10} {:>6}  {}\n", "bytes", "time_us", "algbw", "busbw",
             "extrap", "note");
  for (std::size_t i = 0; i < sizes.size(); ++i)
    fmt::print("{:>14} {:>12.3f} {:>10.3f} {:>10.3f} {:>6}  {}\n", sizes[i], preds[i].time_us,
               preds[i].algbw_gbps, preds[i].busbw_gbps, preds[i].extrapolated ? "yes" : "no",
               preds[i].note +
                   (left_out[i] ? fmt::format("; measured {:.4g} us here, left out of the fit "
                                              "({})",
                                              left_out[i]->time_us, left_out[i]->reason)
                                : std::string()));
}

} // namespace

void add_fitting_commands(CLI::App &app) {
  auto fa = std::make_shared<FitArgs>();
  CLI::App *fit = app.add_subcommand(
      "fit", "Fit time-vs-size curves of JSONL measurements; write a YAML fit file");
  fit->add_option("inputs", fa->inputs, "JSONL files, or directories of *.jsonl")->required();
  fit->add_option("-o,--out", fa->out, "fit file to write (YAML, schema scalefit.fit/2)")
      ->required();
  fit->add_option("--csv", fa->csv, "also write the entries as CSV, one row per curve");
  fit->add_option("--min-points", fa->min_points,
                  "curves with fewer usable points are not fitted (2 and 3 points get alpha-beta "
                  "only, not cross-validated)")
      ->default_val(2)
      ->check(CLI::Range(2, 1 << 20));
  fit->add_option("--models", fa->models, "candidate models: alpha_beta,logistic,regimes")
      ->delimiter(',');
  fit->add_option("--max-regimes", fa->max_regimes, "largest number of regimes tried (2..8)")
      ->default_val(3)
      ->check(CLI::Range(2, 8));
  fit->add_option("--max-drops", fa->max_drops,
                  "largest number of falls (bandwidth drops + latency steps) added to a rising "
                  "model (0..8; 0: bandwidth only rises)")
      ->default_val(3)
      ->check(CLI::Range(0, 8));
  fit->add_option("--max-lifts", fa->max_lifts,
                  "of those falls, at most this many latency steps (0..8)")
      ->default_val(1)
      ->check(CLI::Range(0, 8));
  fit->add_flag("--keep-outliers", fa->keep_outliers, "do not exclude isolated outliers");
  fit->add_flag("--no-loo", fa->no_loo, "skip the leave-one-out error");
  fit->add_option("--repeats", fa->repeats,
                  "a point (system, op, group, dtype, placement, size; a kernel shape) measured "
                  "again in another file: merge (one point, the median of the repeats, counted "
                  "in the fit file's `repeats`) or refuse (exit 2 naming both records); the same "
                  "point twice in one file with different results is always refused")
      ->default_val("merge");
  fit->callback([fa] { run_fit(*fa); });

  auto pa = std::make_shared<PredictArgs>();
  CLI::App *pr =
      app.add_subcommand("predict", "Predict collective time per message size from a fit file");
  pr->add_option("--fit", pa->fit, "fit file (YAML)")->required();
  pr->add_option("--op", pa->op, "operation (allreduce, allgather, ...)")->required();
  pr->add_option("--nranks", pa->nranks, "ranks in the communicator")
      ->required()
      ->check(CLI::Range(1, 1 << 24));
  pr->add_option("--nnodes", pa->nnodes,
                 "nodes among them (default: the one entry with --nranks ranks, else 1)")
      ->check(CLI::Range(1, 1 << 24));
  pr->add_option("--dtype", pa->dtype, "preferred dtype (any when unset)");
  pr->add_option("--method", pa->method,
                 "only entries measured by this benchmark (osu_latency, osu_bw, osu_bibw); default: "
                 "prefer a timed loop of the op, then osu_latency, osu_bw, osu_bibw");
  pr->add_option("--bytes", pa->bytes, "message sizes, K/M/G suffixes, comma-separated")
      ->required();
  pr->add_flag("--json", pa->json, "print a JSON list");
  pr->callback([pa] { run_predict(*pa); });
}

} // namespace scalefit::cli

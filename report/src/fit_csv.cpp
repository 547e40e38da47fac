// `scalefit fit --csv`: fit entries as flat CSV rows.
#include "scalefit/report/fit_csv.hpp"

#include "scalefit/core/atomic_file.hpp"
#include "scalefit/core/csv.hpp"

#include <fmt/format.h>

namespace scalefit::report {

const std::vector<std::string> &fit_csv_header() {
  static const std::vector<std::string> h = {
      "id",           "system",      "op",           "group",           "group_nranks",
      "group_nnodes", "group_ranks_per_node", "dtype", "redop",         "root",
      "placement",    "model",       "regimes",      "points",          "excluded_points",
      "min_bytes_B",  "max_bytes_B", "alpha_us",     "latency_us",      "peak_busbw_GBps",
      "asym_algbw_GBps", "asym_busbw_GBps", "busbw_factor", "mape_pct", "max_ape_pct",
      "loo_mape_pct", "r2_log_time", "selection"};
  return h;
}

std::vector<std::string> fit_csv_row(const fitting::FitEntry &e) {
  auto num = [](double v) { return fmt::format("{:.10g}", v); };
  return {e.id,
          e.system,
          std::string(op_name(e.op)),
          e.group.kind,
          std::to_string(e.group.nranks),
          std::to_string(e.group.nnodes),
          std::to_string(e.group.ranks_per_node),
          std::string(dtype_name(e.dtype)),
          std::string(redop_name(e.redop)),
          std::to_string(e.root),
          std::string(placement_name(e.placement)),
          fitting::model_label(e.model),
          std::to_string(e.model.num_regimes()),
          std::to_string(e.points),
          std::to_string(e.excluded.size()),
          num(e.min_bytes),
          num(e.max_bytes),
          num(e.model.alpha_us),
          num(e.latency_us()),
          num(e.peak_busbw_gbps),
          num(e.asymptotic_algbw_gbps()),
          num(e.asymptotic_algbw_gbps() * e.busbw_factor()),
          num(e.busbw_factor()),
          num(e.quality.mape_pct),
          num(e.quality.max_ape_pct),
          e.quality.loo_mape_pct >= 0 ? num(e.quality.loo_mape_pct) : std::string(),
          num(e.quality.r2_log_time),
          e.selection};
}

std::string fit_csv(const fitting::FitFile &fit) {
  auto line = [](const std::vector<std::string> &cells) {
    std::string l;
    for (std::size_t i = 0; i < cells.size(); ++i)
      l += (i ? "," : "") + csv_field(cells[i]);
    return l + "\n";
  };
  std::string o = line(fit_csv_header());
  for (const fitting::FitEntry &e : fit.entries)
    o += line(fit_csv_row(e));
  return o;
}

void write_fit_csv(const fitting::FitFile &fit, const std::string &path) {
  AtomicFile out(path);
  out.write(fit_csv(fit));
  out.commit();
}

} // namespace scalefit::report

// Reading compute measurements: `scalefit-bench kernels` JSONL records (kernel points with their
// physical ranges checked where read) and single-rank copies of a comm run (memory-bound points);
// fit_kernel_files gathers both, merges repeats and fits them (compute.cpp).
#include "compute_detail.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/input_file.hpp"
#include "scalefit/core/jsonl.hpp"
#include "scalefit/core/validate.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace scalefit::fitting {

using detail::canonical_dtype;
using detail::element_bytes;
using detail::is_gemm;
using detail::point_groups;

bool is_kernels_file(const std::string &path) {
  // read once (a pipe or FIFO is kept for the reader that follows: core/input_file.hpp)
  const auto text = read_input(path);
  std::size_t pos = 0;
  for (int i = 0; i < 50 && pos < text->size(); ++i) {
    std::size_t end = text->find('\n', pos);
    if (end == std::string::npos)
      end = text->size();
    const std::string_view line(text->data() + pos, end - pos);
    pos = end + 1;
    if (line.find("\"context\"") == std::string_view::npos)
      continue;
    nlohmann::json j;
    try {
      j = parse_json_bounded(line, path, i + 1);
    } catch (const InputError &) {
      continue; // the reader that follows names the line
    }
    if (j.is_object() && j.contains("type") && j["type"] == "context")
      return j.contains("schema") && j["schema"].is_string() &&
             j["schema"].get<std::string>().rfind("scalefit.kernels/", 0) == 0;
  }
  return false;
}

std::vector<KernelPoint> read_kernel_points(const std::string &path, std::string *device) {
  std::vector<KernelPoint> out;
  for_each_json_line(path, [&](const nlohmann::json &j, long no) {
    // A string field, `fallback` when absent; any other type is bad input naming the field
    // (nlohmann's value() would throw its type_error: exit 3 naming no file).
    auto text = [&](const char *field, const char *fallback) -> std::string {
      if (!j.contains(field))
        return fallback;
      if (!j[field].is_string())
        throw InputError("expected a string", path, no, field);
      return j[field].get<std::string>();
    };
    const std::string type = text("type", "");
    if (type == "context") {
      const std::string schema = text("schema", "");
      if (schema != "scalefit.kernels/1")
        throw InputError("expected schema scalefit.kernels/1, got '" + schema + "'", path, no,
                         "schema");
      if (device && device->empty() && j.contains("device") && j["device"].is_string())
        *device = j["device"].get<std::string>();
      return true;
    }
    if (type != "kernel")
      return true;
    // Each field inside its physical range (core/validate.hpp): a denormal m or time would give
    // a fit file with inf that its own loader refuses.
    auto num = [&](const char *field, bool required, const Bounds &b = Bounds{0, 1e24}) -> double {
      if (!j.contains(field)) {
        if (required)
          throw InputError("missing field", path, no, field);
        return 0;
      }
      if (!j[field].is_number())
        throw InputError("expected a number", path, no, field);
      return require_in(j[field].get<double>(), b, field, path, no);
    };
    if (!j.contains("kind") || !j["kind"].is_string())
      throw InputError("missing or non-string field", path, no, "kind");
    const auto kind = parse_kernel_kind(j["kind"].get<std::string>());
    if (!kind)
      return true; // a kind this version does not model
    KernelPoint p;
    p.kind = *kind;
    p.name = text("name", "");
    if (!j.contains("dtype") || !j["dtype"].is_string())
      throw InputError("missing or non-string field", path, no, "dtype");
    p.dtype = canonical_dtype(j["dtype"].get<std::string>());
    p.m = num("m", true, bounds::kernel_dim);
    p.n = num("n", true, bounds::kernel_dim);
    p.k = num("k", false, Bounds{0, bounds::kernel_dim.hi}); // 0: softmax; GEMMs: >= 1 below
    p.batch = std::max(1.0, num("batch", false, Bounds{0, bounds::kernel_dim.hi}));
    p.time_us = num("time_us", true, bounds::measured_time_us);
    p.flops = num("flops", false);
    if (p.kind == KernelKind::grouped_gemm && j.contains("group_tokens")) {
      const auto &g = j["group_tokens"];
      if (!g.is_array() || g.empty())
        throw InputError("expected a non-empty array of token counts", path, no, "group_tokens");
      for (const auto &t : g) {
        if (!t.is_number() || !bounds::kernel_dim.contains(t.get<double>()))
          throw InputError("expected positive token counts", path, no, "group_tokens");
        p.group_tokens.push_back(t.get<double>());
      }
      p.tokens_in_k = text("tokens_dim", "m") == "k";
      if (j.contains("grouped_gemm")) {
        const auto &api = j["grouped_gemm"];
        if (!api.is_string() ||
            (api.get<std::string>() != "per-expert" && api.get<std::string>() != "cublas-grouped"))
          throw InputError("expected \"per-expert\" or \"cublas-grouped\"", path, no,
                           "grouped_gemm");
        p.per_group = api.get<std::string>() == "per-expert";
      }
    }
    if (!(p.time_us > 0))
      throw InputError("expected a positive time", path, no, "time_us");
    if (is_gemm(p.kind) && !(p.k >= 1))
      throw InputError("GEMM needs k >= 1", path, no, "k");
    if (is_gemm(p.kind) && p.flops <= 0) {
      p.flops = p.group_tokens.empty() ? 2 * p.m * p.n * p.k * p.batch : 0;
      for (const auto &g : point_groups(p))
        p.flops += 2 * g[0] * g[1] * g[2];
    }
    // softmax: read and write m x n per batch entry, in the kernel's dtype (kernels/softmax.cu).
    p.bytes = j.contains("bytes") ? num("bytes", false)
                                  : 2 * p.m * p.n * p.batch * element_bytes(p.dtype);
    p.origin = fmt::format("{}:{}", path, no);
    out.push_back(std::move(p));
    return true;
  });
  return out;
}

/// Copies below 1 MiB time the launch, not the memory: they are left out of the copy fit (the
/// estimator's elementwise kernels move megabytes; the fit's c0 carries the launch).
constexpr std::uint64_t kMinCopyBytes = 1u << 20;

std::vector<KernelPoint> copy_points(const RecordSet &set, const std::string &file) {
  std::vector<KernelPoint> out;
  for (std::size_t i = 0; i < set.measurements.size(); ++i) {
    const MeasurementRecord &m = set.measurements[i];
    if (m.group.nranks != 1 || m.placement != Placement::out_of_place || m.bytes < kMinCopyBytes ||
        !(m.time_us > 0) || !std::isfinite(m.time_us))
      continue;
    KernelPoint p;
    p.kind = KernelKind::memory;
    p.name = "copy:" + std::string(op_name(m.op));
    p.dtype = "any";
    p.bytes = 2.0 * static_cast<double>(m.bytes);
    p.m = static_cast<double>(m.bytes);
    p.n = 1;
    p.time_us = m.time_us;
    p.origin = i < set.origin.size() ? set.origin[i] : file;
    out.push_back(std::move(p));
  }
  return out;
}

ComputeSection fit_kernel_files(const std::vector<std::string> &files, bool loo,
                                const std::vector<RecordSet> &comm_sets,
                                const std::vector<std::string> &comm_files, RepeatPolicy policy,
                                std::vector<std::string> *notes) {
  std::vector<std::vector<KernelPoint>> per_file;
  std::vector<std::string> devices, merged_notes;
  std::string device, names;
  for (const std::string &f : files) {
    per_file.push_back(read_kernel_points(f, &devices.emplace_back()));
    if (device.empty())
      device = devices.back();
    names += (names.empty() ? "" : ", ") + f.substr(f.find_last_of('/') + 1);
  }
  std::vector<KernelPoint> points =
      merge_kernel_repeats(per_file, devices, files, policy, merged_notes);
  if (notes)
    notes->insert(notes->end(), merged_notes.begin(), merged_notes.end());
  if (!files.empty() && points.empty())
    throw InputError("no kernel records", files.front());
  for (std::size_t i = 0; i < comm_sets.size(); ++i) {
    const std::string f = i < comm_files.size() ? comm_files[i] : std::string();
    const auto pts = copy_points(comm_sets[i], f);
    if (pts.empty())
      continue;
    points.insert(points.end(), pts.begin(), pts.end());
    names += (names.empty() ? "" : ", ") + f.substr(f.find_last_of('/') + 1) + " (copies)";
  }
  if (points.empty())
    return {};
  return fit_compute_section(points, device, names, loo);
}

} // namespace scalefit::fitting

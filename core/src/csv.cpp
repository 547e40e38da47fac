// CSV output of records: quoting, cells, the appending writer, comm and kernels rows.
#include "scalefit/core/csv.hpp"

#include "scalefit/core/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace scalefit {

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos)
    return std::string(s);
  std::string o = "\"";
  for (char c : s) {
    if (c == '"')
      o += '"';
    o += c;
  }
  return o + "\"";
}

std::string csv_cell(const nlohmann::json &v) {
  if (v.is_null())
    return "";
  if (v.is_string())
    return v.get<std::string>();
  if (v.is_boolean())
    return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer())
    return std::to_string(v.get<long long>());
  if (v.is_number_unsigned())
    return std::to_string(v.get<unsigned long long>());
  if (v.is_number())
    return fmt::format("{:.10g}", v.get<double>());
  return v.dump();
}

namespace {
std::string join(const std::vector<std::string> &cells) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i)
      line += ',';
    line += csv_field(cells[i]);
  }
  return line + "\n";
}

/// `j[a][b]` or null when absent.
const nlohmann::json &at(const nlohmann::json &j, const char *a, const char *b = nullptr) {
  static const nlohmann::json null;
  if (!j.is_object() || !j.contains(a))
    return null;
  if (!b)
    return j[a];
  return j[a].is_object() && j[a].contains(b) ? j[a][b] : null;
}
/// A statistic of a record's "stats": "min_us" (comm) or "min" (kernels).
const nlohmann::json &stat(const nlohmann::json &r, const std::string &name) {
  const nlohmann::json &us = at(r, "stats", (name + "_us").c_str());
  return us.is_null() ? at(r, "stats", name.c_str()) : us;
}
} // namespace

CsvWriter::CsvWriter(const std::string &path, const std::vector<std::string> &header)
    : m_path(path), m_columns(header.size()) {
  const std::string head = join(header);
  std::string first;
  {
    std::ifstream in(path);
    if (in)
      std::getline(in, first);
  }
  if (!first.empty() && first + "\n" != head)
    throw InputError("exists with other columns (first line '" + first.substr(0, 60) +
                         "...'); give a new file",
                     path, 1, "--csv");
  m_file = std::fopen(path.c_str(), "a");
  if (!m_file)
    throw InputError(std::string("cannot open for appending: ") + std::strerror(errno), path, 0,
                     "--csv");
  if (first.empty()) {
    std::fputs(head.c_str(), m_file);
    std::fflush(m_file);
  }
}

CsvWriter::~CsvWriter() {
  if (m_file)
    std::fclose(m_file);
}

void CsvWriter::row(const std::vector<std::string> &cells) {
  if (cells.size() != m_columns)
    throw std::invalid_argument(
        fmt::format("CSV row of {} cells for {} columns", cells.size(), m_columns));
  const std::string line = join(cells);
  if (std::fputs(line.c_str(), m_file) < 0 || std::fflush(m_file) != 0)
    throw RuntimeError("cannot write " + m_path + ": " + std::strerror(errno));
}

const std::vector<std::string> &comm_csv_header() {
  static const std::vector<std::string> h = {
      "system",      "backend",        "op",           "group",          "group_nranks",
      "group_nnodes", "group_ranks_per_node", "dtype",  "redop",          "root",
      "placement",   "bytes_B",        "count_elements", "time_us",      "algbw_GBps",
      "busbw_GBps",  "wrong_elements", "samples",      "iters_per_sample", "min_us",
      "median_us",   "mean_us",        "max_us",       "stddev_us",      "p99_us",
      "world_nranks", "world_nnodes",  "start_time"};
  return h;
}

std::vector<std::string> comm_csv_row(const nlohmann::json &c, const nlohmann::json &m) {
  const nlohmann::json &g = at(m, "group");
  return {csv_cell(at(c, "system")),         csv_cell(at(c, "backend")),
          csv_cell(at(m, "op")),             csv_cell(at(g, "kind")),
          csv_cell(at(g, "nranks")),         csv_cell(at(g, "nnodes")),
          csv_cell(at(g, "ranks_per_node")), csv_cell(at(m, "dtype")),
          csv_cell(at(m, "redop")),          csv_cell(at(m, "root")),
          csv_cell(at(m, "placement")),      csv_cell(at(m, "bytes")),
          csv_cell(at(m, "count")),          csv_cell(at(m, "time_us")),
          csv_cell(at(m, "algbw_gbps")),     csv_cell(at(m, "busbw_gbps")),
          csv_cell(at(m, "wrong")),          csv_cell(at(m, "stats", "n")),
          csv_cell(at(m, "iters_per_sample")), csv_cell(stat(m, "min")),
          csv_cell(stat(m, "median")), csv_cell(stat(m, "mean")),
          csv_cell(stat(m, "max")),   csv_cell(stat(m, "stddev")),
          csv_cell(stat(m, "p99")),   csv_cell(at(c, "nranks")),
          csv_cell(at(c, "nnodes")),         csv_cell(at(c, "start_time"))};
}

const std::vector<std::string> &kernels_csv_header() {
  static const std::vector<std::string> h = {
      "system", "device", "engine",  "dtype",   "model",      "name",      "kind",
      "pass",   "per_layer", "m",    "n",       "k",          "batch",     "flops",
      "time_us", "tflops", "wrong_elements", "samples", "iters_per_sample", "min_us",
      "median_us", "max_us", "stddev_us", "p99_us"};
  return h;
}

std::vector<std::string> kernels_csv_row(const nlohmann::json &c, const nlohmann::json &k) {
  return {csv_cell(at(c, "system")),       csv_cell(at(c, "device")),
          csv_cell(at(k, "engine")),       csv_cell(at(k, "dtype")),
          csv_cell(at(c, "model", "name")), csv_cell(at(k, "name")),
          csv_cell(at(k, "kind")),         csv_cell(at(k, "pass")),
          csv_cell(at(k, "per_layer")),    csv_cell(at(k, "m")),
          csv_cell(at(k, "n")),            csv_cell(at(k, "k")),
          csv_cell(at(k, "batch")),        csv_cell(at(k, "flops")),
          csv_cell(at(k, "time_us")),      csv_cell(at(k, "tflops")),
          csv_cell(at(k, "wrong")),        csv_cell(at(k, "stats", "n")),
          csv_cell(at(k, "iters_per_sample")), csv_cell(stat(k, "min")),
          csv_cell(stat(k, "median")), csv_cell(stat(k, "max")),
          csv_cell(stat(k, "stddev")), csv_cell(stat(k, "p99"))};
}

} // namespace scalefit

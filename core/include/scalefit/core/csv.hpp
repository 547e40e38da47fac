/// \file csv.hpp
/// Flat CSV next to the JSONL records (`--csv FILE`), one row per point, so that pandas or a
/// spreadsheet reads measurements without code. RFC 4180 quoting; units in the column names
/// (`time_us`, `busbw_GBps`, `bytes_B`); GB/s = 1e9 B/s; numbers printed with 10 significant
/// digits, empty cells for absent values. docs/records.md lists the columns.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace scalefit {

/// One CSV field, quoted when it holds a comma, a quote, CR or LF (quotes doubled; RFC 4180).
std::string csv_field(std::string_view s);

/// A JSON scalar as a CSV cell: strings as is, numbers with 10 significant digits, booleans
/// true/false, null and missing values empty.
std::string csv_cell(const nlohmann::json &v);

/// Appends rows to a CSV file, writing the header first when the file is new or empty; every row
/// is flushed as soon as written (a killed run keeps its finished points, as JsonlWriter).
class CsvWriter {
public:
  /// Opens `path` for appending. \throws InputError when it cannot be opened, or when it already
  /// starts with a different header (appending would mix columns).
  CsvWriter(const std::string &path, const std::vector<std::string> &header);
  ~CsvWriter();
  CsvWriter(const CsvWriter &) = delete;
  CsvWriter &operator=(const CsvWriter &) = delete;
  /// Writes one row (as many cells as the header). \throws RuntimeError on I/O failure,
  /// std::invalid_argument on a wrong cell count.
  void row(const std::vector<std::string> &cells);
  const std::string &path() const { return m_path; }

private:
  std::string m_path;
  std::size_t m_columns = 0;
  std::FILE *m_file = nullptr;
};

/// Columns of a comm measurement row (system ... p99_us).
const std::vector<std::string> &comm_csv_header();
/// The row of one `scalefit.comm/1` measurement (JSONL object) with its context's fields.
std::vector<std::string> comm_csv_row(const nlohmann::json &context,
                                      const nlohmann::json &measurement);

/// Columns of a kernels row (system ... p99_us).
const std::vector<std::string> &kernels_csv_header();
/// The row of one `scalefit.kernels/1` "kernel" record with its context's fields.
std::vector<std::string> kernels_csv_row(const nlohmann::json &context, const nlohmann::json &kernel);

} // namespace scalefit

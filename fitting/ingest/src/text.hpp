// Internal helpers shared by the nccl-tests and OSU readers: tokenizing, strict number parsing,
// and the warning/note collector.
#pragma once

#include "scalefit/core/error.hpp"
#include "scalefit/ingest/ingest.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace scalefit::ingest::detail {

/// \throws InputError naming the option when nranks or nnodes is given and < 1.
void check_options(const IngestOptions &opt);

/// Splits on runs of spaces/tabs/CR.
std::vector<std::string> split_ws(std::string_view s);

/// Removes leading/trailing whitespace (incl. CR).
std::string_view trim(std::string_view s);

/// Lower-case copy.
std::string to_lower(std::string_view s);

/// The whole token as a finite double (fixed or exponent notation); nullopt otherwise.
std::optional<double> to_double(std::string_view tok);

/// The whole token as an unsigned integer (digits only); nullopt otherwise or on overflow.
std::optional<std::uint64_t> to_u64(std::string_view tok);

/// Whether `tok` is a number that is not a byte count: negative ("-1"), fractional, "nan" or
/// "inf" (any case, with a sign). A result row whose size column holds one is a broken row, to be
/// warned about and skipped (not silently taken for noise).
bool is_bad_size_token(std::string_view tok);

/// Whether a result row of `tokens` is a table row of `ncols` fields followed by a note pasted
/// after it ("8107.16 <- drops from here", "1.52 (!)"): more tokens than columns, the first `ncols`
/// numbers (or OSU's Pass / Fail), the first extra one not a number (a row of more numbers than
/// columns is not a row of this table, a message in place of the figures not a row). The caller
/// reads the first `ncols` and notes the rest.
bool is_annotated_row(const std::vector<std::string> &tokens, std::size_t ncols);

/// The whole token as a signed integer; nullopt otherwise.
std::optional<std::int64_t> to_i64(std::string_view tok);

/// Whether a time per operation [us] is one a real run can print: finite, >= 1e-3 us (1 ns) and
/// <= 1e12 us (11.6 days). Denormals and overflows from absurd bandwidths fail.
bool plausible_time_us(double t);
/// Whether a bandwidth [GB/s] is finite and within what a record may carry: 0 (a zero printed
/// for a 1-rank busbw) to bounds::bandwidth_gbps.hi (1 PB/s; records.hpp's reader refuses more).
bool plausible_bandwidth_gbps(double v);

/// Digits after the decimal point of a fixed-notation number ("0.19" -> 2, "16215" -> 0).
int decimals(std::string_view tok);

/// File name without directories.
std::string base_name(const std::string &path);

/// File name without directories and without its last extension ("a/b.txt" -> "b").
std::string file_stem(const std::string &path);

/// Reads a text file into lines: CR stripped, and a Markdown-escaped '#' that starts a line
/// (`\# OSU MPI ...`, `\#  Rank  0 ...`: a log pasted into a GitHub issue or a README without
/// a code fence) read as '#'. \throws InputError if it cannot be opened.
std::vector<std::string> read_lines(const std::string &path);

/// Collects warnings ("FILE:LINE: field 'F': message", the format of InputError::what()) and
/// notes. In strict mode a warning throws the InputError instead.
class Diagnostics {
public:
  Diagnostics(std::string file, bool strict) : m_file(std::move(file)), m_strict(strict) {}
  void warn(long line, const std::string &field, const std::string &message);
  void note(long line, const std::string &message);
  /// Warnings in line order (stable for equal lines).
  std::vector<std::string> warnings() const { return sorted(m_warnings); }
  /// Notes in line order.
  std::vector<std::string> notes() const { return sorted(m_notes); }
  const std::string &file() const { return m_file; }
  [[noreturn]] void fail(long line, const std::string &field, const std::string &message) const {
    throw InputError(message, m_file, line, field);
  }

private:
  std::string m_file;
  bool m_strict;
  static std::vector<std::string> sorted(std::vector<std::pair<long, std::string>> v);
  std::vector<std::pair<long, std::string>> m_warnings;
  std::vector<std::pair<long, std::string>> m_notes;
};

/// Starts the context's provenance as every log reader writes it: ctx.system (opt.system, else the
/// file name without extension, noted), ctx.versions[tool] = version (when known) and ctx.source
/// {file, path, first_comment_line, tool, tool_version}; the reader adds its own source fields.
void begin_source(IngestResult &res, Diagnostics &diag, const std::string &path,
                  const IngestOptions &opt, const std::string &tool, const std::string &version,
                  const std::string &first_comment);

/// Ends it: source.ingested_at (UTC, ISO 8601), and the warnings and notes in line order, in both
/// the result and source.
void end_source(IngestResult &res, const Diagnostics &diag);

} // namespace scalefit::ingest::detail

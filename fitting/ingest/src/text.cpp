#include "text.hpp"

#include "scalefit/core/input_file.hpp"
#include "scalefit/core/validate.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>

namespace scalefit::ingest::detail {

void check_options(const IngestOptions &opt) {
  if (opt.nranks && *opt.nranks < 1)
    throw InputError("must be >= 1, got " + std::to_string(*opt.nranks), "", 0, "nranks");
  if (opt.nnodes && *opt.nnodes < 1)
    throw InputError("must be >= 1, got " + std::to_string(*opt.nnodes), "", 0, "nnodes");
}

std::vector<std::string> split_ws(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i]))
      ++i;
    const std::size_t b = i;
    while (i < s.size() && !is_space(s[i]))
      ++i;
    if (i > b)
      out.emplace_back(s.substr(b, i - b));
  }
  return out;
}

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && is_space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && is_space(s.back()))
    s.remove_suffix(1);
  return s;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char &c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<double> to_double(std::string_view tok) {
  if (tok.empty())
    return std::nullopt;
  double v = 0;
  const char *b = tok.data();
  const char *e = b + tok.size();
  if (*b == '+')
    ++b;
  const auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e || !std::isfinite(v))
    return std::nullopt;
  return v;
}

bool is_annotated_row(const std::vector<std::string> &tokens, std::size_t ncols) {
  if (ncols == 0 || tokens.size() <= ncols)
    return false;
  // a number of any value: finite (to_double), or nan, inf, out of range (is_bad_size_token)
  const auto number = [](const std::string &t) { return to_double(t) || is_bad_size_token(t); };
  // the row's own fields: numbers (OSU's Validation column: Pass / Fail), so that a message in
  // place of the figures ("1048576 time-out.; Time limit ...") is not taken for a row
  for (std::size_t i = 0; i < ncols; ++i) {
    const std::string low = to_lower(tokens[i]);
    if (!number(tokens[i]) && low != "pass" && low != "fail")
      return false;
  }
  return !number(tokens[ncols]) && !is_bad_size_token(tokens[ncols]);
}

bool is_bad_size_token(std::string_view tok) {
  if (tok.empty() || to_u64(tok))
    return false;
  const char *b = tok.data();
  const char *e = b + tok.size();
  if (*b == '+')
    ++b;
  double v = 0;
  const auto [p, ec] = std::from_chars(b, e, v); // accepts nan, inf, infinity (any case)
  return p == e && (ec == std::errc() || ec == std::errc::result_out_of_range);
}

std::optional<std::uint64_t> to_u64(std::string_view tok) {
  if (tok.empty())
    return std::nullopt;
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  if (ec != std::errc() || p != tok.data() + tok.size())
    return std::nullopt;
  return v;
}

std::optional<std::int64_t> to_i64(std::string_view tok) {
  if (tok.empty())
    return std::nullopt;
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  if (ec != std::errc() || p != tok.data() + tok.size())
    return std::nullopt;
  return v;
}

bool plausible_time_us(double t) {
  return std::isfinite(t) && t >= 1e-3 && t <= 1e12;
}

bool plausible_bandwidth_gbps(double v) {
  return std::isfinite(v) && v >= 0 && v <= bounds::bandwidth_gbps.hi;
}

int decimals(std::string_view tok) {
  const auto dot = tok.find('.');
  if (dot == std::string_view::npos)
    return 0;
  int n = 0;
  for (std::size_t i = dot + 1; i < tok.size() && std::isdigit(static_cast<unsigned char>(tok[i]));
       ++i)
    ++n;
  return n;
}

std::string base_name(const std::string &path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string file_stem(const std::string &path) {
  std::string b = base_name(path);
  const auto dot = b.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? b : b.substr(0, dot);
}

std::vector<std::string> read_lines(const std::string &path) {
  const auto text = read_input(path); // regular files and pipes only, at most 1 GiB
  std::vector<std::string> lines;
  std::size_t pos = 0;
  while (pos < text->size()) {
    std::size_t end = text->find('\n', pos);
    if (end == std::string::npos)
      end = text->size();
    std::string line = text->substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    // Markdown escapes a leading '#' as "\#" (a log pasted into a GitHub issue or a README
    // without a code fence keeps it when copied from the page's source): read it as '#'.
    if (const auto first = line.find_first_not_of(" \t");
        first != std::string::npos && line.compare(first, 2, "\\#") == 0)
      line.erase(first, 1);
    lines.push_back(std::move(line));
  }
  return lines;
}

void Diagnostics::warn(long line, const std::string &field, const std::string &message) {
  InputError e(message, m_file, line, field);
  if (m_strict)
    throw e;
  m_warnings.emplace_back(line, e.what());
}

void Diagnostics::note(long line, const std::string &message) {
  m_notes.emplace_back(line, InputError(message, m_file, line).what());
}

std::vector<std::string> Diagnostics::sorted(std::vector<std::pair<long, std::string>> v) {
  std::stable_sort(v.begin(), v.end(),
                   [](const auto &a, const auto &b) { return a.first < b.first; });
  std::vector<std::string> out;
  out.reserve(v.size());
  for (auto &p : v)
    out.push_back(std::move(p.second));
  return out;
}

void begin_source(IngestResult &res, Diagnostics &diag, const std::string &path,
                  const IngestOptions &opt, const std::string &tool, const std::string &version,
                  const std::string &first_comment) {
  ContextRecord &ctx = res.context;
  ctx.system = opt.system;
  if (ctx.system.empty()) {
    ctx.system = file_stem(path);
    diag.note(0, "system name '" + ctx.system + "' taken from the file name (pass --system)");
  }
  if (!version.empty())
    ctx.versions[tool] = version;
  ctx.source = nlohmann::json::object();
  ctx.source["file"] = base_name(path);
  ctx.source["path"] = path;
  ctx.source["first_comment_line"] = first_comment;
  ctx.source["tool"] = tool;
  if (!version.empty())
    ctx.source["tool_version"] = version;
}

void end_source(IngestResult &res, const Diagnostics &diag) {
  res.context.source["ingested_at"] = utc_now_iso8601();
  res.warnings = diag.warnings();
  res.notes = diag.notes();
  res.context.source["warnings"] = res.warnings;
  res.context.source["notes"] = res.notes;
}

} // namespace scalefit::ingest::detail

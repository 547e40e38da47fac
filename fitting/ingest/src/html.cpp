#include "html.hpp"

#include <cctype>

namespace scalefit::ingest::detail {
namespace {

/// Length of a line-breaking tag at the start of `s` (`<p>`, `<p class=..>`, `</p>`, `<br>`,
/// `<br/>`, `<br />`, any case), or 0.
std::size_t break_tag(std::string_view s) {
  if (s.size() < 3 || s[0] != '<')
    return 0;
  std::size_t i = 1;
  if (s[i] == '/')
    ++i;
  const auto lower = [&](std::size_t k) {
    return k < s.size() ? static_cast<char>(std::tolower(static_cast<unsigned char>(s[k]))) : '\0';
  };
  std::size_t name_end = 0;
  if (lower(i) == 'p')
    name_end = i + 1;
  else if (lower(i) == 'b' && lower(i + 1) == 'r')
    name_end = i + 2;
  else
    return 0;
  // The name must end here: "<pre>" or "<param>" are not paragraph tags.
  const char after = name_end < s.size() ? s[name_end] : '\0';
  if (after != '>' && after != ' ' && after != '/' && after != '\t')
    return 0;
  // Attributes are short: look no further than 200 characters (linear time on any line).
  const auto close = s.substr(0, name_end + 200).find('>', name_end);
  if (close == std::string_view::npos)
    return 0;
  return close + 1;
}

} // namespace

std::string decode_html_entities(std::string_view s) {
  static const std::pair<std::string_view, char> entities[] = {
      {"&lt;", '<'},   {"&gt;", '>'},    {"&amp;", '&'},  {"&quot;", '"'},
      {"&#39;", '\''}, {"&apos;", '\''}, {"&nbsp;", ' '}, {"&#160;", ' '},
      {"&LT;", '<'},   {"&GT;", '>'},    {"&AMP;", '&'},  {"&NBSP;", ' '}};
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    bool matched = false;
    if (s[i] == '&')
      for (const auto &[name, c] : entities)
        if (s.substr(i, name.size()) == name) {
          out += c;
          i += name.size();
          matched = true;
          break;
        }
    // Numeric references to printable ASCII (`&#35;` for '#', `&#x23;`, `&#124;` for '|'), as
    // some archives escape a log's '#' and '|'; others are kept as written.
    if (!matched && s[i] == '&' && i + 2 < s.size() && s[i + 1] == '#') {
      const bool hex = s[i + 2] == 'x' || s[i + 2] == 'X';
      std::size_t j = i + (hex ? 3 : 2);
      unsigned value = 0;
      const std::size_t digits_from = j;
      while (j < s.size() && j - digits_from < 4 &&
             (hex ? std::isxdigit(static_cast<unsigned char>(s[j]))
                  : std::isdigit(static_cast<unsigned char>(s[j])))) {
        const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[j])));
        value = value * (hex ? 16 : 10) + static_cast<unsigned>(c <= '9' ? c - '0' : c - 'a' + 10);
        ++j;
      }
      if (j > digits_from && j < s.size() && s[j] == ';' && value >= 32 && value < 127) {
        out += static_cast<char>(value);
        i = j + 1;
        matched = true;
      }
    }
    if (!matched)
      out += s[i++];
  }
  return out;
}

std::vector<SourceLine> unwrap_html(const std::vector<std::string> &lines) {
  std::vector<SourceLine> out;
  out.reserve(lines.size());
  for (std::size_t n = 0; n < lines.size(); ++n) {
    const long ln = static_cast<long>(n) + 1;
    const std::string_view line = lines[n];
    if (line.find('<') == std::string_view::npos) {
      out.push_back({ln, decode_html_entities(line)});
      continue;
    }
    std::size_t begin = 0, pieces = 0;
    const auto flush = [&](std::size_t end) {
      const std::string_view piece = line.substr(begin, end - begin);
      if (piece.find_first_not_of(" \t") != std::string_view::npos) {
        out.push_back({ln, decode_html_entities(piece)});
        ++pieces;
      }
    };
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (line[i] != '<')
        continue;
      const std::size_t len = break_tag(line.substr(i));
      if (len == 0)
        continue;
      flush(i);
      i += len - 1;
      begin = i + 1;
    }
    flush(line.size());
    if (pieces == 0)
      out.push_back({ln, std::string()});
  }
  return out;
}

std::vector<SourceLine> unwrap_markdown_tables(std::vector<SourceLine> lines) {
  for (SourceLine &l : lines) {
    const std::string_view t = l.text;
    const std::size_t first = t.find_first_not_of(" \t");
    if (first == std::string_view::npos || t[first] != '|' ||
        t.find('|', first + 1) == std::string_view::npos)
      continue;
    if (t.find_first_not_of(" \t|-:") == std::string_view::npos) {
      l.text.clear(); // |---|---| aligns the columns of the row above
      continue;
    }
    std::vector<std::string_view> cells;
    std::size_t begin = first + 1;
    for (std::size_t bar; (bar = t.find('|', begin)) != std::string_view::npos; begin = bar + 1)
      cells.push_back(t.substr(begin, bar - begin));
    cells.push_back(t.substr(begin)); // after the last bar: empty unless the row is open-ended
    std::string out;
    for (std::string_view c : cells) {
      const std::size_t b = c.find_first_not_of(" \t");
      if (b == std::string_view::npos)
        continue;
      const std::size_t e = c.find_last_not_of(" \t");
      out += (out.empty() ? "" : "  ") + std::string(c.substr(b, e - b + 1));
    }
    l.text = std::move(out);
  }
  return lines;
}

} // namespace scalefit::ingest::detail

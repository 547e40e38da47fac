// Logs pasted through a web page: mail-list archives (pipermail, MHonArc) and wikis render each
// log line as `<p>...<br>` and escape `<`, `>`, `&` and runs of spaces. The readers undo that
// before they parse (hand-written scanning, no regex: linear in the line length).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace scalefit::ingest::detail {

/// A log line after HTML unwrapping, with the 1-based number of the file line it came from (a
/// file line holding several `<br>`-separated log lines gives several, all with its number, so
/// that diagnostics still name FILE:LINE of the file as stored).
struct SourceLine {
  long line = 0;    ///< 1-based line number in the file
  std::string text; ///< the log line, markup removed and entities decoded
};

/// Decodes the character entities of a log pasted through HTML: `&lt;` `&gt;` `&amp;` `&quot;`
/// `&#39;`/`&apos;` to their characters, `&nbsp;`/`&#160;` to a space, a numeric reference to a
/// printable ASCII character (`&#35;`, `&#x23;`) to it. One pass, so `&amp;lt;`
/// becomes `&lt;` (not `<`); an unknown or unterminated entity is kept as written. Input: any
/// text; output: the decoded text (never longer). No errors.
std::string decode_html_entities(std::string_view s);

/// Splits and cleans the lines of a file that may be an HTML rendering of a log: the tags `<p>`,
/// `</p>`, `<br>`, `<br/>`, `<br />` (any case, with attributes on `<p ...>`) end a log line
/// and are dropped; entities are decoded (decode_html_entities) after the split, so an escaped
/// `&lt;br&gt;` stays text. A file without markup comes back line for line, unchanged except
/// for its entities. Input: the file's lines (read_lines, CR stripped); output: the log lines
/// with their file line numbers, empty pieces dropped except where a file line was empty. No
/// errors (a line of any length is handled in linear time).
std::vector<SourceLine> unwrap_html(const std::vector<std::string> &lines);

/// Turns the rows of Markdown tables (wiki pages, READMEs, vendor docs that render a log as
/// `| 2 | 6.18 | 0.04944 |`) back into log lines: a line whose first non-blank character is `|`
/// and that holds another `|` is split at every `|`, its cells trimmed and joined by two spaces
/// (the column separator OMB prints); an alignment row (`|---|:--:|`) becomes an empty line.
/// Other lines, and every line number, are kept. Input: lines of unwrap_html; output: the same
/// count of lines. No errors.
std::vector<SourceLine> unwrap_markdown_tables(std::vector<SourceLine> lines);

} // namespace scalefit::ingest::detail

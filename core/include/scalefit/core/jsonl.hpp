/// \file jsonl.hpp
/// The one JSON Lines reader under every scalefit file of that kind (comm and kernels results,
/// calibration steps, the report's inputs): one object per line, blank lines skipped.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <string_view>

namespace scalefit {

/// Calls `fn(object, line)` for each non-blank line of the file at `path`, in order; `line` is
/// 1-based. Stops early when `fn` returns false.
///
/// The file is read once through read_input (input_file.hpp: regular files and pipes only, at
/// most 1 GiB). Errors (InputError naming the file and line): the file cannot be opened; a line is not valid
/// JSON (a syntax error, invalid UTF-8; a number beyond a double is reported with the field whose
/// value it was) or nested deeper than kMaxJsonDepth; a line holds a JSON value that is not an object. What `fn` throws passes through.
void for_each_json_line(const std::string &path,
                        const std::function<bool(const nlohmann::json &, long)> &fn);

/// Deepest nesting of arrays and objects a JSON input may have. scalefit's deepest record is 4
/// levels; a line nested 200,000 deep would otherwise be copied and destroyed recursively.
inline constexpr int kMaxJsonDepth = 64;

/// Parses one JSON text (a line of a JSONL file, a whole JSON document) with the nesting bounded
/// by kMaxJsonDepth. \throws InputError naming `path`, `line` and the field being parsed when the
/// text is not valid JSON, a number is beyond a double, or the nesting is deeper.
nlohmann::json parse_json_bounded(std::string_view text, const std::string &path, long line);

} // namespace scalefit

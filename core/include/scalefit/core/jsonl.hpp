/// \file jsonl.hpp
/// The one JSON Lines reader under every scalefit file of that kind (comm and kernels results,
/// calibration steps, the report's inputs): one object per line, blank lines skipped.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

namespace scalefit {

/// Calls `fn(object, line)` for each non-blank line of the file at `path`, in order; `line` is
/// 1-based. Stops early when `fn` returns false.
///
/// Errors (InputError naming the file and line): the file cannot be opened; a line is not valid
/// JSON (a syntax error, invalid UTF-8; a number beyond a double is reported with the field whose
/// value it was); a line holds a JSON value that is not an object. What `fn` throws passes through.
void for_each_json_line(const std::string &path,
                        const std::function<bool(const nlohmann::json &, long)> &fn);

} // namespace scalefit

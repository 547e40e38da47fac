// The JSON Lines reader: blank lines skipped, the field being parsed named when a line fails.
#include "scalefit/core/jsonl.hpp"

#include "scalefit/core/error.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace scalefit {

void for_each_json_line(const std::string &path,
                        const std::function<bool(const nlohmann::json &, long)> &fn) {
  using json = nlohmann::json;
  std::ifstream in(path);
  if (!in)
    throw InputError(std::string("cannot open: ") + std::strerror(errno), path);
  std::string text;
  long line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    json j;
    std::string last_key; // the field being parsed when the parser throws
    try {
      j = json::parse(text, [&](int, json::parse_event_t event, json &parsed) {
        if (event == json::parse_event_t::key)
          last_key = parsed.get<std::string>();
        return true;
      });
    } catch (const json::out_of_range &e) {
      throw InputError(std::string("number out of range (beyond a double): ") + e.what(), path,
                       line, last_key);
    } catch (const json::exception &e) {
      throw InputError(std::string("not valid JSON: ") + e.what(), path, line, last_key);
    }
    if (!j.is_object())
      throw InputError("expected a JSON object", path, line);
    if (!fn(j, line))
      return;
  }
}

} // namespace scalefit

// The JSON Lines reader: blank lines skipped, the field being parsed named when a line fails,
// nesting bounded (kMaxJsonDepth), the file read once through read_input.
#include "scalefit/core/jsonl.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/input_file.hpp"

namespace scalefit {

nlohmann::json parse_json_bounded(std::string_view text, const std::string &path, long line) {
  using json = nlohmann::json;
  std::string last_key; // the field being parsed when the parser throws
  try {
    return json::parse(text, [&](int depth, json::parse_event_t event, json &parsed) {
      if (event == json::parse_event_t::key)
        last_key = parsed.get<std::string>();
      else if ((event == json::parse_event_t::object_start ||
                event == json::parse_event_t::array_start) &&
               depth >= kMaxJsonDepth)
        throw InputError("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels", path,
                         line, last_key);
      return true;
    });
  } catch (const json::out_of_range &e) {
    throw InputError(std::string("number out of range (beyond a double): ") + e.what(), path,
                     line, last_key);
  } catch (const json::exception &e) {
    throw InputError(std::string("not valid JSON: ") + e.what(), path, line, last_key);
  }
}

void for_each_json_line(const std::string &path,
                        const std::function<bool(const nlohmann::json &, long)> &fn) {
  const auto text = read_input(path);
  long line = 0;
  std::size_t pos = 0;
  while (pos < text->size()) {
    std::size_t end = text->find('\n', pos);
    if (end == std::string::npos)
      end = text->size();
    const std::string_view l(text->data() + pos, end - pos);
    pos = end + 1;
    ++line;
    if (l.find_first_not_of(" \t\r") == std::string_view::npos)
      continue;
    const nlohmann::json j = parse_json_bounded(l, path, line);
    if (!j.is_object())
      throw InputError("expected a JSON object", path, line);
    if (!fn(j, line))
      return;
  }
}

} // namespace scalefit

#include "scalefit/core/units.hpp"

#include "scalefit/core/error.hpp"

#include <cctype>
#include <limits>

namespace scalefit {

std::uint64_t parse_bytes(std::string_view text, std::string_view what) {
  const std::string original(text);
  auto fail = [&](const std::string &why) -> std::uint64_t {
    throw InputError("expected a byte count such as 8, 64K, 1M or 8G (1024-based), got '" +
                         original + "'" + (why.empty() ? "" : ": " + why),
                     "", 0, std::string(what));
  };
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text.front()))) return fail("");
  std::uint64_t value = 0;
  std::size_t i = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    const std::uint64_t d = static_cast<std::uint64_t>(text[i] - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return fail("overflow");
    value = value * 10 + d;
  }
  std::string suffix;
  for (; i < text.size(); ++i)
    suffix.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(text[i]))));
  if (suffix == "IB" || (suffix.size() == 3 && suffix.substr(1) == "IB")) suffix = suffix.substr(0, suffix.size() - 2);
  else if (suffix.size() == 2 && suffix[1] == 'B') suffix = suffix.substr(0, 1);
  if (suffix == "B") suffix.clear();
  int shift = 0;
  if (suffix.empty()) shift = 0;
  else if (suffix == "K") shift = 10;
  else if (suffix == "M") shift = 20;
  else if (suffix == "G") shift = 30;
  else if (suffix == "T") shift = 40;
  else return fail("unknown suffix '" + suffix + "'");
  if (shift > 0 && value > (std::numeric_limits<std::uint64_t>::max() >> shift)) return fail("overflow");
  return value << shift;
}

std::string format_bytes(std::uint64_t bytes) {
  static const char *suffixes[] = {"", "K", "M", "G", "T"};
  int i = 0;
  while (i < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++i;
  }
  return std::to_string(bytes) + suffixes[i];
}

}  // namespace scalefit

#include "scalefit/core/error.hpp"

namespace scalefit {
namespace {
std::string format_location(const std::string &message, const std::string &file, long line,
                            const std::string &field) {
  std::string out;
  if (!file.empty()) {
    out += file;
    if (line > 0) out.append(":").append(std::to_string(line));
    out.append(": ");
  }
  if (!field.empty()) out.append("field '").append(field).append("': ");
  out.append(message);
  return out;
}
}  // namespace

InputError::InputError(const std::string &message, const std::string &file, long line,
                       const std::string &field)
    : std::runtime_error(format_location(message, file, line, field)), m_message(message),
      m_file(file), m_line(line), m_field(field) {}

}  // namespace scalefit

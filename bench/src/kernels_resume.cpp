// `scalefit-bench kernels` resuming an --out file point by point (kernels_resume.hpp).
#include "scalefit/bench/kernels_resume.hpp"

#include "scalefit/bench/kernels_command.hpp"
#include "scalefit/core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace scalefit::kernels {
namespace fs = std::filesystem;

std::string kernel_record_key(const nlohmann::json &rec) {
  nlohmann::json id = nlohmann::json::array();
  for (const char *f :
       {"name", "kind", "pass", "m", "n", "k", "batch", "dtype", "group_tokens", "grouped_gemm"})
    id.push_back(rec.contains(f) ? rec.at(f) : nlohmann::json());
  return id.dump();
}

bool same_kernels_sweep(const nlohmann::json &a, const nlohmann::json &b) {
  nlohmann::json x = a, y = b;
  for (const char *f : {"start_time", "command_line", "host", "versions"}) {
    x.erase(f);
    y.erase(f);
  }
  return x == y;
}

KernelsResume prepare_kernels_output(const std::string &path, const nlohmann::json &ctx) {
  KernelsResume r;
  std::error_code ec;
  // Only a regular file holds earlier kernels: a device (/dev/full, /dev/null) or a pipe is
  // written to, never read (reading /dev/full or /dev/zero would not end).
  if (!fs::is_regular_file(path, ec))
    return r;
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in)
      throw InputError(fmt::format("cannot read '{}': {}", path, std::strerror(errno)), "", 0,
                       "--out");
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const auto truncate = [&](std::size_t bytes) {
    fs::resize_file(path, bytes, ec);
    if (ec)
      throw InputError(fmt::format("cannot truncate '{}': {}", path, ec.message()), "", 0,
                       "--out");
  };
  // A crash (power loss) can leave the tail padded with NUL bytes, newlines among them: drop the
  // tail from the line holding the first NUL when nothing but NULs and newlines follows it (as
  // comm's --resume does); NUL bytes followed by data stay, for the parse below to name.
  if (const auto nul = text.find('\0'); nul != std::string::npos &&
                                         text.find_first_not_of(std::string("\0\n", 2), nul) ==
                                             std::string::npos) {
    const auto nl = nul == 0 ? std::string::npos : text.find_last_of('\n', nul - 1);
    const std::size_t keep = nl == std::string::npos ? 0 : nl + 1;
    truncate(keep);
    r.note = fmt::format("{}: dropped a tail of {} NUL bytes and newlines (a crash); the kernels "
                         "it held are measured again",
                         path, text.size() - keep);
    text.resize(keep);
  }
  // A last line without its newline: the job was killed while writing it.
  std::size_t valid = text.size();
  long line_no = 0;
  if (!text.empty() && text.back() != '\n') {
    const auto nl = text.find_last_of('\n');
    valid = nl == std::string::npos ? 0 : nl + 1;
    const std::string tail = text.substr(valid);
    const long torn_line =
        1 +
        static_cast<long>(std::count(text.begin(), text.begin() + static_cast<long>(valid), '\n'));
    const auto j = nlohmann::json::parse(tail, nullptr, false);
    if (!j.is_discarded() && j.is_object()) {
      std::ofstream out(path, std::ios::binary | std::ios::app);
      out << '\n';
      if (!out.flush())
        throw InputError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)), "", 0,
                         "--out");
      text += '\n';
      valid = text.size();
      r.note = fmt::format("{}:{}: the last line had no newline (a killed write) but is a whole "
                           "record: kept, newline added",
                           path, torn_line);
    } else {
      truncate(valid);
      r.note = fmt::format("{}:{}: dropped an incomplete last line of {} bytes (the run that wrote "
                           "it was killed mid-write); that kernel is measured again",
                           path, torn_line, tail.size());
      text.resize(valid);
    }
  }
  bool this_sweep = false, any_context = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw InputError("not a JSON object (a kernels record file written by scalefit-bench "
                       "kernels?); choose another --out",
                       path, line_no);
    const std::string type =
        j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
    if (type == "context") {
      const std::string schema =
          j.contains("schema") && j["schema"].is_string() ? j["schema"].get<std::string>() : "";
      if (schema != kKernelsSchema)
        throw InputError(fmt::format("holds schema '{}' records, not {}: choose another --out",
                                     schema, kKernelsSchema),
                         path, line_no, "schema");
      any_context = true;
      this_sweep = same_kernels_sweep(j, ctx);
    } else if (type == "kernel") {
      if (!any_context)
        throw InputError("kernel record before any context record", path, line_no, "type");
      ++r.records;
      if (this_sweep)
        r.done.emplace(kernel_record_key(j), j);
    }
  }
  return r;
}

} // namespace scalefit::kernels

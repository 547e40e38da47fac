// read_input: one open per input, file type checked with fstat on the open descriptor (no race
// between the check and the read), size capped, pipes kept for a second reader.
#include "scalefit/core/input_file.hpp"

#include "scalefit/core/error.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

namespace scalefit {
namespace {

std::mutex g_mutex;
std::map<std::string, std::shared_ptr<const std::string>> g_streams; // pipes, FIFOs, stdin

std::string human(std::uint64_t b) {
  return b >= (1u << 30) ? std::to_string(b >> 30) + " GiB" : std::to_string(b >> 20) + " MiB";
}

} // namespace

std::shared_ptr<const std::string> read_input(const std::string &path, std::uint64_t max_bytes) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (const auto it = g_streams.find(path); it != g_streams.end())
      return it->second;
  }
  const bool is_stdin = path == "-";
  const int fd = is_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw InputError(std::string("cannot open: ") + std::strerror(errno), path);
  struct Closer {
    int fd;
    bool own;
    ~Closer() {
      if (own)
        ::close(fd);
    }
  } closer{fd, !is_stdin};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw InputError(std::string("cannot stat: ") + std::strerror(errno), path);
  const bool regular = S_ISREG(st.st_mode), stream = S_ISFIFO(st.st_mode);
  if (S_ISDIR(st.st_mode))
    throw InputError("is a directory, not a file", path);
  if (!regular && !stream && !(is_stdin && S_ISCHR(st.st_mode)))
    throw InputError(std::string("not a regular file or pipe (") +
                         (S_ISCHR(st.st_mode)   ? "a character device"
                          : S_ISBLK(st.st_mode) ? "a block device"
                          : S_ISSOCK(st.st_mode) ? "a socket"
                                                 : "a special file") +
                         "): refused rather than read without end",
                     path);
  if (regular && static_cast<std::uint64_t>(st.st_size) > max_bytes)
    throw InputError("file of " + human(static_cast<std::uint64_t>(st.st_size)) +
                         " is larger than the " + human(max_bytes) + " an input may be",
                     path);
  auto text = std::make_shared<std::string>();
  if (regular)
    text->reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0)
      break;
    if (n < 0) {
      if (errno == EINTR)
        continue;
      throw InputError(std::string("read failed: ") + std::strerror(errno), path);
    }
    if (text->size() + static_cast<std::size_t>(n) > max_bytes)
      throw InputError("more than the " + human(max_bytes) + " an input may be", path);
    text->append(buf, static_cast<std::size_t>(n));
  }
  if (!regular) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_streams.emplace(path, text);
  }
  return text;
}

void refuse_outputs_over_inputs(const std::vector<std::pair<std::string, std::string>> &outputs,
                                const std::vector<std::string> &inputs) {
  namespace fs = std::filesystem;
  std::vector<std::pair<fs::path, std::string>> seen;
  for (const auto &[out, option] : outputs) {
    if (out.empty() || out == "-")
      continue;
    std::error_code ec;
    if (fs::exists(out, ec))
      for (const auto &in : inputs)
        if (fs::equivalent(out, in, ec))
          throw InputError("is also an input ('" + in + "'): writing it would replace what is "
                           "being read; name another output",
                           out, 0, option);
    const fs::path canon = fs::weakly_canonical(out, ec);
    for (const auto &[p, other] : seen)
      if (!ec && p == canon)
        throw InputError("is also the output of " + other + ": name two different files", out, 0,
                         option);
    seen.emplace_back(canon, option);
  }
}

} // namespace scalefit

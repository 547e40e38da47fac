#include "scalefit/core/atomic_file.hpp"

#include "scalefit/core/error.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace scalefit {
namespace {

constexpr std::size_t kBufferBytes = 1 << 20;

std::string dir_of(const std::string &path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string &path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// Writes all of `data` to `fd`, retrying on EINTR and short writes. Returns 0 or an errno.
int write_all(int fd, const char *data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return 0;
}

mode_t default_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return static_cast<mode_t>(0666 & ~mask);
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : m_path(std::move(path)) {
  if (m_path.empty()) throw InputError("empty output path");
  m_target = m_path;
  struct stat st {};
  mode_t mode = default_mode();
  if (::stat(m_path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw InputError("cannot write: is a directory", m_path);
    if (!S_ISREG(st.st_mode)) {
      // A device or FIFO: there is nothing to rename over; write it in place.
      m_in_place = true;
      m_fd = ::open(m_path.c_str(), O_WRONLY | O_CLOEXEC);
      if (m_fd < 0) fail("cannot open for writing", errno);
      return;
    }
    mode = st.st_mode & 07777;
    char resolved[PATH_MAX];
    if (::realpath(m_path.c_str(), resolved)) m_target = resolved;  // follow symbolic links
  }
  std::string tmpl = dir_of(m_target) + "/." + base_of(m_target) + ".tmp-XXXXXX";
  m_fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (m_fd < 0) {
    const int err = errno;
    m_done = true;
    throw InputError(std::string("cannot create a temporary file in '") + dir_of(m_target) +
                         "': " + std::strerror(err),
                     m_path);
  }
  m_temp = tmpl;
  if (::fchmod(m_fd, mode) != 0) fail("cannot set permissions", errno);
}

AtomicFile::~AtomicFile() {
  if (!m_done) discard();
}

void AtomicFile::discard() noexcept {
  if (m_fd >= 0) ::close(m_fd);
  m_fd = -1;
  if (!m_temp.empty()) ::unlink(m_temp.c_str());
  m_temp.clear();
  m_buffer.clear();
  m_done = true;
}

void AtomicFile::fail(const std::string &step, int err) {
  discard();
  throw InputError(step + ": " + std::strerror(err), m_path);
}

void AtomicFile::flush_buffer() {
  if (m_buffer.empty()) return;
  if (const int err = write_all(m_fd, m_buffer.data(), m_buffer.size())) fail("cannot write", err);
  m_buffer.clear();
}

void AtomicFile::write(std::string_view data) {
  if (m_done) throw InputError("write after the output was committed or failed", m_path);
  m_buffer.append(data);
  if (m_buffer.size() >= kBufferBytes) flush_buffer();
}

void AtomicFile::commit() {
  if (m_done) throw InputError("commit after the output was committed or failed", m_path);
  flush_buffer();
  if (m_in_place) {
    // Devices may not support fsync (EINVAL); a write error has already been reported.
    if (::fsync(m_fd) != 0 && errno != EINVAL && errno != ENOTSUP && errno != EROFS)
      fail("cannot flush", errno);
    const int fd = m_fd;
    m_fd = -1;
    if (::close(fd) != 0) fail("cannot close", errno);
    m_done = true;
    return;
  }
  if (::fsync(m_fd) != 0) fail("cannot flush to disk", errno);
  const int fd = m_fd;
  m_fd = -1;
  if (::close(fd) != 0) fail("cannot close", errno);
  if (::rename(m_temp.c_str(), m_target.c_str()) != 0) fail("cannot rename the temporary file", errno);
  m_temp.clear();
  m_done = true;
  // Make the rename itself durable; a directory that cannot be synced is not an error of the output.
  const int dfd = ::open(dir_of(m_target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomic(const std::string &path, std::string_view contents) {
  AtomicFile out(path);
  out.write(contents);
  out.commit();
}

}  // namespace scalefit

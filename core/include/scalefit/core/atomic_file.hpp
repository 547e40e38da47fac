/// \file atomic_file.hpp
/// Outputs that appear whole or not at all: written to a temporary file in the target's directory,
/// flushed to disk (fsync) and renamed over the target, so a full disk, a killed process or an I/O
/// error never leaves a partial fit file, report or JSONL behind (and never clobbers the previous
/// version of the file).
#pragma once

#include <string>
#include <string_view>

namespace scalefit {

/// One output file written atomically.
///
///     AtomicFile out("fit.yaml");   // creates ".fit.yaml.tmp-XXXXXX" next to it
///     out.write(text);              // any number of times
///     out.commit();                 // fsync, rename to fit.yaml, fsync the directory
///
/// Until commit() succeeds the target is untouched; the destructor removes the temporary file of an
/// uncommitted output (an exception thrown before commit leaves nothing behind).
/// An existing regular file's permissions are kept; a new file gets 0666 minus the umask. A symbolic
/// link is followed (its target is replaced, the link kept). A target that exists and is not a
/// regular file (/dev/stdout, /dev/null, /dev/full, a FIFO) cannot be renamed over: it is written in
/// place, with every write error still reported.
///
/// Errors: every failure (directory missing or not writable, ENOSPC, EDQUOT, EFBIG, EIO...) throws
/// InputError (exit 2, an environment problem) whose file is the target path and whose message
/// names the step and strerror, e.g. "fit.yaml: cannot write: No space left on device".
class AtomicFile {
public:
  /// Creates the temporary file next to `path`. \throws InputError naming `path` when it cannot.
  explicit AtomicFile(std::string path);
  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile &) = delete;
  AtomicFile &operator=(const AtomicFile &) = delete;

  /// Appends bytes (buffered). \throws InputError naming the target path on an I/O error; the
  /// temporary file is removed and the object can no longer be written or committed.
  void write(std::string_view data);
  /// Flushes, fsyncs and renames the temporary file over the target, then fsyncs the directory.
  /// \throws InputError naming the target path on failure (the temporary file is removed and the
  /// previous target, if any, is left as it was).
  void commit();
  /// The target path, as given.
  const std::string &path() const noexcept { return m_path; }

private:
  void flush_buffer();
  [[noreturn]] void fail(const std::string &step, int err);
  void discard() noexcept;

  std::string m_path;    ///< target as given (used in messages)
  std::string m_target;  ///< the file actually replaced (symbolic links resolved)
  std::string m_temp;    ///< temporary file ("" when writing in place or after commit/discard)
  std::string m_buffer;
  int m_fd = -1;
  bool m_in_place = false;  ///< target is a device or FIFO: written directly
  bool m_done = false;      ///< committed or failed
};

/// Writes `contents` to `path` atomically (AtomicFile: temporary file, fsync, rename).
/// \throws InputError naming `path` when any step fails; the previous file, if any, is unchanged.
void write_file_atomic(const std::string &path, std::string_view contents);

}  // namespace scalefit

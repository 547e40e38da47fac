/// \file error.hpp
/// Errors that name where bad input came from (file, line, field), and the exit codes scalefit's
/// binaries use.
#pragma once

#include <stdexcept>
#include <string>

namespace scalefit {

/// Exit codes of every scalefit binary: one scheme (README "Exit codes", tests/cli/test_exit_codes).
enum ExitCode : int {
  kExitOk = 0,        ///< success
  kExitCheck = 1,     ///< a measured failure: a correctness check (`-c`) found wrong elements
  kExitUsage = 2,     ///< bad input or environment: arguments, files, values; no backend/GPU; unwritable output, full disk
  kExitInternal = 3,  ///< internal error: a failed MPI/CUDA/NCCL call at run time, or a bug (unexpected exception)
};

/// Bad input from a user: a file, a line, a field, or a command-line argument.
/// what() is one line, ready to print: "FILE:LINE: field 'F': message" (parts omitted when unknown).
class InputError : public std::runtime_error {
public:
  /// \param message what is wrong, e.g. "expected a positive number, got 'abc'"
  /// \param file    source file name ("" when it is not a file, e.g. a CLI argument)
  /// \param line    1-based line number (0 when unknown)
  /// \param field   the field or argument name ("" when unknown)
  explicit InputError(const std::string &message, const std::string &file = "", long line = 0,
                      const std::string &field = "");
  const std::string &file() const noexcept { return m_file; }
  long line() const noexcept { return m_line; }
  const std::string &field() const noexcept { return m_field; }
  /// The bare message, without the location prefix.
  const std::string &message() const noexcept { return m_message; }

private:
  std::string m_message;
  std::string m_file;
  long m_line;
  std::string m_field;
};

/// A failure of a library at run time (MPI, CUDA, NCCL, I/O) that is not the user's input.
class RuntimeError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

}  // namespace scalefit

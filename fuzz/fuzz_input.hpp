/// \file fuzz_input.hpp
/// Shared harness of scalefit's libFuzzer targets (fuzz/README.md): hands a fuzzer input to a
/// reader that takes a path, and states the contract every target checks.
///
/// Contract of every reader and loader under fuzzing: for any bytes it either returns, or throws
/// scalefit::InputError (bad input: exit 2 with file, line and field named). Anything else — a
/// signal, a sanitizer report, or any other exception (e.g. nlohmann::json's type_error, which
/// reaches the user as exit 3 naming no file) — is a finding: the target aborts so that libFuzzer
/// saves the input.
#pragma once

#include "scalefit/core/error.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <unistd.h>

namespace scalefit::fuzz {

/// Writes `data[0, size)` to one per-process scratch file (under $TMPDIR, default /tmp; reused
/// by every iteration) and returns its path. Aborts if the file cannot be written: a harness
/// failure must not pass for a clean run.
inline const std::string &write_input(const std::uint8_t *data, std::size_t size) {
  static const std::string path = [] {
    const char *dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/scalefit-fuzz-" + std::to_string(getpid()) +
           ".in";
  }();
  static const bool cleanup_registered = [] {
    return std::atexit([] { std::remove(path.c_str()); }) == 0;
  }();
  (void)cleanup_registered;
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
  return path;
}

/// Runs `call()` under the contract above: returns normally or on InputError; prints and aborts
/// on any other exception.
template <class F> void expect_clean(const char *what, F &&call) {
  try {
    call();
  } catch (const InputError &) {
    // A clean refusal of bad input.
  } catch (const std::exception &e) {
    std::fprintf(stderr, "fuzz %s: exception other than InputError: %s\n", what, e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "fuzz %s: non-standard exception\n", what);
    std::abort();
  }
}

}  // namespace scalefit::fuzz

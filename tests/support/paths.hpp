/// \file paths.hpp
/// Test support: the paths tests use, each overridable by an environment variable so test
/// binaries built on one machine run elsewhere (e.g. from the GPU bundle of
/// ../shared/tools/gpu-bundle.sh, where the build tree and sources live under another prefix).
/// The compiled-in value (a CMake definition) is the default. Header-only; tests only.
///
///   SCALEFIT_BIN_DIR        folder of scalefit-bench / scalefit (default: the build's bin/)
///   SCALEFIT_TEST_DATA_DIR  tests/data (recorded logs)
///   SCALEFIT_SOURCE_DIR     the source tree (configs/, scripts/)
///   SCALEFIT_MPIEXEC        the mpiexec to launch ranks with
#pragma once

#include <cstdlib>
#include <string>

namespace scalefit::test {

/// $var when set and non-empty, else `fallback`.
inline std::string env_or(const char *var, const std::string &fallback) {
  const char *v = std::getenv(var);
  return v && *v ? std::string(v) : fallback;
}

/// The path of binary `name` (e.g. "scalefit-bench"): $SCALEFIT_BIN_DIR/name when the variable
/// is set, else `compiled` (the build's absolute path of that binary).
inline std::string bin_path(const char *name, const std::string &compiled) {
  const std::string dir = env_or("SCALEFIT_BIN_DIR", "");
  return dir.empty() ? compiled : dir + "/" + name;
}

/// A source-tree path: $SCALEFIT_SOURCE_DIR/relative when set, else `compiled`.
inline std::string source_path(const std::string &relative, const std::string &compiled) {
  const std::string dir = env_or("SCALEFIT_SOURCE_DIR", "");
  return dir.empty() ? compiled : dir + "/" + relative;
}

/// tests/data: $SCALEFIT_TEST_DATA_DIR when set, else `compiled`.
inline std::string test_data_dir(const std::string &compiled) {
  return env_or("SCALEFIT_TEST_DATA_DIR", compiled);
}

} // namespace scalefit::test

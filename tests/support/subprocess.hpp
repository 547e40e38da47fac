/// \file subprocess.hpp
/// Test support: run a command line (scalefit binaries, possibly under mpiexec) with stdout and
/// stderr captured through files in a temporary directory. Header-only; tests only.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace scalefit::test {

/// Exit code (-1 when the process did not exit normally) and the captured output.
struct Result {
  int code = -1;
  std::string out, err;
};

/// A fresh directory under /tmp named `<prefix>XXXXXX`, removed with everything in it.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string &prefix = "scalefit_test_") {
    std::string tmpl = "/tmp/" + prefix + "XXXXXX";
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
};

/// The whole content of a file ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path &p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Lets OpenMPI run as root (containers, CI) and oversubscribe the cores, for this process and
/// the commands it starts.
inline void set_mpi_env() {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
}

/// Runs `command` through the shell with stdout and stderr redirected into files in `dir`.
inline Result run_captured(const std::string &command, const TempDir &dir) {
  const auto out = dir.path / "stdout.txt", err = dir.path / "stderr.txt";
  const std::string cmd = command + " >" + out.string() + " 2>" + err.string();
  const int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

}  // namespace scalefit::test

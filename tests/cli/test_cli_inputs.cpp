// scalefit's commands on bad input, through the binary: exit 2 and a message naming the file, line,
// field or option; outputs written whole or not at all.
#include "../support/subprocess.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using scalefit::test::Result;
using scalefit::test::run_captured;
using scalefit::test::slurp;
using scalefit::test::TempDir;

namespace {

const std::string kBin = SCALEFIT_BIN;
const std::string kData = SCALEFIT_TEST_DATA_DIR;
const std::string kConfigs = SCALEFIT_CONFIG_DIR;

Result sf(const std::string &args, const TempDir &dir) {
  return run_captured(kBin + " " + args, dir);
}

void write(const fs::path &p, const std::string &text) {
  std::ofstream(p) << text;
}

/// Files in `dir` whose name starts with '.' (temporary outputs left behind).
int hidden_files(const fs::path &dir) {
  int n = 0;
  for (const auto &e : fs::directory_iterator(dir))
    n += e.path().filename().string().front() == '.';
  return n;
}

/// A fit file from the local MPI measurements, written into `dir`.
fs::path make_fit(const TempDir &dir) {
  const fs::path fit = dir.path / "fit.yaml";
  const Result r = sf("fit " + kData + "/fitting/local_mpi_3curves.jsonl -o " + fit.string(), dir);
  EXPECT_EQ(r.code, 0) << r.err;
  return fit;
}

}  // namespace

TEST(CliOutputs, FitToAFullDiskExits2NamingThePath) {
  TempDir dir("sf_cli_");
  const Result r = sf("fit " + kData + "/fitting/local_mpi_3curves.jsonl -o /dev/full", dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("/dev/full"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
}

TEST(CliOutputs, FitIntoAMissingDirectoryExits2AndLeavesNothing) {
  TempDir dir("sf_cli_");
  const std::string out = (dir.path / "no-such-dir" / "fit.yaml").string();
  const Result r = sf("fit " + kData + "/fitting/local_mpi_3curves.jsonl -o " + out, dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(out), std::string::npos) << r.err;
  EXPECT_EQ(hidden_files(dir.path), 0);
}

TEST(CliOutputs, FitFileCutAtAnEntryBoundaryExits2NamingTheFile) {
  TempDir dir("sf_cli_");
  const fs::path fit = make_fit(dir);
  const std::string text = slurp(fit);
  const auto second = text.find("\n  - id:", text.find("  - id:") + 1);
  ASSERT_NE(second, std::string::npos) << "needs a fit file with two entries";
  const fs::path cut = dir.path / "cut.yaml";
  write(cut, text.substr(0, second + 1));
  const Result r = sf("predict --fit " + cut.string() + " --op sendrecv --nranks 2 --bytes 1M", dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(cut.string() + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("field 'end'"), std::string::npos) << r.err;
  EXPECT_EQ(hidden_files(dir.path), 0);
}

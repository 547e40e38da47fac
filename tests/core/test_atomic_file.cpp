// AtomicFile: outputs appear whole or not at all; failures are InputError naming the path.
#include "scalefit/core/atomic_file.hpp"
#include "scalefit/core/error.hpp"

#include "../support/subprocess.hpp"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using scalefit::AtomicFile;
using scalefit::InputError;
using scalefit::test::slurp;
using scalefit::test::TempDir;

namespace {
/// Files in `dir` other than the ones named.
int count_files(const fs::path &dir) {
  int n = 0;
  for ([[maybe_unused]] const auto &e : fs::directory_iterator(dir)) ++n;
  return n;
}
}  // namespace

TEST(AtomicFile, WritesTheWholeContentAndLeavesNoTemporary) {
  TempDir dir("sf_atomic_");
  const std::string path = (dir.path / "out.yaml").string();
  {
    AtomicFile out(path);
    out.write("a: 1\n");
    EXPECT_FALSE(fs::exists(path)) << "the target must not appear before commit";
    out.write("b: 2\n");
    out.commit();
  }
  EXPECT_EQ(slurp(path), "a: 1\nb: 2\n");
  EXPECT_EQ(count_files(dir.path), 1);
}

TEST(AtomicFile, UncommittedOutputLeavesThePreviousFileAndNoTemporary) {
  TempDir dir("sf_atomic_");
  const std::string path = (dir.path / "fit.yaml").string();
  scalefit::write_file_atomic(path, "old\n");
  {
    AtomicFile out(path);
    out.write("new, but never committed\n");
  }
  EXPECT_EQ(slurp(path), "old\n");
  EXPECT_EQ(count_files(dir.path), 1);
}

TEST(AtomicFile, KeepsTheModeOfAnExistingFileAndFollowsSymlinks) {
  TempDir dir("sf_atomic_");
  const fs::path real = dir.path / "real.yaml", link = dir.path / "link.yaml";
  scalefit::write_file_atomic(real.string(), "v1\n");
  ::chmod(real.c_str(), 0640);
  fs::create_symlink(real, link);
  scalefit::write_file_atomic(link.string(), "v2\n");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(real), "v2\n");
  struct stat st {};
  ASSERT_EQ(::stat(real.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST(AtomicFile, MissingDirectoryIsAnInputErrorNamingThePath) {
  const std::string path = "/nonexistent-scalefit-dir/fit.yaml";
  try {
    scalefit::write_file_atomic(path, "x\n");
    FAIL() << "expected InputError";
  } catch (const InputError &e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_NE(e.message().find("No such file or directory"), std::string::npos) << e.what();
  }
}

TEST(AtomicFile, DirectoryTargetIsRefused) {
  TempDir dir("sf_atomic_");
  EXPECT_THROW(scalefit::write_file_atomic(dir.path.string(), "x\n"), InputError);
}

TEST(AtomicFile, FullDeviceIsAnInputErrorNamingThePath) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  try {
    AtomicFile out("/dev/full");
    out.write(std::string(4096, 'x'));
    out.commit();
    FAIL() << "expected InputError";
  } catch (const InputError &e) {
    EXPECT_EQ(e.file(), "/dev/full");
    EXPECT_NE(e.message().find("No space left on device"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_character_file("/dev/full")) << "a device must never be renamed over";
}

TEST(AtomicFile, WriteErrorMidwayKeepsThePreviousFileAndRemovesTheTemporary) {
  // A file-size limit makes write() fail with EFBIG, as a full disk fails with ENOSPC.
  TempDir dir("sf_atomic_");
  const std::string path = (dir.path / "big.jsonl").string();
  scalefit::write_file_atomic(path, "previous\n");
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  try {
    AtomicFile out(path);
    out.write(std::string(3 << 20, 'y'));  // over the buffer: written (and failing) at once
    out.commit();
  } catch (const InputError &e) {
    threw = true;
    EXPECT_EQ(e.file(), path);
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_TRUE(threw);
  EXPECT_EQ(slurp(path), "previous\n");
  EXPECT_EQ(count_files(dir.path), 1);
}

TEST(AtomicFile, UseAfterFailureIsRefused) {
  AtomicFile out("/dev/null");
  out.write("ok");
  out.commit();
  EXPECT_THROW(out.write("again"), InputError);
  EXPECT_THROW(out.commit(), InputError);
}

// Guards and host facts: the --out lock, the memory judgement, buffer rotation, the cache and
// memory readers, and the cleaned MPI version string.
#include "scalefit/bench/guard.hpp"
#include "scalefit/bench/sampling.hpp"
#include "scalefit/bench/sysinfo.hpp"
#include "scalefit/core/error.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../support/subprocess.hpp"

using namespace scalefit;
using namespace scalefit::bench;
namespace fs = std::filesystem;

TEST(CleanVersion, CutsAtTheNulAndTheLineEnd) {
  // Open MPI's MPI_Get_library_version length counts the terminating NUL.
  const std::string with_nul("Open MPI v4.1.4, package: Debian\0", 33);
  EXPECT_EQ(clean_version_text(with_nul), "Open MPI v4.1.4, package: Debian");
  EXPECT_EQ(clean_version_text("MPICH Version: 4.0\nMPICH Release date: x"), "MPICH Version: 4.0");
  EXPECT_EQ(clean_version_text("v1, \r\n"), "v1");
  EXPECT_EQ(clean_version_text(std::string("\0junk", 5)), "");
  for (char c : clean_version_text(with_nul))
    EXPECT_NE(c, '\0');
}

TEST(HostInfo, LargestCacheLevelFromSysfs) {
  test::TempDir d;
  for (auto [idx, size] : {std::pair{"index0", "48K"}, std::pair{"index2", "1024K"},
                           std::pair{"index3", "32768K"}}) {
    fs::create_directories(d.path / idx);
    std::ofstream(d.path / idx / "size") << size << "\n";
  }
  std::string source;
  EXPECT_EQ(host_cache_bytes(&source, d.path.string()), 32768ull << 10);
  EXPECT_NE(source.find(d.path.string()), std::string::npos);
  // No such directory: sysconf's figure (this machine's; positive or 0, never garbage).
  const std::uint64_t fallback = host_cache_bytes(&source, (d.path / "none").string());
  EXPECT_NE(source.find(fallback > 0 ? "sysconf" : "unknown"), std::string::npos);
}

TEST(HostInfo, MemAvailableFromMeminfo) {
  test::TempDir d;
  std::ofstream(d.path / "meminfo") << "MemTotal:       32000000 kB\nMemFree:  1 kB\n"
                                       "MemAvailable:   21513900 kB\nBuffers: 5 kB\n";
  EXPECT_EQ(mem_available_bytes((d.path / "meminfo").string()), 21513900ull << 10);
  std::ofstream(d.path / "old") << "MemTotal: 5 kB\n";
  EXPECT_EQ(mem_available_bytes((d.path / "old").string()), 0u);
  EXPECT_EQ(mem_available_bytes((d.path / "missing").string()), 0u);
}

TEST(MemoryEstimate, RefusesWithTheFigures) {
  EXPECT_EQ(memory_refusal(1ull << 30, 4, 8ull << 30, "host"), "");
  const std::string why = memory_refusal(16ull << 30, 2, 20ull << 30, "the node's MemAvailable");
  EXPECT_NE(why.find("16.0 GiB per rank x 2 ranks"), std::string::npos) << why;
  EXPECT_NE(why.find("= 32.0 GiB"), std::string::npos) << why;
  EXPECT_NE(why.find("only 20.0 GiB"), std::string::npos) << why;
  EXPECT_EQ(memory_refusal(16ull << 30, 2, 0, "unknown"), ""); // nothing known: no judgement
}

TEST(Rotation, ShiftsByTheFootprintThroughTheAllocation) {
  // 1 MiB messages in a 64 MiB allocation: 64 positions; the last one ends at the end.
  const Rotation r = Rotation::make(1 << 20, 1 << 20, 64 << 20, false);
  EXPECT_EQ(r.steps, 64u);
  EXPECT_LE((r.steps - 1) * r.step + (1u << 20), 64u << 20);
  // In place on rank 3 of allgather: the footprint reaches 4 blocks from the base.
  const Rotation in = Rotation::make(4 << 20, 4 << 20, 64 << 20, false);
  EXPECT_EQ(in.steps, 16u);
  EXPECT_EQ(Rotation::make(1 << 20, 1 << 20, 64 << 20, true).steps, 1u);  // --hot
  EXPECT_EQ(Rotation::make(64 << 20, 64 << 20, 64 << 20, false).steps, 1u); // largest message
  EXPECT_EQ(Rotation::make(8, 8, 64, false).steps, 8u);
}

TEST(OutputLock, SecondHolderIsRefusedNamingTheFile) {
  test::TempDir d;
  const std::string out = (d.path / "sub" / "comm.jsonl").string();
  {
    OutputLock first(out);
    EXPECT_TRUE(fs::exists(first.lock_path()));
    // flock locks belong to the open file description: a second open in this process, as in
    // another job, is refused.
    try {
      OutputLock second(out);
      ADD_FAILURE() << "a second lock on the same --out was granted";
    } catch (const InputError &e) {
      EXPECT_EQ(e.field(), "--out");
      EXPECT_NE(std::string(e.what()).find(out), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("pid " + std::to_string(getpid())), std::string::npos)
          << e.what();
    }
  }
  EXPECT_FALSE(fs::exists(out + ".lock")); // released and removed
  OutputLock again(out);                   // free again
}

TEST(OutputLock, ALockFromAnotherProcessIsSeen) {
  test::TempDir d;
  const std::string out = (d.path / "comm.jsonl").string();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    OutputLock held(out);
    const char c = 'x';
    if (write(ready[1], &c, 1) != 1)
      _exit(1);
    sleep(30); // killed by the parent
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  EXPECT_THROW(OutputLock mine(out), InputError);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  // The killed holder's lock died with it (the stale .lock file stays and is reused).
  OutputLock mine(out);
  close(ready[0]);
  close(ready[1]);
}

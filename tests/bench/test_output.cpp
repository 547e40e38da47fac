// --out / --resume rules: new, empty, same-context and different-context files; never created.
#include "../support/subprocess.hpp"
#include "scalefit/bench/output.hpp"
#include "scalefit/core/error.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace scalefit;
using namespace scalefit::bench;
namespace fs = std::filesystem;

namespace {

using test::TempDir;

ContextRecord context(const std::string &system, const std::string &dtype = "float") {
  ContextRecord c;
  c.system = system;
  c.backend = "mpi";
  c.nranks = 4;
  c.nnodes = 2;
  c.ranks_per_node = 2;
  c.extra = nlohmann::json::object();
  c.extra["dtypes"] = nlohmann::json::array({dtype});
  return c;
}

MeasurementRecord point(std::uint64_t bytes) {
  MeasurementRecord m;
  m.group = GroupShape{"world", 4, 2, 2};
  m.bytes = bytes;
  m.count = bytes / 4;
  m.time_us = 10;
  return m;
}

void write_file(const fs::path &p, const ContextRecord &c, std::vector<std::uint64_t> sizes,
                const std::string &tail = "") {
  {
    JsonlWriter w(p.string());
    w.write(to_json(c));
    for (auto b : sizes)
      w.write(to_json(point(b)));
  }
  if (!tail.empty()) {
    std::ofstream out(p, std::ios::app);
    out << tail;
  }
}

std::string error_field(const std::string &path, bool resume, const ContextRecord &c) {
  try {
    prepare_output(path, resume, c);
  } catch (const InputError &e) {
    return e.field();
  }
  return "(no error)";
}

} // namespace

TEST(Output, NewFileIsFineAndNotCreated) {
  TempDir d;
  const fs::path p = d.path / "sub" / "dir" / "comm.jsonl";
  const ResumeState s = prepare_output(p.string(), false, context("a"));
  EXPECT_TRUE(s.done.empty());
  EXPECT_FALSE(fs::exists(p));
  EXPECT_FALSE(fs::exists(d.path / "sub"));
}

TEST(Output, EmptyFileIsNew) {
  TempDir d;
  const fs::path p = d.path / "comm.jsonl";
  std::ofstream(p).close();
  EXPECT_EQ(error_field(p.string(), false, context("a")), "(no error)");
  EXPECT_EQ(error_field(p.string(), true, context("a")), "(no error)");
}

TEST(Output, ExistingRecordsNeedResume) {
  TempDir d;
  const fs::path p = d.path / "comm.jsonl";
  write_file(p, context("a"), {8, 16});
  const auto before = fs::file_size(p);
  EXPECT_EQ(error_field(p.string(), false, context("a")), "--out");
  EXPECT_EQ(fs::file_size(p), before);
}

TEST(Output, ResumeSameContextListsDonePoints) {
  TempDir d;
  const fs::path p = d.path / "comm.jsonl";
  write_file(p, context("a"), {8, 16});
  const ResumeState s = prepare_output(p.string(), true, context("a"));
  EXPECT_EQ(s.done.size(), 2u);
  EXPECT_EQ(s.done.count(point(16).key()), 1u);
  EXPECT_EQ(s.done.count(point(32).key()), 0u);
  EXPECT_FALSE(s.truncate_partial_line);
}

TEST(Output, ResumeDifferentContextIsAnError) {
  TempDir d;
  const fs::path p = d.path / "comm.jsonl";
  write_file(p, context("a"), {8});
  EXPECT_EQ(error_field(p.string(), true, context("b")), "--resume");
  EXPECT_EQ(error_field(p.string(), true, context("a", "double")), "--resume");
  ContextRecord other_ranks = context("a");
  other_ranks.nranks = 8;
  EXPECT_EQ(error_field(p.string(), true, other_ranks), "--resume");
}

TEST(Output, UnterminatedLastLineOfAKilledWriteIsIgnored) {
  TempDir d;
  const fs::path p = d.path / "comm.jsonl";
  write_file(p, context("a"), {8, 16}, "{\"type\":\"measurement\",\"op\":\"allre");
  const ResumeState s = prepare_output(p.string(), true, context("a"));
  EXPECT_EQ(s.done.size(), 2u);
  EXPECT_TRUE(s.truncate_partial_line);
  EXPECT_LT(s.valid_bytes, fs::file_size(p));
}

TEST(Output, UnwritableLocations) {
  TempDir d;
  const fs::path file = d.path / "plain";
  std::ofstream(file) << "x";
  // A path below a regular file can never be created.
  EXPECT_EQ(error_field((file / "comm.jsonl").string(), false, context("a")), "--out");
  EXPECT_EQ(error_field(d.path.string(), false, context("a")), "--out"); // a directory
}

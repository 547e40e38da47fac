// read_input (issue 19, Sec. 2: unbounded reads, inputs opened twice) and the bounded JSON parse
// under every JSONL reader (deep nesting).
#include "scalefit/core/error.hpp"
#include "scalefit/core/input_file.hpp"
#include "scalefit/core/jsonl.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace scalefit;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  const fs::path d = fs::temp_directory_path() /
                     ("scalefit_input_" + std::to_string(::getpid()) + "_" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::create_directories(d);
  return d;
}

std::string error_of(const std::function<void()> &f) {
  try {
    f();
  } catch (const InputError &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(InputFile, RegularFileIsReadWhole) {
  const auto p = temp_dir() / "a.txt";
  std::ofstream(p) << "one\ntwo";
  EXPECT_EQ(*read_input(p.string()), "one\ntwo");
}

TEST(InputFile, DevicesAndDirectoriesAreRefusedAtOnce) {
  EXPECT_NE(error_of([] { read_input("/dev/zero"); }).find("a character device"),
            std::string::npos);
  EXPECT_NE(error_of([] { read_input(temp_dir().string()); }).find("is a directory"),
            std::string::npos);
  EXPECT_NE(error_of([] { read_input("/nonexistent/x"); }).find("cannot open"), std::string::npos);
}

TEST(InputFile, SizeIsCapped) {
  const auto p = temp_dir() / "big.txt";
  std::ofstream(p) << std::string(4096, 'x');
  EXPECT_NE(error_of([&] { read_input(p.string(), 1024); }).find("larger than"),
            std::string::npos);
  EXPECT_EQ(read_input(p.string(), 4096)->size(), 4096u);
}

TEST(InputFile, AFifoIsReadOnceAndKeptForASecondReader) {
  const auto p = temp_dir() / "fifo";
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(p) << "{\"type\":\"context\"}\n"; });
  const auto first = read_input(p.string());
  writer.join();
  // a second open of the FIFO would block forever with no writer left; the kept text returns
  const auto second = read_input(p.string());
  EXPECT_EQ(*first, "{\"type\":\"context\"}\n");
  EXPECT_EQ(first.get(), second.get());
}

TEST(Jsonl, NestingDeeperThanTheBoundIsRefusedNamingLineAndField) {
  const auto p = temp_dir() / "deep.jsonl";
  {
    std::ofstream out(p);
    out << "{\"type\":\"context\"}\n{\"x\":" << std::string(100000, '[')
        << std::string(100000, ']') << "}\n";
  }
  const std::string e = error_of([&] {
    for_each_json_line(p.string(), [](const nlohmann::json &, long) { return true; });
  });
  EXPECT_NE(e.find("deep.jsonl:2"), std::string::npos) << e;
  EXPECT_NE(e.find("field 'x'"), std::string::npos) << e;
  EXPECT_NE(e.find("nested deeper than 64"), std::string::npos) << e;
  // kMaxJsonDepth - 1 levels inside the line's object still parse
  const std::string ok = "{\"x\":" + std::string(kMaxJsonDepth - 1, '[') +
                         std::string(kMaxJsonDepth - 1, ']') + "}";
  EXPECT_NO_THROW(parse_json_bounded(ok, "t", 1));
  EXPECT_THROW(parse_json_bounded("{\"x\":" + std::string(kMaxJsonDepth, '[') +
                                      std::string(kMaxJsonDepth, ']') + "}",
                                  "t", 1),
               InputError);
}

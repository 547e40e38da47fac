// The nccl-tests table: number formatting and columns, checked against rows of real
// current-format nccl-tests logs (values quoted from the logs named below).
#include "scalefit/bench/table.hpp"

#include "scalefit/ingest/ingest.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

using namespace scalefit::bench;

namespace {
/// A file in the temporary directory, removed at the end of the test.
struct TempFile {
  std::filesystem::path path;
  explicit TempFile(const std::string &name)
      : path(std::filesystem::temp_directory_path() /
             ("scalefit-table-" + std::to_string(::getpid()) + "-" + name)) {}
  ~TempFile() { std::filesystem::remove(path); }
};
} // namespace

TEST(Table, FloatWidthRulesOfNcclTests) {
  // From current-format nccl-tests rows (e.g. all_gather_perf 1073741824 B: "27211.0   39.46",
  // alltoall_perf 8589934592 B: "196284", all_reduce_perf: "5871.07   22.86", "80646.8  133.14").
  EXPECT_EQ(format_float(27211.0, 7), "27211.0");
  EXPECT_EQ(format_float(196284.0, 7), " 196284");
  EXPECT_EQ(format_float(5871.07, 7), "5871.07");
  EXPECT_EQ(format_float(80646.8, 7), "80646.8");
  EXPECT_EQ(format_float(17.71, 7), "  17.71");
  EXPECT_EQ(format_float(39.46, 6), " 39.46");
  EXPECT_EQ(format_float(133.14, 6), "133.14");
  EXPECT_EQ(format_float(0.0, 6), "  0.00");
  EXPECT_EQ(format_float(12345678.0, 7), "1.2e+07");
}

TEST(Table, RowColumnsLineUpWithTheHeader) {
  const std::string pre = row_preamble(134217728, 33554432, "float", "sum", -1);
  EXPECT_EQ(pre, "   134217728      33554432     float     sum      -1");
  const std::string body = row_body(5871.07, 22.86, 22.86, 0);
  EXPECT_EQ(body, "  5871.07   22.86   22.86       0");
  EXPECT_EQ(row_body(1.5, 0.0, 0.0, std::nullopt), "     1.50    0.00    0.00     N/A");
  const std::string header = table_header("mean of test");
  // The column names of the current format, and the units row.
  EXPECT_NE(header.find("#       size         count      type   redop    root     time   algbw"
                        "   busbw  #wrong     time   algbw   busbw  #wrong"),
            std::string::npos);
  EXPECT_NE(header.find("#        (B)    (elements)                               (us)  (GB/s)"),
            std::string::npos);
  // Row fields end where the header's columns end ("root" and "#wrong").
  const std::string names = header.substr(header.find("#       size"));
  EXPECT_EQ(names.find("root") + 4, pre.size());
  EXPECT_EQ(names.find("#wrong") + 6, pre.size() + body.size());
}

TEST(Table, FooterLikeNcclTests) {
  EXPECT_EQ(table_footer(0, 14.9966, "allreduce"),
            "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 14.9966 \n#\n"
            "# Collective test concluded: allreduce\n");
  EXPECT_NE(table_footer(3, 1.0, "x").find(": 3 FAILED"), std::string::npos);
}

TEST(Table, NcclChoiceColumnFormatsAndStaysReadableAsANcclTestsLog) {
  CollChoice c;
  c.algo = "RING";
  c.proto = "LL128";
  c.channels = 4;
  EXPECT_EQ(row_choice(c, false), "  RING/LL128/4");
  EXPECT_EQ(row_choice(std::nullopt, true), "  p2p");
  EXPECT_EQ(row_choice(std::nullopt, false), "  -");
  const std::string header = table_header("mean of test", true);
  EXPECT_NE(header.find("#wrong  algo/proto/ch"), std::string::npos) << header;
  EXPECT_EQ(table_header("x", false).find("algo/proto"), std::string::npos);
  // scalefit's own table with the column, read back by its nccl-tests log reader: the extra
  // last column must not cost a row (users feed these logs to `scalefit fit`).
  TempFile f("choice.txt");
  {
    std::ofstream o(f.path);
    o << "# Collective test starting: all_reduce_perf\n#\n" << header;
    for (std::uint64_t b : {1024ull, 2048ull, 4096ull})
      o << row_preamble(b, b / 4, "float", "sum", -1) << row_body(10.0 + b / 1024, 0.1, 0.2, 0)
        << row_body(11.0, 0.1, 0.2, 0) << row_choice(c, false) << "\n";
    o << table_footer(0, 0.2, "all_reduce_perf");
  }
  const scalefit::ingest::IngestResult r = scalefit::ingest::read_nccl_tests(f.path.string());
  ASSERT_EQ(r.measurements.size(), 6u);
  EXPECT_DOUBLE_EQ(r.measurements[0].time_us, 11.0);
}

// CSV output: quoting, the appending writer, comm/kernels rows from records, fit-entry rows.
#include "scalefit/core/csv.hpp"
#include "scalefit/core/error.hpp"
#include "scalefit/fitting/fit_file.hpp"
#include "scalefit/report/fit_csv.hpp"

#include "../support/subprocess.hpp"

#include <gtest/gtest.h>

#include <fstream>

namespace scalefit {
namespace {

const std::string kData = SCALEFIT_TEST_DATA_DIR;

/// Splits one CSV line (RFC 4180 quoting) into fields.
std::vector<std::string> split_csv(const std::string &line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> v;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);)
    v.push_back(l);
  return v;
}

TEST(Csv, QuotingAndCells) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(split_csv(csv_field("x,\"y\"") + ",z"), (std::vector<std::string>{"x,\"y\"", "z"}));
  EXPECT_EQ(csv_cell(nlohmann::json()), "");
  EXPECT_EQ(csv_cell(nlohmann::json(true)), "true");
  EXPECT_EQ(csv_cell(nlohmann::json(8)), "8");
  EXPECT_EQ(csv_cell(nlohmann::json(0.1234567890123)), "0.123456789");
}

TEST(Csv, WriterAppendsAfterOneHeaderAndRefusesOtherColumns) {
  test::TempDir dir("scalefit_csv_");
  const std::string p = (dir.path / "x.csv").string();
  {
    CsvWriter w(p, {"a", "b"});
    w.row({"1", "2"});
    EXPECT_THROW(w.row({"1"}), std::invalid_argument);
  }
  {
    CsvWriter w(p, {"a", "b"}); // a resumed run: no second header
    w.row({"3", "x,y"});
  }
  EXPECT_EQ(lines_of(test::slurp(p)), (std::vector<std::string>{"a,b", "1,2", "3,\"x,y\""}));
  EXPECT_THROW(CsvWriter(p, {"a", "c"}), InputError);
}

TEST(Csv, CommRowsCarryTheRecordsNumbers) {
  std::ifstream in(kData + "/fitting/local_mpi_3curves.jsonl");
  std::string line;
  std::getline(in, line);
  const nlohmann::json ctx = nlohmann::json::parse(line);
  int rows = 0;
  while (std::getline(in, line)) {
    const nlohmann::json m = nlohmann::json::parse(line);
    if (m.value("type", "") != "measurement")
      continue;
    const auto row = comm_csv_row(ctx, m);
    ASSERT_EQ(row.size(), comm_csv_header().size());
    auto col = [&](const std::string &name) {
      const auto &h = comm_csv_header();
      return row[std::find(h.begin(), h.end(), name) - h.begin()];
    };
    EXPECT_EQ(col("op"), m["op"].get<std::string>());
    EXPECT_EQ(std::stoull(col("bytes_B")), m["bytes"].get<std::uint64_t>());
    EXPECT_NEAR(std::stod(col("busbw_GBps")), m["busbw_gbps"].get<double>(),
                1e-9 * m["busbw_gbps"].get<double>() + 1e-15);
    EXPECT_EQ(col("group_nranks"), std::to_string(m["group"]["nranks"].get<int>()));
    EXPECT_FALSE(col("median_us").empty());
    EXPECT_EQ(col("system"), ctx["system"].get<std::string>());
    ++rows;
  }
  EXPECT_GT(rows, 10);
}

TEST(Csv, KernelRows) {
  std::ifstream in(kData + "/report/kernels_gpt-1.3b_bf16.jsonl");
  std::string line;
  std::getline(in, line);
  const nlohmann::json ctx = nlohmann::json::parse(line);
  std::getline(in, line);
  const nlohmann::json k = nlohmann::json::parse(line);
  const auto row = kernels_csv_row(ctx, k);
  ASSERT_EQ(row.size(), kernels_csv_header().size());
  EXPECT_EQ(row[1], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(row[5], k["name"].get<std::string>());
  EXPECT_NEAR(std::stod(row[15]), k["tflops"].get<double>(), 1e-6 * k["tflops"].get<double>());
  EXPECT_FALSE(row[19].empty()); // min_us from "stats"."min"
}

TEST(Csv, FitEntriesOneRowEach) {
  const RecordSet rs = read_records(kData + "/fitting/local_mpi_3curves.jsonl");
  const fitting::FitFile fit = fitting::fit_records({rs}, {"local"});
  const auto lines = lines_of(report::fit_csv(fit));
  ASSERT_EQ(lines.size(), fit.entries.size() + 1);
  EXPECT_EQ(split_csv(lines[0]), report::fit_csv_header());
  for (std::size_t i = 0; i < fit.entries.size(); ++i) {
    const auto f = split_csv(lines[i + 1]);
    ASSERT_EQ(f.size(), report::fit_csv_header().size()) << lines[i + 1];
    EXPECT_EQ(f[0], fit.entries[i].id);
    EXPECT_NEAR(std::stod(f[18]), fit.entries[i].latency_us(), 1e-6 * fit.entries[i].latency_us());
  }
}

} // namespace
} // namespace scalefit

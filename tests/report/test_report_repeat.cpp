// The run-to-run band (scalefit-bench comm --repeat) in the bandwidth plots' data, the Check
// section index.html shows for `scalefit report --system` (issue 17, section 3), and the pair
// matrix of `--groups pairs` (section 2).
#include "scalefit/fitting/fit_file.hpp"
#include "scalefit/report/report.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace scalefit::report {
namespace {

const std::string kLocal = std::string(SCALEFIT_TEST_DATA_DIR) + "/fitting/local_mpi_3curves.jsonl";

TEST(ReportRepeat, BandwidthSeriesCarryTheRunsBusbwRangeWhereRecordsHaveIt) {
  Inputs in = load_inputs({kLocal}, {}, {});
  // Give the allreduce points three runs spread -10%..+15% around the recorded busbw.
  std::map<double, std::pair<double, double>> expected; // bytes -> (min, max)
  for (MeasurementRecord &m : in.comm[0].measurements) {
    if (m.op != Op::allreduce || !(m.bytes > 0) || !(m.time_us > 0))
      continue;
    const double lo = 0.9 * m.busbw_gbps, hi = 1.15 * m.busbw_gbps;
    m.extra["repeat"] = {{"runs", 3},
                         {"run", 1},
                         {"busbw_gbps", {lo, m.busbw_gbps, hi}},
                         {"busbw_min_gbps", lo},
                         {"busbw_max_gbps", hi},
                         {"spread_pct", 25.0}};
    expected[static_cast<double>(m.bytes)] = {lo, hi};
  }
  ASSERT_FALSE(expected.empty());
  int with_band = 0, without = 0;
  for (const Plot &p : bandwidth_plots(in))
    for (const auto &panel : p.data["panels"])
      for (const auto &s : panel["series"]) {
        if (s["op"] != "allreduce") {
          EXPECT_TRUE(s["busbw_band"].is_null()) << s["label"];
          ++without;
          continue;
        }
        const auto &band = s["busbw_band"];
        ASSERT_FALSE(band.is_null()) << s["label"];
        ++with_band;
        EXPECT_EQ(band["runs"], 3);
        const auto bytes = band["bytes"].get<std::vector<double>>();
        const auto lo = band["min_gbps"].get<std::vector<double>>();
        const auto hi = band["max_gbps"].get<std::vector<double>>();
        ASSERT_EQ(bytes.size(), lo.size());
        ASSERT_EQ(bytes.size(), hi.size());
        EXPECT_EQ(bytes, s["bytes"].get<std::vector<double>>()); // every drawn point has runs
        const auto busbw = s["busbw_gbps"].get<std::vector<double>>();
        for (std::size_t i = 0; i < bytes.size(); ++i) {
          EXPECT_DOUBLE_EQ(lo[i], expected.at(bytes[i]).first);
          EXPECT_DOUBLE_EQ(hi[i], expected.at(bytes[i]).second);
          EXPECT_LE(lo[i], busbw[i]); // the point drawn (the median run) lies inside the band
          EXPECT_GE(hi[i], busbw[i]);
        }
      }
  EXPECT_GT(with_band, 0);
  EXPECT_GT(without, 0);
}

TEST(ReportRepeat, CheckSectionListsEveryCurveWithItsVerdictSpreadAndNotes) {
  const nlohmann::json check = {
      {"schema", "scalefit.check/1"},
      {"system", {{"name", "dgx-a100"}, {"file", "configs/systems/dgx-a100.yaml"}}},
      {"thresholds", {{"low_pct", 90}, {"fail_pct", 75}, {"noisy_pct", 10}}},
      {"curves",
       {{{"op", "allreduce"},
         {"method", ""},
         {"group", {{"kind", "world"}, {"nranks", 8}, {"nnodes", 1}, {"ranks_per_node", 8}}},
         {"dtype", "float"},
         {"peak_busbw_gbps", 141.16},
         {"peak_bytes", 8589934592.0},
         {"link", {{"link", "intra"}, {"algorithm", "ring"}, {"expected_busbw_gbps", 236.0},
                   {"pct_of_expected", 59.8}}},
         {"reference", nullptr},
         {"repeat", {{"max_spread_pct", 23.4}, {"noisy", true}}},
         {"verdict", "failing"}}}},
      {"notes", {"allreduce <world>: a note"}}};
  const std::string html = check_html(check);
  EXPECT_NE(html.find("<h2>Check</h2>"), std::string::npos);
  EXPECT_NE(html.find("system dgx-a100 (configs/systems/dgx-a100.yaml)"), std::string::npos)
      << html;
  for (const char *cell : {"<td>allreduce</td>", "<td>world n=8 (1x8)</td>", "141.16", "8 GiB",
                           "intra ring", "236.0", "59.8", "23.4 noisy", "<td>failing</td>",
                           "allreduce &lt;world&gt;: a note"})
    EXPECT_NE(html.find(cell), std::string::npos) << cell << "\n" << html;
  EXPECT_EQ(check_html(nullptr), "");
  Inputs in = load_inputs({kLocal}, {}, {});
  EXPECT_NE(index_html(in, {}, "t", check).find("<h2>Check</h2>"), std::string::npos);
  EXPECT_EQ(index_html(in, {}, "t").find("<h2>Check</h2>"), std::string::npos);
}

} // namespace
// A 4-node pairs run with node 2 slowed (tests/data/report/README.md): one plot per op with a
// matrix per size, every node pair in it once (symmetric); at 64 KiB, where the run itself named
// node 2, its row and column are below the median and every other pair above.
TEST(ReportPairs, PairMatrixShowsTheSlowNodesRowAndColumn) {
  const Inputs in =
      load_inputs({std::string(SCALEFIT_TEST_DATA_DIR) + "/report/pairs_4node_slow-node2.jsonl"},
                  {}, {});
  const std::vector<Plot> plots = pair_plots(in);
  ASSERT_EQ(plots.size(), 2u); // allreduce and sendrecv
  for (const Plot &p : plots) {
    EXPECT_EQ(p.kind, "pairs");
    const auto players = p.data["players"].get<std::vector<std::string>>();
    ASSERT_EQ(players, (std::vector<std::string>{"n0.g0", "n1.g0", "n2.g0", "n3.g0"}));
    ASSERT_EQ(p.data["sizes"].size(), 3u); // 64 KiB, 256 KiB, 1 MiB
    for (const auto &panel : p.data["sizes"]) {
      const auto &m = panel["busbw_gbps"];
      const double median = panel["median_gbps"];
      int cells = 0;
      for (std::size_t r = 0; r < 4; ++r)
        for (std::size_t c = 0; c < 4; ++c) {
          if (r == c) {
            EXPECT_TRUE(m[r][c].is_null());
            continue;
          }
          ASSERT_FALSE(m[r][c].is_null()) << p.name << " " << r << "," << c;
          EXPECT_DOUBLE_EQ(m[r][c].get<double>(), m[c][r].get<double>());
          ++cells;
          if (panel["bytes"] != 65536)
            continue;
          if (r == 2 || c == 2)
            EXPECT_LT(m[r][c].get<double>(), median) << p.name << " " << r << "," << c;
          else
            EXPECT_GT(m[r][c].get<double>(), median) << p.name << " " << r << "," << c;
        }
      EXPECT_EQ(cells, 12); // 6 pairs, both halves
    }
  }
  int in_all = 0; // build_plots includes them
  for (const Plot &p : build_plots(in))
    in_all += p.kind == "pairs";
  EXPECT_EQ(in_all, 2);
}

} // namespace scalefit::report

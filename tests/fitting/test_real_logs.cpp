// The 14 shared nccl-tests logs (tests/data/nccl-tests): fit quality bounds of issue #3 and the
// H100 2-node -> 4-node scaling efficiency.
#include "scalefit/fitting/fit_file.hpp"

#include <gtest/gtest.h>

#ifdef SCALEFIT_HAVE_INGEST
#include "scalefit/ingest/ingest.hpp"

#include <cstdio>

using namespace scalefit;
using namespace scalefit::fitting;

namespace {

const char *kLogs[] = {
    "a100-sxm4-40gb_8gpu_nvswitch_singlenode_allgather",
    "a100-sxm4-40gb_8gpu_nvswitch_singlenode_allreduce",
    "a100-sxm4-40gb_8gpu_nvswitch_singlenode_alltoall",
    "a100-sxm4-40gb_8gpu_nvswitch_singlenode_broadcast",
    "a100-sxm4-40gb_8gpu_nvswitch_singlenode_reduce",
    "a100-sxm4-40gb_8gpu_nvswitch_singlenode_reducescatter",
    "h100-hgx-xe9680_ib-8x400G_2node_16gpu_allreduce",
    "h100-hgx-xe9680_ib-8x400G_4node_32gpu_allreduce",
    "rtx2080ti_2gpu_pcie_noP2P_allgather",
    "rtx2080ti_2gpu_pcie_noP2P_allreduce",
    "rtx2080ti_2gpu_pcie_noP2P_alltoall",
    "rtx2080ti_2gpu_pcie_noP2P_broadcast",
    "rtx2080ti_2gpu_pcie_noP2P_reduce",
    "rtx2080ti_2gpu_pcie_noP2P_reduce_1gpu_edgecase",
};

ingest::IngestResult read_log(const std::string &name) {
  ingest::IngestOptions opt;
  // The H100 logs omit their '# Rank' lines; the node count is in the source's description.
  if (name.find("_2node_") != std::string::npos)
    opt.nnodes = 2;
  if (name.find("_4node_") != std::string::npos)
    opt.nnodes = 4;
  if (name.rfind("h100", 0) == 0)
    opt.system = "h100-hgx-xe9680";
  return ingest::read_nccl_tests(
      std::string(SCALEFIT_TEST_DATA_DIR) + "/nccl-tests/" + name + ".txt", opt);
}

std::vector<CurvePoint> curve(const ingest::IngestResult &r, Placement p) {
  std::vector<CurvePoint> pts;
  for (const MeasurementRecord &m : r.measurements)
    if (m.placement == p)
      pts.push_back({static_cast<double>(m.bytes), m.time_us});
  return pts;
}

} // namespace

TEST(RealLogs, FourteenLogsMeetTheQualityBounds) {
  double sum_mape = 0, sum_loo = 0, worst = 0;
  std::printf("%-52s %6s %-22s %6s %6s %7s | %-22s %6s %6s\n", "log (out-of-place)", "points",
              "model", "MAPE%", "LOO%", "maxAPE%", "in-place", "MAPE%", "LOO%");
  for (const char *name : kLogs) {
    const ingest::IngestResult r = read_log(name);
    const CurveFit out = fit_curve(curve(r, Placement::out_of_place));
    const CurveFit in = fit_curve(curve(r, Placement::in_place));
    ASSERT_TRUE(out.ok) << name << ": " << out.diagnostic;
    ASSERT_TRUE(in.ok) << name << ": " << in.diagnostic;
    const std::string model = model_label(out.model);
    const std::string imodel = model_label(in.model);
    std::printf("%-52s %6zu %-22s %6.2f %6.2f %7.2f | %-22s %6.2f %6.2f\n", name, out.kept.size(),
                model.c_str(), out.quality.mape_pct, out.quality.loo_mape_pct,
                out.quality.max_ape_pct, imodel.c_str(), in.quality.mape_pct,
                in.quality.loo_mape_pct);
    sum_mape += out.quality.mape_pct;
    sum_loo += out.quality.loo_mape_pct;
    worst = std::max(worst, out.quality.mape_pct);
    EXPECT_LE(out.quality.mape_pct, 8.0) << name;
  }
  const double n = std::size(kLogs);
  std::printf("mean MAPE %.2f%%  mean LOO MAPE %.2f%%  worst MAPE %.2f%%\n", sum_mape / n,
              sum_loo / n, worst);
  EXPECT_LE(sum_mape / n, 3.0);
  EXPECT_LE(sum_loo / n, 5.0);
}

TEST(RealLogs, H100ScalingSeriesFromTwoAndFourNodes) {
  std::vector<RecordSet> sets;
  std::vector<std::string> files;
  for (const char *name : {"h100-hgx-xe9680_ib-8x400G_2node_16gpu_allreduce",
                           "h100-hgx-xe9680_ib-8x400G_4node_32gpu_allreduce"}) {
    const ingest::IngestResult r = read_log(name);
    RecordSet rs;
    rs.contexts.push_back(r.context);
    rs.measurements = r.measurements;
    rs.context_of.assign(r.measurements.size(), 0);
    sets.push_back(rs);
    files.push_back(name);
  }
  const FitFile f = fit_records(sets, files);
  ASSERT_FALSE(f.scaling.empty());
  const ScalingSeries &s = f.scaling.front();
  EXPECT_EQ(s.nnodes, (std::vector<int>{2, 4}));
  ASSERT_EQ(s.efficiency.size(), 1u);
  std::printf("H100 allreduce eff(2->4 nodes): size-weighted %.3f;", s.efficiency[0].size_weighted);
  for (const auto &b : s.efficiency[0].bands)
    std::printf(" %s %.3f", b.band.name.c_str(), b.efficiency);
  std::printf("\n");
  // 4 nodes are slower than 2 at every band (measured: 25 vs 35 us latency, 469 vs 366 GB/s busbw).
  for (const auto &b : s.efficiency[0].bands)
    EXPECT_LT(b.efficiency, 1.0) << b.band.name;
  EXPECT_GT(s.efficiency[0].size_weighted, 0.5);
  // 8 nodes are priced through the trend, and are slower than 4.
  const auto p8 = predict(f, CommQuery{Op::allreduce, 64, 8, DType::float32}, 1 << 28);
  const auto p4 = predict(f, CommQuery{Op::allreduce, 32, 4, DType::float32}, 1 << 28);
  ASSERT_TRUE(p8 && p4);
  EXPECT_TRUE(p8->extrapolated);
  EXPECT_GT(p8->time_us, p4->time_us);
}

#else
TEST(RealLogs, SkippedWithoutIngest) {
  GTEST_SKIP() << "scalefit::ingest not built";
}
#endif

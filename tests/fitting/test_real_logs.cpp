// The 14 shared nccl-tests logs (tests/data/nccl-tests): fit quality bounds of issue #3 and the
// H100 2-node -> 4-node scaling efficiency.
#include "scalefit/fitting/fit_file.hpp"

#include <gtest/gtest.h>

#ifdef SCALEFIT_HAVE_INGEST
#include "scalefit/ingest/ingest.hpp"

#include <cmath>
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

/// The points of one curve: placement `p`, measured by `method` ("" : any; MeasurementRecord).
std::vector<CurvePoint> curve(const ingest::IngestResult &r, Placement p,
                              const std::string *method = nullptr) {
  std::vector<CurvePoint> pts;
  for (const MeasurementRecord &m : r.measurements)
    if (m.placement == p && (!method || m.method == *method))
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
    // as `scalefit fit` fits them: each placement screened by the other (paired_spikes), then
    // each one's model tried as a start for the other (adopt_sibling_model)
    const auto oop = curve(r, Placement::out_of_place), ip = curve(r, Placement::in_place);
    CurveFit out = fit_curve(oop, {}, paired_spikes(oop, ip, {}, "in-place"));
    CurveFit in = fit_curve(ip, {}, paired_spikes(ip, oop, {}, "out-of-place"));
    const CurveModel out_model = out.model, in_model = in.model;
    adopt_sibling_model(out, in_model, {}, "in-place");
    adopt_sibling_model(in, out_model, {}, "out-of-place");
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

// An alltoallv_perf log (constructed, tests/data/nccl-tests) fits like alltoall: one curve per
// placement, op alltoallv with the matrix as the method, kept through the fit file's YAML.
TEST(RealLogs, AlltoallvLogFitsAndRoundTripsThroughTheFitFile) {
  const ingest::IngestResult r = ingest::read_nccl_tests(
      std::string(SCALEFIT_TEST_DATA_DIR) + "/nccl-tests/synthetic_current_alltoallv_8gpu.txt");
  RecordSet rs;
  rs.contexts.push_back(r.context);
  rs.measurements = r.measurements;
  rs.context_of.assign(r.measurements.size(), 0);
  const FitFile f = fit_records({rs}, {"alltoallv.txt"});
  ASSERT_EQ(f.entries.size(), 2u) << (f.unfitted.empty() ? "" : f.unfitted.front().reason);
  for (const FitEntry &e : f.entries) {
    EXPECT_EQ(e.op, Op::alltoallv);
    EXPECT_EQ(e.method, "nccl-tests");
    EXPECT_NE(e.id.find("alltoallv:world:8"), std::string::npos) << e.id;
    EXPECT_EQ(e.points + static_cast<int>(e.excluded.size()), 6);
    EXPECT_LE(e.quality.mape_pct, 8.0) << e.id;
    EXPECT_DOUBLE_EQ(e.busbw_factor(), 7.0 / 8.0);
    bool extrapolated = false;
    const double t = entry_time_us(e, 16777168, extrapolated);
    EXPECT_NEAR(t, e.placement == Placement::out_of_place ? 360.2 : 361.0, 0.1 * 360.2);
    EXPECT_FALSE(extrapolated);
  }
  const FitFile back = parse_fit_file(to_yaml(f), "alltoallv.yaml");
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[0].op, Op::alltoallv);
  EXPECT_EQ(back.entries[0].method, "nccl-tests");
  EXPECT_EQ(back.entries[0].id, f.entries[0].id);
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


// Real logs collected from public issue threads, vendor and site docs (tests/data/real-logs/, first
// line = source): each is ingested with the right op, ranks and nodes, fitted and predicted back.
struct Collected {
  const char *file;
  bool osu;
  Op op;
  int nranks;
  int nnodes; ///< 0: not knowable from the log (the reader's default is not asserted)
  /// Whether the fit goals are asserted on it (false: printed only, the reason given where it is
  /// listed).
  bool fit_goal = true;
};

const Collected kCollected[] = {
    {"gb10_dgx-spark_2node_qsfp-switch_allgather_3rows.txt", false, Op::allgather, 2, 2},
    {"gb200_nvl72_72gpu_allreduce_partial-rank-list.txt", false, Op::allreduce, 72, 0},
    {"gh200_cscs-alps_2node_slingshot_allreduce.txt", false, Op::allreduce, 2, 2},
    {"h100_gcp-a3mega_2node_16gpu_allreduce.txt", false, Op::allreduce, 16, 2},
    {"h200_gcp-gib_2node_16gpu_allgather.txt", false, Op::allgather, 16, 2},
    {"h200_gke-rdma_2node_16gpu_allgather_ray-and-tag-output-prefix.txt", false, Op::allgather, 16,
     2},
    {"mi100_rccl-tests_pcie_2gpu_allreduce_p2p-off.txt", false, Op::allreduce, 2, 1},
    {"mi250x_rccl-tests_16rank_allreduce_pre2.13_error-column.txt", false, Op::allreduce, 16, 0},
    {"mi300x_rccl-tests_rccl-version-header_allreduce_excerpt.txt", false, Op::allreduce, 0, 0},
    {"rccl-tests_json-lines_4gpu_allreduce_excerpt.jsonl", false, Op::allreduce, 4, 0},
    {"t4_aws-eks-efa_2node_allreduce_tag-output_info.txt", false, Op::allreduce, 2, 2},
    {"v100_p3dn_efa_2node_16gpu_allreduce_pre2.13_3rows.txt", false, Op::allreduce, 16, 0},
    {"osu_alltoall_cuda_v7.5_cscs-clariden-cxi_8rank_2node.txt", true, Op::alltoall, 8, 2},
    {"osu_alltoall_v5.3_sdsc-comet-vc_24rank_indented_spike.txt", true, Op::alltoall, 24, 0},
    {"osu_alltoall_v7.5_cscs-alps-ompi-no-cxi_8rank_tcp_noisy.txt", true, Op::alltoall, 8, 2},
    {"osu_alltoall_v7.5_cscs-clariden-cxi_8rank_2node.txt", true, Op::alltoall, 8, 2},
    {"osu_alltoall_validation_v7.5_cscs-alps-ompi_8rank_indented_libnl-noise.txt", true,
     Op::alltoall, 8, 2},
    {"osu_bw_validation_v7.5_cscs-alps-ompi-no-cxi_2node.txt", true, Op::sendrecv, 2, 2},
    {"osu_latency_cuda_v7.5_cscs-clariden-cxi_2node.txt", true, Op::sendrecv, 2, 2},
    {"osu_latency_v5.0_cray-aries_srun_2node.txt", true, Op::sendrecv, 2, 2},
    {"osu_reduce_cuda_v7.3_192ranks_efa_excerpt.txt", true, Op::reduce, 192, 0},
    // Collected 2026-11-23 (kinds: op told by the in-place #wrong column, a launcher line
    // continued with '\\', Open MPI's -N per node, -H slots, salloc/JOB MAP lines, OMB 2.0 titles,
    // two OSU tests in one file).
    {"a40_nccl-tests_2node_issue214_excerpt-5rows.txt", false, Op::sendrecv, 2, 2},
    // 5 points whose bandwidth rises, then falls (0.61, 0.62, 1.24, 0.76, 0.72 GB/s): nothing the
    // 5 points determine fits it within 10% (alpha-beta 19.5%), and no point is 2x off its
    // neighbours to call an outlier. Ingest is asserted; the fit is printed, not asserted.
    {"mi250x_rccl-tests_4node_32rank_srun-label-backslash_allgather_excerpt.txt", false,
     Op::allgather, 32, 4, false},
    {"osu_allreduce_v7.5_oci_144rank_mpirun-N36_spikes.txt", true, Op::allreduce, 144, 4},
    {"osu_bcast_v7.3_orfeo_256rank_H-slots.txt", true, Op::broadcast, 256, 2},
    {"osu_bcast_v7.3_orfeo_salloc-n128.txt", true, Op::broadcast, 128, 0},
    {"osu_bw_v2.0_qlogic_version-title.txt", true, Op::sendrecv, 2, 2},
    {"osu_latency_cuda_v4.4.1_ompi-users-html_job-map.txt", true, Op::sendrecv, 2, 2},
    {"osu_latency_cuda_v5.7_piz-daint_salloc-N2.txt", true, Op::sendrecv, 2, 2},
    {"osu_bibw+latency_v7.1_eessi_two-tables.txt", true, Op::sendrecv, 2, 0},
    {"h100_nccl-tests_issue294_2node_rows-only.txt", false, Op::allreduce, 16, 2},
    {"radeon-r9700_rccl-tests_2node_allreduce_dmabuf.txt", false, Op::allreduce, 2, 2},
    // The in-place curve falls from 22.9 to 13.1 us between 512 B and 1 KiB, and no drop/lift
    // start of its own finds it (alpha-beta 16%); the out-of-place twin's model (1.2%), tried as
    // a start, does: 1.4%.
    {"mi300x_rccl-tests_rocm-blog_8rank_17G-row.txt", false, Op::allreduce, 8, 1},
    // NUM_NODES=2 is in the job spec, not the log. Out of place, 8 KiB and 32 KiB run 1.38x
    // slower than the sizes around them while in place they do not: alone, those two made BIC keep
    // logistic at 11.6%; the paired-placement screen leaves them out as transient (1.35%).
    {"gb300_nccl-tests_gke-jobset_allgather_elided-ranks.txt", false, Op::allgather, 8, 0},
    // Collected 2026-11-28 (the paste kinds of issue 19 on real logs: HTML mail archives, srun -N
    // without -n over backslash lines, commands in their own block, untitled tables, OMB 3.x
    // Bi-Bandwidth headers, pre-2.13 blank redop columns, tables without their banner).
    {"osu_alltoall_v4.2_ompi-users-html_4rank_mpirun-np4_p-br.txt", true, Op::alltoall, 4, 0},
    {"osu_latency_v3.3_ompi-users-html_p-br-every-line_segfault.txt", true, Op::sendrecv, 2, 0},
    {"osu_latency+bw+bibw_v3.3_ompi-users-html_mixed-ib_never-gets-past.txt", true, Op::sendrecv, 2,
     0},
    {"osu_bibw_cuda-build_ompi-users-html_srun-ntasks2-wrapped_2runs.txt", true, Op::sendrecv, 2,
     1},
    {"osu_alltoall_v5.3.2_sarus-piz-daint_srun-N2-backslash.txt", true, Op::alltoall, 2, 2},
    {"osu_latency_v5.3.2_sarus-piz-daint_srun-N2-backslash.txt", true, Op::sendrecv, 2, 2},
    {"osu_bibw+latency_cuda_v7.5_eessi-olivia-gh200_srun-N2-ntasks-per-node1.txt", true,
     Op::sendrecv, 2, 2},
    {"osu_bw+latency_uibk-lcc2_no-titles_code-fences_todo-table.txt", true, Op::sendrecv, 2, 0},
    {"v100_nccl-tests_issue78_8node_alltoall_blank-redop_table-only.txt", false, Op::alltoall, 64,
     0},
    {"a100_superbench_8gpu_alltoall_pre2.13_blank-redop.txt", false, Op::alltoall, 8, 1},
    {"h100_gke-a3high_cluster-toolkit_2node_allgather_table-only_indented.txt", false,
     Op::allgather, 16, 0},
    {"h100_gcp-a3high_dstack_2node_allgather_hash-stripped.txt", false, Op::allgather, 16, 0},
    // A vendor page's Markdown tables under mpirun_rsh commands in code fences (osu_bw read).
    {"osu_latency+bw_v5.4.3_azure-hc-docs_mpirun_rsh-hostfile_markdown-tables.md", true,
     Op::sendrecv, 2, 0},
};

TEST(RealLogs, CollectedLogsIngestFitAndPredictWithinTheGoals) {
  double sum = 0;
  int fits = 0;
  double worst = 0;
  std::printf("%-72s %-10s %5s %5s %-9s %6s %6s %4s %7s\n", "collected log", "op", "ranks", "nodes",
              "placement", "points", "MAPE%", "outl", "MAPE+o%");
  for (const Collected &c : kCollected) {
    const std::string path = std::string(SCALEFIT_TEST_DATA_DIR) + "/real-logs/" + c.file;
    const ingest::IngestResult r = c.osu ? ingest::read_osu(path) : ingest::read_nccl_tests(path);
    ASSERT_FALSE(r.measurements.empty()) << c.file;
    EXPECT_EQ(r.measurements.front().op, c.op) << c.file;
    if (c.nranks > 0)
      EXPECT_EQ(r.context.nranks, c.nranks) << c.file;
    if (c.nnodes > 0)
      EXPECT_EQ(r.context.nnodes, c.nnodes) << c.file;
    std::vector<std::string> methods; // one curve per measuring method (osu_bw, osu_latency, ...)
    for (const MeasurementRecord &m : r.measurements)
      if (std::find(methods.begin(), methods.end(), m.method) == methods.end())
        methods.push_back(m.method);
    for (const std::string &method : methods)
    for (Placement p : {Placement::out_of_place, Placement::in_place}) {
      const std::vector<CurvePoint> pts = curve(r, p, &method);
      if (pts.empty())
        continue;
      // as `scalefit fit` does: the other placement of the same run tells transient sizes, and
      // its model is one more start
      const Placement q = p == Placement::in_place ? Placement::out_of_place : Placement::in_place;
      const std::vector<CurvePoint> twin = curve(r, q, &method);
      const std::string qn(placement_name(q));
      CurveFit f = fit_curve(pts, FitOptions{}, paired_spikes(pts, twin, FitOptions{}, qn));
      if (!twin.empty())
        if (const CurveFit t =
                fit_curve(twin, FitOptions{},
                          paired_spikes(twin, pts, FitOptions{}, std::string(placement_name(p))));
            t.ok)
          adopt_sibling_model(f, t.model, FitOptions{}, qn);
      ASSERT_TRUE(f.ok) << c.file << ": " << f.diagnostic;
      // Predicted back at every measured size, outliers included in MAPE+o.
      for (const CurvePoint &pt : pts)
        EXPECT_TRUE(std::isfinite(f.model.time_us(pt.bytes)) && f.model.time_us(pt.bytes) > 0);
      std::printf("%-72s %-10s %5d %5d %-9s %6zu %6.2f %4d %7.2f\n", c.file,
                  method.empty() ? std::string(op_name(c.op)).c_str() : method.c_str(),
                  r.context.nranks, r.context.nnodes,
                  p == Placement::out_of_place ? "oop" : "ip", f.kept.size(), f.quality.mape_pct,
                  f.quality.outliers, f.quality.mape_all_pct);
      EXPECT_GE(f.quality.mape_all_pct, f.quality.outliers > 0 ? f.quality.mape_pct : 0.0);
      if (!c.fit_goal)
        continue;
      // Issue #10's goal: "no log above 10% except where the fit file flags its points as
      // outliers" (listed in `excluded`; MAPE+o is the error with them).
      EXPECT_TRUE(f.quality.mape_pct <= 10.0 || f.quality.outliers > 0)
          << c.file << ": " << f.quality.mape_pct << "% with no outlier flagged";
      sum += f.quality.mape_pct;
      worst = std::max(worst, f.quality.mape_pct);
      ++fits;
    }
  }
  std::printf("collected: %zu logs, %d curves under the goals, mean MAPE %.2f%%, worst %.2f%%\n",
              std::size(kCollected), fits, sum / fits, worst);
  EXPECT_GE(std::size(kCollected), 20u);
  EXPECT_LE(sum / fits, 3.0);
}

// The MI300X in-place curve (ROCm blog) falls from 22.9 to 13.1 us between 512 B and 1 KiB; its
// own starts miss that (alpha-beta, 16%), its out-of-place twin of the same run finds it: that
// model, tried as a start, is adopted (BIC lower by more than the margin). A start no better
// than the fit's own choice (its own alpha-beta) changes nothing.
TEST(RealLogs, TheOtherPlacementsModelIsAStartTheFitMayAdopt) {
  const std::string path = std::string(SCALEFIT_TEST_DATA_DIR) +
                           "/real-logs/mi300x_rccl-tests_rocm-blog_8rank_17G-row.txt";
  const ingest::IngestResult r = ingest::read_nccl_tests(path);
  const auto oop = curve(r, Placement::out_of_place), ip = curve(r, Placement::in_place);
  const CurveFit twin = fit_curve(oop, {}, paired_spikes(oop, ip, {}, "in-place"));
  ASSERT_TRUE(twin.ok);
  EXPECT_LT(twin.quality.mape_pct, 2.0);
  CurveFit f = fit_curve(ip, {}, paired_spikes(ip, oop, {}, "out-of-place"));
  ASSERT_TRUE(f.ok);
  EXPECT_GT(f.quality.mape_pct, 10.0); // its own starts miss the fall
  const CurveFit before = f;
  EXPECT_FALSE(adopt_sibling_model(f, before.model, {}, "itself"));
  EXPECT_EQ(f.selection, before.selection);
  ASSERT_TRUE(adopt_sibling_model(f, twin.model, {}, "out-of-place"));
  EXPECT_LT(f.quality.mape_pct, 2.0);
  EXPECT_LT(f.quality.loo_mape_pct, 4.0);
  EXPECT_EQ(model_label(f.model), model_label(twin.model));
  EXPECT_EQ(f.selection.rfind("from out-of-place's model", 0), 0u) << f.selection;
  EXPECT_EQ(f.quality.outliers, before.quality.outliers); // the screens' verdicts stand
  FitOptions no_falls;
  no_falls.max_drops = 0; // a structure the options forbid is not adopted
  CurveFit g = fit_curve(ip, no_falls);
  EXPECT_FALSE(adopt_sibling_model(g, twin.model, no_falls, "out-of-place"));
}

#else
TEST(RealLogs, SkippedWithoutIngest) {
  GTEST_SKIP() << "scalefit::ingest not built";
}
#endif

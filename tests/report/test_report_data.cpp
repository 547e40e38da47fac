// The data behind every report plot: what the C++ side computes and hands to plot.py.
#include "scalefit/core/error.hpp"
#include "scalefit/estimator/report.hpp"
#include "scalefit/fitting/fit_file.hpp"
#include "scalefit/ingest/ingest.hpp"
#include "scalefit/report/report.hpp"

#include "../support/subprocess.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

namespace scalefit::report {
namespace {

const std::string kData = SCALEFIT_TEST_DATA_DIR;
const std::string kConfigs = SCALEFIT_CONFIG_DIR;
const std::string kLocal = kData + "/fitting/local_mpi_3curves.jsonl";
const std::string kKernels = kData + "/report/kernels_gpt-1.3b_bf16.jsonl";

/// Inputs with the local MPI fixture and its fit (fitted here, as `scalefit fit` does).
Inputs local_inputs() {
  Inputs in = load_inputs({kLocal}, {}, {});
  auto fit = std::make_shared<fitting::FitFile>(fitting::fit_records(in.comm, in.comm_files));
  fit->path = "local.yaml";
  in.fits.push_back(fit);
  return in;
}

TEST(ReportSizes, Log2Labels) {
  EXPECT_EQ(size_label(8), "8 B");
  EXPECT_EQ(size_label(4096), "4 KiB");
  EXPECT_EQ(size_label(64.0 * 1024 * 1024), "64 MiB");
  EXPECT_EQ(size_label(1024.0 * 1024 * 1024), "1 GiB");
  EXPECT_EQ(size_label(1536), "1.5 KiB");
}

TEST(ReportBandwidth, PointsFitAndResidualsMatchTheRecordsAndTheModel) {
  const Inputs in = local_inputs();
  const std::vector<Plot> plots = bandwidth_plots(in);
  ASSERT_EQ(plots.size(), 3u); // allreduce, reduce, sendrecv
  std::size_t points = 0;
  for (const Plot &p : plots) {
    EXPECT_EQ(p.kind, "bandwidth");
    EXPECT_EQ(p.name.rfind("bw-local-", 0), 0u) << p.name;
    for (const auto &panel : p.data["panels"])
      for (const auto &s : panel["series"]) {
        const auto bytes = s["bytes"].get<std::vector<double>>();
        const auto t = s["time_us"].get<std::vector<double>>();
        const auto busbw = s["busbw_gbps"].get<std::vector<double>>();
        points += bytes.size();
        ASSERT_FALSE(s["fit"].is_null()) << s["label"];
        const fitting::FitEntry *e = in.fits[0]->find(s["fit"]["entry"].get<std::string>());
        ASSERT_NE(e, nullptr);
        // Legend names system, op, group shape, dtype and placement.
        const std::string label = s["label"];
        for (const std::string part : {std::string("local"), std::string(op_name(e->op)),
                                       e->group.label(), std::string(dtype_name(e->dtype)),
                                       std::string(placement_name(e->placement))})
          EXPECT_NE(label.find(part), std::string::npos) << label << " lacks " << part;
        // Fitted curve: inside the fitted range, busbw = algbw x nccl-tests factor, t = model.
        const auto gb = s["fit"]["bytes"].get<std::vector<double>>();
        const auto ga = s["fit"]["algbw_gbps"].get<std::vector<double>>();
        const auto gu = s["fit"]["busbw_gbps"].get<std::vector<double>>();
        ASSERT_GE(gb.size(), 8u);
        EXPECT_DOUBLE_EQ(gb.front(), e->min_bytes);
        EXPECT_NEAR(gb.back(), e->max_bytes, 1e-9 * e->max_bytes);
        for (std::size_t i = 0; i < gb.size(); ++i) {
          EXPECT_NEAR(ga[i], gb[i] / e->model.time_us(gb[i]) * 1e-3, 1e-12 * ga[i]);
          EXPECT_NEAR(gu[i], ga[i] * e->busbw_factor(), 1e-12 * gu[i]);
        }
        // Residuals: 100 (t_meas / t_fit - 1) per measured point.
        const auto res = s["fit"]["residual_pct"].get<std::vector<double>>();
        ASSERT_EQ(res.size(), bytes.size());
        for (std::size_t i = 0; i < bytes.size(); ++i)
          EXPECT_NEAR(res[i], 100 * (t[i] / e->model.time_us(bytes[i]) - 1), 1e-9);
        // Every point the fitter excluded is flagged, and only those.
        const auto ex = s["excluded"].get<std::vector<bool>>();
        EXPECT_EQ(static_cast<std::size_t>(std::count(ex.begin(), ex.end(), true)),
                  e->excluded.size());
        // Regime centres lie inside the fitted range.
        for (const auto &m : s["fit"]["regimes"]) {
          EXPECT_GE(m["bytes"].get<double>(), e->min_bytes);
          EXPECT_LE(m["bytes"].get<double>(), e->max_bytes);
        }
        EXPECT_GT(*std::max_element(busbw.begin(), busbw.end()), 0);
      }
  }
  EXPECT_EQ(points, in.comm[0].measurements.size());
}

TEST(ReportBandwidth, FitOnlyEntriesStillDrawTheirCurve) {
  Inputs in = local_inputs();
  in.comm.clear();
  in.comm_files.clear();
  const std::vector<Plot> plots = bandwidth_plots(in);
  ASSERT_EQ(plots.size(), 3u);
  for (const Plot &p : plots)
    for (const auto &panel : p.data["panels"])
      for (const auto &s : panel["series"]) {
        EXPECT_TRUE(s["bytes"].empty());
        EXPECT_FALSE(s["fit"]["bytes"].empty());
      }
}

TEST(ReportLatency, SmallMessagesOnlyOneSeriesPerOp) {
  const std::vector<Plot> plots = latency_plots(local_inputs());
  ASSERT_EQ(plots.size(), 1u);
  int series = 0;
  for (const auto &panel : plots[0].data["panels"])
    for (const auto &s : panel["series"]) {
      ++series;
      for (double b : s["bytes"].get<std::vector<double>>())
        EXPECT_LE(b, 64 * 1024);
      EXPECT_FALSE(s["time_us"].empty());
    }
  EXPECT_EQ(series, 3);
}

TEST(ReportScaling, MeasuredEfficiencyAndTrendAgreeAndExtrapolationIsMarked) {
  // The H100 logs at 2 and 4 nodes, 8 ranks per node: one scaling series.
  std::vector<RecordSet> sets;
  std::vector<std::string> files;
  // The logs name no hosts: the node counts come from their titles, as a user passes --nnodes.
  for (const auto &[n, nodes] :
       {std::pair("h100-hgx-xe9680_ib-8x400G_2node_16gpu_allreduce.txt", 2),
        std::pair("h100-hgx-xe9680_ib-8x400G_4node_32gpu_allreduce.txt", 4)}) {
    const std::string f = kData + "/nccl-tests/" + n;
    ingest::IngestOptions o;
    o.system = "h100-hgx";
    o.nnodes = nodes;
    ingest::IngestResult r = ingest::read_nccl_tests(f, o);
    RecordSet rs;
    rs.contexts.push_back(r.context);
    for (auto &m : r.measurements) {
      rs.measurements.push_back(m);
      rs.context_of.push_back(0);
      rs.origin.push_back(f);
    }
    sets.push_back(rs);
    files.push_back(f);
  }
  Inputs in;
  auto fit = std::make_shared<fitting::FitFile>(fitting::fit_records(sets, files));
  ASSERT_FALSE(fit->scaling.empty());
  in.fits.push_back(fit);
  const std::vector<Plot> plots = scaling_plots(in);
  ASSERT_EQ(plots.size(), 1u);
  bool checked = false;
  for (const auto &s : plots[0].data["series"]) {
    const auto &measured = s["measured"];
    ASSERT_GE(measured.size(), 2u);
    EXPECT_EQ(measured[0]["nnodes"], 2);
    EXPECT_DOUBLE_EQ(measured[0]["size_weighted"].get<double>(), 1.0);
    const double eff4 = measured[1]["size_weighted"];
    for (const auto &t : s["trend"]) {
      const int n = t["nnodes"];
      EXPECT_EQ(t["extrapolated"].get<bool>(), n > 4) << n;
      EXPECT_GT(t["size_weighted"].get<double>(), 0);
      if (n == 2)
        EXPECT_NEAR(t["size_weighted"].get<double>(), 1.0, 1e-9);
      if (n == 4) { // the trend passes through the measured node count
        EXPECT_NEAR(t["size_weighted"].get<double>(), eff4, 0.02 * eff4);
        checked = true;
      }
    }
    EXPECT_EQ(s["trend"].back()["nnodes"], 16); // 4 x the largest measured count
  }
  EXPECT_TRUE(checked);

  // A fit file read back from disk (the loader keeps entries and trends, not the efficiencies):
  // the report recomputes the same measured eff(2->4).
  test::TempDir dir("scalefit_report_");
  const std::string path = (dir.path / "h100.yaml").string();
  fitting::write_fit_file(*fit, path);
  Inputs loaded;
  loaded.fits.push_back(fitting::load_fit_file(path));
  const std::vector<Plot> again = scaling_plots(loaded);
  ASSERT_EQ(again.size(), 1u);
  ASSERT_EQ(again[0].data["series"].size(), plots[0].data["series"].size());
  for (std::size_t i = 0; i < again[0].data["series"].size(); ++i)
    EXPECT_NEAR(again[0].data["series"][i]["measured"][1]["size_weighted"].get<double>(),
                plots[0].data["series"][i]["measured"][1]["size_weighted"].get<double>(), 1e-6);
}

TEST(ReportKernels, GemmPointsAndAttentionKernels) {
  const Inputs in = load_inputs({kKernels}, {}, {});
  const std::vector<Plot> plots = kernel_plots(in);
  ASSERT_EQ(plots.size(), 2u);
  EXPECT_EQ(plots[0].kind, "kernels");
  const auto &pts = plots[0].data["sets"][0]["points"];
  std::size_t softmax = 0;
  for (const auto &k : in.kernels[0].kernels)
    softmax += k["kind"] == "softmax";
  EXPECT_EQ(pts.size(), in.kernels[0].kernels.size() - softmax);
  for (const auto &p : pts) {
    EXPECT_NE(p["kind"], "softmax");
    // TFLOP/s as recorded = FLOPs / time.
    EXPECT_NEAR(p["tflops"].get<double>(),
                p["flops"].get<double>() / (p["time_us"].get<double>() * 1e-6) / 1e12,
                1e-6 * p["tflops"].get<double>());
  }
  EXPECT_NE(plots[0].data["sets"][0]["label"].get<std::string>().find("H100"), std::string::npos);
  EXPECT_EQ(plots[1].kind, "attention");
  for (const auto &k : plots[1].data["sets"][0]["kernels"]) {
    const std::string n = k["name"];
    EXPECT_TRUE(n.rfind("attn_score", 0) == 0 || n.rfind("attn_context", 0) == 0 ||
                n.rfind("softmax", 0) == 0)
        << n;
  }
}

/// Writes `j` into dir/name and returns the path.
std::string write_json(const test::TempDir &dir, const std::string &name, const nlohmann::json &j) {
  const std::string p = (dir.path / name).string();
  std::ofstream(p) << j.dump(2);
  return p;
}

TEST(ReportEstimates, StackedSplitsAddUpToTheIterationAndMemoryToTheTotal) {
  namespace est = scalefit::estimator;
  est::ModelConfig m = est::load_model(kConfigs + "/models/gpt-13b.yaml");
  est::Estimator e(m, est::load_system(kConfigs + "/systems/dgx-a100.yaml"));
  est::Strategy s;
  s.dp = 8;
  s.tp = 4;
  s.pp = 2;
  s.zero = 1;
  s.global_batch = m.global_batch;
  est::Estimate r;
  e.evaluate(s, r);
  est::SearchSpace space;
  space.gpus = 64;
  space.global_batch = m.global_batch;
  const est::SearchResult sr = est::search(e, space, 5);
  const est::Comparison c = est::compare(e, e, std::nullopt, space);

  test::TempDir dir("scalefit_report_");
  const Inputs in = load_inputs({}, {},
                                {write_json(dir, "e.json", est::estimate_json(e, s, r)),
                                 write_json(dir, "s.json", est::search_json(e, sr)),
                                 write_json(dir, "c.json", est::comparison_json(e, e, c))});
  const std::vector<Plot> plots = estimate_plots(in);
  ASSERT_EQ(plots.size(), 4u);
  EXPECT_EQ(plots[0].kind, "search");
  EXPECT_EQ(plots[0].data["layouts"].size(), sr.top.size());
  EXPECT_EQ(plots[1].kind, "compare");
  EXPECT_EQ(plots[2].kind, "estimate_time");
  EXPECT_EQ(plots[3].kind, "estimate_memory");
  auto check = [](const nlohmann::json &l) {
    const double sum = l["compute_s"].get<double>() + l["exposed_comm_s"].get<double>() +
                       l["bubble_s"].get<double>();
    EXPECT_NEAR(sum, l["iteration_s"].get<double>(), 1e-9 * sum) << l["layout"];
    double mem = 0;
    for (const auto &[k, v] : l["memory_gib"].items())
      mem += v.get<double>();
    EXPECT_NEAR(mem, l["total_gib"].get<double>(), 1e-6 * mem) << l["layout"];
    EXPECT_GT(l["device_gib"].get<double>(), 0);
  };
  const auto &one = plots[2].data["layouts"][0];
  check(one);
  EXPECT_DOUBLE_EQ(one["compute_s"].get<double>(), r.time_s.compute);
  EXPECT_EQ(one["layout"], "dp=8 tp=4 pp=2 zero=1 b=1");
  for (const auto &l : plots[0].data["layouts"])
    check(l);
  check(plots[1].data["a"]);
  check(plots[1].data["b"]);
}

// `scalefit validate --json` -> the parity plot: per source its runs and its out-of-sample
// errors as validate summarizes them (calibration runs drawn, not counted; memory-only runs
// without a time; not-expressible runs left out).
TEST(ReportEstimates, ValidateJsonBecomesOneParityPlotPerDocument) {
  test::TempDir dir("scalefit_report_");
  const nlohmann::json runs = nlohmann::json::parse(R"([
    {"id": "a1", "source": "a.jsonl", "published_s": 10.0, "estimated_s": 11.0, "calibration": false},
    {"id": "a2", "source": "a.jsonl", "published_s": 4.0, "estimated_s": 3.0, "calibration": false},
    {"id": "a3", "source": "a.jsonl", "published_s": 2.0, "estimated_s": 2.0, "calibration": true},
    {"id": "m1", "source": "m.jsonl", "published_s": 1.0, "estimated_s": 5.9, "no_time": true,
     "published_gib": 40.0, "estimated_gib": 42.0, "calibration": false},
    {"id": "x", "source": "a.jsonl", "published_s": 3.0, "skipped": "no system file"}])");
  const Inputs in = load_inputs({}, {}, {write_json(dir, "v.json", runs)});
  ASSERT_EQ(in.estimates.size(), 1u);
  EXPECT_EQ(in.estimates[0].kind, "validate");
  const std::vector<Plot> plots = estimate_plots(in);
  ASSERT_EQ(plots.size(), 1u);
  EXPECT_EQ(plots[0].kind, "validation");
  const nlohmann::json &src = plots[0].data["sources"];
  ASSERT_EQ(src.size(), 2u);
  EXPECT_EQ(src[0]["source"], "a.jsonl");
  EXPECT_EQ(src[0]["runs"].size(), 3u); // the skipped run is not drawn
  EXPECT_EQ(src[0]["out_of_sample"], 2);
  EXPECT_NEAR(src[0]["mean_time_pct"].get<double>(), (10.0 + 25.0) / 2, 1e-9);
  EXPECT_NEAR(src[0]["max_time_pct"].get<double>(), 25.0, 1e-9);
  EXPECT_EQ(src[1]["out_of_sample"], 0); // memory only: no time drawn or counted
  EXPECT_FALSE(src[1]["runs"][0].contains("published_s"));
  EXPECT_EQ(src[1]["memory_runs"], 1);
  EXPECT_NEAR(src[1]["max_memory_pct"].get<double>(), 5.0, 1e-9);
  EXPECT_NE(plots[0].caption.find("1 run(s) not expressible"), std::string::npos);

  // A bad run names its index and field.
  nlohmann::json bad = runs;
  bad[1]["estimated_s"] = -3.0;
  try {
    (void)estimate_plots(load_inputs({}, {}, {write_json(dir, "b.json", bad)}));
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "[1].estimated_s");
  }
  bad = runs;
  bad[0]["published_s"] = 0.0;
  EXPECT_THROW((void)estimate_plots(load_inputs({}, {}, {write_json(dir, "z.json", bad)})),
               InputError);
  bad = nlohmann::json::array({1, 2});
  EXPECT_THROW((void)estimate_plots(load_inputs({}, {}, {write_json(dir, "n.json", bad)})),
               InputError);
}

TEST(ReportInputs, BadInputNamesFileLineAndField) {
  test::TempDir dir("scalefit_report_");
  const std::string bad_schema = (dir.path / "x.jsonl").string();
  std::ofstream(bad_schema) << R"({"type":"context","schema":"other/1"})" << "\n";
  try {
    (void)load_inputs({bad_schema}, {}, {});
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.file(), bad_schema);
    EXPECT_EQ(e.field(), "schema");
  }
  const std::string bad_kernel = (dir.path / "k.jsonl").string();
  std::ofstream(bad_kernel) << R"({"type":"context","schema":"scalefit.kernels/1"})" << "\n"
                            << R"({"type":"kernel","name":"q","m":1,"n":1,"k":1,"batch":1,)"
                            << R"("flops":2,"time_us":"fast","tflops":1})" << "\n";
  try {
    (void)load_inputs({bad_kernel}, {}, {});
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.field(), "time_us");
  }
  const std::string not_estimate = write_json(dir, "n.json", {{"hello", 1}});
  EXPECT_THROW((void)load_inputs({}, {}, {not_estimate}), InputError);
  nlohmann::json nan_estimate = {{"time_s", {{"compute", -1.0}}}, {"memory_gib", {}}};
  const std::string neg = write_json(dir, "neg.json", nan_estimate);
  EXPECT_THROW((void)estimate_plots(load_inputs({}, {}, {neg})), InputError);
  EXPECT_THROW((void)load_inputs({}, {}, {}), InputError);
  EXPECT_THROW((void)load_inputs({(dir.path / "missing.jsonl").string()}, {}, {}), InputError);
}

TEST(ReportHtml, OneImagePerPlotWithItsSizeAndEscapedText) {
  Inputs in = local_inputs();
  std::vector<Plot> plots = build_plots(in);
  ASSERT_GE(plots.size(), 4u); // 3 bandwidth + latency
  const std::string html = index_html(in, plots, "a <b> & c");
  std::size_t imgs = 0;
  for (std::size_t at = html.find("<img "); at != std::string::npos; at = html.find("<img ", at + 1))
    ++imgs;
  EXPECT_EQ(imgs, plots.size());
  for (const Plot &p : plots)
    EXPECT_NE(html.find("src=\"" + p.name + ".png\" width=\"" + std::to_string(p.width_px) +
                        "\" height=\"" + std::to_string(p.height_px) + "\""),
              std::string::npos)
        << p.name;
  EXPECT_NE(html.find("a &lt;b&gt; &amp; c"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos); // no network
  // The fit-quality table lists every entry.
  for (const auto &e : in.fits[0]->entries)
    EXPECT_NE(html.find(e.id), std::string::npos);
}

TEST(ReportWrite, DataOnlyWritesOneDataFilePerPlotAndTheManifest) {
  test::TempDir dir("scalefit_report_");
  ReportOptions opt;
  opt.out_dir = (dir.path / "r").string();
  opt.data_only = true;
  const std::vector<Plot> plots = write_report(local_inputs(), opt);
  std::ifstream mf(dir.path / "r" / "plots.json");
  const nlohmann::json manifest = nlohmann::json::parse(mf);
  ASSERT_EQ(manifest.size(), plots.size());
  for (const auto &m : manifest) {
    std::ifstream df(dir.path / "r" / m["data_file"].get<std::string>());
    const nlohmann::json d = nlohmann::json::parse(df);
    EXPECT_EQ(d["kind"], m["kind"]);
    EXPECT_EQ(d["width_px"], m["width_px"]);
  }
  EXPECT_TRUE(std::filesystem::exists(dir.path / "r" / "index.html"));
}

} // namespace
} // namespace scalefit::report

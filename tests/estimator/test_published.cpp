// Published end-to-end training runs (tests/data/published-runs, each file one source with its
// provenance) estimated with their own configuration, out of sample: the constants of the
// system files were derived from the runs marked "calibration" alone (one per constant:
// scripts/derive_sustained_efficiency.py), which the statistics exclude.
//
// Issue 14's goal per source is mean |time error| <= 5% and max <= 15%, memory within 5%. The
// test holds each source to the error recorded when this test was written (so a change that
// makes any source worse fails), and prints which sources meet the goal. On 2026-11-28: the
// Nemotron-4 340B report, DGX Cloud v25.04.02, the NeMo long-context runs and Megatron-Bridge
// 26.x dense meet it, the FSDP memory source the memory goal; the others do not yet (see
// docs/estimator.md, "Accuracy").
#include "helpers.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/estimator/published.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>

using namespace scalefit;
using namespace scalefit::estimator;

namespace {
std::string runs_path(const std::string &name) {
  return std::string(SCALEFIT_TEST_DATA_DIR) + "/published-runs/" + name;
}
struct Bound {
  const char *file;
  double mean, max;   ///< recorded out-of-sample time error bounds (fractions)
  double memory;      ///< recorded memory error bound; 0 when the source publishes none
  int min_estimated;  ///< runs that must be estimated out of sample
};
} // namespace

TEST(PublishedRuns, EverySourceWithinItsRecordedError) {
  const Bound bounds[] = {
      {"dgxc-benchmarking-v24.11.1-h100.jsonl", 0.04, 0.17, 0, 67},
      {"nemotron4-340b-report.jsonl", 0.035, 0.055, 0, 3},
      {"megatron-core-r0.8-h100-weak-scaling.jsonl", 0.12, 0.36, 0, 9},
      {"megatron-bridge-25.09-25.11-dense.jsonl", 0.06, 0.21, 0, 24},
      {"nemo-long-sequence-llama2-7b-h100.jsonl", 0.04, 0.07, 0, 9},
      {"fms-fsdp-llama2-a100.jsonl", 0.115, 0.20, 0, 4},
      {"fsdp-memory.jsonl", 0, 0, 0.05, 0},
      {"megatron-bridge-25.09-25.11-moe.jsonl", 0.16, 0.54, 0, 30},
      {"megatron-bridge-26.02-moe.jsonl", 0.125, 0.57, 0, 15},
      {"megatron-bridge-26.x-dense.jsonl", 0.05, 0.125, 0, 42},
      {"megatron-bridge-skills-moe-h100.jsonl", 0.065, 0.09, 0.16, 4},
      {"megatron-moe-modelzoo-qwen3-h100.jsonl", 0.095, 0.26, 0, 8},
      {"megatron-moe-modelzoo-qwen3-gb200-gb300.jsonl", 0.14, 0.18, 0, 3},
      {"dgxc-benchmarking-v25.05.05-h100-gb200.jsonl", 0.10, 0.17, 0, 24},
      {"dgxc-benchmarking-v25.04.02-h100.jsonl", 0.04, 0.12, 0, 68},
      // 8 GPUs at GBS 4 (one micro-batch per rank): host-bound, and the memory of the first
      // two iterations (docs/estimator.md, "A matched recompute sweep")
      {"megatron-bridge-skills-recompute-h100.jsonl", 0.67, 0.68, 0.20, 6},
      // the newest release (26.08): its full-iteration CUDA graphs and FP8 attention's Q/K/V/O
      // casts are not modeled; gpt-oss runs slower than priced on every release
      // (docs/estimator.md); its FP8 windowed kernels at their measured rates since 2026-11-29
      {"megatron-bridge-26.08-moe.jsonl", 0.145, 0.27, 0, 8},
  };
  int goal_met = 0;
  for (const Bound &b : bounds) {
    const auto runs = load_published_runs(runs_path(b.file), SCALEFIT_SOURCE_ROOT);
    const auto rows = compare_published(runs, SCALEFIT_SOURCE_ROOT);
    const SourceSummary s = summarize_published(rows);
    EXPECT_GE(s.estimated, b.min_estimated) << b.file;
    if (s.estimated > 0) {
      EXPECT_LE(s.mean_abs_time, b.mean) << b.file;
      EXPECT_LE(s.max_abs_time, b.max) << b.file;
    }
    if (b.memory > 0) {
      ASSERT_GT(s.memory_runs, 0) << b.file;
      EXPECT_LE(s.max_abs_memory, b.memory) << b.file;
    }
    const bool met = (s.estimated == 0 || (s.mean_abs_time <= 0.05 && s.max_abs_time <= 0.15)) &&
                     (s.memory_runs == 0 || s.max_abs_memory <= 0.05);
    goal_met += met;
    std::printf("[published] %-44s %2d out of sample: time mean %5.1f%% max %5.1f%%; memory %d "
                "runs max %4.1f%%; %d calibration, %d not expressible, %d not fitting -> goal "
                "%s\n",
                b.file, s.estimated, 100 * s.mean_abs_time, 100 * s.max_abs_time, s.memory_runs,
                100 * s.max_abs_memory, s.calibration, s.skipped, s.not_fitting,
                met ? "met" : "NOT met");
  }
  std::printf("[published] issue 14 goal met by %d of %zu sources\n", goal_met,
              sizeof(bounds) / sizeof(bounds[0]));
}

// Each constant of the shipped system files was derived from one run marked "calibration"
// (scripts/derive_sustained_efficiency.py, the command in the YAML). A change to the model that
// moves those runs without re-deriving the constants would leave the files stale: each calibration
// run must still reproduce its published step (the constants are written to 4 digits).
TEST(PublishedRuns, CalibrationRunsStillReproduceTheirSteps) {
  int calibration = 0;
  for (const char *f :
       {"dgxc-benchmarking-v24.11.1-h100.jsonl", "megatron-bridge-25.09-25.11-dense.jsonl"}) {
    const auto runs = load_published_runs(runs_path(f), SCALEFIT_SOURCE_ROOT);
    for (const RunComparison &c : compare_published(runs, SCALEFIT_SOURCE_ROOT)) {
      if (!c.calibration)
        continue;
      ++calibration;
      EXPECT_LT(std::abs(c.time_error), 1e-3) << c.run->id << ": re-derive the constant it gave";
    }
  }
  // H100: sustained, FP8 and overlap; B200, GB200, GB300 sustained; B200 MXFP8
  EXPECT_EQ(calibration, 7);
}

// Every dense run collected is expressible with its own configuration; only mixture-of-experts
// runs (issue 16) and runs on a system without a file may be skipped, each with its reason.
TEST(PublishedRuns, DenseRunsAreExpressible) {
  for (const char *f :
       {"dgxc-benchmarking-v24.11.1-h100.jsonl", "nemotron4-340b-report.jsonl",
        "megatron-core-r0.8-h100-weak-scaling.jsonl", "megatron-bridge-25.09-25.11-dense.jsonl",
        "nemo-long-sequence-llama2-7b-h100.jsonl", "fms-fsdp-llama2-a100.jsonl",
        "fsdp-memory.jsonl", "dgxc-benchmarking-v25.05.05-h100-gb200.jsonl",
        "dgxc-benchmarking-v25.04.02-h100.jsonl", "megatron-bridge-26.x-dense.jsonl"}) {
    const auto runs = load_published_runs(runs_path(f), SCALEFIT_SOURCE_ROOT);
    for (const RunComparison &c : compare_published(runs, SCALEFIT_SOURCE_ROOT))
      EXPECT_TRUE(c.skipped.empty()) << c.run->id << ": " << c.skipped;
  }
  // These dense runs all trained on their GPUs, so each must fit: Megatron-Bridge's Megatron-FSDP
  // 70B/405B runs with the CPU offloading their recipes set (20-95 blocks), the FP8 runs of both
  // NVIDIA sources with their FP8 parameters (Nemotron-4 340B FP8 on 128 GPUs needs them), the
  // fms-fsdp 70B run with FSDP's bf16 block inputs.
  int offloaded = 0, fp8_params = 0;
  for (const char *f :
       {"megatron-bridge-25.09-25.11-dense.jsonl", "dgxc-benchmarking-v24.11.1-h100.jsonl",
        "fms-fsdp-llama2-a100.jsonl", "dgxc-benchmarking-v25.05.05-h100-gb200.jsonl",
        "dgxc-benchmarking-v25.04.02-h100.jsonl", "megatron-bridge-26.x-dense.jsonl"}) {
    const auto runs = load_published_runs(runs_path(f), SCALEFIT_SOURCE_ROOT);
    for (const RunComparison &c : compare_published(runs, SCALEFIT_SOURCE_ROOT)) {
      EXPECT_TRUE(c.fits) << c.run->id << ": " << c.estimated_gib << " GiB";
      offloaded += c.run->strategy.offload_layers > 0;
      fp8_params += c.run->strategy.fp8_param_gather;
    }
  }
  EXPECT_EQ(offloaded, 4 + 8);
  EXPECT_EQ(fp8_params, 28 + 35 + 12 + 34 + 42);
  // MoE runs (issue 16): Qwen3 MoE (Qwen3-235B's 94 blocks split as its recipe splits them:
  // the embedding and the loss counted as one block each), DeepSeek-V3 (multi-head latent
  // attention, its recipe's per-chunk pipeline layouts as per-stage block counts, one run with
  // multi-token prediction) and gpt-oss (alternating sliding-window blocks) are estimated; one
  // DeepSeek-V3 row is inconsistent as printed (EP 64 over a stage of 32 ranks) and says so.
  const auto moe = load_published_runs(runs_path("megatron-bridge-25.09-25.11-moe.jsonl"),
                                       SCALEFIT_SOURCE_ROOT);
  int estimated = 0;
  for (const RunComparison &c : compare_published(moe, SCALEFIT_SOURCE_ROOT)) {
    const std::string &id = c.run->id;
    if (id == "mb-25.09-gb200-deepseekv3-fp8-mx")
      EXPECT_NE(c.skipped.find("--ep"), std::string::npos) << id << ": " << c.skipped;
    else
      EXPECT_TRUE(c.skipped.empty()) << id << ": " << c.skipped;
    estimated += c.skipped.empty();
  }
  EXPECT_GE(estimated, 30);
}

// `scalefit validate --calibrate-on`: one published step as a user's own measured step. The
// sustained efficiency found reproduces that step's time; the step counts in sample, the source's
// other runs on that system are estimated with it, runs on other systems keep their files'.
TEST(PublishedRuns, CalibratingOnOneStepReproducesItAndPricesTheRest) {
  const auto runs = load_published_runs(runs_path("dgxc-benchmarking-v25.05.05-h100-gb200.jsonl"),
                                        SCALEFIT_SOURCE_ROOT);
  const auto picks = smallest_run_per_system(runs);
  ASSERT_EQ(picks.size(), 2u); // dgx-h100 and gb200-nvl72
  const PublishedRun &gb = *picks.at("configs/systems/gb200-nvl72.yaml");
  for (const PublishedRun &r : runs)
    if (r.system == gb.system)
      EXPECT_GE(r.gpus, gb.gpus) << r.id;
  const double eff = calibrate_sustained(gb, SCALEFIT_SOURCE_ROOT);
  const double shipped =
      load_system(std::string(SCALEFIT_SOURCE_ROOT) + "/" + gb.system).device.sustained_efficiency;
  EXPECT_GT(eff, 0.05);
  EXPECT_LT(eff, 1.0);
  EXPECT_GT(std::fabs(eff - shipped), 1e-3); // this source's GB200 steps are slower than shipped
  const std::map<std::string, double> sustained{{gb.system, eff}};
  const std::set<std::string> ids{gb.id};
  const auto plain = compare_published(runs, SCALEFIT_SOURCE_ROOT);
  const auto cal = compare_published(runs, SCALEFIT_SOURCE_ROOT, nullptr, "", "", &sustained, &ids);
  ASSERT_EQ(plain.size(), cal.size());
  int moved = 0;
  for (std::size_t i = 0; i < cal.size(); ++i) {
    const PublishedRun &r = *cal[i].run;
    ASSERT_TRUE(cal[i].skipped.empty()) << r.id;
    EXPECT_EQ(cal[i].calibration, r.id == gb.id) << r.id;
    if (r.id == gb.id)
      EXPECT_NEAR(cal[i].estimated_s, r.iteration_s, 1e-6 * r.iteration_s);
    if (r.system != gb.system)
      EXPECT_DOUBLE_EQ(cal[i].estimated_s, plain[i].estimated_s) << r.id;
    else
      moved += cal[i].estimated_s > plain[i].estimated_s; // a lower efficiency: slower
  }
  EXPECT_EQ(moved, 18);
  const SourceSummary s = summarize_published(cal);
  EXPECT_EQ(s.calibration, 1);
  EXPECT_EQ(s.estimated, 23);
  // refused, naming the option: a memory-only run, and a step no efficiency in range reproduces
  const auto mem = load_published_runs(runs_path("fsdp-memory.jsonl"), SCALEFIT_SOURCE_ROOT);
  ASSERT_FALSE(mem.empty());
  EXPECT_TRUE(smallest_run_per_system(mem).empty());
  try {
    calibrate_sustained(mem.front(), SCALEFIT_SOURCE_ROOT);
    ADD_FAILURE() << "memory-only run calibrated";
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "--calibrate-on");
  }
  PublishedRun fast = gb;
  fast.iteration_s = 1e-3; // faster than any rate the tables allow
  try {
    calibrate_sustained(fast, SCALEFIT_SOURCE_ROOT);
    ADD_FAILURE() << "impossible step calibrated";
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "--calibrate-on");
    EXPECT_NE(std::string(e.what()).find("sustained_efficiency 1"), std::string::npos) << e.what();
  }
}

TEST(PublishedRuns, MalformedRecordsNameFileLineAndField) {
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/bad_runs.jsonl";
  FILE *f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{\"id\": \"ok\", \"model\": {\"layers\": 2, \"hidden\": 64, \"heads\": 4, \"vocab\": "
             "100, \"seq\": 32}, \"iteration_time_s\": 1.0}\n",
             f);
  std::fputs("{\"id\": \"bad\", \"model\": {\"layers\": 2, \"hidden\": 64, \"heads\": 4, \"vocab\": "
             "100, \"seq\": 32}, \"iteration_time_s\": -1}\n",
             f);
  std::fclose(f);
  try {
    load_published_runs(path, SCALEFIT_SOURCE_ROOT);
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.field(), "iteration_time_s");
  }
}

// The fields this landing reads: a record's recompute modules, CPU offloading and FP8 parameters
// are refused naming the field when malformed.
TEST(PublishedRuns, MalformedOffloadAndRecomputeFieldsNameTheField) {
  const std::string dir = ::testing::TempDir();
  const std::string base =
      "{\"id\": \"x\", \"model\": {\"layers\": 2, \"hidden\": 64, \"heads\": 4, "
      "\"vocab\": 100, \"seq\": 32}, \"iteration_time_s\": 1.0, ";
  const std::pair<std::string, std::string> cases[] = {
      {"\"recompute\": \"selective\", \"recompute_modules\": \"mlp\"}", "recompute_modules"},
      {"\"recompute\": \"selective\", \"recompute_modules\": [\"mlp\", 3]}", "recompute_modules"},
      {"\"recompute\": \"selective\", \"recompute_modules\": [\"moe_router\"]}",
       "recompute_modules"},
      {"\"cpu_offloading_num_layers\": -1}", "cpu_offloading_num_layers"},
      {"\"cpu_offloading_num_layers\": 1.5}", "cpu_offloading_num_layers"},
      {"\"fp8_param_gather\": \"yes\"}", "fp8_param_gather"},
      {"\"moe_token_dispatcher\": \"flex\"}", "moe_token_dispatcher"},
      {"\"moe_a2a_overlap\": 1}", "moe_a2a_overlap"},
      {"\"moe_shared_expert_overlap\": \"on\"}", "moe_shared_expert_overlap"},
      {"\"precision_aware_optimizer\": 1}", "precision_aware_optimizer"},
      {"\"optimizer_moments\": \"fp8\"}", "optimizer_moments"},
      {"\"attention_backend\": \"cudnn\"}", "attention_backend"},
      {"\"attention_backend\": 0}", "attention_backend"},
      {"\"nvlink_domain\": -4}", "nvlink_domain"},
      {"\"nvlink_domain\": 6.5}", "nvlink_domain"},
  };
  for (const auto &[tail, field] : cases) {
    const std::string path = dir + "/bad_field.jsonl";
    FILE *f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs((base + tail + "\n").c_str(), f);
    std::fclose(f);
    try {
      load_published_runs(path, SCALEFIT_SOURCE_ROOT);
      ADD_FAILURE() << tail;
    } catch (const InputError &e) {
      EXPECT_EQ(e.line(), 1) << tail;
      EXPECT_EQ(e.field(), field) << tail << ": " << e.what();
    }
  }
}

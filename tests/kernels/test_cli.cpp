// scalefit-bench kernels end to end: a tiny model run directly (singleton MPI) and under
// mpiexec -np 2, the JSONL read back; bad input exits 2 with the message.
#include "scalefit/kernels/engine.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include "../support/paths.hpp"
#include "../support/subprocess.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace {

using scalefit::test::Result;
using scalefit::test::TempDir;

/// Runs `[mpiexec -np N] scalefit-bench kernels ARGS` (np 0: directly), capturing output.
/// Paths from tests/support/paths.hpp (SCALEFIT_BIN_DIR, SCALEFIT_MPIEXEC override them).
Result run_kernels(const std::string &args, const TempDir &d, int np = 0) {
  scalefit::test::set_mpi_env();
  std::string cmd = np > 0 ? scalefit::test::env_or("SCALEFIT_MPIEXEC", SCALEFIT_MPIEXEC) +
                                 " --oversubscribe -np " + std::to_string(np) + " "
                           : "";
  cmd += scalefit::test::bin_path("scalefit-bench", SCALEFIT_BENCH_BIN) + " kernels " + args;
  return scalefit::test::run_captured(cmd, d);
}

std::string models_dir() {
  return scalefit::test::source_path("configs/models", SCALEFIT_MODELS_DIR);
}

std::vector<nlohmann::json> read_jsonl(const fs::path &p) {
  std::vector<nlohmann::json> v;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);)
    if (!line.empty())
      v.push_back(nlohmann::json::parse(line));
  return v;
}

// Every test names the engine it needs: on a GPU machine --engine auto would pick cublas.
#define SCALEFIT_TINY_MODEL "--layers 2 --hidden 64 --heads 4 --seq 32 --vocab 128"
const char *kTinyModel = SCALEFIT_TINY_MODEL;
const char *kTiny = "--engine cpu " SCALEFIT_TINY_MODEL;

} // namespace

TEST(Cli, TinyModelEndToEnd) {
  TempDir d;
  const fs::path jsonl = d.path / "tmp.jsonl";
  const Result r = run_kernels(std::string(kTiny) + " --attention unfused -n 3 -c --out " +
                                   jsonl.string(),
                               d);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string first = r.out.substr(0, r.out.find('\n'));
  EXPECT_NE(first.find("engine cpu,"), std::string::npos) << first; // asked for, not defaulted
  EXPECT_NE(r.out.find("per-layer forward"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# check: 0 wrong"), std::string::npos) << r.out;

  const auto recs = read_jsonl(jsonl);
  ASSERT_EQ(recs.size(), 1u + 22u); // context + 7 forward + logits fwd/dgrad/wgrad + 12 backward
  EXPECT_EQ(recs[0]["type"], "context");
  EXPECT_EQ(recs[0]["schema"], "scalefit.kernels/1");
  EXPECT_EQ(recs[0]["engine"], "cpu");
  EXPECT_EQ(recs[0]["model"]["hidden"], 64);
  EXPECT_EQ(recs[0]["tp"], 1);
  EXPECT_EQ(recs[0]["attention"], "unfused");
  std::set<std::string> names;
  double fwd_layer_flops = 0;
  for (std::size_t i = 1; i < recs.size(); ++i) {
    const auto &k = recs[i];
    EXPECT_EQ(k["type"], "kernel");
    EXPECT_EQ(k["dtype"], "fp32");
    EXPECT_EQ(k["stats"]["n"], 3);
    EXPECT_EQ(k["wrong"], 0);
    const double t = k["time_us"];
    EXPECT_GT(t, 0.0);
    EXPECT_LE(k["stats"]["min"].get<double>(), t);
    const double flops = k["flops"];
    EXPECT_DOUBLE_EQ(k["model_flops"].get<double>(), flops); // no fused kernel here
    if (k["kind"] != "softmax") {
      EXPECT_DOUBLE_EQ(flops, 2.0 * k["m"].get<double>() * k["n"].get<double>() *
                                  k["k"].get<double>() * k["batch"].get<double>());
      EXPECT_NEAR(k["tflops"].get<double>(), flops / (t * 1e-6) / 1e12, 1e-9);
    }
    if (k["pass"] == "fwd" && k["per_layer"] == true)
      fwd_layer_flops += flops;
    names.insert(k["name"].get<std::string>());
  }
  EXPECT_EQ(names.size(), 22u);
  EXPECT_TRUE(names.count("attn_score.fwd") && names.count("softmax.fwd") &&
              names.count("mlp_down.wgrad"));
  EXPECT_DOUBLE_EQ(fwd_layer_flops, 24.0 * 32 * 64 * 64 + 4.0 * 32 * 32 * 64);

  // A second run appends: two context records.
  const Result again = run_kernels(std::string(kTiny) +
                                       " --tp 2 --micro-batch 2 -n 1 -w 0 "
                                       "-d fp64 --attention unfused --out " +
                                       jsonl.string(),
                                   d);
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  const auto both = read_jsonl(jsonl);
  ASSERT_EQ(both.size(), 2u * 23u);
  EXPECT_EQ(both[23]["type"], "context");
  EXPECT_EQ(both[23]["tp"], 2);
  EXPECT_EQ(both[24]["dtype"], "fp64");
  EXPECT_EQ(both[24]["m"], 64); // qkv.fwd: b s = 2 * 32
  EXPECT_EQ(both[24]["n"], 96); // 3h / t
}

TEST(Cli, ModelFileScaledAndAdaptive) {
  TempDir d;
  const Result r = run_kernels(std::string("--engine cpu --model ") + models_dir() +
                                   "/gpt-125m.yaml --scale 0.05 --max-time 0.005 -w 1 "
                                   "--peak-tflops 1",
                               d);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("model gpt-125m"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of peak 1.0 TFLOP/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("scaled by 0.05"), std::string::npos) << r.out;
}

TEST(Cli, UnderMpiexecRankZeroMeasures) {
  TempDir d;
  const fs::path jsonl = d.path / "np2.jsonl";
  const Result r =
      run_kernels(std::string(kTiny) + " -n 2 -w 0 --out " + jsonl.string(), d, /*np=*/2);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("rank 0 of 2 measures"), std::string::npos) << r.out;
  const auto recs = read_jsonl(jsonl);
  ASSERT_EQ(recs.size(), 18u); // written once, by rank 0 (fused attention: 17 kernels)
  EXPECT_EQ(recs[0]["nranks"], 2);
}

TEST(Cli, BadInputExitsTwoWithMessage) {
  TempDir d;
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {std::string(kTinyModel) + " --engine tpu", "unknown engine 'tpu'"},
      {std::string(kTiny) + " --attention flash", "unknown attention 'flash'"},
      {"--sweep huge", "unknown sweep grid 'huge'"},
      {std::string(kTiny) + " --sweep small", "drop the model flags"},
      {std::string(kTiny) + " --tp 3", "tp (3) must divide heads (4)"},
      {std::string(kTiny) + " -d bf16", "engine cpu computes fp32 or fp64"},
      // -d fp8 parses; the cpu engine refuses it by name.
      {std::string(kTiny) + " -d fp8", "not fp8: FP8 E4M3 is a GPU tensor-core format"},
      {std::string(kTiny) + " -d fp7", "expected fp32, tf32, fp16, bf16, fp64, fp8"},
      {"--engine cpu --layers 2 --hidden 64 --heads 4 --seq 32", "missing --vocab"},
      {std::string(kTiny) + " --scale 2", "--scale"},
      // NaN passed a "< 0" test and reached the summary; infinity too
      {std::string(kTiny) + " --peak-tflops nan", "expected a finite peak"},
      {std::string(kTiny) + " --peak-tflops inf", "expected a finite peak"},
      {"--engine cpu --model /nonexistent/model.yaml", "/nonexistent/model.yaml"},
      // Unfused attention of a 1M-token sequence: 12 s x s score matrices (48 TiB in fp32)
      // refused before anything is allocated, naming the kernel and the memory.
      {"--engine cpu --layers 1 --hidden 768 --heads 12 --seq 1048576 --vocab 50257 "
       "--attention unfused",
       "unfused attention materializes the s x s scores"},
  };
  for (const Case &c : cases) {
    const Result r = run_kernels(c.args, d);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
  }
  if (scalefit::kernels::visible_gpus() == 0) {
    const Result r =
        run_kernels(std::string(kTinyModel) + " --engine cublas --attention fused", d);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(
        r.err.find(scalefit::kernels::cuda_built() ? "no GPU visible" : "not built with CUDA"),
        std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("use --engine cpu"), std::string::npos) << r.err;
    // fp8 on cublas without a GPU: the same error; auto picks cpu, which refuses fp8 saying why.
    const Result f = run_kernels(std::string(kTinyModel) + " --engine cublas -d fp8", d);
    EXPECT_EQ(f.code, 2) << f.out << f.err;
    EXPECT_NE(
        f.err.find(scalefit::kernels::cuda_built() ? "no GPU visible" : "not built with CUDA"),
        std::string::npos)
        << f.err;
    const Result a = run_kernels(std::string(kTinyModel) + " -d fp8", d);
    EXPECT_EQ(a.code, 2) << a.out << a.err;
    EXPECT_NE(a.err.find("engine auto chose cpu"), std::string::npos) << a.err;
  }
}

TEST(Cli, FusedAttentionDefaultOnCpu) {
  TempDir d;
  const fs::path jsonl = d.path / "fused.jsonl";
  const Result r = run_kernels(std::string(kTiny) + " -n 2 -w 0 -c --out " + jsonl.string(), d);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("attention fused"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# check: 0 wrong"), std::string::npos) << r.out;
  const auto recs = read_jsonl(jsonl);
  // context + qkv, attention, proj, up, down (fwd) + logits x3 + down, up, proj (dgrad, wgrad) +
  // attention.bwd + qkv dgrad, wgrad.
  ASSERT_EQ(recs.size(), 1u + 17u);
  EXPECT_EQ(recs[0]["attention"], "fused");
  double fwd_model_flops = 0;
  int attention_records = 0;
  for (std::size_t i = 1; i < recs.size(); ++i) {
    const auto &k = recs[i];
    EXPECT_EQ(k["wrong"], 0) << k["name"];
    if (k["pass"] == "fwd" && k["per_layer"] == true)
      fwd_model_flops += k["model_flops"].get<double>();
    if (k["kind"] != "attention")
      continue;
    ++attention_records;
    EXPECT_EQ(k["causal"], true);
    EXPECT_EQ(k["batch"], 4); // b a / t heads
    EXPECT_EQ(k["m"], 32);
    EXPECT_EQ(k["k"], 16); // d = h / a
    const double fwd_full = 4.0 * 32 * 32 * 16 * 4, fwd_causal = 4.0 * 32 * 33 / 2 * 16 * 4;
    const bool fwd = k["pass"] == "fwd";
    EXPECT_DOUBLE_EQ(k["flops"].get<double>(), fwd ? fwd_causal : 2.5 * fwd_causal);
    EXPECT_DOUBLE_EQ(k["model_flops"].get<double>(), fwd ? fwd_full : 2.0 * fwd_full);
  }
  EXPECT_EQ(attention_records, 2);
  // Narayanan et al.'s per-layer forward count holds with the fused kernel too.
  EXPECT_DOUBLE_EQ(fwd_model_flops, 24.0 * 32 * 64 * 64 + 4.0 * 32 * 32 * 64);
}

TEST(Cli, SweepSmallWritesGemmRecords) {
  TempDir d;
  const fs::path jsonl = d.path / "sweep.jsonl";
  const Result r = run_kernels("--engine cpu --sweep small -n 2 -w 0 -c --out " + jsonl.string(), d);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# sweep small: 19 GEMM shapes"), std::string::npos) << r.out;
  const auto recs = read_jsonl(jsonl);
  ASSERT_EQ(recs.size(), 1u + 19u);
  EXPECT_EQ(recs[0]["sweep"], "small");
  EXPECT_EQ(recs[0]["schema"], "scalefit.kernels/1");
  std::set<std::string> kinds;
  bool odd_n = false;
  for (std::size_t i = 1; i < recs.size(); ++i) {
    const auto &k = recs[i];
    kinds.insert(k["kind"].get<std::string>());
    EXPECT_EQ(k["dtype"], "fp32");
    EXPECT_EQ(k["wrong"], 0) << k["name"];
    EXPECT_GT(k["time_us"].get<double>(), 0.0);
    EXPECT_EQ(k["stats"]["n"], 2);
    EXPECT_DOUBLE_EQ(k["flops"].get<double>(), 2.0 * k["m"].get<double>() * k["n"].get<double>() *
                                                   k["k"].get<double>() *
                                                   k["batch"].get<double>());
    odd_n = odd_n || k["n"] == 50257;
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"gemm", "batched_gemm"}));
  EXPECT_TRUE(odd_n);
}

TEST(Cli, ACutRunResumesItsPartFileKernelByKernel) {
  // A kernels step killed mid-way leaves FILE.part with some kernels and a torn last line; the
  // rerun keeps the whole records, drops the torn one, measures only what is missing: every
  // kernel once (a rerun used to append all 22 again).
  TempDir d;
  const fs::path part = d.path / "kernels.jsonl.part";
  const std::string args = std::string(kTiny) + " --attention unfused -n 2 -w 0 --out " + part.string();
  const Result first = run_kernels(args, d);
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  std::string text;
  {
    std::ifstream in(part);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  // Keep the context and 7 kernels, then half of the 8th line (the write the kill interrupted).
  std::size_t cut = 0;
  for (int i = 0; i < 8; ++i)
    cut = text.find('\n', cut) + 1;
  const std::size_t next = text.find('\n', cut);
  const std::string kept = text.substr(0, cut);
  std::ofstream(part, std::ios::trunc) << kept << text.substr(cut, (next - cut) / 2);

  const Result again = run_kernels(args, d);
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_NE(again.err.find(part.string() + ":9: dropped an incomplete last line"), std::string::npos)
      << again.err;
  EXPECT_NE(again.out.find("# resume: 7 of 22 kernels already in " + part.string()), std::string::npos)
      << again.out;
  EXPECT_NE(again.out.find("(resumed)"), std::string::npos) << again.out;
  const auto recs = read_jsonl(part);
  ASSERT_EQ(recs.size(), 2u + 22u); // the first run's context and 7, the rerun's context and 15
  EXPECT_EQ(recs[8]["type"], "context");
  std::set<std::string> names;
  for (const auto &r : recs)
    if (r["type"] == "kernel")
      EXPECT_TRUE(names.insert(r["name"].get<std::string>()).second) << "twice: " << r["name"];
  EXPECT_EQ(names.size(), 22u);
  // The first 7 are the first run's records, byte for byte.
  {
    std::ifstream in(part);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(ss.str().substr(0, kept.size()), kept);
  }
  // Run again: nothing left to measure, nothing written.
  const auto size = fs::file_size(part);
  const Result third = run_kernels(args, d);
  ASSERT_EQ(third.code, 0) << third.out << third.err;
  EXPECT_NE(third.out.find("22 of 22 kernels already in"), std::string::npos) << third.out;
  EXPECT_NE(third.out.find("nothing left to measure"), std::string::npos) << third.out;
  EXPECT_EQ(fs::file_size(part), size);
  // Another sweep into the same file (fp64) is appended: its own 22.
  const Result other = run_kernels(args + " -d fp64", d);
  ASSERT_EQ(other.code, 0) << other.out << other.err;
  EXPECT_EQ(read_jsonl(part).size(), 2u + 22u + 23u);
}

TEST(Cli, ACrashPaddedPartFileResumesWithoutItsNulTail) {
  // Power lost mid-run: the file system kept the part file's length but not its last blocks,
  // which read as NUL bytes (newlines among them). The rerun drops that tail and measures what it
  // held again; NUL bytes followed by data are refused instead, naming the line.
  TempDir d;
  const fs::path part = d.path / "kernels.jsonl.part";
  const std::string args = std::string(kTiny) + " --attention unfused -n 2 -w 0 --out " + part.string();
  ASSERT_EQ(run_kernels(args, d).code, 0);
  const std::string text = scalefit::test::slurp(part);
  std::size_t cut = 0;
  for (int i = 0; i < 6; ++i) // the context and 5 kernels survive
    cut = text.find('\n', cut) + 1;
  {
    std::ofstream out(part, std::ios::trunc | std::ios::binary);
    out << text.substr(0, cut) << std::string(300, '\0') << '\n' << std::string(40, '\0');
  }
  const Result again = run_kernels(args, d);
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_NE(again.err.find("dropped a tail of 341 NUL bytes and newlines"), std::string::npos)
      << again.err;
  EXPECT_NE(again.out.find("# resume: 5 of 22 kernels already in"), std::string::npos) << again.out;
  std::set<std::string> names;
  for (const auto &r : read_jsonl(part))
    if (r["type"] == "kernel")
      EXPECT_TRUE(names.insert(r["name"].get<std::string>()).second) << "twice: " << r["name"];
  EXPECT_EQ(names.size(), 22u);
  // NUL bytes with a record after them are not a crash's tail: refused, naming the line.
  {
    std::ofstream out(part, std::ios::app | std::ios::binary);
    out << std::string(8, '\0') << "\n" << text.substr(0, text.find('\n') + 1);
  }
  const Result bad = run_kernels(args, d);
  EXPECT_EQ(bad.code, 2) << bad.out << bad.err;
}

TEST(Cli, ResumeRefusesAnotherToolsFileNamingIt) {
  TempDir d;
  const fs::path comm = d.path / "comm.jsonl";
  std::ofstream(comm) << "{\"type\": \"context\", \"schema\": \"scalefit.comm/1\"}\n";
  const Result r = run_kernels(std::string(kTiny) + " -n 1 -w 0 --out " + comm.string(), d);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(comm.string() + ":1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("scalefit.comm/1"), std::string::npos) << r.err;
  std::ofstream(comm, std::ios::trunc) << "{\"type\": \"context\", \"schema\": \"scalefit.kernels/1\"}\nnot json\n";
  const Result bad = run_kernels(std::string(kTiny) + " -n 1 -w 0 --out " + comm.string(), d);
  EXPECT_EQ(bad.code, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find(comm.string() + ":2"), std::string::npos) << bad.err;
}

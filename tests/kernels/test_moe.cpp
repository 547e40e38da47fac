// MoE kernels (issue 16, section 5): the router and grouped expert GEMMs of an MoE layer against
// the estimator's operations, the grouped GEMM on the cpu engine and its -c check (which a
// broken engine fails), scalefit-bench kernels on a tiny MoE model, and the compute fit and the
// estimator's pricer consuming the grouped records.
#include "scalefit/core/error.hpp"
#include "scalefit/core/model.hpp"
#include "scalefit/estimator/architecture.hpp"
#include "scalefit/estimator/config.hpp"
#include "scalefit/estimator/pricing.hpp"
#include "scalefit/fitting/compute.hpp"
#include "scalefit/kernels/engine.hpp"
#include "scalefit/kernels/shapes.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../support/paths.hpp"
#include "../support/subprocess.hpp"

#include <filesystem>
#include <fstream>
#include <map>

namespace fs = std::filesystem;
using namespace scalefit;
using namespace scalefit::kernels;

namespace {

ModelConfig model_file(const std::string &name) {
  return load_model(scalefit::test::source_path("configs/models", SCALEFIT_MODELS_DIR) + "/" +
                    name + ".yaml");
}

std::string tiny_moe_path() {
  return scalefit::test::source_path("tests/data/kernels/tiny-moe.yaml",
                                     SCALEFIT_SOURCE_ROOT "/tests/data/kernels/tiny-moe.yaml");
}

const KernelShape &find(const std::vector<KernelShape> &v, const std::string &name) {
  for (const KernelShape &s : v)
    if (s.name == name)
      return s;
  throw std::runtime_error("no shape " + name);
}

bool has(const std::vector<KernelShape> &v, const std::string &name) {
  for (const KernelShape &s : v)
    if (s.name == name)
      return true;
  return false;
}

/// Forward FLOPs of the kernels of `blocks` whose name starts with one of `prefixes`.
double fwd_flops(const std::vector<KernelShape> &v, std::initializer_list<const char *> prefixes) {
  double f = 0;
  for (const KernelShape &s : v)
    for (const char *p : prefixes)
      if (s.pass == Pass::fwd && s.name.rfind(p, 0) == 0)
        f += s.flops();
  return f;
}

/// The estimator's per-token forward FLOPs of a block's attention linears (not the MLP's).
double estimator_attention_linear_flops(const estimator::ModelOps &o) {
  double f = 0;
  for (int i = 0; i < o.n_linear; ++i)
    if (!o.linear[i].mlp)
      f += 2 * o.linear[i].n * o.linear[i].k;
  return f;
}

} // namespace

TEST(MoeShapes, MixtralRouterAndExpertsMatchTheEstimator) {
  const ModelConfig m = model_file("mixtral-8x7b");
  const auto v = transformer_gemms(m, 1, 1, false, Attention::fused);
  const std::int64_t tokens = 4096; // b s
  const KernelShape &router = find(v, "router.fwd");
  EXPECT_EQ(router.kind, KernelKind::gemm);
  EXPECT_EQ(router.m, tokens);
  EXPECT_EQ(router.n, 8); // E
  EXPECT_EQ(router.k, 4096);
  EXPECT_EQ(router.blocks, Blocks::moe);
  const KernelShape &up = find(v, "expert_up.fwd");
  EXPECT_EQ(up.kind, KernelKind::grouped_gemm);
  EXPECT_EQ(up.batch, 8);                  // E / ep experts
  EXPECT_EQ(up.m, tokens * 2 / 8);         // b s k / E = 1024
  EXPECT_EQ(up.n, 2 * 14336);              // SwiGLU: gate and up fused
  EXPECT_EQ(up.k, 4096);
  EXPECT_TRUE(up.group_tokens.empty());    // balanced: a strided batch
  const KernelShape &down = find(v, "expert_down.fwd");
  EXPECT_EQ(down.m, 1024);
  EXPECT_EQ(down.n, 4096);
  EXPECT_EQ(down.k, 14336);
  // weight gradient: the tokens are k
  const KernelShape &wg = find(v, "expert_up.wgrad");
  EXPECT_EQ(wg.m, 4096);
  EXPECT_EQ(wg.n, 2 * 14336);
  EXPECT_EQ(wg.k, 1024);
  EXPECT_TRUE(wg.tokens_in_k);
  // Every MoE block (no dense blocks): no dense MLP, no shared experts.
  EXPECT_FALSE(has(v, "mlp_up.fwd"));
  EXPECT_FALSE(has(v, "shared_up.fwd"));
  // GQA: q 32 x 128 plus k, v 8 x 128 each.
  EXPECT_EQ(find(v, "qkv.fwd").n, (32 + 16) * 128);

  const estimator::ModelOps o = estimator::describe_model(m);
  // The estimator's per-token MoE FLOPs (routed experts + shared, router left out) against the
  // expert kernels, and the router as 2 h E per token.
  const double est_moe = o.linear_flops_per_token - estimator_attention_linear_flops(o);
  EXPECT_DOUBLE_EQ(fwd_flops(v, {"expert_", "shared_"}), est_moe * tokens);
  EXPECT_DOUBLE_EQ(router.flops(), 2.0 * 4096 * 8 * tokens);
  EXPECT_DOUBLE_EQ(fwd_flops(v, {"router", "expert_", "shared_"}),
                   moe_mlp_forward_flops_per_token(m) * tokens);
  EXPECT_DOUBLE_EQ(fwd_flops(v, {"qkv", "attn_proj"}),
                   estimator_attention_linear_flops(o) * tokens);
  // Backward pairs are twice the forward, grouped GEMMs included.
  for (const char *n : {"router", "expert_up", "expert_down"}) {
    const std::string s(n);
    EXPECT_DOUBLE_EQ(find(v, s + ".dgrad").flops() + find(v, s + ".wgrad").flops(),
                     2 * find(v, s + ".fwd").flops())
        << n;
  }
}

TEST(MoeShapes, Qwen3ExpertParallelAndTensorParallel) {
  const ModelConfig m = model_file("qwen3-30b-a3b");
  MoeLayout lay;
  lay.ep = 8;
  const int tp = 2, b = 2;
  const auto v = transformer_gemms(m, tp, b, false, Attention::fused, lay);
  const std::int64_t rank_tokens = b * 4096 / tp; // sequence parallel: b s / t per TP rank
  const KernelShape &router = find(v, "router.fwd");
  EXPECT_EQ(router.m, rank_tokens);
  EXPECT_EQ(router.n, 128);
  const KernelShape &up = find(v, "expert_up.fwd");
  EXPECT_EQ(up.batch, 128 / 8);
  // k (b s / t) ep / E: 8 routes of 4096 tokens from each of 8 EP ranks over 128 experts
  EXPECT_EQ(up.m, 8 * rank_tokens * 8 / 128);
  EXPECT_EQ(up.m, expert_tokens(m, tp, b, 8));
  EXPECT_EQ(up.n, 2 * 768);
  // The GPU's expert work is its share of the EP group's: k (b s / t) ep tokens x 3 h f_e.
  EXPECT_DOUBLE_EQ(fwd_flops(v, {"expert_"}), 8.0 * rank_tokens * 8 * 2 * 3 * 2048 * 768 / 8);
  // Per-token expert FLOPs with ep = t = 1 equal the estimator's (head_dim 128 > h / a too).
  const auto one = transformer_gemms(m, 1, 1, false, Attention::fused);
  const estimator::ModelOps o = estimator::describe_model(m);
  EXPECT_DOUBLE_EQ(fwd_flops(one, {"expert_"}),
                   (o.linear_flops_per_token - estimator_attention_linear_flops(o)) * 4096);
  EXPECT_DOUBLE_EQ(fwd_flops(one, {"qkv", "attn_proj"}),
                   estimator_attention_linear_flops(o) * 4096);
  EXPECT_THROW(transformer_gemms(m, 1, 1, false, Attention::fused, MoeLayout{3, 1.0}),
               InputError); // 3 does not divide 128
  EXPECT_THROW(transformer_gemms(m, 1, 1, false, Attention::fused, MoeLayout{1, 0.5}),
               InputError);
}

TEST(MoeShapes, ImbalanceDenseBlocksAndSharedExperts) {
  const ModelConfig m = load_model(tiny_moe_path());
  const auto v = transformer_gemms(m, 1, 1, false, Attention::fused, MoeLayout{2, 1.5});
  const KernelShape &up = find(v, "expert_up.fwd");
  EXPECT_EQ(up.batch, 4);
  EXPECT_EQ(up.m, 32); // 2 x 64 tokens x ep 2 / 8
  ASSERT_EQ(up.group_tokens.size(), 4u);
  EXPECT_EQ(up.group_tokens[0], 48); // 1.5 x 32
  EXPECT_EQ(up.group_tokens[1], 32);
  EXPECT_DOUBLE_EQ(up.flops(), 2.0 * (48 + 3 * 32) * 64 * 64);
  const KernelShape &wg = find(v, "expert_down.wgrad");
  ASSERT_EQ(wg.groups().size(), 4u);
  EXPECT_EQ(wg.groups()[0].k, 48);
  EXPECT_EQ(wg.groups()[0].m, 32);
  // first_dense_layers 1: the dense MLP (SwiGLU, 2 x 128) for the dense blocks
  EXPECT_EQ(find(v, "mlp_up.fwd").n, 256);
  EXPECT_EQ(find(v, "mlp_up.fwd").blocks, Blocks::dense);
  EXPECT_EQ(find(v, "shared_up.fwd").n, 64);
  EXPECT_EQ(find(v, "shared_up.fwd").blocks, Blocks::moe);
  EXPECT_EQ(find(v, "qkv.fwd").blocks, Blocks::all);
  // Dense models are unchanged by an MoE layout and keep no MoE kernel.
  ModelConfig dense = m;
  dense.experts = dense.top_k = dense.moe_ffn = dense.shared_experts = 0;
  dense.first_dense_layers = 0;
  const auto d = transformer_gemms(dense, 1, 1, false, Attention::fused);
  EXPECT_FALSE(has(d, "router.fwd"));
  EXPECT_EQ(find(d, "mlp_up.fwd").blocks, Blocks::all);
}

// MLA's projections and attention core by hand (DeepSeek-V2-Lite-like: no query compression;
// DeepSeek-V3-like: with it), at TP 2.
TEST(KernelShapes, MultiHeadLatentAttentionLayer) {
  ModelConfig m;
  m.hidden = 256;
  m.heads = 4;
  m.sequence = 64;
  m.vocabulary = 1000;
  m.layers = 2;
  m.ffn = 512;
  m.mlp = Mlp::swiglu;
  m.kv_lora_rank = 32;
  m.qk_nope_head_dim = 16;
  m.qk_rope_head_dim = 8;
  m.v_head_dim = 12;
  auto v = transformer_gemms(m, 2, 1, false, Attention::unfused);
  EXPECT_FALSE(has(v, "qkv.fwd"));
  EXPECT_EQ(find(v, "q.fwd").n, 2 * 24);        // a/t (d_h + d_h^R)
  EXPECT_EQ(find(v, "q.fwd").k, 256);
  EXPECT_EQ(find(v, "kv_down.fwd").n, 32 + 8);  // d_c + d_h^R, whole on every rank
  EXPECT_EQ(find(v, "kv_down.fwd").m, 64);
  EXPECT_EQ(find(v, "kv_up.fwd").n, 2 * (16 + 12));
  EXPECT_EQ(find(v, "kv_up.fwd").k, 32);
  EXPECT_EQ(find(v, "attn_score.fwd").k, 24);   // QK^T at d_qk
  EXPECT_EQ(find(v, "attn_context.fwd").n, 12); // AV at d_v
  EXPECT_EQ(find(v, "attn_proj.fwd").k, 2 * 12);
  EXPECT_EQ(find(v, "kv_down.wgrad").k, 64);    // the weight gradient over the tokens
  // with query compression: q_down and q_up instead of q
  m.q_lora_rank = 48;
  v = transformer_gemms(m, 2, 1, false, Attention::fused);
  EXPECT_FALSE(has(v, "q.fwd"));
  EXPECT_EQ(find(v, "q_down.fwd").n, 48);
  EXPECT_EQ(find(v, "q_up.fwd").k, 48);
  EXPECT_EQ(find(v, "attention.fwd").k, 24);
  EXPECT_TRUE(has(v, "q_down.dgrad"));
  // the layer's forward FLOPs: the five projections, the MLP and the core, by hand
  const double proj = 256.0 * 48 + 48.0 * 4 * 24 + 256.0 * 40 + 32.0 * 4 * 28 + 4.0 * 12 * 256;
  EXPECT_DOUBLE_EQ(layer_forward_flops(m, 1),
                   2.0 * 64 * (proj + 3.0 * 256 * 512) + 2.0 * 64 * 64 * 4 * (24 + 12));
}

namespace {

/// A cpu engine whose grouped GEMM is wrong in one way: every group multiplies the first
/// group's B (a wrong stride), or the groups are taken as equal (group_tokens ignored).
class BrokenGrouped final : public GemmEngine {
public:
  enum class Bug { first_b, equal_groups };
  explicit BrokenGrouped(Bug bug) : m_bug(bug), m_cpu(make_engine("cpu", Precision::fp64)) {}
  std::string_view name() const override { return "broken"; }
  Precision precision() const override { return Precision::fp64; }
  std::string device() const override { return "test"; }
  std::string library() const override { return "test"; }
  void prepare(const KernelShape &s) override { m_cpu->prepare(s); }
  double run_us(int reps) override { return m_cpu->run_us(reps); }
  std::string fused_attention_unavailable(std::int64_t) const override { return ""; }
  std::vector<double> evaluate(const KernelShape &s, std::span<const double> a,
                               std::span<const double> b) override {
    if (s.kind != KernelKind::grouped_gemm)
      return m_cpu->evaluate(s, a, b);
    if (m_bug == Bug::equal_groups) {
      KernelShape eq = s;
      eq.group_tokens.clear();
      return m_cpu->evaluate(eq, a, b);
    }
    std::vector<double> bb(b.begin(), b.end());
    const auto g = s.groups();
    const auto nb = static_cast<std::size_t>(g[0].k * g[0].n);
    for (std::size_t i = nb; i < bb.size(); ++i) // every later group gets the first's values
      bb[i] = bb[(i - nb) % nb];
    return m_cpu->evaluate(s, a, bb);
  }

private:
  Bug m_bug;
  std::unique_ptr<GemmEngine> m_cpu;
};

} // namespace

TEST(MoeCheck, GroupedGemmOnCpuPassesAndBrokenEnginesFail) {
  const ModelConfig m = load_model(tiny_moe_path());
  const auto balanced = transformer_gemms(m, 1, 1, false, Attention::fused);
  const auto skewed = transformer_gemms(m, 1, 1, false, Attention::fused, MoeLayout{2, 1.5});
  for (Precision p : {Precision::fp32, Precision::fp64}) {
    auto cpu = make_engine("cpu", p);
    for (const auto *v : {&balanced, &skewed})
      for (const KernelShape &s : *v) {
        if (s.kind != KernelKind::grouped_gemm)
          continue;
        const CheckResult r = check_shape(*cpu, s);
        EXPECT_GT(r.checked, 0) << s.name;
        EXPECT_EQ(r.wrong, 0) << s.name << " " << precision_name(p);
      }
  }
  // The slice of an unequal grouped GEMM stays unequal.
  const KernelShape slice = check_slice(find(skewed, "expert_up.fwd"));
  ASSERT_EQ(slice.group_tokens.size(), 2u);
  EXPECT_NE(slice.group_tokens[0], slice.group_tokens[1]);
  BrokenGrouped stride(BrokenGrouped::Bug::first_b), equal(BrokenGrouped::Bug::equal_groups);
  EXPECT_GT(check_shape(stride, find(balanced, "expert_up.fwd")).wrong, 0);
  EXPECT_GT(check_shape(stride, find(skewed, "expert_down.wgrad")).wrong, 0);
  EXPECT_GT(check_shape(equal, find(skewed, "expert_up.fwd")).wrong, 0);
  EXPECT_EQ(check_shape(equal, find(balanced, "expert_up.fwd")).wrong, 0); // nothing to ignore
  // The engine times the grouped GEMM it prepared.
  auto cpu = make_engine("cpu", Precision::fp32);
  cpu->prepare(find(skewed, "expert_up.fwd"));
  EXPECT_GT(cpu->run_us(2), 0.0);
  // Device bytes count every group's operands.
  const KernelShape &up = find(skewed, "expert_up.fwd");
  EXPECT_EQ(kernel_device_bytes(up, Precision::fp32),
            4u * ((48 + 3 * 32) * 64 + 4 * 64 * 64 + (48 + 3 * 32) * 64));
}

namespace {

std::vector<nlohmann::json> read_jsonl(const fs::path &p) {
  std::vector<nlohmann::json> v;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);)
    if (!line.empty())
      v.push_back(nlohmann::json::parse(line));
  return v;
}

scalefit::test::Result run_bench(const std::string &args, const scalefit::test::TempDir &d) {
  scalefit::test::set_mpi_env();
  return scalefit::test::run_captured(
      scalefit::test::bin_path("scalefit-bench", SCALEFIT_BENCH_BIN) + " kernels " + args, d);
}

} // namespace

TEST(MoeCli, TinyMoeRecordsFitAndPricing) {
  scalefit::test::TempDir d;
  const fs::path jsonl = d.path / "moe.jsonl";
  const std::string common = "--engine cpu --model " + tiny_moe_path() +
                             " --attention unfused -n 3 -w 1 -c --out " + jsonl.string();
  const auto r1 = run_bench(common, d);
  ASSERT_EQ(r1.code, 0) << r1.out << r1.err;
  EXPECT_NE(r1.out.find("# moe: 8 experts, top-2"), std::string::npos) << r1.out;
  EXPECT_NE(r1.out.find("# check: 0 wrong"), std::string::npos) << r1.out;
  const auto r2 = run_bench(common + " --ep 2 --moe-imbalance 1.5", d);
  ASSERT_EQ(r2.code, 0) << r2.out << r2.err;

  const auto recs = read_jsonl(jsonl);
  std::map<std::string, std::vector<nlohmann::json>> by_name;
  int contexts = 0;
  for (const auto &j : recs) {
    if (j["type"] == "context") {
      ++contexts;
      EXPECT_EQ(j["model"]["experts"], 8);
      EXPECT_EQ(j["ep"], contexts == 1 ? 1 : 2);
      continue;
    }
    EXPECT_EQ(j["wrong"], 0) << j.dump();
    by_name[j["name"].get<std::string>()].push_back(j);
  }
  ASSERT_EQ(contexts, 2);
  const auto &up = by_name["expert_up.fwd"];
  ASSERT_EQ(up.size(), 2u);
  EXPECT_EQ(up[0]["kind"], "grouped_gemm");
  EXPECT_EQ(up[0]["groups"], 8);
  EXPECT_EQ(up[0]["tokens_per_group"], 16); // 2 x 64 / 8
  EXPECT_EQ(up[0]["tokens_dim"], "m");
  EXPECT_EQ(up[0]["blocks"], "moe");
  EXPECT_FALSE(up[0].contains("group_tokens"));
  EXPECT_EQ(up[1]["groups"], 4);
  EXPECT_EQ(up[1]["group_tokens"], nlohmann::json({48, 32, 32, 32}));
  EXPECT_DOUBLE_EQ(up[1]["flops"].get<double>(), 2.0 * (48 + 96) * 64 * 64);
  EXPECT_EQ(by_name["expert_down.wgrad"][0]["tokens_dim"], "k");
  EXPECT_EQ(by_name["router.fwd"][0]["n"], 8);
  EXPECT_EQ(by_name["mlp_up.fwd"][0]["blocks"], "dense");
  EXPECT_FALSE(by_name["qkv.fwd"][0].contains("blocks"));

  // The compute fit reads the grouped records as their own kind, per-group tiles summed. Tiny CPU
  // timings on a shared machine are noise (a fit may find no positive rate): the records are fitted
  // with their times replaced by a law of their FLOPs (2 us + 20 GFLOP/s), the fields as written.
  const fs::path synth = d.path / "moe-synthetic.jsonl";
  {
    std::ofstream out(synth);
    for (nlohmann::json j : recs) {
      if (j["type"] == "kernel")
        j["time_us"] = 2.0 + j["flops"].get<double>() / 2e4;
      out << j.dump() << "\n";
    }
  }
  const fitting::ComputeSection c = fitting::fit_kernel_files({synth.string()});
  const fitting::ComputeFit *g = c.find("fp32", fitting::KernelKind::grouped_gemm);
  ASSERT_NE(g, nullptr) << fitting::compute_table(c);
  EXPECT_EQ(g->quality.points, 12); // 6 grouped kernels x 2 runs
  EXPECT_GT(g->tflops, 0.0);
  const auto pts = fitting::read_kernel_points(jsonl.string());
  ASSERT_EQ(pts.size(), fitting::read_kernel_points(synth.string()).size());
  bool unequal = false;
  for (const auto &p : pts)
    if (p.kind == fitting::KernelKind::grouped_gemm && !p.group_tokens.empty()) {
      unequal = true;
      EXPECT_EQ(p.group_tokens.size(), 4u);
      // unequal groups: the cpu engine ran one GEMM per group (record grouped_gemm
      // "per-expert"), so the prediction sums the groups' GEMMs (one group of 48, three of 32)
      EXPECT_TRUE(p.per_group);
      EXPECT_DOUBLE_EQ(g->predict_us(p),
                       g->per_group_us(p.tokens_in_k
                                           ? std::vector<std::array<double, 3>>{{p.m, p.n, 48},
                                                                                {p.m, p.n, 32},
                                                                                {p.m, p.n, 32},
                                                                                {p.m, p.n, 32}}
                                           : std::vector<std::array<double, 3>>{{48, p.n, p.k},
                                                                                {32, p.n, p.k},
                                                                                {32, p.n, p.k},
                                                                                {32, p.n, p.k}}));
    }
  EXPECT_TRUE(unequal);
  // Equal groups: the grouped form is the batched form.
  EXPECT_DOUBLE_EQ(g->grouped_us({{16, 64, 64}, {16, 64, 64}}), g->gemm_us(16, 64, 64, 2));

  // The estimator prices expert GEMMs from the grouped fit (fp32 model: tf32 wanted, fp32 taken).
  estimator::SystemConfig sys = estimator::load_system(
      scalefit::test::source_path("configs/systems/dgx-h100.yaml",
                                  SCALEFIT_SOURCE_ROOT "/configs/systems/dgx-h100.yaml"));
  estimator::ComputePricer with(sys, DType::float32), without(sys, DType::float32);
  with.use(c);
  fitting::ComputeSection no_grouped = c;
  std::erase_if(no_grouped.fits, [](const fitting::ComputeFit &f) {
    return f.kind == fitting::KernelKind::grouped_gemm;
  });
  without.use(no_grouped);
  EXPECT_EQ(with.src_ggemm.rfind("fit:grouped_gemm:fp32", 0), 0u) << with.src_ggemm;
  EXPECT_EQ(without.src_ggemm, without.src_gemm);
  EXPECT_DOUBLE_EQ(with.grouped_gemm_s(16, 64, 64, 8), with.kernel_s(g->gemm_us(16, 64, 64, 8) * 1e-6));
  // without it, one GEMM per expert from the GEMM fit (Transformer Engine launches them so)
  EXPECT_DOUBLE_EQ(without.grouped_gemm_s(16, 64, 64, 8), 8 * without.gemm_s(16, 64, 64, 1));
}

TEST(MoeCli, BadMoeFlagsExitTwo) {
  scalefit::test::TempDir d;
  const auto dense = run_bench("--engine cpu --layers 2 --hidden 64 --heads 4 --seq 32 --vocab 128 "
                               "--ep 2",
                               d);
  EXPECT_EQ(dense.code, 2);
  EXPECT_NE((dense.out + dense.err).find("--ep"), std::string::npos) << dense.out << dense.err;
  const auto ep = run_bench("--engine cpu --model " + tiny_moe_path() + " --ep 3", d);
  EXPECT_EQ(ep.code, 2);
  EXPECT_NE((ep.out + ep.err).find("must divide the experts"), std::string::npos) << ep.err;
}

TEST(MoeFit, GroupedTilesByHand) {
  // Two SMs at 1 TFLOP/s, no overheads. Groups 128 x 128 x 64 and 256 x 128 x 32: 128 x 128
  // tiles 1 + 2 = 3 (1.5 waves, the SMs always busy), tile work 64 + 2 x 32 = 128 k-steps, so
  // 1.5 x 2 / 3 x 128 x 128 x 2 x 128 = 4194304 FLOP = the groups' 2 m n k sum: 4.194304 us.
  // 128 x 256 tiles waste half of each (n = 128): 8.388608 us, not taken.
  fitting::ComputeFit f;
  f.kind = fitting::KernelKind::grouped_gemm;
  f.dtype = "bf16";
  f.sms = 2;
  f.tflops = 1;
  EXPECT_NEAR(f.grouped_us({{128, 128, 64}, {256, 128, 32}}), 4.194304, 1e-12);
  f.k0 = 16; // + 16 k-steps per tile: 3 tiles x 1.5 x 2 / 3 x 128 x 128 x 2 x 16 FLOP
  EXPECT_NEAR(f.grouped_us({{128, 128, 64}, {256, 128, 32}}), 4.194304 + 1.572864, 1e-12);
  // One tile on two SMs is one wave (W = 1): half the device idles, 2 x 128 x 128 x 2 x 64 FLOP.
  f.k0 = 0;
  EXPECT_NEAR(f.grouped_us({{128, 128, 64}}), 4.194304, 1e-12);
}

namespace {
/// A bf16 grouped_gemm fit of `sms` SMs at `tflops` [TFLOP/s], k0 `k0` [k elements], c0 `c0_us`.
fitting::ComputeFit grouped_fit(int sms, double tflops, double k0, double c0_us) {
  fitting::ComputeFit f;
  f.kind = fitting::KernelKind::grouped_gemm;
  f.dtype = "bf16";
  f.sms = sms;
  f.tflops = tflops;
  f.k0 = k0;
  f.c0_us = c0_us;
  return f;
}
} // namespace

TEST(MoeFit, PerExpertGroupsRunInTurnByHand) {
  // The groups of GroupedTilesByHand run one GEMM each (scalefit-bench's per-expert default):
  // 128 x 128 x 64 is one tile, one wave on two SMs with one idle (4.194304 us); 256 x 128 x 32
  // two tiles, one full wave (2.097152 us). 6.291456 us against the grouped kernel's 4.194304,
  // whose three tiles share 1.5 waves; each GEMM pays its own c0.
  const fitting::ComputeFit f = grouped_fit(2, 1, 0, 0.5);
  EXPECT_NEAR(f.per_group_us({{128, 128, 64}, {256, 128, 32}}), 6.291456 + 2 * 0.5, 1e-12);
  fitting::KernelPoint p;
  p.kind = fitting::KernelKind::grouped_gemm;
  p.dtype = "bf16";
  p.m = 128, p.n = 128, p.k = 64, p.batch = 2;
  // A measured point of groups 128 x 128 x 64 and 256 x 128 x 64: one kernel, 3 tiles in 1.5
  // waves of 128 x 128 x 2 x (64 + 2 x 64) k-steps' work (6.291456 us); per expert, two GEMMs
  // of 4.194304 us each (one wave each, the first with an idle SM), each with its c0.
  p.group_tokens = {128, 256};
  EXPECT_NEAR(f.predict_us(p), 6.291456 + 0.5, 1e-12) << "cuBLAS's grouped API: one kernel";
  p.per_group = true;
  EXPECT_NEAR(f.predict_us(p), 2 * 4.194304 + 2 * 0.5, 1e-12);
}

TEST(MoeFit, PerExpertPointsRecoverTheModelTheyWereMadeFrom) {
  // Points timed by a known model (132 SMs, 600 TFLOP/s, k0 24, c0 8 us per GEMM launch):
  // equal groups (one strided batch) and unequal ones run per expert, 1 to 16 local experts of
  // 64 to 4096 tokens. The fit must give the model back; a fit that charged c0 once per point,
  // or shared the waves across the per-expert GEMMs, would not.
  const fitting::ComputeFit truth = grouped_fit(132, 600, 24, 8);
  std::vector<fitting::KernelPoint> pts;
  for (double tokens : {64.0, 512.0, 4096.0})
    for (double groups : {1.0, 4.0, 16.0})
      for (bool unequal : {false, true}) {
        fitting::KernelPoint p;
        p.kind = fitting::KernelKind::grouped_gemm;
        p.dtype = "bf16";
        p.name = "expert_up.fwd";
        p.m = tokens, p.n = 2048, p.k = 4096, p.batch = groups;
        if (unequal && groups > 1) {
          p.group_tokens.assign(static_cast<std::size_t>(groups), tokens);
          p.group_tokens.front() = 1.5 * tokens;
          p.per_group = true;
        }
        p.time_us = truth.predict_us(p);
        pts.push_back(p);
      }
  const fitting::ComputeFit f = fitting::fit_compute(pts, 132, false);
  EXPECT_NEAR(f.tflops, 600, 6);
  EXPECT_NEAR(f.c0_us, 8, 0.5);
  for (const auto &p : pts)
    EXPECT_NEAR(f.predict_us(p) / p.time_us, 1.0, 0.01) << p.m << " x " << p.batch;
}

// Issue 16, second part: multi-head latent attention (DeepSeek-V2/V3) against hand-written
// formulas of the paper's equations, the published parameter counts of the MoE configs, the
// expert capacity factor's rows, all-to-all bytes and memory, and bad MLA / capacity YAML.
#include "../../estimator/src/detail.hpp" // LayerCostCache (search's block cache)
#include "helpers.hpp"

#include "scalefit/core/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace scalefit;
using namespace scalefit::estimator;
using test_run::find;
using test_run::run;

namespace {

struct PublishedMoe {
  std::string model;
  double total = 0, total_unit = 0, active = 0, active_unit = 0;
  bool active_counts_input_embedding = true;
  std::string source;
};

std::vector<PublishedMoe> published_moe() {
  std::ifstream in(test_paths::data_path("published_moe_params.tsv"));
  std::vector<PublishedMoe> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream f(line);
    PublishedMoe p;
    std::string total, tu, active, au, counts;
    std::getline(f, p.model, '\t');
    std::getline(f, total, '\t');
    std::getline(f, tu, '\t');
    std::getline(f, active, '\t');
    std::getline(f, au, '\t');
    std::getline(f, counts, '\t');
    std::getline(f, p.source);
    p.total = std::stod(total);
    p.total_unit = std::stod(tu);
    p.active = std::stod(active);
    p.active_unit = std::stod(au);
    p.active_counts_input_embedding = counts == "all";
    rows.push_back(p);
  }
  return rows;
}

/// Parameters of one MLA attention block by the DeepSeek-V2 paper's matrices (Sec. 2.1.2-2.1.3,
/// Eq. 9-19): W^DQ (d_c' x h) and W^UQ, W^QR (n_h (d_h + d_h^R) x d_c'), or W^Q from h without
/// query compression; W^DKV (d_c x h) and W^KR (d_h^R x h); W^UK, W^UV (n_h (d_h + d_v) x d_c);
/// W^O (h x n_h d_v); the RMSNorms on the two latents (HF modeling_deepseek.py q_a_layernorm,
/// kv_a_layernorm).
double mla_attention_params(double h, double a, double qr, double kvr, double nope, double rope,
                            double dv) {
  const double q = qr > 0 ? qr * h + qr + qr * a * (nope + rope) : h * a * (nope + rope);
  return q + kvr * h + rope * h + kvr + kvr * a * (nope + dv) + a * dv * h;
}

/// Forward FLOPs per token of one MLA block's attention (GEMMs 2 m n k, core QK^T over d_h +
/// d_h^R and AV over d_v against s keys, non-causal as Megatron counts it).
double mla_attention_flops(double h, double a, double qr, double kvr, double nope, double rope,
                           double dv, double s) {
  const double gemm = qr > 0 ? h * qr + qr * a * (nope + rope) : h * a * (nope + rope);
  return 2 * (gemm + h * (kvr + rope) + kvr * a * (nope + dv) + a * dv * h) +
         2 * s * a * (nope + rope) + 2 * s * a * dv;
}

std::string write_model(const std::string &name, const std::string &extra) {
  const std::string path = ::testing::TempDir() + "/" + name + ".yaml";
  std::ofstream out(path);
  out << "name: " << name << "\nlayers: 4\nhidden: 1024\nheads: 8\nsequence: 512\n"
      << "vocabulary: 1000\nmlp: swiglu\nnorm: rmsnorm\nposition: rope\nbias: false\n"
      << extra;
  return path;
}

/// The field (and line) an InputError of loading `extra` names; "" when it loads.
std::string rejected_field(const std::string &name, const std::string &extra, long *line = nullptr) {
  try {
    load_model(write_model(name, extra));
  } catch (const InputError &e) {
    if (line)
      *line = e.line();
    return e.field();
  }
  return "";
}

} // namespace

// Source: tests/data/estimator/published_moe_params.tsv. Every published figure is rounded (the
// publishers released no exact count); a count meets it within half a unit of its last digit
// plus 0.1%. Where the figure is precise enough (671B, 15.7B) the count is within 0.1% of it.
TEST(MoeMla, ParameterCountsMeetThePublishedTotalsAndActive) {
  const auto rows = published_moe();
  ASSERT_EQ(rows.size(), 7u);
  for (const PublishedMoe &p : rows) {
    const ModelConfig m = load_model(test_paths::model_path(p.model));
    const double total = parameter_count(m);
    double active = active_parameter_count(m);
    if (!p.active_counts_input_embedding)
      active -= double(m.vocabulary) * m.hidden; // the lookup table a token reads one row of
    EXPECT_LE(std::fabs(total - p.total), 0.5 * p.total_unit + 1e-3 * p.total) << p.model;
    EXPECT_LE(std::fabs(active - p.active), 0.5 * p.active_unit + 1e-3 * p.active) << p.model;
    std::printf("[moe params] %-18s total %16.0f vs %.4g (%+.3f%%)  active %14.0f vs %.3g "
                "(%+.2f%%)%s\n",
                p.model.c_str(), total, p.total, 100 * (total - p.total) / p.total, active,
                p.active, 100 * (active - p.active) / p.active,
                p.active_counts_input_embedding ? "" : " (input embedding not counted)");
  }
  // The two figures precise to better than 0.1% of rounding: within 0.1%.
  EXPECT_NEAR(parameter_count(load_model(test_paths::model_path("deepseek-v3"))), 671e9,
              1e-3 * 671e9);
  EXPECT_NEAR(parameter_count(load_model(test_paths::model_path("deepseek-v2-lite"))), 15.7e9,
              1e-3 * 15.7e9);
}

// DeepSeek-V3's main model (no MTP module) counted by hand from the paper's matrices: 61 blocks
// of MLA + RMSNorms; 3 dense SwiGLU MLPs of 18432; 58 MoE MLPs of 256 routed + 1 shared SwiGLU
// experts of 2048 and a 256 x h router; embedding and untied head of 129280 x 7168; final norm.
TEST(MoeMla, DeepSeekV3ParametersByHand) {
  const ModelConfig m = load_model(test_paths::model_path("deepseek-v3"));
  const double h = 7168, a = 128, V = 129280, fe = 2048;
  const double attn = mla_attention_params(h, a, 1536, 512, 128, 64, 128);
  const double dense = attn + 3 * h * 18432 + 2 * h;
  const double moe = attn + (256 + 1) * 3 * h * fe + 256 * h + 2 * h;
  const double total = 3 * dense + 58 * moe + 2 * V * h + h;
  EXPECT_DOUBLE_EQ(parameter_count(m), total);
  EXPECT_DOUBLE_EQ(total, 671026404352.0);
  const double active = 3 * dense + 58 * (attn + (8 + 1) * 3 * h * fe + 256 * h + 2 * h) +
                        2 * V * h + h;
  EXPECT_DOUBLE_EQ(active_parameter_count(m), active);
  // V2-Lite: queries straight from h (q_lora_rank 0)
  const ModelConfig lite = load_model(test_paths::model_path("deepseek-v2-lite"));
  const ModelOps o = describe_model(lite);
  EXPECT_STREQ(o.linear[0].what, "MLA q");
  EXPECT_DOUBLE_EQ(o.linear[0].n, 16.0 * (128 + 64));
  EXPECT_DOUBLE_EQ(o.linear[0].k, 2048);
  EXPECT_EQ(o.linear[1].split, TpSplit::replicated); // kv down projection
  EXPECT_DOUBLE_EQ(o.linear[1].n, 512 + 64);
  EXPECT_DOUBLE_EQ(o.head_dim, 192);
  EXPECT_DOUBLE_EQ(o.v_head_dim, 128);
}

// Megatron-LM's num_floating_point_operations for MLA counts the same GEMMs (q_term, kv lora,
// the RoPE key, o proj) and the core attention over d_h + d_h^R and d_v; here the core is
// counted non-causal, as the estimator's `megatron` convention does for every model.
TEST(MoeMla, FlopsPerTokenAreTheHandFormula) {
  for (const char *name : {"deepseek-v3", "deepseek-v2-lite"}) {
    const ModelConfig m = load_model(test_paths::model_path(name));
    const double h = m.hidden, a = m.heads, s = m.sequence, l = m.layers;
    const double attn = mla_attention_flops(h, a, m.q_lora_rank, m.kv_lora_rank,
                                            m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim, s);
    const double nd = m.first_dense_layers, nm = l - nd;
    const double mlp = nd * 2 * 3 * h * m.ffn_size() +
                       nm * 2 * 3 * h * m.moe_ffn * (m.top_k + m.shared_experts);
    const double V = padded_vocabulary(m.vocabulary, 128, 1);
    const double B = 16;
    const double want = 3 * B * s * (l * attn + mlp + 2 * h * V);
    const IterationFlops f = iteration_flops(m, B, V, false, false);
    EXPECT_NEAR(f.megatron, want, 1e-12 * want) << name;
    // causal: half of the core attention
    const double core = 2 * s * a * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim);
    EXPECT_NEAR(f.megatron - f.causal, 3 * B * s * l * core / 2, 1e-9 * want) << name;
    std::printf("[mla flops] %-16s %.6g FLOP per token forward (attention block %.6g)\n", name,
                want / (3 * B * s), attn);
  }
}

// Activations of one MLA block per token, derived as Korthikanti et al. derive Table 2
// (V2-Lite, bf16, no dropout, fused attention, t = 1): hidden 2h norm inputs + 2h norm outputs
// + the kv latent kept as its norm's input and normed (2 + 2) d_c (no query latent); inner q
// and k (2 a (d_h + d_h^R) each), v (2 a d_v), the core's output (2 a d_v); dense blocks' MLP
// up output (4 f) and down input (2 f); MoE blocks' routes k (2h + 4 f_e + 2 f_e), shared
// experts 2 x (4 + 2) f_e; routing: fp32 scores 4 E, the bool routing map E, the permutation's
// int32 row-id map 4 (2 E + 1).
TEST(MoeMla, ActivationBytesAsDerived) {
  const ModelConfig m = load_model(test_paths::model_path("deepseek-v2-lite"));
  const double h = 2048, a = 16, dq = 192, dv = 128, dc = 512, f = 10944, fe = 1408, k = 6,
               E = 64, s = m.sequence;
  const double phi = 26.0 / 27.0;
  const double hidden = 4 * h + 4 * h + 4 * dc;
  const double inner = 2 * a * dq * 2 + 2 * a * dv + 2 * a * dv + (1 - phi) * 6 * f +
                       phi * (k * (2 * h + 6 * fe) + 2 * 6 * fe + 4 * E + E + 4 * (2 * E + 1));
  EXPECT_NEAR(activation_bytes_per_layer(m, 1, 1, false, Recompute::none),
              s * (hidden + inner + 4 * a), 1e-9 * s * hidden);
}

// The capacity factor (Megatron --moe-expert-capacity-factor, --moe-pad-expert-input-to-
// capacity): the busiest expert rank's rows and all-to-all bytes are the balanced share times
// the router imbalance (dropless), capped at the capacity factor (dropping), or exactly the
// capacity factor (padded); the routed-token activations follow the same factor.
TEST(MoeMla, CapacityFactorScalesExpertRowsBytesAndMemory) {
  const ModelConfig base = load_model(test_paths::model_path("mixtral-8x7b"));
  const SystemConfig sys = load_system(test_paths::system_path("dgx-h100"));
  Strategy s;
  s.dp = 8, s.ep = 8, s.zero = 1, s.global_batch = 64;
  struct Case {
    double cf;
    bool pad;
    double imbalance, load;
  };
  const Case cases[] = {{0, false, 1.0, 1.0},  {1.0, false, 1.0, 1.0}, {1.25, false, 1.0, 1.0},
                        {1.25, true, 1.0, 1.25}, {0, false, 1.5, 1.5},  {1.25, false, 1.5, 1.25},
                        {1.0, false, 1.5, 1.0},  {1.0, true, 1.5, 1.0}};
  const double h = 4096, fe = 14336, k = 2, T = 4096;
  const double routed_per_token = 32.0 / 32 * k * (2 * h + 2 * 2 * fe + 2 * fe); // bf16, gated
  double gemm_dropless = 0, act_dropless = 0, bytes_dropless = 0;
  for (const Case &c : cases) {
    ModelConfig m = base;
    m.capacity_factor = c.cf;
    m.pad_to_capacity = c.pad;
    validate_model(m, "test");
    s.moe_imbalance = c.imbalance;
    const Estimator est(m, sys);
    const auto e = run(est, s);
    const Message *a2a = find(*e, Parallelism::ep, Op::alltoall);
    ASSERT_NE(a2a, nullptr);
    const double act = activation_bytes_per_layer(m, 1, 1, false, Recompute::none, 1, c.imbalance);
    if (c.cf == 0 && c.imbalance == 1.0) {
      gemm_dropless = e->terms[0].seconds;
      act_dropless = act;
      bytes_dropless = a2a->bytes;
      EXPECT_DOUBLE_EQ(a2a->bytes, k * T * h * 2);
      continue;
    }
    // all-to-all bytes and routed activations by exactly the load factor
    EXPECT_DOUBLE_EQ(a2a->bytes, c.load * bytes_dropless) << c.cf << " " << c.pad;
    EXPECT_NEAR(act - act_dropless, (c.load - 1) * routed_per_token * T, 1e-9 * act)
        << c.cf << " " << c.pad;
    // expert GEMM rows: the layer GEMMs grow with the load, equal at load 1
    if (c.load == 1.0)
      EXPECT_DOUBLE_EQ(e->terms[0].seconds, gemm_dropless) << c.cf << " " << c.pad;
    else
      EXPECT_GT(e->terms[0].seconds, gemm_dropless) << c.cf << " " << c.pad;
  }
  // padded to 1.25 runs more than dropless balanced; dropping at 1.0 under imbalance 1.5 less
  // than dropless at 1.5
  ModelConfig pad = base, drop = base;
  pad.capacity_factor = 1.25, pad.pad_to_capacity = true;
  drop.capacity_factor = 1.0;
  s.moe_imbalance = 1.5;
  const auto dropless_15 = run(Estimator(base, sys), s);
  const auto dropping_15 = run(Estimator(drop, sys), s);
  EXPECT_LT(dropping_15->time_s.iteration, dropless_15->time_s.iteration);
  EXPECT_LT(dropping_15->memory_bytes.activations, dropless_15->memory_bytes.activations);
  s.moe_imbalance = 1.0;
  const auto padded = run(Estimator(pad, sys), s);
  const auto dropless = run(Estimator(base, sys), s);
  EXPECT_GT(padded->memory_bytes.activations, dropless->memory_bytes.activations);
  EXPECT_GT(padded->comm_ep_s, dropless->comm_ep_s);
  // model FLOPs stay those of k routes per token (Megatron's convention)
  EXPECT_DOUBLE_EQ(padded->model_flops, dropless->model_flops);
}

// MLA under tensor parallelism: the down projections are whole on every rank (replicated
// parameters), the up and output projections split; the per-GPU parameters say so.
TEST(MoeMla, MlaDownProjectionsAreReplicatedUnderTp) {
  ModelConfig m = load_model(test_paths::model_path("deepseek-v2-lite"));
  const ModelOps o = describe_model(m);
  const double h = 2048, dc = 512, rope = 64;
  EXPECT_DOUBLE_EQ(o.block_matrix_params_replicated, h * (dc + rope));
  EXPECT_DOUBLE_EQ(o.block_params_replicated, 2 * h + dc + h * (dc + rope) +
                                                  (26.0 / 27.0) * 64 * h);
  const Estimator est(m, load_system(test_paths::system_path("dgx-h100")));
  Strategy s;
  s.dp = 1, s.tp = 2, s.sp = true, s.global_batch = 1;
  const auto tp2 = run(est, s);
  s.tp = 1, s.sp = false;
  const auto tp1 = run(est, s);
  // halving everything but the replicated part: per GPU = (all - replicated) / 2 + replicated
  // (embedding and head padded to 128 t rows: the same at t 1 and 2 for V = 102400)
  const double replicated = m.layers * o.block_params_replicated + o.norm_params;
  EXPECT_NEAR(tp2->params_per_gpu, (tp1->params_per_gpu - replicated) / 2 + replicated,
              1e-9 * tp1->params_per_gpu);
}

TEST(MoeMla, BadMlaAndCapacityValuesNameTheirField) {
  const std::string mla = "kv_lora_rank: 64\nqk_nope_head_dim: 32\nqk_rope_head_dim: 16\n"
                          "v_head_dim: 32\n";
  EXPECT_EQ(rejected_field("ok_mla", mla + "q_lora_rank: 128\n"), "");
  long line = 0;
  EXPECT_EQ(rejected_field("neg_q", mla + "q_lora_rank: -1\n", &line), "q_lora_rank");
  EXPECT_EQ(line, 15); // the 10 base lines, the 4 MLA lines, then q_lora_rank
  EXPECT_EQ(rejected_field("neg_kv", "kv_lora_rank: -512\n"), "kv_lora_rank");
  EXPECT_EQ(rejected_field("no_rope", "kv_lora_rank: 64\nqk_nope_head_dim: 32\nv_head_dim: 32\n",
                           &line),
            "qk_rope_head_dim");
  EXPECT_EQ(rejected_field("no_v", "kv_lora_rank: 64\nqk_nope_head_dim: 32\nqk_rope_head_dim: 16\n"),
            "v_head_dim");
  EXPECT_EQ(rejected_field("heads_without_latent", "qk_rope_head_dim: 16\n", &line),
            "qk_rope_head_dim");
  EXPECT_EQ(line, 11);
  EXPECT_EQ(rejected_field("gqa_mla", mla + "kv_heads: 2\n"), "kv_heads");
  EXPECT_EQ(rejected_field("head_dim_mla", mla + "head_dim: 64\n"), "head_dim");
  const std::string moe = "experts: 8\ntop_k: 2\nmoe_ffn: 512\n";
  EXPECT_EQ(rejected_field("cf_ok", moe + "capacity_factor: 1.25\npad_to_capacity: true\n"), "");
  EXPECT_EQ(rejected_field("cf_none", moe + "capacity_factor: none\n"), "");
  EXPECT_EQ(rejected_field("cf_zero", moe + "capacity_factor: 0\n", &line), "capacity_factor");
  EXPECT_EQ(line, 14);
  EXPECT_EQ(rejected_field("cf_negative", moe + "capacity_factor: -1.0\n"), "capacity_factor");
  EXPECT_EQ(rejected_field("cf_word", moe + "capacity_factor: lots\n"), "capacity_factor");
  EXPECT_EQ(rejected_field("cf_dense", "capacity_factor: 1.0\n"), "capacity_factor");
  EXPECT_EQ(rejected_field("pad_dropless", moe + "pad_to_capacity: true\n"), "pad_to_capacity");
  // command-line overrides go through the same checks
  ModelOverrides o;
  o.layers = 2, o.hidden = 256, o.heads = 4, o.sequence = 64, o.vocabulary = 100;
  o.kv_lora_rank = 64;
  try {
    build_model("", o);
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "qk_nope_head_dim");
  }
  o.qk_nope_head_dim = 32, o.qk_rope_head_dim = 16, o.v_head_dim = 32, o.q_lora_rank = 0;
  EXPECT_TRUE(build_model("", o).mla());
}

// FP8 (Transformer Engine's per-tensor recipe) casts every linear input to FP8 with its
// transpose and, backward, every output gradient: on an MoE block that includes the routed
// experts' rows (k per token) and the shared experts', by the same bytes as a dense linear
// (docs/estimator.md "FP8"). Qwen3-30B-A3B: h 2048, f_e 768 (SwiGLU: fc1 width 1536), k 8, no
// shared experts, every block MoE: forward 4 k (h + f_e), backward 4 k (2 f_e + h) per token.
TEST(MoeMla, Fp8CastsCoverTheExpertRows) {
  ModelConfig m = load_model(test_paths::model_path("qwen3-30b-a3b"));
  const auto expert_casts = [](const ModelOps &o) -> const ElementwiseOp * {
    for (int i = 0; i < o.n_elementwise; ++i)
      if (std::string(o.elementwise[i].what) == "FP8 casts (experts)")
        return &o.elementwise[i];
    return nullptr;
  };
  EXPECT_EQ(expert_casts(describe_model(m)), nullptr); // bf16: no casts
  m.fp8 = true;
  const ModelOps o = describe_model(m);
  const ElementwiseOp *c = expert_casts(o);
  ASSERT_NE(c, nullptr);
  const double h = 2048, fe = 768, k = 8;
  EXPECT_DOUBLE_EQ(c->fwd_bytes, 4 * k * (h + fe));
  EXPECT_DOUBLE_EQ(c->bwd_bytes, 4 * k * (2 * fe + h));
  EXPECT_EQ(c->region, Region::inner);
}

// Multi-token prediction (DeepSeek-V3, arXiv 2412.19437, Sec. 2.2): one module is a block of the
// model's MoE kind, a 2h x h projection and three RMSNorms (enorm, hnorm, its final norm); the
// embedding and head are shared. The model card's "685B = 671B main model + 14B MTP module"
// (figures rounded to whole billions) counts the module with the embedding and head copies stored
// with it (2 V h = 1.85B): 671.03B + 13.46B = 684.49B here.
TEST(MoeMla, MtpModuleAddsAnMoeBlockProjectionAndNorms) {
  ModelConfig m = load_model(test_paths::model_path("deepseek-v3"));
  const double h = 7168, V = 129280, fe = 2048;
  const double attn = mla_attention_params(h, 128, 1536, 512, 128, 64, 128);
  const double moe_block = attn + (256 + 1) * 3 * h * fe + 256 * h + 2 * h;
  const double base = parameter_count(m), base_active = active_parameter_count(m);
  m.mtp_layers = 1;
  const double with = parameter_count(m);
  EXPECT_DOUBLE_EQ(with - base, moe_block + 2 * h * h + 3 * h);
  EXPECT_DOUBLE_EQ(active_parameter_count(m) - base_active,
                   attn + (8 + 1) * 3 * h * fe + 256 * h + 2 * h + 2 * h * h + 3 * h);
  const double card = (with - base) + 2 * V * h; // as the model card counts the module
  EXPECT_NEAR(base + card, 685e9, 1e9);
  EXPECT_NEAR(card, 14e9, 1e9);
  // Megatron-LM's FLOPs with --mtp-num-layers 1: the block, 2 (3h + 2h^2) and one more logits
  // pass per token forward, times 3.
  ModelConfig base_m = m;
  base_m.mtp_layers = 0;
  ModelConfig plus_block = base_m; // the same model with its MTP block as a 62nd (MoE) layer
  plus_block.layers += 1;
  const double Vp = padded_vocabulary(V, 128, 1), B = 8, s = m.sequence;
  const double want = iteration_flops(plus_block, B, Vp, false, false).megatron +
                      3 * B * s * (2 * (3 * h + 2 * h * h) + 2 * h * Vp);
  EXPECT_NEAR(iteration_flops(m, B, Vp, false, false).megatron, want, 1e-12 * want);
}

// The MTP module runs on the last pipeline stage with the loss: that stage gets its block, the
// projection and a second head and loss; the other stages do not change.
TEST(MoeMla, MtpRunsOnTheLastStage) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-h100"));
  ModelConfig m = load_model(test_paths::model_path("deepseek-v2-lite"));
  m.sequence = 1024;
  Strategy s;
  s.dp = 4, s.pp = 3, s.ep = 4, s.zero = 1, s.micro_batch = 1, s.global_batch = 16;
  const auto off = run(Estimator(m, sys), s);
  m.mtp_layers = 1;
  const auto on = run(Estimator(m, sys), s);
  EXPECT_GT(on->time_s.iteration, off->time_s.iteration);
  EXPECT_EQ(on->slowest_stage, 2); // the last stage got the module
  EXPECT_GT(on->terms[3].seconds, 1.9 * off->terms[3].seconds); // two heads (and a projection)
  EXPECT_DOUBLE_EQ(on->terms[4].seconds, 2 * off->terms[4].seconds); // two losses
  EXPECT_GT(on->model_flops, off->model_flops);
  // the last stage holds the module (block, projection, norms) and a copy of the embedding
  // table for the shifted tokens' lookup (Megatron-Core shares it with the first stage's)
  EXPECT_GT(on->params_per_gpu, off->params_per_gpu + double(m.vocabulary) * m.hidden);
  // refused out of range, naming the field
  m.mtp_layers = -1;
  try {
    validate_model(m, "test");
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "mtp_layers");
  }
}

// The command line's overrides (--mtp-num-layers, --sliding-window, --window-attn-skip-freq) set
// the model fields; -1 keeps the YAML's, 0 turns the feature off.
TEST(MoeMla, MtpAndWindowOverrides) {
  ModelOverrides o;
  const ModelConfig kept = build_model(test_paths::model_path("gpt-oss-120b"), o);
  EXPECT_EQ(kept.sliding_window, 128);
  EXPECT_EQ(kept.windowed_layers(), 18);
  o.sliding_window = 0; // the YAML's window_skip_freq goes with its window
  EXPECT_EQ(build_model(test_paths::model_path("gpt-oss-120b"), o).windowed_layers(), 0);
  o.window_skip_freq = 2; // but a skip frequency given without a window is refused
  EXPECT_THROW(build_model(test_paths::model_path("gpt-oss-120b"), o), InputError);
  o = ModelOverrides{};
  o.window_skip_freq = 3; // blocks 3, 6, ..., 36 full: 24 of 36 windowed
  EXPECT_EQ(build_model(test_paths::model_path("gpt-oss-120b"), o).windowed_layers(), 24);
  o = ModelOverrides{};
  o.mtp_layers = 1;
  const ModelConfig v3 = build_model(test_paths::model_path("deepseek-v3"), o);
  EXPECT_EQ(v3.mtp_layers, 1);
  EXPECT_GT(parameter_count(v3), 671e9 + 11e9);
  o.mtp_layers = 65; // out of range: refused naming the field
  try {
    build_model(test_paths::model_path("deepseek-v3"), o);
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "mtp_layers");
  }
}

// gpt-oss's learnable softmax offsets (Megatron-Core's softmax_type learnable, the "attention
// sinks"): one parameter per head and block, split with the heads under TP; nothing else moves
// (the kernel is priced as the vanilla softmax's, the sinks save no activation). The YAML field
// softmax_type and the flag --softmax-type set it; an unknown name is refused naming the field.
TEST(MoeMla, LearnableSoftmaxAddsOneParameterPerHeadAndBlock) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-h100"));
  const ModelConfig oss = load_model(test_paths::model_path("gpt-oss-120b"));
  ASSERT_EQ(oss.softmax, Softmax::learnable);
  ModelOverrides o;
  o.softmax = "vanilla";
  const ModelConfig plain = build_model(test_paths::model_path("gpt-oss-120b"), o);
  EXPECT_EQ(plain.softmax, Softmax::vanilla);
  EXPECT_DOUBLE_EQ(parameter_count(oss) - parameter_count(plain), 36.0 * 64);
  EXPECT_DOUBLE_EQ(active_parameter_count(oss) - active_parameter_count(plain), 36.0 * 64);
  Strategy st;
  st.tp = 2, st.dp = 4, st.ep = 8, st.etp = 1, st.zero = 1, st.sp = true, st.micro_batch = 1;
  st.global_batch = 64;
  const auto with = run(Estimator(oss, sys), st);
  const auto without = run(Estimator(plain, sys), st);
  // stage 0 holds every block (pp 1): 36 blocks x 64 heads / tp 2 on each rank
  EXPECT_DOUBLE_EQ(with->params_per_gpu - without->params_per_gpu, 36.0 * 64 / 2);
  EXPECT_DOUBLE_EQ(with->terms[0].seconds, without->terms[0].seconds); // layer GEMMs
  EXPECT_DOUBLE_EQ(with->terms[1].seconds, without->terms[1].seconds); // attention
  // the optimizer's step over 1152 more parameters per rank: nanoseconds
  EXPECT_NEAR(with->time_s.compute, without->time_s.compute, 1e-8 * without->time_s.compute);
  EXPECT_DOUBLE_EQ(with->memory_bytes.activations, without->memory_bytes.activations);
  o.softmax = "off-by-one"; // Miller 2023: + 1 in the denominator, no parameters
  EXPECT_DOUBLE_EQ(parameter_count(build_model(test_paths::model_path("gpt-oss-120b"), o)),
                   parameter_count(plain));
  o.softmax = "sinks";
  try {
    build_model(test_paths::model_path("gpt-oss-120b"), o);
    FAIL();
  } catch (const InputError &e) {
    EXPECT_EQ(e.field(), "--softmax-type");
  }
  long line = 0;
  EXPECT_EQ(rejected_field("bad-softmax", "softmax_type: sink\n", &line), "softmax_type");
  EXPECT_EQ(line, 11); // write_model's 10 lines, then the extra field
}

// Transformer Engine's fused grouped expert MLP (--moe-fused-grouped-mlp; ops/fused/grouped_mlp.py,
// MXFP8 on SM 10.x): each expert GEMM pass is one kernel over the local experts, and the routed
// experts' gated activation (6 / 10 B per element of f_e per route, forward / backward), fc2's
// input cast (4 B per f_e) and fc1's output-gradient cast (4 B per element of the 2 f_e up
// output) run in the GEMMs' epilogues. Nothing moves without MXFP8; the block cache keys on it.
TEST(MoeMla, FusedGroupedMlpMovesTheActivationAndCastsIntoTheGemms) {
  ModelConfig m = load_model(test_paths::model_path("qwen3-30b-a3b"));
  m.fp8 = true;
  const ModelOps o = describe_model(m);
  const double k = m.top_k, fe = m.moe_ffn, phi = o.moe.fraction;
  double fused_fwd = 0, fused_bwd = 0;
  for (int i = 0; i < o.n_elementwise; ++i) {
    const ElementwiseOp &op = o.elementwise[i];
    const std::string what = op.what;
    if (what == "MoE permute, activation, router") {
      EXPECT_DOUBLE_EQ(op.fused_mlp_fwd, phi * 6 * k * fe);
      EXPECT_DOUBLE_EQ(op.fused_mlp_bwd, phi * 10 * k * fe);
    } else if (what == "FP8 casts (experts)") {
      EXPECT_DOUBLE_EQ(op.fused_mlp_fwd, phi * 4 * k * fe);
      EXPECT_DOUBLE_EQ(op.fused_mlp_bwd, phi * 4 * k * 2 * fe);
    } else {
      EXPECT_EQ(op.fused_mlp_fwd, 0) << what;
      EXPECT_EQ(op.fused_mlp_bwd, 0) << what;
    }
    EXPECT_LE(op.fused_mlp_fwd, op.fwd_bytes) << what;
    EXPECT_LE(op.fused_mlp_bwd, op.bwd_bytes) << what;
    fused_fwd += op.fused_mlp_fwd, fused_bwd += op.fused_mlp_bwd;
  }
  EXPECT_GT(fused_fwd, 0);
  EXPECT_GT(fused_bwd, 0);

  const Estimator est(m, load_system(test_paths::system_path("gb200-nvl72")));
  Strategy s;
  s.dp = 8, s.ep = 8, s.zero = 1, s.micro_batch = 4, s.global_batch = 512;
  s.fp8_recipe = Fp8Recipe::mxfp8;
  const auto unfused = run(est, s);
  s.moe_fused_grouped_mlp = true;
  const auto fused = run(est, s);
  EXPECT_LT(fused->terms[2].seconds, unfused->terms[2].seconds); // memory-bound (layers)
  EXPECT_LE(fused->terms[0].seconds, unfused->terms[0].seconds); // one kernel per pass
  EXPECT_EQ(fused->terms[1].seconds, unfused->terms[1].seconds); // attention
  EXPECT_EQ(fused->memory_bytes.total, unfused->memory_bytes.total);
  // under per-tensor FP8 Transformer Engine does not fuse: no effect
  s.fp8_recipe = Fp8Recipe::tensorwise;
  const auto cs_on = run(est, s);
  s.moe_fused_grouped_mlp = false;
  const auto cs_off = run(est, s);
  EXPECT_EQ(cs_on->time_s.iteration, cs_off->time_s.iteration);

  // search's block cache keys on the flag: alternating it through one cache gives the uncached
  // estimates
  const auto cache = std::make_unique<LayerCostCache>();
  s.fp8_recipe = Fp8Recipe::mxfp8;
  for (bool f : {false, true, false, true}) {
    s.moe_fused_grouped_mlp = f;
    Estimate cached;
    ASSERT_TRUE(est.evaluate_fitting(s, cached, cache.get()));
    EXPECT_EQ(cached.time_s.iteration, (f ? fused : unfused)->time_s.iteration);
  }
}

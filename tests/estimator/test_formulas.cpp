// Closed-form formulas against the papers' published numbers and hand-computed values.
#include "helpers.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/core/units.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace scalefit;
using namespace scalefit::estimator;

namespace {
ModelConfig gpt(int l, int h, int a, int s, int V) {
  ModelConfig m;
  m.attention = Attention::unfused; // the papers' (Korthikanti et al.) attention
  m.layers = l;
  m.hidden = h;
  m.heads = a;
  m.sequence = s;
  m.vocabulary = V;
  return m;
}
} // namespace

// Source: Cheng et al. 2024 (POMACS 8(1)), estimated FLOPs per sample, s = 1024, b = 1
// (validation.md section A): 0.6, 8.2, 16.5, 41.2, 79.9, 114.4 TFLOP.
TEST(Formulas, ChengFlopsPerSampleToATenthOfATflop) {
  struct Row {
    const char *file;
    double tflop;
  };
  for (Row r : {Row{"gpt-125m", 0.6},
                {"gpt-1.3b", 8.2},
                {"gpt-2.7b", 16.5},
                {"gpt-6.7b", 41.2},
                {"gpt-13b", 79.9},
                {"gpt-18.4b", 114.4}}) {
    const ModelConfig m = test_paths::load_unfused(test_paths::model_path(r.file));
    EXPECT_EQ(m.sequence, 1024) << r.file;
    EXPECT_NEAR(layer_flops_per_sample(m) * 1e-12, r.tflop, 0.05 + 1e-9) << r.file;
  }
}

// Source: Narayanan et al. 2021, Eq. 2: P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12lh)); ours adds the
// final LayerNorm (2h).
TEST(Formulas, ParameterCountIsNarayananEq2) {
  for (auto m : {gpt(24, 2304, 24, 2048, 51200), gpt(128, 25600, 160, 2048, 51200)}) {
    const double l = m.layers, h = m.hidden, V = m.vocabulary, s = m.sequence;
    const double eq2 = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
    EXPECT_NEAR(parameter_count(m) - 2 * h, eq2, eq2 * 1e-12);
  }
  // Table 1 of Narayanan et al.: 1.7B and 1T
  EXPECT_NEAR(parameter_count(gpt(24, 2304, 24, 2048, 51200)) * 1e-9, 1.7, 0.05);
  EXPECT_NEAR(parameter_count(gpt(128, 25600, 160, 2048, 51200)) * 1e-12, 1.0, 0.01);
}

// Source: Narayanan et al. 2021, Sec. 5.1: 72 B s l h^2 (1 + s/(6h) + V/(12lh)) without and
// 96 B s l h^2 (1 + s/(6h) + V/(16lh)) with full recomputation.
TEST(Formulas, IterationFlopsAreNarayanansFormulas) {
  const ModelConfig m = gpt(40, 6144, 48, 2048, 51200);
  const double B = 1024, s = 2048, l = 40, h = 6144, V = 51200;
  const double none = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  const double full = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  EXPECT_NEAR(iteration_flops(m, B, Recompute::none), none, none * 1e-12);
  EXPECT_NEAR(iteration_flops(m, B, Recompute::full), full, full * 1e-12);
  const double sel = iteration_flops(m, B, Recompute::selective);
  EXPECT_NEAR(sel - none, 4 * B * s * s * h * l, none * 1e-12);
}

// Source: Rajbhandari et al. 2020 (ZeRO), Figure 1: psi = 7.5B, K = 12, N_d = 64: 120, 31.4,
// 16.6, 1.9 GB per GPU.
TEST(Formulas, ZeroModelStatesMatchFigure1) {
  const double psi = 7.5e9;
  const double published[4] = {120, 31.4, 16.6, 1.9};
  for (int z = 0; z < 4; ++z) {
    const double gb = model_state_bytes(psi, z, 64, false).total() / 1e9;
    EXPECT_NEAR(std::round(gb * 10) / 10, published[z], 1e-9) << "ZeRO-" << z << ": " << gb;
  }
  // Megatron keeps fp32 gradients: 18 bytes per parameter (papers README).
  EXPECT_DOUBLE_EQ(model_state_bytes(1.0, 0, 1, true).total(), 18.0);
}

// Source: Korthikanti et al. 2022, Table 2 and the 22B model (h 6144, a 64, s 2048, b 4, t 8,
// l 48): activations 59.25 GiB (TP only) and 9.56 GiB (TP+SP+selective) on one GPU.
TEST(Formulas, KorthikantiActivationsPerLayer) {
  const ModelConfig m = gpt(48, 6144, 64, 2048, 51200);
  const double tp_only = activation_bytes_per_layer(m, 4, 8, false, Recompute::none) * 48 / kGiB;
  const double sp_sel = activation_bytes_per_layer(m, 4, 8, true, Recompute::selective) * 48 / kGiB;
  EXPECT_NEAR(tp_only, 59.25, 0.005);
  EXPECT_NEAR(sp_sel, 9.56, 0.005);
  // no parallelism: s b h (34 + 5 a s / h)
  const double s = 2048, b = 4, h = 6144, a = 64;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, 4, 1, false, Recompute::none),
                   s * b * h * (34 + 5 * a * s / h));
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, 4, 8, false, Recompute::full), 2 * s * b * h);
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, 4, 8, true, Recompute::full), 2 * s * b * h / 8);
}

// Source: Cheng et al. 2024, speedup = (r_cp + r_cm) / (r_cp + r_cm / eff).
TEST(Formulas, ChengSpeedup) {
  EXPECT_DOUBLE_EQ(cheng_speedup(1.0, 0.0, 0.5), 1.0);
  EXPECT_NEAR(cheng_speedup(0.5, 0.5, 0.5), 1.0 / 1.5, 1e-15);
  EXPECT_NEAR(cheng_speedup(0.7, 0.3, 0.89), 1.0 / (0.7 + 0.3 / 0.89), 1e-15);
}

// Megatron placement: TP innermost, then DP, then PP.
TEST(Formulas, GroupShapesFromGpusPerNode) {
  auto eq = [](CommGroup g, int n, int nodes, int rpn) {
    EXPECT_EQ(g.nranks, n);
    EXPECT_EQ(g.nnodes, nodes);
    EXPECT_EQ(g.ranks_per_node, rpn);
  };
  eq(group_shape(8, 1, 8), 8, 1, 8);    // TP 8 inside a DGX
  eq(group_shape(16, 8, 8), 16, 16, 1); // DP across 16 nodes after TP 8
  eq(group_shape(8, 2, 8), 8, 2, 4);    // DP 8 after TP 2: 4 per node, 2 nodes
  eq(group_shape(4, 2, 8), 4, 1, 4);    // DP 4 after TP 2: one node
  eq(group_shape(2, 4, 4), 2, 2, 1);    // PP neighbours on Polaris after tp*dp = 4
}

// Calculon's network model with our tiers, hand-computed: 8-rank AllReduce of 100 MB inside a
// DGX A100: 20 us + 1e8 * 1.75 / (277.6e3 * 0.85) us; across 2 nodes with 1 rank per node the
// node's 200 GB/s NICs are shared by 8 such groups.
TEST(Formulas, SpecCurvesHandComputed) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-a100-80gb"));
  const SpecCommModel c(sys);
  const CommPrice intra = c.price(Op::allreduce, group_shape(8, 1, 8), 1e8);
  EXPECT_NEAR(intra.time_us, 20 + 1e8 * 1.75 / (277.6e3 * 0.85), 1e-6);
  EXPECT_EQ(c.source_name(intra.source), "spec:intra");
  const CommPrice inter = c.price(Op::allreduce, group_shape(2, 8, 8), 1e8);
  EXPECT_NEAR(inter.time_us, 30 + 1e8 * 1.0 / (200e3 * 0.9 / 8), 1e-6);
  EXPECT_EQ(c.source_name(inter.source), "spec:inter");
  EXPECT_EQ(c.price(Op::allreduce, group_shape(1, 1, 8), 1e8).time_us, 0.0);
}

// AllToAll across nodes: a rank's data is its own, so what leaves for the other nodes goes
// through the rank's share of the NICs (200 GB/s x 0.9 / 8 GPUs), not the node's whole NICs as a
// ring AllGather's does. 16 ranks on 2 nodes: half of each rank's buffer crosses, the rest rides
// NVLink at the same time.
TEST(Formulas, SpecAllToAllAcrossNodesUsesTheRanksNicShare) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-a100-80gb"));
  const SpecCommModel c(sys);
  const CommGroup g = group_shape(16, 1, 8);
  ASSERT_EQ(g.nnodes, 2);
  ASSERT_EQ(g.ranks_per_node, 8);
  for (Op op : {Op::alltoall, Op::alltoallv}) {
    const CommPrice a2a = c.price(op, g, 1e8);
    EXPECT_NEAR(a2a.time_us, 30 + 1e8 * (8.0 / 16) / (200e3 * 0.9 / 8), 1e-6);
    EXPECT_EQ(c.source_name(a2a.source), "spec:inter");
  }
  // the ring collectives of the same group keep the node's NICs together
  const CommPrice ag = c.price(Op::allgather, g, 1e8);
  EXPECT_NEAR(ag.time_us, 30 + 1e8 * (15.0 / 16) / (200e3 * 0.9), 1e-6);
  // inside one node nothing changes: NVLink
  EXPECT_NEAR(c.price(Op::alltoall, group_shape(8, 1, 8), 1e8).time_us,
              20 + 1e8 * (7.0 / 8) / (277.6e3 * 0.85), 1e-6);
}

// Cheng et al. 2024: with compute unchanged and no overlap, t_iter(g)/t_iter(n) is exactly
// (r_cp + r_cm)/(r_cp + r_cm/eff) with eff = t_comm(g)/t_comm(n).
TEST(Formulas, WeakScalingFollowsChengsSpeedup) {
  const Estimator est(test_paths::load_unfused(test_paths::model_path("gpt-6.7b")),
                      load_system(test_paths::system_path("polaris")));
  Strategy s;
  s.dp = 8, s.tp = 4, s.global_batch = 64, s.overlap_dp = false;
  Estimate at_g;
  est.evaluate(s, at_g);
  const Scaling r = scale_layout(est, s, at_g, 128);
  EXPECT_EQ(r.at_n.dp, 32);
  EXPECT_EQ(r.at_n.batch(), 256);
  EXPECT_LT(r.network_efficiency, 1.0); // 8 -> 32 nodes sharing 25 GB/s NICs
  EXPECT_NEAR(r.iteration_ratio, r.predicted_ratio, 1e-9);
  EXPECT_NEAR(r.scaling_efficiency, r.iteration_ratio, 1e-9);
  EXPECT_THROW(scale_layout(est, s, at_g, 130), InputError);
}

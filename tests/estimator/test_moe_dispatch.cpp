// Issue 16, token dispatch: how an MoE block's tokens reach their experts and how much of it
// hides. The dispatchers (all-to-all, all-gather, DeepEP and HybridEP with their node dedup)
// and the overlaps (shared experts, Megatron-Core's EP all-to-all overlap), priced on DGX H100.
#include "helpers.hpp"

#include "../../estimator/src/detail.hpp" // a2a_pairs_hidden
#include "scalefit/estimator/report.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

using namespace scalefit;
using namespace scalefit::estimator;
using test_run::run;

// Megatron-Core's --moe-shared-expert-overlap (Strategy::moe_shared_expert_overlap, off by
// default): per MoE block and direction the dispatch and combine all-to-alls hide behind the
// shared experts' GEMMs, times the system's overlap efficiency, and no more. DeepSeek-V2-Lite
// (2 shared experts) with EP 8 on one DGX-H100 node.
TEST(MoeMla, SharedExpertOverlapHidesDispatchBehindTheSharedExperts) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-h100"));
  const ModelConfig m = load_model(test_paths::model_path("deepseek-v2-lite"));
  const Estimator est(m, sys);
  Strategy s;
  s.dp = 8, s.ep = 8, s.zero = 1, s.micro_batch = 1, s.global_batch = 64;
  const auto off = run(est, s);
  s.moe_shared_expert_overlap = true;
  const auto on = run(est, s);
  ASSERT_GT(off->comm_ep_s, 0);
  EXPECT_DOUBLE_EQ(on->comm_ep_s, off->comm_ep_s); // the traffic is the same
  EXPECT_DOUBLE_EQ(on->time_s.compute, off->time_s.compute);
  const double hidden = on->time_s.overlap - off->time_s.overlap;
  EXPECT_GT(hidden, 0);
  EXPECT_NEAR(on->time_s.iteration, off->time_s.iteration - hidden, 1e-9 * off->time_s.iteration);
  // at most the all-to-all time, times the overlap efficiency
  EXPECT_LE(hidden, sys.overlap_efficiency * off->comm_ep_s * (1 + 1e-12));
  // the bound by the shared experts' GEMMs: without shared experts nothing is hidden
  ModelConfig no_shared = m;
  no_shared.shared_experts = 0;
  const Estimator est0(no_shared, sys);
  s.moe_shared_expert_overlap = false;
  const auto off0 = run(est0, s);
  s.moe_shared_expert_overlap = true;
  const auto on0 = run(est0, s);
  EXPECT_DOUBLE_EQ(on0->time_s.iteration, off0->time_s.iteration);
}

// Megatron-Core's all-gather token dispatcher (--moe-token-dispatcher-type allgather): per MoE
// block and direction one AllGather and one ReduceScatter of the ep x etp ranks' hidden states,
// each token once (no factor k), instead of the all-to-alls of the k routed copies.
TEST(MoeMla, AllGatherDispatcherMovesEachTokenOnce) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-h100"));
  const ModelConfig m = load_model(test_paths::model_path("qwen3-30b-a3b"));
  const Estimator est(m, sys);
  Strategy s;
  s.dp = 8, s.ep = 2, s.zero = 1, s.micro_batch = 1, s.global_batch = 64;
  const auto a2a = run(est, s);
  s.moe_dispatcher = MoeDispatcher::allgather;
  const auto ag = run(est, s);
  const double T = double(m.sequence), h = m.hidden, el = 2;
  int n_ag = 0, n_rs = 0;
  for (int i = 0; i < ag->n_messages; ++i) {
    const Message &msg = ag->messages[static_cast<std::size_t>(i)];
    if (msg.by != Parallelism::ep)
      continue;
    EXPECT_NE(msg.op, Op::alltoall);
    EXPECT_DOUBLE_EQ(msg.bytes, 2 * T * h * el); // ep x tokens x h, each token once
    EXPECT_EQ(msg.group.nranks, 2);
    // per micro-batch and MoE block: one forward and one backward each
    EXPECT_DOUBLE_EQ(msg.count, 2.0 * m.moe_layers() * 8);
    (msg.op == Op::allgather ? n_ag : n_rs) += 1;
  }
  EXPECT_EQ(n_ag, 1);
  EXPECT_EQ(n_rs, 1);
  // k = 8 copies through the all-to-alls against one gathered copy: less EP traffic here
  EXPECT_LT(ag->comm_ep_s, a2a->comm_ep_s);
  // the same GEMMs; the all-to-all dispatcher also sorts its 64 local experts' rows
  EXPECT_DOUBLE_EQ(ag->terms[0].seconds, a2a->terms[0].seconds);
  EXPECT_LT(ag->terms[2].seconds, a2a->terms[2].seconds);
}

// DeepEP and HybridEP send a token across to a node once however many of its k experts live
// there: with EP 16 over two DGX nodes (64 of Qwen3-30B-A3B's 128 experts per node, k = 8) a token
// crosses once (unless all 8 experts are local: C(64,8)/C(128,8)) where the all-to-all sends 4 of
// its 8 copies across. Inside one node there is nothing to save.
TEST(MoeMla, NodeDedupDispatchersCrossOncePerNode) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-h100"));
  const ModelConfig m = load_model(test_paths::model_path("qwen3-30b-a3b"));
  const Estimator est(m, sys);
  const auto ep_bytes = [](const Estimate &e) {
    for (int i = 0; i < e.n_messages; ++i)
      if (e.messages[static_cast<std::size_t>(i)].by == Parallelism::ep)
        return e.messages[static_cast<std::size_t>(i)].bytes;
    return 0.0;
  };
  Strategy s;
  s.dp = 16, s.ep = 16, s.zero = 1, s.micro_batch = 1, s.global_batch = 64;
  const auto a2a = run(est, s);
  double none = 1; // C(64, 8) / C(128, 8)
  for (int i = 0; i < 8; ++i)
    none *= (64.0 - i) / (128.0 - i);
  const double expected = (1 - none) / (8 * 0.5);
  for (MoeDispatcher d : {MoeDispatcher::deepep, MoeDispatcher::hybridep}) {
    s.moe_dispatcher = d;
    const auto e = run(est, s);
    EXPECT_NEAR(ep_bytes(*e) / ep_bytes(*a2a), expected, 1e-12) << moe_dispatcher_name(d);
    EXPECT_LT(e->comm_ep_s, 0.3 * a2a->comm_ep_s);
    // the same GEMMs; the all-to-all dispatcher also sorts its 8 local experts' rows
    EXPECT_DOUBLE_EQ(e->terms[0].seconds, a2a->terms[0].seconds);
    EXPECT_LT(e->terms[2].seconds, a2a->terms[2].seconds);
  }
  s.dp = 8, s.ep = 8; // one node
  s.moe_dispatcher = MoeDispatcher::alltoall;
  const auto one_a2a = run(est, s);
  s.moe_dispatcher = MoeDispatcher::deepep;
  EXPECT_DOUBLE_EQ(ep_bytes(*run(est, s)), ep_bytes(*one_a2a));
  EXPECT_EQ(std::string(moe_dispatcher_name(*parse_moe_dispatcher("hybridep"))), "hybridep");
  EXPECT_FALSE(parse_moe_dispatcher("flex"));
}

// Megatron-Core's EP A2A overlap (--overlap-moe-expert-parallel-comm): adjacent micro-batches'
// forward and backward merged, one's dispatch/combine behind the other's compute. The same
// traffic, hidden pair by pair (a2a_pairs_hidden: each all-to-all behind one compute step of the
// other micro-batch), never more than the blocks' compute, times the system's overlap
// efficiency.
TEST(MoeMla, ExpertParallelA2AOverlapHidesTheAllToAlls) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-h100"));
  const Estimator est(load_model(test_paths::model_path("qwen3-30b-a3b")), sys);
  Strategy s;
  s.dp = 16, s.ep = 16, s.zero = 1, s.micro_batch = 1, s.global_batch = 64;
  const auto plain = run(est, s);
  s.moe_a2a_overlap = true;
  const auto hidden = run(est, s);
  EXPECT_DOUBLE_EQ(hidden->comm_ep_s, plain->comm_ep_s);
  EXPECT_DOUBLE_EQ(hidden->time_s.communication, plain->time_s.communication);
  // hidden: the all-to-alls up to the blocks' compute (GEMMs, attention, element-wise), at the
  // system's efficiency
  const double blocks = plain->terms[0].seconds + plain->terms[1].seconds + plain->terms[2].seconds;
  const double gained = hidden->time_s.overlap - plain->time_s.overlap;
  EXPECT_GT(gained, 0.5 * sys.overlap_efficiency * std::min(plain->comm_ep_s, blocks));
  EXPECT_LE(gained, sys.overlap_efficiency * std::min(plain->comm_ep_s, blocks) * (1 + 1e-12));
  EXPECT_LT(hidden->time_s.iteration, plain->time_s.iteration);
}

// The pairs of Megatron-Core's schedule_layer_1f1b, each all-to-all behind one compute step of
// the other micro-batch: combine (bwd) | attention (fwd), dispatch (fwd) | MLP (bwd), dispatch
// (bwd) | MLP (fwd), combine (fwd) | attention (bwd).
TEST(MoeMla, A2AOverlapHidesEachAllToAllBehindItsPartner) {
  // all-to-alls of 1 s: the forward attention (0.5 s) and the backward MLP (0.8 s) hide only
  // what they last, the forward MLP and backward attention a whole all-to-all each
  EXPECT_DOUBLE_EQ(a2a_pairs_hidden(1.0, 0.5, 1.5, 2.0, 0.8), 0.5 + 0.8 + 1.0 + 1.0);
  // short all-to-alls hide whole, four per block
  EXPECT_DOUBLE_EQ(a2a_pairs_hidden(0.1, 0.5, 1.5, 2.0, 0.8), 0.4);
  // long ones hide the block's compute, both passes
  EXPECT_DOUBLE_EQ(a2a_pairs_hidden(9.0, 0.5, 1.5, 2.0, 0.8), 0.5 + 1.5 + 2.0 + 0.8);
  EXPECT_DOUBLE_EQ(a2a_pairs_hidden(0.0, 0.5, 1.5, 2.0, 0.8), 0.0);
}

// The estimate says when dropless routing makes the host wait once per MoE block, and how much
// GPU compute one block and micro-batch gives it to hide behind: the layer terms (GEMMs,
// attention, memory-bound) of the slowest stage over its blocks and micro-batches. Padding to a
// capacity removes the wait; a larger micro-batch gives each block more GPU work.
TEST(MoeMla, EstimateNamesTheHostSyncPerMoeBlockAndTheGpuWorkPerBlock) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-h100"));
  ModelConfig m = load_model(test_paths::model_path("qwen3-30b-a3b"));
  Strategy s;
  s.dp = 8, s.ep = 8, s.zero = 1, s.micro_batch = 1, s.global_batch = 64;
  const Estimator est(m, sys);
  const auto e1 = run(est, s);
  const nlohmann::json j1 = estimate_json(est, s, *e1);
  EXPECT_TRUE(j1.at("host_sync_per_moe_block").get<bool>());
  const double per_block = (e1->terms[0].seconds + e1->terms[1].seconds + e1->terms[2].seconds) /
                           (m.layers * e1->micro_batches);
  EXPECT_DOUBLE_EQ(j1.at("block_compute_s").get<double>(), per_block);
  EXPECT_NE(estimate_table(est, s, *e1).find("one synchronize per block in the forward"),
            std::string::npos);
  s.micro_batch = 2;
  const auto e2 = run(est, s);
  const double per_block2 = estimate_json(est, s, *e2).at("block_compute_s").get<double>();
  EXPECT_GT(per_block2, 1.5 * per_block);
  m.capacity_factor = 1.0;
  m.pad_to_capacity = true;
  const Estimator padded(m, sys);
  const auto ep = run(padded, s);
  EXPECT_FALSE(estimate_json(padded, s, *ep).at("host_sync_per_moe_block").get<bool>());
  EXPECT_EQ(estimate_table(padded, s, *ep).find("one synchronize per block"), std::string::npos);
}

// Blockwise FP8 on a device without block-scaled tensor cores (Hopper) is priced as per-tensor
// FP8, and the estimate says so and what Megatron-LM's measured H100 MoE layers show; on a
// Blackwell device (block-scaled FP8) and under the other recipes it says nothing of the kind.
TEST(MoeMla, BlockwiseFp8OnHopperSaysItIsPricedAsPerTensorFp8) {
  ModelConfig m = load_model(test_paths::model_path("qwen3-30b-a3b"));
  m.fp8 = true;
  Strategy s;
  s.dp = 8, s.ep = 8, s.zero = 1, s.micro_batch = 1, s.global_batch = 64;
  s.fp8_recipe = Fp8Recipe::blockwise;
  const std::string note = "priced as per-tensor FP8 GEMMs";
  const Estimator h100(m, load_system(test_paths::system_path("dgx-h100")));
  EXPECT_NE(estimate_table(h100, s, *run(h100, s)).find(note), std::string::npos);
  const Estimator gb200(m, load_system(test_paths::system_path("gb200-nvl72")));
  EXPECT_EQ(estimate_table(gb200, s, *run(gb200, s)).find(note), std::string::npos);
  s.fp8_recipe = Fp8Recipe::tensorwise;
  EXPECT_EQ(estimate_table(h100, s, *run(h100, s)).find(note), std::string::npos);
}

// Megatron-Core's all-to-all dispatcher sorts the received rows by local expert and back
// (sort_chunks_by_idxs) when a rank holds more than one expert: two more reads and writes of the
// rank's routed rows each way, as memory-bound kernels of the block, forward and backward. One
// expert per rank, or a flex dispatcher (DeepEP, HybridEP: one permutation), adds none; the GEMMs
// do not move.
TEST(MoeMla, AlltoallDispatcherSortsTheRowsOfSeveralLocalExperts) {
  const SystemConfig sys = load_system(test_paths::system_path("dgx-h100"));
  const ModelConfig m = load_model(test_paths::model_path("qwen3-30b-a3b"));
  const Estimator est(m, sys);
  Strategy s;
  s.dp = 8, s.ep = 8, s.zero = 1, s.micro_batch = 1, s.global_batch = 64; // 16 local experts
  const auto a2a = run(est, s);
  s.moe_dispatcher = MoeDispatcher::deepep;
  const auto deepep = run(est, s);
  EXPECT_DOUBLE_EQ(a2a->terms[0].seconds, deepep->terms[0].seconds); // GEMMs
  // the sort's bytes: 2 kernels x (read + write) x 2 B x h x k T routed rows x 2 directions
  const double h = m.hidden, rows = m.top_k * double(m.sequence), blocks = m.layers;
  const double bytes = 2 * 2 * 2 * h * rows;
  const double per_kernel = bytes / 2;
  const double hbm = sys.device.hbm_gbps * 1e9 * sys.device.hbm_efficiency.at(per_kernel * 1e-6) *
                     sys.device.sustained_efficiency;
  const double sort_s = 2 * (2 * (per_kernel / hbm + sys.device.kernel_launch_us * 1e-6));
  EXPECT_NEAR(a2a->terms[2].seconds - deepep->terms[2].seconds,
              blocks * a2a->micro_batches * sort_s, 1e-9);
  // and the estimate says so, for the all-to-all dispatcher only
  s.moe_dispatcher = MoeDispatcher::alltoall;
  EXPECT_NE(estimate_table(est, s, *a2a)
                .find("token sort: the all-to-all dispatcher sorts the "
                      "32768 received rows"),
            std::string::npos);
  s.moe_dispatcher = MoeDispatcher::deepep;
  EXPECT_EQ(estimate_table(est, s, *deepep).find("token sort"), std::string::npos);
  // one expert per rank: no sort
  ModelConfig one = m;
  one.experts = 8;
  const Estimator est1(one, sys);
  s.moe_dispatcher = MoeDispatcher::alltoall;
  const auto a = run(est1, s);
  s.moe_dispatcher = MoeDispatcher::deepep;
  EXPECT_DOUBLE_EQ(a->terms[2].seconds, run(est1, s)->terms[2].seconds);
}

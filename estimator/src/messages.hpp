// The messages of one evaluation (internal to the estimator: schedule.cpp prices and records
// them; dp_cost.cpp prices data parallelism's).
#pragma once

#include "detail.hpp"
#include "scalefit/estimator/estimator.hpp"

namespace scalefit::estimator {

/// Prices messages (remembering the prices of one evaluation: stages and the recording pass ask
/// for the same (op, group, bytes) again) and records them into an Estimate (up to kMaxMessages
/// kinds) when `record` is set.
struct MessageSink {
  MessageSink(const CommModel &c, Estimate &est) : comm(c), e(est) {}
  const CommModel &comm;
  Estimate &e;
  bool record = false;
  // Trivial members only: the cache is never zero-filled (evaluate() runs a million times a
  // second).
  struct Seen {
    Op op;
    int nranks, nnodes, ranks_per_node;
    double bytes, time_us;
    int source;
    bool extrapolated;
  };
  static constexpr int kCache = 32;
  Seen seen[kCache];
  int n_seen = 0;
  CommPrice price(Op op, const CommGroup &g, double bytes) {
    for (int i = 0; i < n_seen; ++i) {
      const Seen &c = seen[i];
      if (c.op == op && c.bytes == bytes && c.nranks == g.nranks && c.nnodes == g.nnodes &&
          c.ranks_per_node == g.ranks_per_node) {
        CommPrice p;
        p.time_us = c.time_us;
        p.source = c.source;
        p.extrapolated = c.extrapolated;
        return p;
      }
    }
    const CommPrice p = comm.price(op, g, bytes);
    if (n_seen < kCache)
      seen[n_seen++] = Seen{op,    g.nranks,  g.nnodes, g.ranks_per_node,
                            bytes, p.time_us, p.source, p.extrapolated};
    return p;
  }
  /// Time of `count` operations of `bytes` on `g` [s]; records the message kind when recording.
  double add(Op op, Parallelism by, const char *what, double bytes, const CommGroup &g,
             double count) {
    if (count <= 0 || bytes <= 0 || g.nranks <= 1)
      return 0.0;
    const CommPrice pr = price(op, g, bytes);
    if (record && e.n_messages < kMaxMessages) {
      Message &msg = e.messages[e.n_messages++];
      msg.op = op;
      msg.by = by;
      msg.what = what;
      msg.bytes = bytes;
      msg.group = g;
      msg.count = count;
      msg.time_us = pr.time_us;
      msg.source = pr.source;
      msg.extrapolated = pr.extrapolated;
    }
    return count * pr.time_us * 1e-6;
  }
  /// Time of one operation [s].
  double one(Op op, const CommGroup &g, double bytes) {
    return bytes > 0 && g.nranks > 1 ? price(op, g, bytes).time_us * 1e-6 : 0.0;
  }
};

/// The communicators of data parallelism: all `ranks` holding the same weights, a shard group
/// of `shard` ranks, its replicas.
struct DpGroups {
  CommGroup all, shard, replicas;
  int ranks = 1, shard_ranks = 1;
};

/// DP / ZeRO / FSDP communication of one stage and the part hidden behind compute [s].
struct DpCost {
  double total = 0, hidden = 0;
};

/// The data-parallel messages of a stage holding `params` parameters (one TP rank), over the
/// dp*cp ranks that hold the same weights (Megatron reduces gradients over DP x CP), in shard
/// groups of s.shard_ranks() with replicas across them (HSDP). `fwd_mb` and `bwd_mb` are one
/// micro-batch's forward and backward on the stage; `layers` its blocks. `el` is the bytes of a
/// gradient element, `pel` the mean bytes per parameter the parameter all-gathers move (below
/// `el` with FP8 parameters).
/// Sources: PyTorch DDP buckets (Li et al. 2020); ZeRO stages (Rajbhandari et al. 2020); Megatron's
/// distributed optimizer (reduce-scatter gradient buckets in the last micro-batch's backward,
/// all-gather parameters after the step, or behind the next forward with --overlap-param-gather);
/// FSDP (Zhao et al. 2023: per-unit all-gather forward and backward, reduce-scatter, prefetch).
DpCost dp_cost(MessageSink &out, const Strategy &st, const DpGroups &groups, double params,
               double el, double pel, double layers, int m, double fwd_mb, double bwd_mb);

/// Data parallelism of one layout (dp_cost.cpp): the dense and the expert communicators
/// (Megatron placement: the dp x cp ranks of a TP group, stride tp; the experts' over the
/// expert-data-parallel ranks, stride etp x ep, as Megatron-Core's expert mesh) and the bytes
/// per parameter the parameter all-gathers move (FP8 weight matrices with --fp8-param-gather).
class DataParallel {
public:
  /// `st` the layout (kept by reference: it must outlive this), `md` the model (FP8 or not),
  /// `gpus_per_node` for the groups' shapes, `el` bytes per gradient and parameter element of
  /// the model's dtype (2 for bf16/fp16). Throws nothing.
  DataParallel(const Strategy &st, const ModelConfig &md, int gpus_per_node, double el);
  /// DP / ZeRO / FSDP time of stage `c` per iteration [s] and the part hidden behind compute,
  /// scaled by `overlap_efficiency`; messages recorded when `sink.record` is set. `m`: micro-
  /// batches per iteration.
  DpCost stage(MessageSink &sink, const StageCost &c, int m, double overlap_efficiency) const;

private:
  double gather_el(const StageCost &c) const;
  const Strategy &m_st;
  DpGroups m_dense, m_experts;
  double m_el = 2;
  bool m_fp8_params = false;
};

/// The per-micro-batch messages of a pipeline stage (stage_comm.cpp): TP (AllReduce, or with SP
/// AllGather and ReduceScatter; Korthikanti et al. 2022), CP (Megatron-Core's ring attention),
/// PP (stage boundaries, forward and backward), EP (MoE token dispatch and combine: all-to-all or
/// the all-gather dispatcher), FP8 delayed scaling's amax all-reduces (never hidden) and
/// activation offloading over the host link, and what compute
/// hides of each (TP behind the GEMM each collective feeds, Transformer Engine's userbuffers;
/// CP behind an attention chunk; EP behind the shared experts or the adjacent micro-batch; the
/// offload copies beside the blocks), scaled by the system's overlap efficiency. Built once per
/// layout (the unit prices, the hiding limits); `price` then serves every stage kind.
class StageComm {
public:
  /// `lc`: one block of a micro-batch, priced; `z`: the layout's sizes. Prices through `sink`.
  StageComm(MessageSink &sink, const Strategy &st, const LayoutSizes &z, const ModelConfig &md,
            const ModelOps &o, const LayerCost &lc, const ComputePricer &P,
            const SystemConfig &sys);
  /// Sets c.comm and c.comm_hidden (one micro-batch [s]) and the estimate's per-parallelism
  /// totals per iteration (comm_tp_s, comm_cp_s, comm_pp_s, comm_ep_s, comm_offload_s: those of
  /// the stage priced last); records the stage's messages when `record`.
  void price(StageCost &c, bool record);

private:
  MessageSink &sink;
  const Strategy &st;
  const ModelOps &o;
  const LayerCost &lc;
  bool sp;
  int m, p;
  double v, cp;
  CommGroup g_tp, g_cp, g_pp, g_ep, g_epg, g_amax;
  bool amax_reduce = false; ///< FP8 delayed scaling: amax all-reduces per model chunk
  double tp_bytes = 0, kv_bytes = 0, pp_bytes = 0, ep_bytes = 0, ag_bytes = 0;
  double cp_f = 0, cp_b = 0, cp_hidden_f = 0, cp_hidden_b = 0, ov = 0;
  double tp_hide_block = 0, tp_hide_rec = 0;
  double u_ag = 0, u_rs = 0, u_ar = 0, u_pp = 0, u_ep = 0, u_agd = 0, u_rsd = 0;
  double ep_hide_f = 0, ep_hide_b = 0, off_xfer = 0;
};

} // namespace scalefit::estimator

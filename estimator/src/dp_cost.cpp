// Data parallelism's messages for one pipeline stage: DDP buckets, ZeRO-1/2 reduce-scatter and
// all-gather, ZeRO-3 / FSDP per-block gathers, HSDP replicas (messages.hpp).
#include "messages.hpp"

#include <algorithm>
#include <cmath>

namespace scalefit::estimator {

DpCost dp_cost(MessageSink &out, const Strategy &st, const DpGroups &groups, double params,
               double el, double pel, double layers, int m, double fwd_mb, double bwd_mb) {
  DpCost r;
  const int ranks = groups.ranks;
  if (ranks <= 1 || params <= 0)
    return r;
  const int shard = groups.shard_ranks;
  const int replicas = ranks / shard;
  const CommGroup &all = groups.all, &g = groups.shard, &rep = groups.replicas;
  const double bucket = std::max(1.0, st.bucket_bytes);
  const double grad_el = st.fp32_grads ? 4.0 : el;
  const double grad_bytes = params * grad_el;
  // Buckets of `total` bytes `times` per iteration, each moving `part` of its bytes (1; an HSDP
  // replica AllReduce moves the bucket's shard, 1 / shard): time, and the last bucket's time.
  auto buckets = [&](Op op, Parallelism by, const char *what, double total, double times,
                     const CommGroup &grp, double &last_s, double part = 1.0) {
    const double full = std::floor(total / bucket);
    const double rest = total - full * bucket;
    double time = out.add(op, by, what, part * bucket, grp, full * times);
    const double t_rest = out.add(op, by, what, part * rest, grp, times);
    time += t_rest;
    last_s = rest > 0 ? t_rest / times : (full > 0 ? out.one(op, grp, part * bucket) : 0);
    return time;
  };
  double last = 0;
  if (st.zero == 0) {
    const double tc =
        buckets(Op::allreduce, Parallelism::dp, "gradient buckets", grad_bytes, 1, all, last);
    r.total += tc;
    if (st.overlap_dp)
      r.hidden += std::min(tc - last, bwd_mb);
    return r;
  }
  // HSDP: the replicas' gradients meet on the reduced shard, one AllReduce across the replica
  // group right after each reduce-scatter, on the same stream and in the same backward window:
  // PyTorch FSDP HYBRID_SHARD all-reduces each unit's sharded gradient over its inter-node group
  // in the unit's post-backward hook (torch/distributed/fsdp/_runtime_utils.py, _reduce_grad);
  // Megatron-Core's distributed optimizer instances all-reduce each bucket's shard after its
  // reduce-scatter (distributed_data_parallel / param_and_grad_buffer start_grad_sync).
  if (st.zero <= 2) {
    const double times = st.zero == 1 ? 1 : m;
    double tc =
        buckets(Op::reducescatter, Parallelism::zero,
                st.zero == 1 ? "gradient buckets" : "gradient buckets (per micro-batch)",
                grad_bytes, times, g, last);
    if (replicas > 1) {
      double last_ar = 0;
      tc += buckets(Op::allreduce, Parallelism::zero, "gradient bucket shards (across replicas)",
                    grad_bytes, times, rep, last_ar, 1.0 / shard);
      last += last_ar; // the last bucket's reduce-scatter and all-reduce follow the last backward
    }
    r.total += tc;
    if (st.overlap_dp)
      r.hidden += times * std::min(tc / times - last, bwd_mb);
    double first = 0;
    const double ag =
        buckets(Op::allgather, Parallelism::zero, "updated parameters", params * pel, 1, g, first);
    r.total += ag;
    if (st.overlap_param_gather) // behind the next iteration's first forward, bucket by bucket
      r.hidden += std::min(ag - first, fwd_mb);
    return r;
  }
  // ZeRO-3 / FSDP full shard: gather each block's parameters for forward and again for
  // backward, reduce-scatter its gradients, every micro-batch; prefetch hides all but the first.
  const double n = m * layers;
  const double layer_bytes = params / std::max(1.0, layers) * pel;
  const double t_agf =
      out.add(Op::allgather, Parallelism::zero, "layer parameters (forward)", layer_bytes, g, n);
  const double t_agb =
      out.add(Op::allgather, Parallelism::zero, "layer parameters (backward)", layer_bytes, g, n);
  const double layer_grad = params / std::max(1.0, layers) * grad_el;
  const double t_rs =
      out.add(Op::reducescatter, Parallelism::zero, "layer gradients", layer_grad, g, n);
  const double t_ar = replicas > 1 ? out.add(Op::allreduce, Parallelism::zero,
                                             "layer gradient shards (across replicas)",
                                             layer_grad / shard, rep, n)
                                   : 0.0;
  r.total += t_agf + t_agb + t_rs + t_ar;
  if (st.overlap_dp && n > 0) {
    // exposed: one unit's collective each way; with HSDP also the last unit's AllReduce
    const double one = t_agf / n;
    r.hidden += m * std::min(t_agf / m - one, fwd_mb) +
                m * std::min((t_agb + t_rs + t_ar) / m - one - t_ar / n, bwd_mb);
  }
  return r;
}

DataParallel::DataParallel(const Strategy &st, const ModelConfig &md, int gpn, double el)
    : m_st(st), m_el(el), m_fp8_params(md.fp8 && st.fp8_param_gather) {
  const int ranks = st.dp * st.cp;
  const int shard = st.zero >= 1 ? st.shard_ranks() : ranks;
  m_dense.all = group_shape(ranks, st.tp, gpn);
  m_dense.shard = group_shape(shard, st.tp, gpn);
  m_dense.replicas = group_shape(ranks / shard, st.tp * shard, gpn);
  m_dense.ranks = ranks;
  m_dense.shard_ranks = shard;
  // Experts: their gradients meet over the expert-data-parallel ranks (stride etp x ep), and
  // ZeRO shards their states there (Megatron-Core's expert mesh).
  const int edp = st.expert_dp();
  m_experts.all = m_experts.shard = group_shape(edp, st.expert_tp() * st.ep, gpn);
  m_experts.ranks = m_experts.shard_ranks = edp;
}

// Bytes per parameter the ZeRO / FSDP parameter all-gathers move: the weight matrices in FP8
// with --fp8-param-gather (1 B), the rest in the model's dtype.
double DataParallel::gather_el(const StageCost &c) const {
  return m_fp8_params && c.params > 0
             ? (c.matrix_params + (c.params - c.matrix_params) * m_el) / c.params
             : m_el;
}

DpCost DataParallel::stage(MessageSink &sink, const StageCost &c, int m, double ov) const {
  DpCost r = dp_cost(sink, m_st, m_dense, c.params, m_el, gather_el(c), c.layers, m, c.fwd, c.bwd);
  if (c.expert_params > 0) {
    const DpCost x = dp_cost(sink, m_st, m_experts, c.expert_params, m_el,
                             m_fp8_params ? 1.0 : m_el, c.layers, m, c.fwd, c.bwd);
    r.total += x.total;
    r.hidden += x.hidden;
  }
  r.hidden = ov * std::max(0.0, r.hidden);
  return r;
}

} // namespace scalefit::estimator

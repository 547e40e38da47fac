// Step 4, memory: per-GPU memory of each pipeline stage kind from the same operations and
// shards the time uses; the estimate reports the stage that needs the most.
#include "detail.hpp"

#include "scalefit/core/units.hpp"
#include "scalefit/estimator/constants.hpp"

#include <algorithm>

namespace scalefit::estimator {

void Estimator::memory(const Strategy &st, const StageCost *stages, int n_stages, double T,
                       double Vp, Estimate &e) const noexcept {
  const ModelConfig &md = m_model;
  const double h = md.hidden, t = st.tp, p = st.pp, v = st.interleave, el = m_el;
  const int m = e.micro_batches;
  const bool sp = st.sp && st.tp > 1;
  const bool full = st.recompute == Recompute::full;
  const double act_none = activation_bytes_per_layer(
      m_ops, md, st.micro_batch, st.tp, sp, full ? Recompute::none : st.recompute, st.cp,
      st.moe_imbalance, st.active_recompute_modules());
  const double act_full =
      activation_bytes_per_layer(m_ops, md, st.micro_batch, st.tp, sp, Recompute::full, st.cp);
  const int shard = st.zero >= 1 ? st.shard_ranks() : 1;
  const double logits = T * Vp / t; // logits of one micro-batch on one TP rank
  double best = -1;
  for (int i = 0; i < n_stages; ++i) {
    const StageCost &c = stages[i];
    const bool last = c.index == st.pp - 1;
    const double psi = c.params;
    const double rec = c.recomputed;
    // 1F1B: stage i holds the activations of min(m, p - i) micro-batches; interleaving adds
    // (p - 1)/(p v) (Korthikanti et al. 2022, Sec. 4.2.3).
    const double in_flight = st.pp == 1 ? 1.0 : std::min<double>(m, p - c.index);
    const double ilv = st.interleave > 1 ? 1.0 + (p - 1) / (p * v) : 1.0;
    // CPU offloading (pp 1, no recompute): the offloaded blocks' activations live in host
    // memory but for the one block in transit (Transformer Engine's double buffer).
    const double off = std::min<double>(st.offload_layers, c.layers);
    const double resident = c.layers - rec - (off > 0 ? off - 1 : 0.0);
    double act = (rec * act_full + resident * act_none) * in_flight * ilv;
    if (rec > 0) // one block's activations live during its recomputation
      act += activation_bytes_per_layer(m_ops, md, st.micro_batch, st.tp, sp, Recompute::none,
                                        st.cp, st.moe_imbalance);
    double weights = 0, grads = 0, optim = 0, total = 0;
    if (st.framework == Framework::pytorch) {
      // PyTorch: fp32 weights (4), gradients (4) and AdamW moments (8) per parameter.
      const double mm = c.layers * (m_ops.block_matrix_params / t +
                                    m_ops.block_matrix_params_replicated) +
                        (md.tied_embeddings ? 0.0 : Vp * h / t);
      const double logits_live =
          last ? (st.fused_ce ? 2.0 : constants::kEagerXentLiveBytesPerLogit) * logits : 0.0;
      const double full_act =
          // each block's input: fp32 under DDP's autocast (the residual stream stays fp32);
          // bf16 when pure, and under FSDP's MixedPrecision(param_dtype=bf16), which runs the
          // whole model in bf16 (no autocast: torch.distributed.fsdp MixedPrecision(Policy))
          full ? (eager_bf16_model(st) ? 2.0 : 4.0) * T * h * c.layers / (sp ? t : 1.0) +
                     activation_bytes_per_layer(m_ops, md, st.micro_batch, st.tp, sp,
                                                Recompute::none, st.cp, st.moe_imbalance)
               : act;
      if (st.zero == 0) {
        // Autocast: the peak is at the loss backward (weights, moments, bf16 weight copies saved
        // for backward, every activation, the live fp32 logit buffers; no gradient yet) or
        // after backward (all 16 bytes per parameter).
        const double copies = full ? 0.0 : 2 * mm; // recompute casts again per block
        weights = 4 * psi;
        optim = 8 * psi;
        act = full_act + copies + logits_live;
        const double at_loss = 12 * psi + act;
        const double after = 16 * psi;
        grads = at_loss >= after ? 0.0 : 4 * psi;
        if (at_loss < after)
          act = 0;
        total = std::max(at_loss, after);
      } else {
        // FSDP with MixedPrecision(param_dtype=bf16) (Zhao et al. 2023; torch.distributed.fsdp):
        // sharded fp32 parameters, gradients and AdamW moments (16 B / N per parameter); bf16
        // parameters all-gathered for the units in flight: with FULL_SHARD (zero 3) the
        // current block and the prefetched next, plus the root unit (embeddings, final norm,
        // head) for the whole step; with SHARD_GRAD_OP (zero 2) or ZeRO-1 every block stays
        // gathered from forward to backward; bf16 gradients of the blocks being reduced (2).
        const double block = (m_ops.block_params_split / t + m_ops.block_params_replicated);
        const double root = psi - c.layers * block;
        const double n = shard;
        const double wb = st.pure_bf16 ? 2 : 4; // sharded parameter and gradient bytes
        weights = wb * psi / n;
        grads = wb * psi / (st.zero >= 2 ? n : 1.0);
        optim = 2 * wb * psi / n; // AdamW moments in the parameters' dtype
        double gathered = st.zero >= 3 ? 2 * (2 * block) + 2 * root : 2 * psi;
        if (st.pure_bf16 && st.zero < 3)
          gathered = 0; // the unsharded bf16 parameters are the parameters
        weights += gathered;
        grads += 2 * (2 * block);
        act = full_act + logits_live;
        total = weights + grads + optim + act;
      }
    } else {
      // Adam's state per parameter (12 B; less under the precision-aware optimizer)
      const double kopt = adam_state_bytes(st, md);
      ModelStateBytes ms = model_state_bytes(psi, st.zero, shard, st.fp32_grads, el, kopt);
      if (c.expert_params > 0) { // experts: ZeRO shards them over the expert-data-parallel ranks
        const ModelStateBytes x =
            model_state_bytes(c.expert_params, st.zero, st.expert_dp(), st.fp32_grads, el, kopt);
        ms.weights += x.weights;
        ms.gradients += x.gradients;
        ms.optimizer += x.optimizer;
      }
      weights = ms.weights;
      const bool gathered = st.zero >= 3 && shard > 1 && c.layers > 0;
      if (gathered) // ZeRO-3 / Megatron-FSDP: the current block and the prefetched next
        weights += 2 * psi / c.layers * el;
      if (md.fp8) {
        const double mat = c.matrix_params + c.expert_params;
        if (st.fp8_param_gather) {
          // --fp8-param-gather: each weight matrix is kept in FP8 (1 B) with its transpose
          // (1 B) instead of in bf16, so an unsharded weight costs what the bf16 one did and
          // a ZeRO-3 shard 1 B per parameter (the fp32 master copy is the optimizer's).
          if (gathered)
            weights -= mat * (el - 1) / shard;
        } else { // Transformer Engine's FP8 copy and its transpose beside the bf16 weight
          weights += 2 * (gathered ? 2 * mat / c.layers : mat);
        }
      }
      grads = ms.gradients;
      optim = ms.optimizer;
      // The loss on the last stage: fp32 softmax and bf16 logits gradient (6 B per logit)
      // unfused; the bf16 logits the fused kernel overwrites with their gradient (2 B) fused.
      if (last) // and once more per multi-token prediction module's loss
        act += (st.fused_ce ? 2.0 : 6.0) * logits * (1 + md.mtp_layers);
      total = weights + grads + optim + act;
    }
    if (m_price.calibrated()) // calibrated fixed overhead (allocator, workspaces, buffers)
      total += m_price.framework().memory_overhead_gib * kGiB;
    if (total > best) {
      best = total;
      e.peak_stage = c.index;
      e.memory_bytes.weights = weights;
      e.memory_bytes.gradients = grads;
      e.memory_bytes.optimizer = optim;
      e.memory_bytes.activations = act;
      e.memory_bytes.total = total;
    }
  }
  e.fits_memory = e.memory_bytes.total <= m_system.memory_bytes();
}

} // namespace scalefit::estimator

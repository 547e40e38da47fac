/// \file estimator.hpp
/// The analytical training model: parameters, FLOPs, memory per GPU, the communication message
/// list and the time of one iteration split as Lu et al. (T_cp, T_cm, T_ol, T_sd).
#pragma once

#include "scalefit/estimator/architecture.hpp"
#include "scalefit/estimator/comm_model.hpp"
#include "scalefit/estimator/config.hpp"
#include "scalefit/estimator/pricing.hpp"
#include "scalefit/fitting/compute.hpp"

#include <array>
#include <memory>
#include <optional>
#include <string>

namespace scalefit::estimator {

// ---- Closed-form formulas (each tested against its paper) ---------------------------------

/// FLOPs of one sample through the transformer layers only, forward + backward, no
/// recomputation: 3 l (2 s (4h^2 + 2hf) + 4 s^2 h); for f = 4h this is Cheng et al.'s
/// b (72 s d^2 + 12 s^2 d) l per sample.
double layer_flops_per_sample(const ModelConfig &m);

/// FLOPs of one iteration of global batch `batch` [samples] including the logits GEMM at the
/// unpadded vocabulary, Megatron's convention (architecture.hpp IterationFlops); for GPT this is
/// Narayanan et al. 2021 Sec. 5.1: none 72 B s l h^2 (1 + s/(6h) + V/(12lh)); full
/// 96 B s l h^2 (1 + s/(6h) + V/(16lh)); selective adds the attention core, 4 B s^2 h l.
double iteration_flops(const ModelConfig &m, double batch, Recompute recompute);

/// Model states per GPU [bytes] for `psi` parameters on `dp` data-parallel ranks
/// (Rajbhandari et al. 2020, Sec. 3.1, mixed-precision Adam, K = 12): weights 2 psi, gradients
/// 2 psi (4 psi with fp32_grads, Megatron), optimizer K psi (K = `optimizer_bytes`: 12 for fp32
/// master weights and moments; under Megatron-Core's precision-aware optimizer 10, 8 or 6, as
/// estimator/src/detail.hpp adam_state_bytes derives them); ZeRO-1 shards the optimizer, ZeRO-2
/// also the gradients, ZeRO-3 also the weights. \param psi parameters, \param dp ranks sharing
/// the state (>= 1), \param weight_bytes bytes per weight (2 for bf16/fp16).
struct ModelStateBytes {
  double weights = 0;   ///< [bytes]
  double gradients = 0; ///< [bytes]
  double optimizer = 0; ///< [bytes]
  double total() const { return weights + gradients + optimizer; }
};
/// See ModelStateBytes. \param zero stage 0..3.
ModelStateBytes model_state_bytes(double psi, int zero, int dp, bool fp32_grads,
                                  double weight_bytes = 2, double optimizer_bytes = 12);

/// Activation bytes of one transformer layer for one micro-batch of b samples on one TP rank of
/// one CP rank (Korthikanti et al. 2022, Table 2, generalized in architecture.hpp
/// BlockActivations; for GPT with an FFN of size f the 24 becomes 8 + 4f/h):
/// TP: s b h (10 + 24/t + 5as/(ht)); TP+SP: s b h (34 + 5as/h) / t; selective drops the 5as/h
/// term; full recomputation keeps the layer input, 2 s b h (/t with SP). Fused attention
/// (m.attention, FlashAttention) stores no s x s matrix: the 5as/h term is replaced by the
/// softmax statistics, 4 a s b / t bytes (one fp32 log-sum-exp per row and head). Context
/// parallelism divides the tokens: s becomes s / cp (the s x s term s^2 / cp). FP8 (m.fp8)
/// stores the inputs of linear layers in 1 byte. An MoE block's routed-token activations scale
/// with the expert load (MoeOps::load of `moe_imbalance`: capacity factor, padding).
double activation_bytes_per_layer(const ModelConfig &m, int micro_batch, int tp, bool sp,
                                  Recompute recompute, int cp = 1, double moe_imbalance = 1.0);

/// Speedup from g to n GPUs given the compute and communication shares r_cp, r_cm of the
/// iteration at g GPUs and the network efficiency eff(g->n) = t_comm(g)/t_comm(n)
/// (Cheng et al. 2024): (r_cp + r_cm) / (r_cp + r_cm / eff).
double cheng_speedup(double r_cp, double r_cm, double eff);

// ---- The per-layout estimate ---------------------------------------------------------------

/// Which parallelism emits a message.
enum class Parallelism { tp, pp, dp, zero, cp, ep };
/// "TP", "PP", "DP", "ZeRO", "CP", "EP".
const char *parallelism_name(Parallelism p);

/// One kind of communication message of an iteration, priced.
struct Message {
  Op op = Op::allreduce;            ///< the collective
  Parallelism by = Parallelism::dp; ///< who emits it
  const char *what = "";            ///< static description ("gradient bucket", "forward", ...)
  double bytes = 0;                 ///< nccl-tests size of one operation [B]
  CommGroup group;                  ///< communicator shape
  double count = 0;                 ///< operations per iteration on each GPU
  double time_us = 0;               ///< time of one operation [us]
  int source = 0;                   ///< CommModel source id that priced it
  bool extrapolated = false;        ///< priced outside a fit's measured range
  /// Time of all `count` operations [s].
  double total_s() const { return count * time_us * 1e-6; }
};

/// One compute term of an iteration and what priced it.
struct ComputeTerm {
  const char *what = "";      ///< static description ("layer GEMMs", "attention", ...)
  double seconds = 0;         ///< time of the term per iteration on one GPU [s]
  const char *priced_by = ""; ///< "fit:gemm:bf16", "spec:gemm_efficiency", ... (owned by the Estimator)
};
/// Compute terms an estimate lists.
inline constexpr int kComputeTerms = 7;

/// Maximum number of message kinds an estimate lists.
inline constexpr int kMaxMessages = 24;

/// Why a layout cannot run (search counts these).
enum class Reject {
  none,
  gpus,       ///< dp * tp * pp differs from the GPU count
  heads,      ///< heads % tp != 0 or kv_heads % tp != 0
  layers,     ///< layers do not split into the pipeline stages and chunks asked for
  batch,      ///< global batch % (dp * micro_batch) != 0
  interleave, ///< interleave > 1 needs pp > 1 and micro-batches % pp == 0 (Megatron)
  zero,       ///< ZeRO stage outside 0..3, a shard group that does not divide dp*cp, or bf16
              ///< moments without Megatron's distributed optimizer
  memory,     ///< does not fit in device memory
  context,    ///< sequence % (2 cp) != 0 (causal load balancing pairs 2 cp chunks)
  experts,    ///< experts % ep != 0, tp cp dp % (etp ep) != 0, or ep > 1 on a dense model
  offload,    ///< CPU offloading with pp > 1, recompute, N >= layers or no host link; FP8
              ///< parameters without FP8 GEMMs (Megatron-Core's checks)
  recompute,  ///< recompute modules without selective granularity or under PyTorch
};
/// Short reason ("heads % tp", "memory", ...).
const char *reject_name(Reject r);

/// The result of evaluating one layout. Fixed size: filling it never allocates.
struct Estimate {
  /// Time of one iteration split as Lu et al.: iteration = compute + communication - overlap +
  /// bubble [s].
  struct {
    double iteration = 0, compute = 0, communication = 0, overlap = 0, bubble = 0;
  } time_s;
  /// Memory per GPU on the pipeline stage that needs the most (`peak_stage`) [bytes].
  struct {
    double weights = 0, gradients = 0, optimizer = 0, activations = 0, total = 0;
  } memory_bytes;
  int peak_stage = 0;        ///< pipeline stage of memory_bytes (0 first, pp-1 last)
  int slowest_stage = 0;     ///< pipeline stage whose micro-batch time sets the pace
  int stage_layers[3] = {0, 0, 0}; ///< blocks on the first, a middle and the last stage
  double model_flops_causal = 0; ///< model FLOPs with causal attention counted as half
  double vocab_padded = 0;   ///< vocabulary the logits run at (Megatron pads to 128 t)
  bool fits_memory = false;  ///< total <= device memory
  double params = 0;         ///< parameters of the model
  double params_per_gpu = 0; ///< parameters one GPU of the largest stage holds (its TP shard
                             ///< of the dense weights + its EP x ETP shard of the experts)
  double model_flops = 0;    ///< FLOPs of the iteration without recomputation
  double hardware_flops = 0; ///< FLOPs executed, with recomputation
  double tflops_per_gpu = 0; ///< hardware FLOPs / (GPUs * iteration) [TFLOP/s]
  double mfu = 0;            ///< model FLOPs / (GPUs * iteration * peak); FP8 peak under FP8
  double samples_per_s = 0;  ///< global batch / iteration time
  int micro_batches = 0;     ///< m = B / (dp * b)
  double comm_tp_s = 0, comm_pp_s = 0, comm_dp_s = 0; ///< T_cm by parallelism [s]
  std::array<Message, kMaxMessages> messages{};       ///< the message list
  int n_messages = 0;                                 ///< used entries of messages
  double comm_cp_s = 0;                               ///< T_cm of context parallelism [s]
  double comm_offload_s = 0; ///< activation CPU offloading's host copies, both ways [s]
  double comm_ep_s = 0;                               ///< T_cm of expert parallelism [s]
  double active_params = 0;                           ///< parameters a token passes through
  /// T_cp by term: layer GEMMs, attention, memory-bound (layers), logits GEMMs, cross-entropy,
  /// optimizer, embedding; each says what priced it. They sum to time_s.compute (the slowest
  /// stage's).
  std::array<ComputeTerm, kComputeTerms> terms{};
};

struct StageCost;   // estimator/src/detail.hpp
struct LayerCost;   // estimator/src/detail.hpp
struct LayerCostCache; // estimator/src/detail.hpp
struct LayoutSizes;    // estimator/src/detail.hpp
struct EndsCost;       // estimator/src/detail.hpp

/// Evaluates layouts of one model on one system, in the four steps of DESIGN.md: construction
/// turns the model into operations (architecture.hpp, once per model); evaluate() divides them by
/// the layout and emits its messages (layout.cpp), prices them (pricing.hpp, comm_model.hpp) and
/// schedules them into the Lu et al. time split and per-stage memory (schedule.cpp, memory.cpp).
/// evaluate() is allocation-free and takes about a microsecond.
class Estimator {
public:
  /// \param comm prices messages; SpecCommModel(system) when null.
  Estimator(ModelConfig model, SystemConfig system, std::shared_ptr<const CommModel> comm = {});

  /// Checks a layout's divisibility rules (not memory). \param gpus 0 skips the GPU count check.
  Reject check(const Strategy &s, int gpus) const noexcept;
  /// Like check() but throws InputError naming the option (--tp, --global-batch, ...) with a
  /// clear message.
  void validate(const Strategy &s, int gpus) const;
  /// Estimates one layout; `s` must pass check(). Never allocates (the comm model is warm).
  /// \param messages false skips listing the messages (out.n_messages = 0; every time and
  /// memory figure is the same): what search does for the layouts it does not keep.
  void evaluate(const Strategy &s, Estimate &out, bool messages = true) const noexcept;
  /// Memory first, as search judges a layout: the per-GPU memory of `s` (out.memory_bytes,
  /// out.peak_stage, out.micro_batches, out.fits_memory) from the stages' shards alone; only a
  /// layout that fits is then timed and costed, exactly as evaluate(s, out, false) would (every
  /// figure equal). A layout that does not fit has out.time_s.iteration NaN and no other time
  /// or throughput figure. `s` must pass check(). `cache` (search's): one block's priced
  /// operations kept by what they depend on, reused by the layouts that share it (every figure
  /// equal to the uncached one). \returns out.fits_memory.
  bool evaluate_fitting(const Strategy &s, Estimate &out,
                        LayerCostCache *cache = nullptr) const noexcept;

  const ModelConfig &model() const { return m_model; }
  const SystemConfig &system() const { return m_system; }
  const CommModel &comm() const { return *m_comm; }
  /// The model's operations (step 1).
  const ModelOps &ops() const { return m_ops; }
  /// Peak matrix rate for the model's dtype [FLOP/s] (the 16-bit peak under FP8, as MFU counts).
  double peak_flops() const { return m_price.peak(); }

  /// Prices GEMM, batched GEMM, attention and memory-bound terms by the fits in `compute` for
  /// the model's dtype (bf16 fits serve fp16 and the reverse; tf32 serves fp32; fp8 GEMM fits
  /// serve FP8 models) instead of the system's efficiency tables; kinds without a fit keep the
  /// tables. A calibrated `framework` section adds its dispatch floor per kernel and memory-bound
  /// efficiency.
  void use_compute(const fitting::ComputeSection &compute) { m_price.use(compute); }
  /// What prices the GEMMs: "fit:gemm:bf16", "spec:gemm_efficiency", ...
  const std::string &gemm_source() const {
    return m_model.fp8 ? m_price.src_gemm8 : m_price.src_gemm;
  }
  /// True when no fit (compute or communication) prices anything: the estimate rests on the
  /// system's spec tables alone.
  bool spec_only() const;
  /// True when a calibrated framework section is in use.
  bool calibrated() const { return m_price.calibrated(); }
  /// The calibrated constants in use (present == false when none).
  const fitting::FrameworkConstants &framework() const { return m_price.framework(); }
  /// The compute pricer (step 3).
  const ComputePricer &pricer() const { return m_price; }

private:
  /// PyTorch eager (Framework::pytorch) memory-bound work, per micro-batch on one GPU [s];
  /// `bf16_model`: the model runs wholly in bf16 (eager_bf16_model), else under bf16 autocast
  /// with an fp32 residual stream and per-forward weight casts (pytorch_gpt_step.py).
  struct EagerCosts {
    double layer_fwd = 0, layer_bwd = 0; ///< one block's elementwise kernels and weight casts
    double head = 0;                     ///< cross-entropy, embeddings, final LN, head casts
  };
  EagerCosts eager_costs(double micro_batch, bool bf16_model) const noexcept; // eager.cpp
  void evaluate_impl(const Strategy &s, Estimate &out, bool messages, bool memory_first,
                     LayerCostCache *cache) const noexcept;              // schedule.cpp
  // The steps evaluate_impl runs (stages.cpp): the layout's sizes; its first, middle and last
  // stage with their shards (returns how many; blocks per stage in `layers`); the model's ends
  // of a micro-batch; the slowest stage's compute terms; FLOPs and throughput.
  LayoutSizes layout_sizes(const Strategy &s) const noexcept;
  int shape_stages(const Strategy &s, const LayoutSizes &z, StageCost *stages,
                   int *layers) const noexcept;
  EndsCost ends_cost(const Strategy &s, const LayoutSizes &z) const noexcept;
  void compute_terms(const Strategy &s, const LayoutSizes &z, const StageCost &slowest,
                     const LayerCost &lc, const EndsCost &ends, double optimizer_s,
                     Estimate &e) const noexcept;
  void throughput(const Strategy &s, const LayoutSizes &z, const StageCost *stages, int n_stages,
                  Estimate &e) const noexcept;
  LayerCost layer_cost(const Strategy &s, double tokens) const noexcept; // layer_cost.cpp
  void memory(const Strategy &s, const StageCost *stages, int n_stages, double tokens,
              double vocab, Estimate &e) const noexcept; // memory.cpp

  ModelConfig m_model;
  SystemConfig m_system;
  ModelOps m_ops;
  ComputePricer m_price;
  std::shared_ptr<const CommModel> m_comm;
  double m_el = 2; // bytes per element
  double m_params = 0;
  double m_active_params = 0;
};

/// Weak scaling of a layout from its g GPUs to n GPUs by growing the DP degree (same micro-batch
/// and micro-batches per replica, so the global batch grows by n/g), as Cheng et al. 2024 scale.
struct Scaling {
  int from_gpus = 0, to_gpus = 0; ///< g and n
  Strategy at_n;                  ///< the layout at n GPUs
  Estimate estimate_n;            ///< its estimate
  double iteration_ratio = 0;     ///< Cheng et al.'s speedup t_iter(g) / t_iter(n)
  double network_efficiency = 0;  ///< eff(g->n) = t_comm(g) / t_comm(n) (total T_cm)
  double predicted_ratio = 0;     ///< cheng_speedup(r_cp, r_cm, eff) with shares at g
  double throughput_speedup = 0;  ///< samples/s at n over samples/s at g
  double scaling_efficiency = 0;  ///< throughput_speedup / (n / g)
};

/// Scales `s` (evaluated as `at_g`) to `n` GPUs. \throws InputError when n is not a multiple of
/// tp * pp or the scaled layout is invalid.
Scaling scale_layout(const Estimator &est, const Strategy &s, const Estimate &at_g, int n);

}  // namespace scalefit::estimator

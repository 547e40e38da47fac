/// \file estimator.hpp
/// The analytical training model: parameters, FLOPs, memory per GPU, the communication message
/// list and the time of one iteration split as Lu et al. (T_cp, T_cm, T_ol, T_sd).
#pragma once

#include "scalefit/estimator/comm_model.hpp"
#include "scalefit/estimator/config.hpp"
#include "scalefit/fitting/compute.hpp"

#include <array>
#include <memory>
#include <optional>
#include <string>

namespace scalefit::estimator {

// ---- Closed-form formulas (each tested against its paper) ---------------------------------

/// Parameters of the model (Narayanan et al. 2021, Eq. 2, generalized to an FFN of size f):
/// l (4h^2 + 2hf + 9h + f) + (V + s) h + 2h; equals 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)) + 2h
/// (the final LayerNorm) for f = 4h.
double parameter_count(const ModelConfig &m);

/// FLOPs of one sample through the transformer layers only, forward + backward, no
/// recomputation: 3 l (2 s (4h^2 + 2hf) + 4 s^2 h); for f = 4h this is Cheng et al.'s
/// b (72 s d^2 + 12 s^2 d) l per sample.
double layer_flops_per_sample(const ModelConfig &m);

/// FLOPs of one iteration of global batch `batch` [samples] including the logits GEMM
/// (Narayanan et al. 2021 Sec. 5.1): none 72 B s l h^2 (1 + s/(6h) + V/(12lh)); full
/// 96 B s l h^2 (1 + s/(6h) + V/(16lh)); selective adds the attention core, 4 B s^2 h l.
double iteration_flops(const ModelConfig &m, double batch, Recompute recompute);

/// Model states per GPU [bytes] for `psi` parameters on `dp` data-parallel ranks
/// (Rajbhandari et al. 2020, Sec. 3.1, mixed-precision Adam, K = 12): weights 2 psi, gradients
/// 2 psi (4 psi with fp32_grads, Megatron), optimizer 12 psi; ZeRO-1 shards the optimizer,
/// ZeRO-2 also the gradients, ZeRO-3 also the weights.
struct ModelStateBytes {
  double weights = 0;   ///< [bytes]
  double gradients = 0; ///< [bytes]
  double optimizer = 0; ///< [bytes]
  double total() const { return weights + gradients + optimizer; }
};
/// See ModelStateBytes. \param zero stage 0..3.
ModelStateBytes model_state_bytes(double psi, int zero, int dp, bool fp32_grads,
                                  double weight_bytes = 2);

/// Activation bytes of one transformer layer for one micro-batch of b samples on one TP rank
/// (Korthikanti et al. 2022, Table 2; for an FFN of size f the 24 becomes 8 + 4f/h):
/// TP: s b h (10 + 24/t + 5as/(ht)); TP+SP: s b h (34 + 5as/h) / t; selective drops the 5as/h
/// term; full recomputation keeps the layer input, 2 s b h (/t with SP). Fused attention
/// (m.attention, FlashAttention) stores no s x s matrix: the 5as/h term is replaced by the
/// softmax statistics, 4 a s b / t bytes (one fp32 log-sum-exp per row and head).
double activation_bytes_per_layer(const ModelConfig &m, int micro_batch, int tp, bool sp,
                                  Recompute recompute);

/// Speedup from g to n GPUs given the compute and communication shares r_cp, r_cm of the
/// iteration at g GPUs and the network efficiency eff(g->n) = t_comm(g)/t_comm(n)
/// (Cheng et al. 2024): (r_cp + r_cm) / (r_cp + r_cm / eff).
double cheng_speedup(double r_cp, double r_cm, double eff);

// ---- The per-layout estimate ---------------------------------------------------------------

/// Which parallelism emits a message.
enum class Parallelism { tp, pp, dp, zero };
/// "TP", "PP", "DP", "ZeRO".
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
inline constexpr int kComputeTerms = 6;

/// Maximum number of message kinds an estimate lists.
inline constexpr int kMaxMessages = 16;

/// Why a layout cannot run (search counts these).
enum class Reject {
  none,
  gpus,       ///< dp * tp * pp differs from the GPU count
  heads,      ///< heads % tp != 0
  layers,     ///< layers % (pp * interleave) != 0
  batch,      ///< global batch % (dp * micro_batch) != 0
  interleave, ///< interleave > 1 needs pp > 1 and micro-batches % pp == 0 (Megatron)
  zero,       ///< ZeRO stage outside 0..3, or ZeRO-2/3 with pp > 1 (DeepSpeed)
  memory,     ///< does not fit in device memory
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
  /// Memory per GPU on the first pipeline stage [bytes].
  struct {
    double weights = 0, gradients = 0, optimizer = 0, activations = 0, total = 0;
  } memory_bytes;
  bool fits_memory = false;  ///< total <= device memory
  double params = 0;         ///< parameters of the model
  double params_per_gpu = 0; ///< parameters held by the largest stage's TP rank
  double model_flops = 0;    ///< FLOPs of the iteration without recomputation
  double hardware_flops = 0; ///< FLOPs executed, with recomputation
  double tflops_per_gpu = 0; ///< hardware FLOPs / (GPUs * iteration) [TFLOP/s]
  double mfu = 0;            ///< model FLOPs / (GPUs * iteration * peak)
  double samples_per_s = 0;  ///< global batch / iteration time
  int micro_batches = 0;     ///< m = B / (dp * b)
  double comm_tp_s = 0, comm_pp_s = 0, comm_dp_s = 0; ///< T_cm by parallelism [s]
  std::array<Message, kMaxMessages> messages{};       ///< the message list
  int n_messages = 0;                                 ///< used entries of messages
  /// T_cp by term: layer GEMMs, attention, memory-bound (layers), logits GEMMs, cross-entropy,
  /// optimizer; each says what priced it. They sum to time_s.compute.
  std::array<ComputeTerm, kComputeTerms> terms{};
};

/// Evaluates layouts of one model on one system. Construction precomputes what does not depend
/// on the layout; evaluate() is allocation-free and takes about a microsecond.
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
  void evaluate(const Strategy &s, Estimate &out) const noexcept;

  const ModelConfig &model() const { return m_model; }
  const SystemConfig &system() const { return m_system; }
  const CommModel &comm() const { return *m_comm; }
  /// Peak matrix rate for the model's dtype [FLOP/s].
  double peak_flops() const { return m_peak; }

  /// Prices GEMM, batched GEMM, attention and memory-bound terms by the fits in `compute` for
  /// the model's dtype (bf16 fits serve fp16 and the reverse; tf32 serves fp32) instead of the
  /// system's efficiency tables; kinds without a fit keep the tables. A calibrated `framework`
  /// section adds its dispatch floor per kernel and memory-bound efficiency.
  void use_compute(const fitting::ComputeSection &compute);
  /// What prices the GEMMs, attention, memory-bound kernels: "fit:gemm:bf16", "spec:..." labels.
  const std::string &gemm_source() const { return m_src_gemm; }
  /// True when a calibrated framework section is in use.
  bool calibrated() const { return m_framework.present; }
  /// The calibrated constants in use (present == false when none).
  const fitting::FrameworkConstants &framework() const { return m_framework; }

private:
  double gemm_s(double m, double n, double k, double batch) const noexcept;
  double bgemm_s(double m, double n, double k, double batch) const noexcept;
  double mem_s(double bytes) const noexcept;
  double attn_fused_s(double flops_fwd, double factor) const noexcept;
  double kernel_s(double gpu_s) const noexcept;
  /// `n` memory-bound kernels moving `bytes` in all, priced as n of bytes / n each.
  double mem_n_s(double n, double bytes) const noexcept;
  /// PyTorch eager (Framework::pytorch) memory-bound work, per micro-batch on one GPU [s].
  struct EagerCosts {
    double layer_fwd = 0, layer_bwd = 0; ///< one block's elementwise kernels and weight casts
    double head = 0;                     ///< cross-entropy, embeddings, final LN, head casts
  };
  EagerCosts eager_costs(double micro_batch) const noexcept; // eager.cpp

  std::optional<fitting::ComputeFit> m_fit_gemm, m_fit_bgemm, m_fit_mem, m_fit_attn;
  fitting::FrameworkConstants m_framework;
  std::string m_src_gemm = "spec:gemm_efficiency", m_src_bgemm = "spec:gemm_efficiency",
              m_src_mem = "spec:hbm_efficiency", m_src_attn = "spec:gemm_efficiency",
              m_src_fused = "spec:fused_attention_efficiency";

  ModelConfig m_model;
  SystemConfig m_system;
  std::shared_ptr<const CommModel> m_comm;
  double m_peak = 0;     // [FLOP/s]
  double m_hbm = 0;      // [B/s]
  double m_launch_s = 0; // [s]
  double m_el = 2;       // bytes per element
  double m_params = 0;
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

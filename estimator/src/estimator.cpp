// The analytical training model (Lu et al. time split; Korthikanti et al. memory; Narayanan et
// al. FLOPs and parameters; Rajbhandari et al. model states; Calculon's efficiency tables).
#include "scalefit/estimator/estimator.hpp"

#include "detail.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/estimator/constants.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace scalefit::estimator {

double layer_flops_per_sample(const ModelConfig &m) {
  const ModelOps o = describe_model(m);
  const double s = m.sequence;
  return 3 * m.layers * s *
         (o.linear_flops_per_token + 2 * s * o.q_heads * (o.head_dim + o.v_head_dim));
}

double iteration_flops(const ModelConfig &m, double batch, Recompute recompute) {
  return iteration_flops(m, batch, m.vocabulary, recompute == Recompute::full,
                         recompute == Recompute::selective)
      .hardware;
}

ModelStateBytes model_state_bytes(double psi, int zero, int dp, bool fp32_grads,
                                  double weight_bytes, double optimizer_bytes) {
  ModelStateBytes b;
  const double n = std::max(1, dp);
  b.weights = weight_bytes * psi / (zero >= 3 ? n : 1.0);
  b.gradients = (fp32_grads ? 4.0 : weight_bytes) * psi / (zero >= 2 ? n : 1.0);
  b.optimizer = optimizer_bytes * psi / (zero >= 1 ? n : 1.0);
  return b;
}

double activation_bytes_per_layer(const ModelOps &o, const ModelConfig &m, int micro_batch, int tp,
                                  bool sp, Recompute recompute, int cp, double moe_imbalance,
                                  unsigned modules) noexcept {
  const BlockActivations &act = m.fp8 ? o.act_fp8 : o.act;
  const double s = m.sequence, t = tp;
  const double T = double(micro_batch) * s / cp; // tokens on the rank
  const double scale = dtype_size(m.dtype) / 2.0;
  if (recompute == Recompute::full)
    return scale * 2 * T * m.hidden / (sp ? t : 1.0);
  const bool selective = recompute == Recompute::selective;
  const bool core_attn = selective && (modules == 0 || (modules & kRecomputeCoreAttn));
  // Recomputed (checkpointed) the core keeps only its inputs, which the block keeps anyway: a
  // fused kernel's fp32 log-sum-exp statistics go, as the unfused core's s x s terms do.
  const double core = core_attn                         ? 0.0
                      : m.attention == Attention::fused ? act.flash_stats * T / t / scale // fp32
                                                        : act.core_per_s * s * T / t;
  // Megatron-Core's selective recompute modules drop what the recomputed forward rebuilds.
  double hidden = act.hidden, inner = act.inner, routed = act.routed;
  if (selective && modules) {
    if (modules & kRecomputeLayernorm)
      hidden -= act.norms;
    if (modules & kRecomputeMlp) {
      hidden -= act.mlp_hidden;
      inner -= act.mlp_inner;
    }
    if (modules & kRecomputeMlaUpProj)
      inner -= act.mla_up;
    if (modules & kRecomputeMoe) { // the MoE layer keeps only its input (the norm's output)
      inner -= act.moe_inner;
      routed = 0;
    } else {
      if (modules & kRecomputeSharedExperts)
        inner -= act.shared;
      if (modules & kRecomputeMoeAct)
        routed -= act.moe_act;
    }
  }
  inner += routed * o.moe.load(moe_imbalance);
  return scale * (hidden * T / (sp ? t : 1.0) + inner * T / t + core);
}

double activation_bytes_per_layer(const ModelConfig &m, int micro_batch, int tp, bool sp,
                                  Recompute recompute, int cp, double moe_imbalance) {
  return activation_bytes_per_layer(describe_model(m), m, micro_batch, tp, sp, recompute, cp,
                                    moe_imbalance);
}

double cheng_speedup(double r_cp, double r_cm, double eff) {
  return (r_cp + r_cm) / (r_cp + r_cm / eff);
}

const char *parallelism_name(Parallelism p) {
  switch (p) {
  case Parallelism::tp:
    return "TP";
  case Parallelism::pp:
    return "PP";
  case Parallelism::dp:
    return "DP";
  case Parallelism::zero:
    return "ZeRO";
  case Parallelism::cp:
    return "CP";
  case Parallelism::ep:
    return "EP";
  }
  return "?";
}

const char *reject_name(Reject r) {
  switch (r) {
  case Reject::none:
    return "ok";
  case Reject::gpus:
    return "dp*tp*pp != gpus";
  case Reject::heads:
    return "heads or kv_heads % tp != 0";
  case Reject::layers:
    return "layers do not split into pp*interleave stages";
  case Reject::batch:
    return "global batch % (dp*micro-batch) != 0";
  case Reject::interleave:
    return "interleave needs pp > 1 and micro-batches % pp == 0";
  case Reject::zero:
    return "ZeRO stage outside 0..3, shard group not dividing dp*cp, or the precision-aware "
           "optimizer without the distributed optimizer";
  case Reject::memory:
    return "exceeds device memory";
  case Reject::context:
    return "sequence % (2*cp) != 0 (or cp > 1 with sliding windows)";
  case Reject::experts:
    return "experts % ep or tp*cp*dp % (etp*ep) != 0";
  case Reject::offload:
    return "CPU offloading needs pp 1, no recompute and a host link; FP8 parameters need FP8";
  case Reject::recompute:
    return "recompute modules need selective recompute under megatron";
  }
  return "?";
}

Estimator::Estimator(ModelConfig model, SystemConfig system, std::shared_ptr<const CommModel> comm)
    : m_model(std::move(model)), m_system(std::move(system)), m_ops(describe_model(m_model)),
      m_price(m_system, m_model.dtype), m_comm(std::move(comm)) {
  if (!m_comm)
    m_comm = std::make_shared<SpecCommModel>(m_system);
  m_el = static_cast<double>(dtype_size(m_model.dtype));
  m_params = parameter_count(m_model);
  m_active_params = active_parameter_count(m_model);
}

bool Estimator::spec_only() const {
  return m_price.src_gemm.rfind("spec:", 0) == 0 && m_price.src_mem.rfind("spec:", 0) == 0 &&
         !m_comm->source_is_fit(0) && !m_comm->source_is_fit(1);
}

double node_dedup_ratio(double experts, double top_k, int nodes) {
  const double N = nodes;
  if (nodes <= 1 || top_k <= 1 || experts <= top_k)
    return 1.0;
  // C(E - m, k) / C(E, k) = prod_{i<k} (E - m - i) / (E - i): no other node's expert picked
  const double m = experts / N;
  double none = 1.0;
  for (int i = 0; i < static_cast<int>(top_k); ++i)
    none *= std::max(0.0, experts - m - i) / (experts - i);
  // other nodes are symmetric: P(a given other node is hit) = 1 - C(E - m, k) / C(E, k)
  const double hit_nodes = (N - 1) * (1 - none);
  return hit_nodes / (top_k * (N - 1) / N);
}

bool stage_layers(int layers, const Strategy &s, int &first, int &middle, int &last) {
  const std::int64_t l = layers, p = s.pp, v = s.interleave;
  first = middle = last = 0;
  if (p == 1) {
    first = layers;
    return s.first_stage_layers == 0 && s.last_stage_layers == 0 && l % v == 0;
  }
  std::int64_t f = s.first_stage_layers, ll = s.last_stage_layers, mid = 0;
  if (f < 0 || ll < 0 || f > l || ll > l)
    return false;
  if (f == 0 && ll == 0) {
    if (l % p != 0)
      return false;
    f = ll = mid = l / p;
  } else if (f > 0 && ll > 0) {
    if (p == 2) {
      if (f + ll != l)
        return false;
    } else {
      const std::int64_t rest = l - f - ll;
      if (rest < p - 2 || rest % (p - 2) != 0)
        return false;
      mid = rest / (p - 2);
    }
  } else { // one end given: the other stages share the rest evenly (Megatron)
    const std::int64_t given = f > 0 ? f : ll, rest = l - given;
    if (rest < p - 1 || rest % (p - 1) != 0)
      return false;
    mid = rest / (p - 1);
    (f > 0 ? ll : f) = mid;
  }
  if (p == 2)
    mid = 0;
  // Interleaving splits each stage into v chunks; explicit first/last counts may leave those two
  // stages' chunks uneven (Megatron-Core's embedding/loss accounting does).
  const bool explicit_ends = s.first_stage_layers > 0 || s.last_stage_layers > 0;
  if (mid % v != 0 || (!explicit_ends && (f % v != 0 || ll % v != 0)))
    return false;
  first = static_cast<int>(f);
  middle = static_cast<int>(mid);
  last = static_cast<int>(ll);
  return true;
}

Reject Estimator::check(const Strategy &s, int gpus) const noexcept {
  // Products in 64 bits: degrees up to INT_MAX must not overflow (UBSan, SIGFPE on a 0 divisor).
  if (s.dp < 1 || s.tp < 1 || s.pp < 1 || s.cp < 1 || s.micro_batch < 1 || s.interleave < 1)
    return Reject::gpus;
  if (s.gpus() > kMaxGpus || (gpus > 0 && s.gpus() != gpus))
    return Reject::gpus;
  if (m_model.heads % s.tp != 0 || m_model.kv_heads_count() % s.tp != 0)
    return Reject::heads;
  int f = 0, mid = 0, l = 0;
  if (!stage_layers(m_model.layers, s, f, mid, l))
    return Reject::layers;
  const std::int64_t per_step = std::int64_t{s.dp} * s.micro_batch; // samples per micro-step
  if (s.batch() < 1 || s.batch() % per_step != 0)
    return Reject::batch;
  const std::int64_t dpcp = std::int64_t{s.dp} * s.cp;
  if (s.zero < 0 || s.zero > 3 || s.zero_shard < 0 ||
      (s.zero_shard > 0 && (s.zero == 0 || dpcp % s.zero_shard != 0)) || s.recompute_layers < 0 ||
      ((s.bf16_moments || s.precision_aware_optimizer) &&
       (s.zero < 1 || s.framework != Framework::megatron)))
    return Reject::zero;
  // Ring attention with sliding windows (which ranks' keys a window reaches) is not modeled.
  if (s.cp > 1 && (m_model.sequence % (2 * std::int64_t{s.cp}) != 0 || m_model.sliding_window > 0))
    return Reject::context;
  if (s.ep < 1 || s.etp < 0 || !(s.moe_imbalance >= 1 && s.moe_imbalance <= 64) ||
      (!m_model.moe() && s.ep > 1) || (m_model.moe() && m_model.experts % s.ep != 0) ||
      (std::int64_t{s.tp} * s.cp * s.dp) % (std::int64_t{s.expert_tp()} * s.ep) != 0)
    return Reject::experts;
  // Megatron-Core's TransformerConfig checks: 0 <= N < layers, no pipeline, no recompute.
  if (s.offload_layers < 0 ||
      (s.offload_layers > 0 &&
       (s.offload_layers >= m_model.layers || s.pp > 1 || s.recompute != Recompute::none ||
        !(m_system.host.bandwidth_gbps > 0) || s.framework != Framework::megatron)) ||
      (s.fp8_param_gather && !m_model.fp8))
    return Reject::offload;
  // Megatron-Core reads recompute_modules only with recompute_granularity "selective".
  constexpr unsigned kAllModules = (kRecomputeMoe << 1) - 1;
  if (s.recompute_modules != 0 &&
      (s.recompute != Recompute::selective || s.framework != Framework::megatron ||
       (s.recompute_modules & ~kAllModules) != 0))
    return Reject::recompute;
  if (s.interleave > 1) {
    const std::int64_t m = s.batch() / per_step;
    if (s.pp == 1 || m % s.pp != 0)
      return Reject::interleave;
  }
  return Reject::none;
}

void Estimator::validate(const Strategy &s, int gpus) const {
  auto str = [](std::int64_t v) { return std::to_string(v); };
  for (auto [v, name] : {std::pair{s.dp, "--dp"},
                         {s.tp, "--tp"},
                         {s.pp, "--pp"},
                         {s.cp, "--cp"},
                         {s.micro_batch, "--micro-batch"},
                         {s.interleave, "--interleave"}})
    if (v < 1)
      throw InputError("must be >= 1, got " + str(v), "", 0, name);
  if (m_model.fp8 && m_system.device.matrix_tflops_8 <= 0)
    throw InputError("FP8 needs a device with FP8 tensor cores: " + m_system.device.name +
                         " has no peak_tflops.fp8 in " + m_system.name,
                     "", 0, "--dtype");
  if (s.mxfp8(m_model.fp8) && !(m_system.device.mxfp8_relative_efficiency > 0))
    throw InputError("MXFP8 needs block-scaled FP8 tensor cores (Blackwell, sm_100 or newer): " +
                         m_system.device.name + " has no device.mxfp8_relative_efficiency in " +
                         m_system.name + " (use --fp8-recipe tensorwise or delayed)",
                     "", 0, "--fp8-recipe");
  switch (check(s, gpus)) {
  case Reject::none:
    return;
  case Reject::gpus:
    if (s.gpus() > kMaxGpus)
      throw InputError("dp*tp*pp*cp = " + str(s.dp) + " x " + str(s.tp) + " x " + str(s.pp) +
                           " x " + str(s.cp) + " exceeds the largest GPU count " + str(kMaxGpus),
                       "", 0, "--dp");
    throw InputError("dp*tp*pp*cp = " + str(s.gpus()) + " but --gpus is " + str(gpus), "", 0,
                     "--gpus");
  case Reject::heads:
    throw InputError("heads (" + str(m_model.heads) + ") and kv_heads (" +
                         str(m_model.kv_heads_count()) + ") must be divisible by tp (" +
                         str(s.tp) + ")",
                     "", 0, "--tp");
  case Reject::layers:
    throw InputError("layers (" + str(m_model.layers) + ") do not split into pp (" + str(s.pp) +
                         ") stages of interleave (" + str(s.interleave) +
                         ") chunks with first/last stage layers " + str(s.first_stage_layers) +
                         "/" + str(s.last_stage_layers) +
                         " (the other stages must get an equal whole number, divisible by the "
                         "interleave)",
                     "", 0, s.first_stage_layers || s.last_stage_layers ? "--pp-layers" : "--pp");
  case Reject::batch:
    throw InputError("global batch (" + str(s.batch()) + ") must be divisible by dp*micro-batch (" +
                         str(std::int64_t{s.dp} * s.micro_batch) + ")",
                     "", 0, "--global-batch");
  case Reject::interleave:
    throw InputError("interleave > 1 needs pp > 1 and the number of micro-batches (" +
                         str(s.batch() / (std::int64_t{s.dp} * s.micro_batch)) +
                         ") divisible by pp (" + str(s.pp) + ")",
                     "", 0, "--interleave");
  case Reject::zero:
    if (s.zero_shard != 0)
      throw InputError("a shard group (" + str(s.zero_shard) + ") needs --zero 1..3 and must " +
                           "divide dp*cp (" + str(std::int64_t{s.dp} * s.cp) + ")",
                       "", 0, "--zero-shard");
    if ((s.bf16_moments || s.precision_aware_optimizer) && s.zero >= 0 && s.zero <= 3)
      throw InputError("the precision-aware optimizer (and its bf16 moments) is Megatron-Core's "
                       "distributed optimizer: it needs --zero 1..3 and --framework megatron",
                       "", 0, s.bf16_moments ? "--bf16-moments" : "--precision-aware-optimizer");
    throw InputError("ZeRO stage must be 0..3", "", 0, "--zero");
  case Reject::context:
    if (m_model.sliding_window > 0)
      throw InputError("context parallelism with sliding-window attention is not modeled (which "
                       "ring steps a window reaches): use --cp 1",
                       "", 0, "--cp");
    throw InputError("sequence (" + str(m_model.sequence) + ") must be divisible by 2*cp (" +
                         str(2 * std::int64_t{s.cp}) + "): causal load balancing gives each " +
                         "rank two of 2*cp chunks",
                     "", 0, "--cp");
  case Reject::experts:
    throw InputError("ep (" + str(s.ep) + ") must divide the experts (" + str(m_model.experts) +
                         ") and etp*ep (" + str(std::int64_t{s.expert_tp()} * s.ep) +
                         ") must divide tp*cp*dp (" +
                         str(std::int64_t{s.tp} * s.cp * s.dp) +
                         "); a dense model has ep 1; the load imbalance is in [1, 64]",
                     "", 0, "--ep");
  case Reject::offload:
    if (s.fp8_param_gather && !m_model.fp8)
      throw InputError("FP8 parameters need FP8 GEMMs (--dtype fp8)", "", 0, "--fp8-param-gather");
    if (s.offload_layers > 0 && !(m_system.host.bandwidth_gbps > 0))
      throw InputError("CPU offloading needs the GPU-host link: " + m_system.name +
                           " has no communication.host {bandwidth_gbps} in its system YAML",
                       "", 0, "--cpu-offloading-num-layers");
    throw InputError("CPU offloading of " + str(s.offload_layers) + " blocks needs 0 <= N < " +
                         "layers (" + str(m_model.layers) + "), pp 1, no recompute and " +
                         "--framework megatron (Megatron-Core's TransformerConfig checks)",
                     "", 0, "--cpu-offloading-num-layers");
  case Reject::recompute:
    throw InputError("recompute modules (" + recompute_modules_name(s.recompute_modules) +
                         ") need --recompute selective and --framework megatron (Megatron-Core "
                         "reads recompute_modules only with selective granularity)",
                     "", 0, "--recompute-modules");
  case Reject::memory:
    break;
  }
}

Scaling scale_layout(const Estimator &est, const Strategy &s, const Estimate &at_g, int n) {
  const int g = static_cast<int>(s.gpus()); // validated: <= kMaxGpus
  const std::int64_t tp_pp = std::int64_t{s.tp} * s.pp;
  if (n <= 0 || n > kMaxGpus || n % tp_pp != 0)
    throw InputError("must be a multiple of tp*pp = " + std::to_string(tp_pp) + " in [1, " +
                         std::to_string(kMaxGpus) + "]",
                     "", 0, "--scale-to");
  Scaling r;
  r.from_gpus = g;
  r.to_gpus = n;
  r.at_n = s;
  r.at_n.dp = static_cast<int>(n / tp_pp);
  const std::int64_t batch_n = s.batch() / s.dp * r.at_n.dp;
  if (batch_n > std::numeric_limits<int>::max())
    throw InputError("the scaled global batch " + std::to_string(batch_n) + " exceeds " +
                         std::to_string(std::numeric_limits<int>::max()),
                     "", 0, "--scale-to");
  r.at_n.global_batch = static_cast<int>(batch_n);
  est.validate(r.at_n, n);
  est.evaluate(r.at_n, r.estimate_n);
  const auto &tg = at_g.time_s, &tn = r.estimate_n.time_s;
  r.iteration_ratio = tg.iteration / tn.iteration;
  r.network_efficiency = tn.communication > 0 ? tg.communication / tn.communication : 1.0;
  const double r_cm = (tg.communication - tg.overlap) / tg.iteration;
  r.predicted_ratio = cheng_speedup(1.0 - r_cm, r_cm, r.network_efficiency);
  r.throughput_speedup = r.estimate_n.samples_per_s / at_g.samples_per_s;
  r.scaling_efficiency = r.throughput_speedup * g / n;
  return r;
}

}  // namespace scalefit::estimator

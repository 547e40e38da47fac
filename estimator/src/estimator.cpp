// The analytical training model (Lu et al. time split; Korthikanti et al. memory; Narayanan et
// al. FLOPs and parameters; Rajbhandari et al. model states; Calculon's efficiency tables).
#include "scalefit/estimator/estimator.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/estimator/constants.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace scalefit::estimator {

double parameter_count(const ModelConfig &m) {
  const double l = m.layers, h = m.hidden, f = m.ffn_size(), V = m.vocabulary, s = m.sequence;
  const double head = m.tied_embeddings ? 0.0 : V * h; // an untied LM head has its own V x h
  return l * (4 * h * h + 2 * h * f + 9 * h + f) + (V + s) * h + 2 * h + head;
}

double layer_flops_per_sample(const ModelConfig &m) {
  const double l = m.layers, h = m.hidden, f = m.ffn_size(), s = m.sequence;
  return 3 * l * (2 * s * (4 * h * h + 2 * h * f) + 4 * s * s * h);
}

double iteration_flops(const ModelConfig &m, double batch, Recompute recompute) {
  const double l = m.layers, h = m.hidden, f = m.ffn_size(), s = m.sequence, V = m.vocabulary;
  const double fwd_layers = l * (2 * s * (4 * h * h + 2 * h * f) + 4 * s * s * h);
  const double fwd_logits = 2 * s * h * V;
  double per_sample = 3 * (fwd_layers + fwd_logits);
  if (recompute == Recompute::full)
    per_sample += fwd_layers;
  if (recompute == Recompute::selective)
    per_sample += l * 4 * s * s * h;
  return batch * per_sample;
}

ModelStateBytes model_state_bytes(double psi, int zero, int dp, bool fp32_grads,
                                  double weight_bytes) {
  ModelStateBytes b;
  const double n = std::max(1, dp);
  b.weights = weight_bytes * psi / (zero >= 3 ? n : 1.0);
  b.gradients = (fp32_grads ? 4.0 : weight_bytes) * psi / (zero >= 2 ? n : 1.0);
  b.optimizer = 12.0 * psi / (zero >= 1 ? n : 1.0);
  return b;
}

double activation_bytes_per_layer(const ModelConfig &m, int micro_batch, int tp, bool sp,
                                  Recompute recompute) {
  const double s = m.sequence, b = micro_batch, h = m.hidden, a = m.heads, t = tp, f = m.ffn_size();
  const double scale = dtype_size(m.dtype) / 2.0;
  if (recompute == Recompute::full)
    return scale * 2 * s * b * h / (sp ? t : 1.0);
  const double attn_core =
      m.attention == Attention::fused
          ? constants::kFlashStatsBytes * a * s * b / t / scale // fp32 stats, not scaled by dtype
          : (recompute == Recompute::selective ? 0.0 : 5 * a * s * s * b / t);
  const double split = s * b * (8 * h + 4 * f) / t;
  const double unsplit = 10 * s * b * h / (sp ? t : 1.0);
  return scale * (unsplit + split + attn_core);
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
    return "heads % tp != 0";
  case Reject::layers:
    return "layers % (pp*interleave) != 0";
  case Reject::batch:
    return "global batch % (dp*micro-batch) != 0";
  case Reject::interleave:
    return "interleave needs pp > 1 and micro-batches % pp == 0";
  case Reject::zero:
    return "ZeRO-2/3 with pp > 1 (or stage outside 0..3)";
  case Reject::memory:
    return "exceeds device memory";
  }
  return "?";
}

Estimator::Estimator(ModelConfig model, SystemConfig system, std::shared_ptr<const CommModel> comm)
    : m_model(std::move(model)), m_system(std::move(system)), m_comm(std::move(comm)) {
  if (!m_comm)
    m_comm = std::make_shared<SpecCommModel>(m_system);
  const bool wide = m_model.dtype == DType::float32;
  m_peak = (wide ? m_system.device.matrix_tflops_32 : m_system.device.matrix_tflops_16) * 1e12;
  m_hbm = m_system.device.hbm_gbps * 1e9;
  m_launch_s = m_system.device.kernel_launch_us * 1e-6;
  m_el = static_cast<double>(dtype_size(m_model.dtype));
  m_params = parameter_count(m_model);
}

Reject Estimator::check(const Strategy &s, int gpus) const noexcept {
  // Products in 64 bits: degrees up to INT_MAX must not overflow (UBSan, SIGFPE on a 0 divisor).
  if (s.dp < 1 || s.tp < 1 || s.pp < 1 || s.micro_batch < 1 || s.interleave < 1)
    return Reject::gpus;
  if (s.gpus() > kMaxGpus || (gpus > 0 && s.gpus() != gpus))
    return Reject::gpus;
  if (m_model.heads % s.tp != 0)
    return Reject::heads;
  if (m_model.layers % (std::int64_t{s.pp} * s.interleave) != 0)
    return Reject::layers;
  const std::int64_t per_step = std::int64_t{s.dp} * s.micro_batch; // samples per micro-step
  if (s.batch() < 1 || s.batch() % per_step != 0)
    return Reject::batch;
  if (s.zero < 0 || s.zero > 3 || (s.zero >= 2 && s.pp > 1))
    return Reject::zero;
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
                         {s.micro_batch, "--micro-batch"},
                         {s.interleave, "--interleave"}})
    if (v < 1)
      throw InputError("must be >= 1, got " + str(v), "", 0, name);
  switch (check(s, gpus)) {
  case Reject::none:
    return;
  case Reject::gpus:
    if (s.gpus() > kMaxGpus)
      throw InputError("dp*tp*pp = " + str(s.dp) + " x " + str(s.tp) + " x " + str(s.pp) +
                           " exceeds the largest GPU count " + str(kMaxGpus),
                       "", 0, "--dp");
    throw InputError("dp*tp*pp = " + str(s.gpus()) + " but --gpus is " + str(gpus), "", 0,
                     "--gpus");
  case Reject::heads:
    throw InputError("heads (" + str(m_model.heads) + ") must be divisible by tp (" + str(s.tp) +
                         ")",
                     "", 0, "--tp");
  case Reject::layers:
    throw InputError("layers (" + str(m_model.layers) + ") must be divisible by pp*interleave (" +
                         str(std::int64_t{s.pp} * s.interleave) + ")",
                     "", 0, "--pp");
  case Reject::batch:
    throw InputError("global batch (" + str(s.batch()) + ") must be divisible by dp*micro-batch (" +
                         str(std::int64_t{s.dp} * s.micro_batch) + ")",
                     "", 0, "--global-batch");
  case Reject::interleave:
    throw InputError("interleave > 1 needs pp > 1 and the number of micro-batches (" +
                         str(s.batch() / (std::int64_t{s.dp} * s.micro_batch)) +
                         ") divisible by pp (" +
                         str(s.pp) + ")",
                     "", 0, "--interleave");
  case Reject::zero:
    throw InputError("ZeRO stage must be 0..3, and ZeRO-2/3 cannot be combined with pp > 1", "", 0,
                     "--zero");
  case Reject::memory:
    break;
  }
}

namespace {
const char *fit_dtype(DType d) {
  return d == DType::bfloat16 ? "bf16" : d == DType::half ? "fp16" : "tf32";
}
const char *alt_dtype(DType d) {
  return d == DType::bfloat16 ? "fp16" : d == DType::half ? "bf16" : "fp32";
}
} // namespace

void Estimator::use_compute(const fitting::ComputeSection &c) {
  using fitting::KernelKind;
  auto pick = [&](KernelKind k, std::optional<fitting::ComputeFit> &slot, std::string &src) {
    const fitting::ComputeFit *f = c.find(fit_dtype(m_model.dtype), k);
    std::string note;
    if (!f) {
      f = c.find(alt_dtype(m_model.dtype), k);
      note = std::string(" for ") + fit_dtype(m_model.dtype);
    }
    if (!f)
      return;
    slot = *f;
    src = std::string("fit:") + fitting::kernel_kind_name(k) + ":" + f->dtype + note;
  };
  pick(KernelKind::gemm, m_fit_gemm, m_src_gemm);
  pick(KernelKind::batched_gemm, m_fit_bgemm, m_src_bgemm);
  pick(KernelKind::memory, m_fit_mem, m_src_mem);
  pick(KernelKind::attention_fused, m_fit_attn, m_src_fused);
  if (!m_fit_bgemm && m_fit_gemm) { // batched GEMMs priced as single ones when not measured
    m_fit_bgemm = m_fit_gemm;
    m_src_bgemm = m_src_gemm;
  }
  m_src_attn = m_src_bgemm;
  m_framework = c.framework;
  if (m_framework.present) {
    m_launch_s = 0; // the calibrated dispatch floor replaces the system's launch share
    for (std::string *s : {&m_src_gemm, &m_src_bgemm, &m_src_mem, &m_src_attn, &m_src_fused})
      *s += " +calibrated";
  }
}

double Estimator::mem_n_s(double n, double bytes) const noexcept {
  return n > 0 ? n * mem_s(bytes / n) : 0.0;
}

double Estimator::kernel_s(double gpu_s) const noexcept {
  return std::max(gpu_s, m_framework.dispatch_us * 1e-6) + m_launch_s;
}

double Estimator::gemm_s(double m, double n, double k, double batch) const noexcept {
  if (m_fit_gemm)
    return kernel_s(m_fit_gemm->gemm_us(m, n, k, batch) * 1e-6);
  const double flops = 2 * m * n * k * batch;
  return kernel_s(flops / (m_peak * m_system.device.gemm_efficiency.at(flops * 1e-9)));
}

double Estimator::bgemm_s(double m, double n, double k, double batch) const noexcept {
  if (m_fit_bgemm)
    return kernel_s(m_fit_bgemm->gemm_us(m, n, k, batch) * 1e-6);
  return gemm_s(m, n, k, batch);
}

double Estimator::mem_s(double bytes) const noexcept {
  const double eff = m_framework.present ? m_framework.memory_efficiency : 1.0;
  if (m_fit_mem)
    return kernel_s(m_fit_mem->memory_us(bytes) * 1e-6 / eff);
  return kernel_s(bytes / (m_hbm * m_system.device.hbm_efficiency.at(bytes * 1e-6) * eff));
}

double Estimator::attn_fused_s(double flops_fwd, double factor) const noexcept {
  if (m_fit_attn)
    return kernel_s(m_fit_attn->flops_us(factor * flops_fwd) * 1e-6);
  return kernel_s(factor * flops_fwd / (m_peak * constants::kFusedAttentionEfficiency));
}

void Estimator::evaluate(const Strategy &st, Estimate &e) const noexcept {
  const ModelConfig &md = m_model;
  const double s = md.sequence, h = md.hidden, a = md.heads, f = md.ffn_size(), V = md.vocabulary;
  const double b = st.micro_batch, t = st.tp, p = st.pp, v = st.interleave, d = st.dp;
  const double el = m_el, k = el / 2.0;   // bytes per element; memory-op byte counts assume 2
  const double T = b * s;                 // tokens per micro-batch
  const double L = double(md.layers) / p; // layers per stage
  const int m = static_cast<int>(st.batch() / (std::int64_t{st.dp} * st.micro_batch));
  const bool sp = st.sp && st.tp > 1;
  const int gpn = m_system.gpus_per_node;

  // --- Compute of one layer for one micro-batch on one TP rank (forward) ---
  const bool fused = md.attention == Attention::fused;
  // The four dense GEMMs (QKV, projection, MLP up, MLP down) as (m, n, k): forward; backward as
  // the two GEMMs autograd runs, data gradient (m, k, n) and weight gradient (k, n, m). Without a
  // fit only FLOPs count and backward is twice forward; a fit prices each shape (a weight
  // gradient's k is the token count, and odd or small k runs at its own rate).
  const double lin[4][3] = {{T, 3 * h / t, h}, {T, h, h / t}, {T, f / t, h}, {T, h, f / t}};
  double g_lin = 0, g_lin_bwd = 0;
  for (const auto &g : lin) {
    g_lin += gemm_s(g[0], g[1], g[2], 1);
    g_lin_bwd += m_fit_gemm ? gemm_s(g[0], g[2], g[1], 1) + gemm_s(g[2], g[1], g[0], 1)
                            : 2 * gemm_s(g[0], g[1], g[2], 1);
  }
  const double e_ln = sp ? T * h / t : T * h; // elements of the LayerNorm/dropout region
  const double S = b * (a / t) * s * s;       // attention score elements
  const double e_f = T * f / t;               // MLP inner elements
  double a_fwd = 0, a_bwd = 0;                // attention core, forward and backward
  if (fused) {
    // FlashAttention: one kernel each way, causal half of 4 b s^2 h / t FLOPs forward.
    // The kernel works at the head dimension rounded up to the one it was built for.
    const double d_head = h / a;
    const double d_kernel =
        std::ceil(d_head / constants::kFlashHeadDimStep) * constants::kFlashHeadDimStep;
    const double fl = constants::kCausalFraction * 4 * b * s * s * h / t * (d_kernel / d_head);
    a_fwd = attn_fused_s(fl, 1.0);
    a_bwd = attn_fused_s(fl, constants::kFlashBackwardFactor);
  } else {
    // Megatron 2022: scores and context batched GEMMs; softmax and dropout through HBM.
    const double g_attn = 2 * bgemm_s(s, s, h / a, b * a / t);
    a_fwd = g_attn + mem_s(k * 4 * S) + mem_s(k * 5 * S);
    a_bwd = 2 * g_attn + mem_s(k * 6 * S) + mem_s(k * 5 * S);
  }
  const bool eager = st.framework == Framework::pytorch;
  const EagerCosts ec = eager ? eager_costs(b) : EagerCosts{};
  const double m_fwd =
      eager ? ec.layer_fwd
            : 2 * mem_s(k * 4 * e_ln) + 2 * mem_s(k * 7 * e_ln) + mem_s(k * 4 * e_f);
  const double m_bwd =
      eager ? ec.layer_bwd
            : 2 * mem_s(k * 6 * e_ln) + 2 * mem_s(k * 7 * e_ln) + mem_s(k * 6 * e_f);
  const double fwd_layer = g_lin + a_fwd + m_fwd;
  const bool full = st.recompute == Recompute::full;
  const bool selective = st.recompute == Recompute::selective && !fused;
  double rec_layer = 0;
  if (full)
    rec_layer = fwd_layer;
  if (selective)
    rec_layer = a_fwd;
  const double bwd_layer = g_lin_bwd + a_bwd + m_bwd + rec_layer;
  // Logits and cross-entropy on the last stage (fp32 softmax over V/t).
  const double logits_gemm =
      m_fit_gemm ? gemm_s(T, V / t, h, 1) + gemm_s(T, h, V / t, 1) + gemm_s(h, V / t, T, 1)
                 : 3 * gemm_s(T, V / t, h, 1);
  const double xent = eager ? ec.head : 2 * mem_s(4 * 3 * T * V / t);
  const double logits = logits_gemm + xent;
  const double mb_cp = L * (fwd_layer + bwd_layer) + logits;

  // --- Messages ---
  e.n_messages = 0;
  auto add = [&](Op op, Parallelism by, const char *what, double bytes, const CommGroup &g,
                 double count) -> double {
    if (count <= 0 || bytes <= 0 || g.nranks <= 1)
      return 0.0;
    const CommPrice pr = m_comm->price(op, g, bytes);
    if (e.n_messages < kMaxMessages) {
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
  };

  // TP: per layer per micro-batch 2 forward + 2 backward AllReduce of b s h (Megatron), or
  // ReduceScatter + AllGather pairs with SP; full recomputation repeats the forward ones.
  double tp_total = 0, tp_mb = 0;
  if (st.tp > 1) {
    const CommGroup g = group_shape(st.tp, 1, gpn);
    const double bytes = T * h * el;
    const double per_layer = 4 + (st.recompute == Recompute::full ? 2 : 0);
    const double n = m * L * per_layer;
    if (sp) {
      tp_total += add(Op::allgather, Parallelism::tp, "layer activations (SP)", bytes, g, n);
      tp_total += add(Op::reducescatter, Parallelism::tp, "layer activations (SP)", bytes, g, n);
    } else {
      tp_total += add(Op::allreduce, Parallelism::tp, "layer activations", bytes, g, n);
    }
    // vocab-parallel embedding output (first stage) and logits input gradient (last stage)
    tp_total += add(sp ? Op::reducescatter : Op::allreduce, Parallelism::tp, "embedding/logits",
                    bytes, g, m * (p > 1 ? 1.0 : 2.0));
    tp_mb = tp_total / m;
  }
  // PP: each stage sends activations forward and gradients backward per micro-batch and chunk.
  double pp_total = 0, pp_mb = 0;
  if (st.pp > 1) {
    const CommGroup g = group_shape(2, st.tp * st.dp, gpn);
    const double bytes = T * h * el / (st.pp_scatter_gather && st.tp > 1 ? t : 1.0);
    pp_total = add(Op::sendrecv, Parallelism::pp, "stage boundary (fwd+bwd)", bytes, g, 2 * v * m);
    pp_mb = pp_total / m;
  }

  // --- Parameters and model states on the largest stage (first stage: embedding + layers) ---
  const double split_per_layer = 4 * h * h + 2 * h * f + 3 * h + f;
  const double repl_per_layer = 6 * h;
  const double layers_params = L * (split_per_layer / t + repl_per_layer);
  const double head_params = md.tied_embeddings ? 0.0 : V * h / t; // untied LM head
  const double first_extra = V * h / t + s * h + (st.pp == 1 ? 2 * h + head_params : 0.0);
  const double last_extra = V * h / t + 2 * h;
  const double p_local = layers_params + std::max(first_extra, last_extra);
  const double grad_el = st.fp32_grads ? 4.0 : el;

  // --- DP / ZeRO ---
  double dp_total = 0, overlap = 0;
  const double bwd_mb = L * bwd_layer; // backward of one micro-batch on the stage
  const double fwd_mb = L * fwd_layer;
  if (st.dp > 1) {
    const CommGroup g = group_shape(st.dp, st.tp, gpn);
    const double bucket = std::max(1.0, st.bucket_bytes);
    // Gradients in buckets: returns time, records full buckets and the remainder.
    auto buckets = [&](Op op, Parallelism by, const char *what, double total_bytes, double times,
                       double &last_s) {
      const double full = std::floor(total_bytes / bucket);
      const double rest = total_bytes - full * bucket;
      double time = add(op, by, what, bucket, g, full * times);
      const double t_rest = add(op, by, what, rest, g, times);
      time += t_rest;
      last_s =
          rest > 0 ? t_rest / times : (full > 0 ? m_comm->price(op, g, bucket).time_us * 1e-6 : 0);
      return time;
    };
    double last = 0;
    const double grad_bytes = p_local * grad_el;
    if (st.zero == 0) {
      const double tc =
          buckets(Op::allreduce, Parallelism::dp, "gradient buckets", grad_bytes, 1, last);
      dp_total += tc;
      if (st.overlap_dp)
        overlap += std::min(tc - last, bwd_mb);
    } else if (st.zero == 1) {
      const double tc =
          buckets(Op::reducescatter, Parallelism::zero, "gradient buckets", grad_bytes, 1, last);
      dp_total += tc;
      if (st.overlap_dp)
        overlap += std::min(tc - last, bwd_mb);
      double l2 = 0;
      dp_total +=
          buckets(Op::allgather, Parallelism::zero, "updated parameters", p_local * el, 1, l2);
    } else if (st.zero == 2) {
      const double tc = buckets(Op::reducescatter, Parallelism::zero,
                                "gradient buckets (per micro-batch)", grad_bytes, m, last);
      dp_total += tc;
      if (st.overlap_dp)
        overlap += m * std::min(tc / m - last, bwd_mb);
      double l2 = 0;
      dp_total +=
          buckets(Op::allgather, Parallelism::zero, "updated parameters", p_local * el, 1, l2);
    } else {
      // ZeRO-3: gather each layer's parameters for forward and again for backward, and
      // reduce-scatter its gradients, every micro-batch; prefetch hides all but the first.
      const double layer_bytes = p_local / L * el;
      const double n = m * L;
      const double t_agf =
          add(Op::allgather, Parallelism::zero, "layer parameters (forward)", layer_bytes, g, n);
      const double t_agb =
          add(Op::allgather, Parallelism::zero, "layer parameters (backward)", layer_bytes, g, n);
      const double t_rs =
          add(Op::reducescatter, Parallelism::zero, "layer gradients", p_local / L * grad_el, g, n);
      dp_total += t_agf + t_agb + t_rs;
      if (st.overlap_dp) {
        const double one = t_agf / n;
        overlap +=
            m * std::min(t_agf / m - one, fwd_mb) + m * std::min((t_agb + t_rs) / m - one, bwd_mb);
      }
    }
  }
  overlap = std::max(0.0, overlap);
  if (st.overlap_tp)
    overlap += std::min(tp_total, m * mb_cp);

  // --- Optimizer step: memory-bound Adam over the local shard (read 16 B, write 16 B / param) ---
  const double p_opt = p_local / (st.zero >= 1 ? d : 1.0);
  const double t_opt =
      eager ? mem_n_s(std::ceil(p_opt / constants::kAdamWElementsPerLaunch),
                      constants::kAdamWBytesPerParam * p_opt)
            : mem_s(32 * p_opt);

  // --- Compute terms and what priced them ---
  const double mL = m * L;
  e.terms[0] = {"layer GEMMs", mL * (g_lin * (1 + (full ? 1 : 0)) + g_lin_bwd), m_src_gemm.c_str()};
  e.terms[1] = {fused ? "attention (fused)" : "attention (unfused)",
                mL * (a_fwd + a_bwd + (full || selective ? a_fwd : 0)),
                fused ? m_src_fused.c_str() : m_src_attn.c_str()};
  e.terms[2] = {"memory-bound (layers)", mL * (m_fwd + m_bwd + (full ? m_fwd : 0)),
                m_src_mem.c_str()};
  e.terms[3] = {"logits GEMMs", m * logits_gemm, m_src_gemm.c_str()};
  e.terms[4] = {eager ? "cross-entropy, embeddings" : "cross-entropy", m * xent,
                m_src_mem.c_str()};
  e.terms[5] = {"optimizer", t_opt, m_src_mem.c_str()};

  // --- Time (Lu et al.) ---
  const double mb_time = mb_cp + tp_mb + pp_mb;
  e.time_s.compute = m * mb_cp + t_opt;
  e.time_s.communication = tp_total + pp_total + dp_total;
  e.time_s.overlap = overlap;
  e.time_s.bubble = (p - 1) / v * mb_time;
  e.time_s.iteration = e.time_s.compute + e.time_s.communication - overlap + e.time_s.bubble;
  e.comm_tp_s = tp_total;
  e.comm_pp_s = pp_total;
  e.comm_dp_s = dp_total;
  e.micro_batches = m;

  // --- Memory on the first stage (Korthikanti et al. 2022, Sec. 4) ---
  const ModelStateBytes ms = model_state_bytes(p_local, st.zero, st.dp, st.fp32_grads, el);
  e.memory_bytes.weights = ms.weights;
  if (st.zero >= 3 && st.dp > 1)
    e.memory_bytes.weights += 2 * p_local / L * el; // gathered layers
  e.memory_bytes.gradients = ms.gradients;
  e.memory_bytes.optimizer = ms.optimizer;
  const double in_flight = st.pp == 1 ? 1.0 : std::min<double>(m, st.pp);
  const double interleave_factor = st.interleave > 1 ? 1.0 + (p - 1) / (p * v) : 1.0;
  double act = activation_bytes_per_layer(md, st.micro_batch, st.tp, sp, st.recompute) * L *
               in_flight * interleave_factor;
  if (st.recompute == Recompute::full) // one layer's activations live during its recompute
    act += activation_bytes_per_layer(md, st.micro_batch, st.tp, sp, Recompute::none);
  e.memory_bytes.activations = act;
  e.memory_bytes.total = e.memory_bytes.weights + ms.gradients + ms.optimizer + act;
  if (eager) {
    // PyTorch autocast: fp32 weights (4), gradients (4) and AdamW moments (8) per parameter. The
    // peak is either at the cross-entropy backward (weights, moments, bf16 weight copies saved
    // for backward, every activation, the live fp32 logit buffers; no gradient yet) or after
    // backward (all 16 bytes per parameter).
    const double psi = p_local;
    const double mm = L * (4 * h * h + 2 * h * f) / t + (md.tied_embeddings ? 0.0 : V * h / t);
    const double copies = full ? 0.0 : 2 * mm; // recompute casts again per block in backward
    const double full_act =
        full ? 4 * s * b * h * L / (sp ? t : 1.0) +
                   activation_bytes_per_layer(md, st.micro_batch, st.tp, sp, Recompute::none)
             : act;
    const double logits_live = constants::kEagerXentLiveBytesPerLogit * T * V / t;
    e.memory_bytes.weights = 4 * psi;
    e.memory_bytes.optimizer = 8 * psi;
    e.memory_bytes.activations = full_act + copies + logits_live;
    const double at_loss = 12 * psi + e.memory_bytes.activations;
    const double after = 16 * psi;
    e.memory_bytes.gradients = at_loss >= after ? 0.0 : 4 * psi;
    if (at_loss < after)
      e.memory_bytes.activations = 0;
    e.memory_bytes.total = std::max(at_loss, after);
  }
  if (m_framework.present) // calibrated fixed overhead (allocator, workspaces, buffers)
    e.memory_bytes.total += m_framework.memory_overhead_gib * 1073741824.0;
  e.fits_memory = e.memory_bytes.total <= m_system.memory_bytes();

  // --- Throughput ---
  const double n_gpus = st.gpus();
  const double B = st.batch();
  e.params = m_params;
  e.params_per_gpu = p_local;
  e.model_flops = iteration_flops(md, B, Recompute::none);
  e.hardware_flops = iteration_flops(md, B, st.recompute);
  const double it = e.time_s.iteration;
  e.tflops_per_gpu = e.hardware_flops / (n_gpus * it) * 1e-12;
  e.mfu = e.model_flops / (n_gpus * it * m_peak);
  e.samples_per_s = B / it;
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

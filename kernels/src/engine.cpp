// Engine selection, precisions, naive references and the -c check.
#include "scalefit/kernels/engine.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/kernels/cpu_engine.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <cstdio>
#include <random>

namespace scalefit::kernels {

#ifdef SCALEFIT_KERNELS_HAVE_CUDA
// cublas_engine.cpp
int cuda_device_count(std::string *why);
std::unique_ptr<GemmEngine> make_cublas_engine(Precision precision);
#endif

std::string_view precision_name(Precision p) {
  switch (p) {
  case Precision::fp64:
    return "fp64";
  case Precision::fp32:
    return "fp32";
  case Precision::tf32:
    return "tf32";
  case Precision::fp16:
    return "fp16";
  case Precision::bf16:
    return "bf16";
  case Precision::fp8:
    return "fp8";
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view name) {
  std::string s(name);
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (s == "fp64" || s == "double" || s == "f64" || s == "float64")
    return Precision::fp64;
  if (s == "fp32" || s == "float" || s == "f32" || s == "float32")
    return Precision::fp32;
  if (s == "tf32")
    return Precision::tf32;
  if (s == "fp16" || s == "half" || s == "f16" || s == "float16")
    return Precision::fp16;
  if (s == "bf16" || s == "bfloat16")
    return Precision::bf16;
  if (s == "fp8" || s == "e4m3" || s == "fp8_e4m3" || s == "float8_e4m3fn")
    return Precision::fp8;
  return std::nullopt;
}

std::size_t precision_bytes(Precision p) {
  switch (p) {
  case Precision::fp64:
    return 8;
  case Precision::fp16:
  case Precision::bf16:
    return 2;
  case Precision::fp8:
    return 1;
  default:
    return 4;
  }
}

Precision kernel_precision(Precision p, const KernelShape &shape) {
  if (p != Precision::fp8)
    return p;
  const bool aligned = shape.m % 16 == 0 && shape.n % 16 == 0 && shape.k % 16 == 0;
  return shape.kind == KernelKind::gemm && shape.batch == 1 && aligned ? Precision::fp8
                                                                         : Precision::bf16;
}

bool fp8_supported(int sm) {
  return sm >= 89;
}

std::string fp8_refusal(std::string_view device, int sm) {
  if (fp8_supported(sm))
    return "";
  return "--dtype fp8 needs FP8 tensor cores (compute capability 8.9 or newer: Ada, Hopper, "
         "Blackwell); " +
         std::string(device) + " is sm_" + std::to_string(sm) + " (use -d bf16)";
}

std::uint64_t kernel_device_bytes(const KernelShape &s, Precision p) {
  const long double es = static_cast<long double>(precision_bytes(kernel_precision(p, s)));
  const long double m = static_cast<long double>(s.m), n = static_cast<long double>(s.n),
                    k = static_cast<long double>(s.k), b = static_cast<long double>(s.batch);
  long double bytes = 0;
  switch (s.kind) {
  case KernelKind::gemm:
  case KernelKind::batched_gemm:
    bytes = (m * k + k * n + m * n) * b * es;
    break;
  case KernelKind::grouped_gemm:
    for (const GemmDims &g : s.groups())
      bytes += (static_cast<long double>(g.m) * g.k + static_cast<long double>(g.k) * g.n +
                static_cast<long double>(g.m) * g.n) *
               es;
    break;
  case KernelKind::softmax:
    bytes = m * n * b * es;
    break;
  case KernelKind::attention: // q k v out dout (+ dq dk dv backward) and fp32 statistics
    bytes = (s.pass == Pass::bwd ? 8 : 5) * b * m * k * es + b * m * 4;
    break;
  }
  const auto cap = static_cast<long double>(std::numeric_limits<std::uint64_t>::max());
  return bytes >= cap ? std::numeric_limits<std::uint64_t>::max()
                      : static_cast<std::uint64_t>(bytes);
}

std::string memory_refusal(const std::vector<KernelShape> &shapes, Precision p,
                           std::uint64_t available_bytes, std::string_view where) {
  if (available_bytes == 0)
    return "";
  const KernelShape *worst = nullptr;
  std::uint64_t worst_bytes = 0;
  for (const KernelShape &s : shapes)
    if (const std::uint64_t b = kernel_device_bytes(s, p); b > worst_bytes) {
      worst_bytes = b;
      worst = &s;
    }
  if (worst == nullptr || worst_bytes <= available_bytes)
    return "";
  const bool unfused_attention = worst->name.rfind("attn_", 0) == 0 ||
                                 worst->name.rfind("softmax", 0) == 0;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s needs %.2f GiB of operands (batch %lld of m=%lld n=%lld k=%lld in %s), more "
                "than %s (%.2f GiB); %s",
                worst->name.c_str(), static_cast<double>(worst_bytes) / (1ull << 30),
                static_cast<long long>(worst->batch), static_cast<long long>(worst->m),
                static_cast<long long>(worst->n), static_cast<long long>(worst->k),
                std::string(precision_name(kernel_precision(p, *worst))).c_str(),
                std::string(where).c_str(), static_cast<double>(available_bytes) / (1ull << 30),
                unfused_attention
                    ? "unfused attention materializes the s x s scores: use --attention fused, a "
                      "shorter --seq, a smaller --micro-batch or a larger --tp"
                    : "use a smaller --micro-batch, a larger --tp or --scale");
  return buf;
}

float fp8_scale(double amax) {
  if (!(amax > 0) || !std::isfinite(amax))
    return 1.0f;
  return 448.0f / static_cast<float>(amax);
}

double fp8_e4m3_round(double x) {
  if (std::isnan(x))
    return x;
  const double a = std::abs(x);
  if (a == 0)
    return x;
  // Spacing of E4M3 values at a: 2^(e - 3) in the binade [2^e, 2^(e+1)), e >= -6 (subnormals
  // share the spacing 2^-9 of the lowest binade). nearbyint rounds half to even (the default
  // rounding mode), as the device conversion does; a value rounding up into the next binade is
  // still exact there.
  int exp2 = 0;
  std::frexp(a, &exp2); // a = f 2^exp2, f in [0.5, 1): the binade is e = exp2 - 1, exactly
  const int e = std::max(exp2 - 1, -6);
  const double step = std::ldexp(1.0, e - 3);
  const double r = std::min(std::nearbyint(a / step) * step, 448.0);
  return std::copysign(r, x);
}

std::vector<double> fp8_quantize_dequantize(std::span<const double> x) {
  double amax = 0;
  for (double v : x)
    amax = std::max(amax, std::abs(v));
  const float s = fp8_scale(amax), descale = 1.0f / s;
  std::vector<double> out(x.size());
  // The device kernel multiplies in fp32 (fill.cu, quantize_fp8); so does this, bit for bit.
  for (std::size_t i = 0; i < x.size(); ++i)
    out[i] = fp8_e4m3_round(static_cast<double>(static_cast<float>(x[i]) * s)) *
             static_cast<double>(descale);
  return out;
}

bool cuda_built() {
#ifdef SCALEFIT_KERNELS_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int visible_gpus(std::string *why) {
#ifdef SCALEFIT_KERNELS_HAVE_CUDA
  return cuda_device_count(why);
#else
  if (why)
    *why = "not built with CUDA";
  return 0;
#endif
}

std::string default_engine_name() {
  return visible_gpus() > 0 ? "cublas" : "cpu";
}

Precision default_precision(std::string_view engine, DType model_dtype) {
  if (engine != "cublas")
    return Precision::fp32;
  if (model_dtype == DType::bfloat16)
    return Precision::bf16;
  if (model_dtype == DType::half)
    return Precision::fp16;
  return Precision::tf32;
}

std::unique_ptr<GemmEngine> make_engine(std::string_view name, Precision precision) {
  if (name == "cpu")
    return make_cpu_engine(precision);
  if (name != "cublas")
    throw InputError("unknown engine '" + std::string(name) + "' (expected cpu or cublas)", "", 0,
                     "--engine");
#ifdef SCALEFIT_KERNELS_HAVE_CUDA
  std::string why;
  if (visible_gpus(&why) <= 0)
    throw InputError("no GPU visible (" + why + "); use --engine cpu" +
                         (precision == Precision::fp8
                              ? " with -d fp32 (fp8 needs a GPU of compute capability 8.9+)"
                              : ""),
                     "", 0, "--engine");
  return make_cublas_engine(precision);
#else
  (void)precision;
  throw InputError("scalefit-bench was not built with CUDA (configure with "
                   "-DSCALEFIT_ENABLE_CUDA=ON); use --engine cpu",
                   "", 0, "--engine");
#endif
}

std::vector<double> naive_gemm(std::span<const double> a, std::span<const double> b, std::int64_t m,
                               std::int64_t n, std::int64_t k, std::int64_t batch) {
  std::vector<double> c(static_cast<std::size_t>(batch * m * n), 0.0);
  for (std::int64_t q = 0; q < batch; ++q)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double acc = 0.0;
        for (std::int64_t p = 0; p < k; ++p)
          acc += a[static_cast<std::size_t>(q * m * k + i * k + p)] *
                 b[static_cast<std::size_t>(q * k * n + p * n + j)];
        c[static_cast<std::size_t>(q * m * n + i * n + j)] = acc;
      }
  return c;
}

std::vector<double> naive_grouped_gemm(std::span<const double> a, std::span<const double> b,
                                       const std::vector<GemmDims> &groups) {
  std::vector<double> c;
  std::size_t oa = 0, ob = 0;
  for (const GemmDims &g : groups) {
    const auto na = static_cast<std::size_t>(g.m * g.k), nb = static_cast<std::size_t>(g.k * g.n);
    const std::vector<double> part =
        naive_gemm(a.subspan(oa, na), b.subspan(ob, nb), g.m, g.n, g.k, 1);
    c.insert(c.end(), part.begin(), part.end());
    oa += na;
    ob += nb;
  }
  return c;
}

std::vector<double> naive_softmax(std::span<const double> x, std::int64_t rows, std::int64_t cols) {
  std::vector<double> y(x.begin(), x.begin() + rows * cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    double *row = y.data() + r * cols;
    const double mx = *std::max_element(row, row + cols);
    double sum = 0.0;
    for (std::int64_t j = 0; j < cols; ++j)
      sum += (row[j] = std::exp(row[j] - mx));
    for (std::int64_t j = 0; j < cols; ++j)
      row[j] /= sum;
  }
  return y;
}

KernelShape check_slice(const KernelShape &shape) {
  KernelShape s = shape;
  // A dimension over the cap becomes the cap when it is a multiple of 16, else cap - 16 + d % 16:
  // the slice keeps each dimension's 16-alignment, so it runs the path the shape runs (fp8 or
  // bf16 under -d fp8, cuBLAS's aligned or unaligned kernels).
  const auto shrink = [](std::int64_t d, std::int64_t cap) {
    return d <= cap ? d : d % 16 == 0 ? cap : cap - 16 + d % 16;
  };
  s.m = shrink(s.m, 48);
  s.n = shrink(s.n, 48);
  if (s.kind != KernelKind::softmax)
    s.k = shrink(s.k, 64);
  s.batch = std::min<std::int64_t>(s.batch, 2);
  if (s.kind == KernelKind::grouped_gemm && !s.group_tokens.empty()) {
    // The first two groups' tokens, shrunk as their dimension is; groups that differ still
    // differ in the slice (16 apart, the same alignment), so the unequal path is what runs.
    const std::int64_t cap = s.tokens_in_k ? 64 : 48;
    s.group_tokens.resize(static_cast<std::size_t>(s.batch));
    bool differ = false;
    for (std::size_t i = 0; i < s.group_tokens.size(); ++i) {
      differ |= shape.group_tokens[i] != shape.group_tokens[0];
      s.group_tokens[i] = shrink(s.group_tokens[i], cap);
    }
    if (differ && s.group_tokens.size() > 1 && s.group_tokens[0] == s.group_tokens[1])
      s.group_tokens[1] = std::max<std::int64_t>(1, s.group_tokens[0] - 16);
  }
  if (s.kind == KernelKind::attention) {
    s.m = s.n = std::min<std::int64_t>(shape.m, 64);
    s.k = shape.k;
  }
  return s;
}

namespace {

/// The -c check of an FP8 GEMM (engine.hpp, check_shape). Bounds, per element C_ij = sum_p
/// a_ip b_pj over k products:
/// - E4M3 keeps 3 mantissa bits: a normal value rounds with relative error u <= 2^-4. Inputs are
///   1/64 <= |x| <= 1 and scaled by 448 / amax >= 448, so |x s| >= 7, far above E4M3's smallest
///   normal 2^-6: no subnormals. A product of two rounded inputs is off by (1 + d1)(1 + d2) - 1,
///   at most 2u + u^2 = 2^-3 + 2^-8 ~ 0.1289 of |a b|; summed, 0.1289 sum_p |a_ip b_pj|. fp32
///   accumulation (k <= 64 here: k 2^-24), the fp32 scale products and the bf16 output rounding
///   (2^-9 of |C|, taken as 2^-8 |ref| plus 2^-8 of the error) stay within 0.135 sum |a b| +
///   2^-8 |ref|: the E4M3 tolerance against the exact reference.
/// - That bound is a few times a typical |C| (random signs: |C| ~ sqrt(k) mean |a b|, the bound
///   ~ 0.13 k mean |a b|), too loose to catch a transposed operand or a wrong scale. So each
///   element is also compared with the reference of the dequantized FP8 operands (the device's
///   rounding, modelled bit for bit by fp8_quantize_dequantize): only the bf16 output rounding
///   (2^-8 |ref_q|) and the accumulation remain; 2^-9 sum |qa qb| allows Hopper's FP8 tensor
///   cores their reduced-precision accumulation inside an MMA (about 14 bits, as the DeepSeek-V3
///   technical report measured on H800), which cuBLASLt promotes to fp32 between blocks. A wrong
///   layout or scale is off by about |C| itself, ~ sqrt(k) mean |a b| against 2^-9 k mean |a b|.
CheckResult check_fp8_gemm(GemmEngine &engine, const KernelShape &s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> mag(1.0f / 64, 1.0f);
  std::bernoulli_distribution negative(0.5);
  std::vector<double> a(static_cast<std::size_t>(s.batch * s.m * s.k)),
      b(static_cast<std::size_t>(s.batch * s.k * s.n));
  for (auto *v : {&a, &b})
    for (double &x : *v)
      x = (negative(rng) ? -1.0 : 1.0) * static_cast<double>(mag(rng));
  const std::vector<double> qa = fp8_quantize_dequantize(a), qb = fp8_quantize_dequantize(b);
  const std::vector<double> expect = naive_gemm(a, b, s.m, s.n, s.k, s.batch),
                            expect_q = naive_gemm(qa, qb, s.m, s.n, s.k, s.batch);
  std::vector<double> abs_a(a.size()), abs_b(b.size()), abs_qa(a.size()), abs_qb(b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    abs_a[i] = std::abs(a[i]), abs_qa[i] = std::abs(qa[i]);
  for (std::size_t i = 0; i < b.size(); ++i)
    abs_b[i] = std::abs(b[i]), abs_qb[i] = std::abs(qb[i]);
  const std::vector<double> mass = naive_gemm(abs_a, abs_b, s.m, s.n, s.k, s.batch),
                            mass_q = naive_gemm(abs_qa, abs_qb, s.m, s.n, s.k, s.batch);
  const std::vector<double> got = engine.evaluate(s, a, b);
  CheckResult res;
  res.checked = static_cast<std::int64_t>(expect.size());
  if (got.size() != expect.size()) {
    res.wrong = res.checked;
    return res;
  }
  constexpr double kOut = 1.0 / 256; // 2^-8: bf16 output rounding, with margin
  for (std::size_t i = 0; i < expect.size(); ++i) {
    const double err = std::abs(got[i] - expect[i]), err_q = std::abs(got[i] - expect_q[i]);
    const bool ok = err <= 0.135 * mass[i] + kOut * std::abs(expect[i]) + 1e-6 &&
                    err_q <= kOut * std::abs(expect_q[i]) + mass_q[i] / 512 + 1e-6;
    if (!ok) // NaN is wrong
      ++res.wrong;
    if (std::isnan(err) || err > res.max_abs_error)
      res.max_abs_error = std::isnan(err) ? INFINITY : std::max(res.max_abs_error, err);
  }
  return res;
}

} // namespace

CheckResult check_shape(GemmEngine &engine, const KernelShape &shape, std::uint64_t seed) {
  const KernelShape s = check_slice(shape);
  // What this kernel runs in (fp8 engines run attention, softmax and unaligned GEMMs in bf16);
  // check_slice keeps each dimension's 16-alignment, so the slice runs as the shape does.
  const Precision prec = kernel_precision(engine.precision(), s);
  if (prec == Precision::fp8)
    return check_fp8_gemm(engine, s, seed);
  std::mt19937_64 rng(seed);
  CheckResult res;
  std::vector<double> expect, got;
  double rel_tol = 0.0;
  bool attention_tol = false;
  if (s.kind == KernelKind::attention) {
    std::uniform_int_distribution<int> eighths(-8, 8);
    const std::size_t n = static_cast<std::size_t>(s.batch * s.m * s.k);
    const bool bwd = s.pass == Pass::bwd;
    std::vector<double> in((bwd ? 4 : 3) * n);
    for (double &x : in)
      x = eighths(rng) / 8.0;
    const std::span<const double> all(in);
    const double scale = 1.0 / std::sqrt(static_cast<double>(s.k));
    expect = bwd ? naive_attention_backward(all.subspan(0, n), all.subspan(n, n),
                                            all.subspan(2 * n, n), all.subspan(3 * n, n), s.batch,
                                            s.m, s.k, scale, s.causal)
                 : naive_attention(all.subspan(0, n), all.subspan(n, n), all.subspan(2 * n, n),
                                   s.batch, s.m, s.k, scale, s.causal);
    got = engine.evaluate(s, in, {});
    attention_tol = true;
    switch (prec) {
    case Precision::fp64:
      rel_tol = 1e-9;
      break;
    case Precision::fp32:
    case Precision::tf32:
      rel_tol = 1e-4;
      break;
    case Precision::fp16:
      rel_tol = 1e-2;
      break;
    case Precision::bf16:
    case Precision::fp8: // not reached: fp8 engines run attention in bf16
      rel_tol = 5e-2;
      break;
    }
  } else if (s.kind == KernelKind::softmax) {
    // Inputs exact in every precision: k/8 in [-4, 4], and on odd rows multiples of 1000 up to
    // +-2000 (exact even in bf16), where exp() without the max subtracted overflows.
    std::uniform_int_distribution<int> small(-32, 32), large(-2, 2);
    std::vector<double> x(static_cast<std::size_t>(s.batch * s.m * s.n));
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::int64_t row = static_cast<std::int64_t>(i) / s.n;
      x[i] = row % 2 == 1 ? 1000.0 * large(rng) : small(rng) / 8.0;
    }
    expect = naive_softmax(x, s.batch * s.m, s.n);
    got = engine.evaluate(s, x, {});
    switch (prec) {
    case Precision::fp64:
      rel_tol = 1e-12;
      break;
    case Precision::fp32:
    case Precision::tf32:
      rel_tol = 1e-5;
      break;
    case Precision::fp16:
      rel_tol = 2e-3;
      break;
    case Precision::bf16:
    case Precision::fp8: // not reached: fp8 engines run the softmax in bf16
      rel_tol = 1.6e-2;
      break;
    }
  } else {
    std::uniform_int_distribution<int> dist(-2, 2);
    std::int64_t na = 0, nb = 0;
    const std::vector<GemmDims> groups = s.groups();
    for (const GemmDims &g : groups) {
      na += g.m * g.k;
      nb += g.k * g.n;
    }
    std::vector<double> a(static_cast<std::size_t>(na)), b(static_cast<std::size_t>(nb));
    for (double &x : a)
      x = dist(rng);
    for (double &x : b)
      x = dist(rng);
    expect = s.kind == KernelKind::grouped_gemm ? naive_grouped_gemm(a, b, groups)
                                                : naive_gemm(a, b, s.m, s.n, s.k, s.batch);
    got = engine.evaluate(s, a, b);
  }
  res.checked = static_cast<std::int64_t>(expect.size());
  if (got.size() != expect.size()) {
    res.wrong = res.checked;
    return res;
  }
  for (std::size_t i = 0; i < expect.size(); ++i) {
    const double err = std::abs(got[i] - expect[i]);
    const double tol = attention_tol ? rel_tol * (1.0 + std::abs(expect[i]))
                                     : rel_tol * std::abs(expect[i]) + (rel_tol > 0 ? 1e-6 : 0.0);
    if (!(err <= tol)) // NaN is wrong
      ++res.wrong;
    if (std::isnan(err) || err > res.max_abs_error)
      res.max_abs_error = std::isnan(err) ? INFINITY : std::max(res.max_abs_error, err);
  }
  return res;
}

} // namespace scalefit::kernels

// Engine selection, precisions, naive references and the -c check.
#include "scalefit/kernels/engine.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/kernels/cpu_engine.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
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
  return std::nullopt;
}

std::size_t precision_bytes(Precision p) {
  switch (p) {
  case Precision::fp64:
    return 8;
  case Precision::fp16:
  case Precision::bf16:
    return 2;
  default:
    return 4;
  }
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
    throw InputError("no GPU visible (" + why + "); use --engine cpu", "", 0, "--engine");
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
  s.m = std::min<std::int64_t>(s.m, 48);
  s.n = std::min<std::int64_t>(s.n, 48);
  if (s.kind != KernelKind::softmax)
    s.k = std::min<std::int64_t>(s.k, 64);
  s.batch = std::min<std::int64_t>(s.batch, 2);
  if (s.kind == KernelKind::attention) {
    s.m = s.n = std::min<std::int64_t>(shape.m, 64);
    s.k = shape.k;
  }
  return s;
}

CheckResult check_shape(GemmEngine &engine, const KernelShape &shape, std::uint64_t seed) {
  const KernelShape s = check_slice(shape);
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
    switch (engine.precision()) {
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
    switch (engine.precision()) {
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
      rel_tol = 1.6e-2;
      break;
    }
  } else {
    std::uniform_int_distribution<int> dist(-2, 2);
    std::vector<double> a(static_cast<std::size_t>(s.batch * s.m * s.k)),
        b(static_cast<std::size_t>(s.batch * s.k * s.n));
    for (double &x : a)
      x = dist(rng);
    for (double &x : b)
      x = dist(rng);
    expect = naive_gemm(a, b, s.m, s.n, s.k, s.batch);
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

// The `cpu` engine: Eigen row-major maps over aligned buffers, host steady-clock timing.
#include "scalefit/kernels/cpu_engine.hpp"

#include "scalefit/core/error.hpp"
#include "scalefit/kernels/attention.hpp"
#include "scalefit/kernels/fill.hpp"

#include <Eigen/Core>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <thread>
#include <vector>

namespace scalefit::kernels {

namespace {

template <class T> using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T> using Buffer = std::vector<T, Eigen::aligned_allocator<T>>;

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos)
        return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "CPU";
}

template <class T> class CpuEngine final : public GemmEngine {
public:
  explicit CpuEngine(Precision p) : m_precision(p) {
    // mpirun (and a singleton's orted) may bind the process to one core; more OpenMP threads than
    // allowed cores make Eigen's GEMM stall for whole scheduler slices (10 ms for a 1 us GEMM).
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 &&
        CPU_COUNT(&set) < Eigen::nbThreads())
      Eigen::setNbThreads(CPU_COUNT(&set));
  }
  std::string_view name() const override { return "cpu"; }
  Precision precision() const override { return m_precision; }
  std::string device() const override {
    return cpu_model() + " (" + std::to_string(std::thread::hardware_concurrency()) + " cores)";
  }
  std::string library() const override {
    return "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." +
           std::to_string(EIGEN_MAJOR_VERSION) + "." + std::to_string(EIGEN_MINOR_VERSION) + ", " +
           std::to_string(Eigen::nbThreads()) + " thread(s)";
  }

  void prepare(const KernelShape &shape) override {
    m_shape = shape;
    // The counter-based generator of fill.hpp (the cublas engine's values), in parallel.
    std::uint64_t seed = 12345;
    auto fill = [&](Buffer<T> &buf, std::int64_t size) {
      buf.resize(static_cast<std::size_t>(size));
      const std::uint64_t sd = seed++;
      T *p = buf.data();
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (size >= 65536)
#endif
      for (std::int64_t i = 0; i < size; ++i)
        p[i] = static_cast<T>(2.0f * uniform_hash_value(sd, static_cast<std::uint64_t>(i)) - 1.0f);
    };
    if (shape.kind == KernelKind::attention) {
      // m_a = q | k | v, m_b = out | dout, m_c = dq | dk | dv, m_lse: the forward's statistics.
      const std::int64_t n = shape.batch * shape.m * shape.k;
      fill(m_a, 3 * n);
      fill(m_b, 2 * n);
      m_lse.assign(static_cast<std::size_t>(shape.batch * shape.m), T(0));
      m_c.assign(shape.pass == Pass::bwd ? static_cast<std::size_t>(3 * n) : 0, T(0));
      if (shape.pass == Pass::bwd) // out and lse as the backward pass gets them
        attention_forward(m_a.data(), m_b.data(), m_lse.data(), shape);
    } else if (shape.kind == KernelKind::softmax) {
      fill(m_a, shape.batch * shape.m * shape.n);
      m_b.clear();
      m_c.clear();
    } else if (shape.kind == KernelKind::grouped_gemm) {
      m_groups = shape.groups();
      std::int64_t na = 0, nb = 0, nc = 0;
      for (const GemmDims &g : m_groups) {
        na += g.m * g.k;
        nb += g.k * g.n;
        nc += g.m * g.n;
      }
      fill(m_a, na);
      fill(m_b, nb);
      m_c.assign(static_cast<std::size_t>(nc), T(0));
    } else {
      fill(m_a, shape.batch * shape.m * shape.k);
      fill(m_b, shape.batch * shape.k * shape.n);
      m_c.assign(static_cast<std::size_t>(shape.batch * shape.m * shape.n), T(0));
    }
  }

  double run_us(int reps) override {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r)
      run_once();
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::micro>(t1 - t0).count();
  }

  std::vector<double> evaluate(const KernelShape &shape, std::span<const double> a,
                               std::span<const double> b) override {
    if (shape.kind == KernelKind::attention)
      return evaluate_attention(shape, a);
    if (shape.kind == KernelKind::grouped_gemm) {
      const std::vector<GemmDims> groups = shape.groups();
      std::size_t na = 0, nb = 0, nc = 0;
      for (const GemmDims &g : groups) {
        na += static_cast<std::size_t>(g.m * g.k);
        nb += static_cast<std::size_t>(g.k * g.n);
        nc += static_cast<std::size_t>(g.m * g.n);
      }
      if (a.size() < na || b.size() < nb)
        throw InputError("operands too short for shape " + shape.name);
      Buffer<T> ta(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(na)),
          tb(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(nb)), tc(nc);
      grouped_gemm(ta.data(), tb.data(), tc.data(), groups);
      return {tc.begin(), tc.end()};
    }
    const bool sm = shape.kind == KernelKind::softmax;
    const auto na = static_cast<std::size_t>(shape.batch * shape.m * (sm ? shape.n : shape.k));
    const auto nb = sm ? 0 : static_cast<std::size_t>(shape.batch * shape.k * shape.n);
    if (a.size() < na || b.size() < nb)
      throw InputError("operands too short for shape " + shape.name);
    Buffer<T> ta(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(na));
    if (sm) {
      cpu_softmax_rows(ta.data(), shape.batch * shape.m, shape.n);
      return {ta.begin(), ta.end()};
    }
    Buffer<T> tb(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(nb));
    Buffer<T> tc(static_cast<std::size_t>(shape.batch * shape.m * shape.n));
    cpu_gemm(ta.data(), tb.data(), tc.data(), shape.m, shape.n, shape.k, shape.batch);
    return {tc.begin(), tc.end()};
  }

  std::string fused_attention_unavailable(std::int64_t head_dim) const override {
    return head_dim > 0 ? "" : "head size must be positive";
  }

private:
  T scale_of(const KernelShape &s) const {
    return static_cast<T>(1.0 / std::sqrt(static_cast<double>(s.k)));
  }
  /// qkv = q | k | v; writes out and lse.
  void attention_forward(const T *qkv, T *out, T *lse, const KernelShape &s) const {
    const std::int64_t n = s.batch * s.m * s.k;
    cpu_flash_attention_forward(qkv, qkv + n, qkv + 2 * n, out, lse, s.batch, s.m, s.k,
                                scale_of(s), s.causal);
  }
  /// qkv = q | k | v, od = out | dout; writes dq | dk | dv to grads.
  void attention_backward(const T *qkv, const T *od, const T *lse, T *grads,
                          const KernelShape &s) const {
    const std::int64_t n = s.batch * s.m * s.k;
    cpu_flash_attention_backward(qkv, qkv + n, qkv + 2 * n, od, lse, od + n, grads, grads + n,
                                 grads + 2 * n, s.batch, s.m, s.k, scale_of(s), s.causal);
  }
  std::vector<double> evaluate_attention(const KernelShape &s, std::span<const double> a) {
    const auto n = static_cast<std::size_t>(s.batch * s.m * s.k);
    const bool bwd = s.pass == Pass::bwd;
    if (s.m != s.n || a.size() < (bwd ? 4 : 3) * n)
      throw InputError("operands too short (or m != n) for attention shape " + s.name);
    Buffer<T> qkv(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(3 * n)), od(2 * n),
        lse(static_cast<std::size_t>(s.batch * s.m));
    attention_forward(qkv.data(), od.data(), lse.data(), s);
    if (!bwd)
      return {od.begin(), od.begin() + static_cast<std::ptrdiff_t>(n)};
    std::copy(a.begin() + static_cast<std::ptrdiff_t>(3 * n),
              a.begin() + static_cast<std::ptrdiff_t>(4 * n), od.begin() + static_cast<std::ptrdiff_t>(n));
    Buffer<T> grads(3 * n);
    attention_backward(qkv.data(), od.data(), lse.data(), grads.data(), s);
    return {grads.begin(), grads.end()};
  }

  /// The groups one after another, each an Eigen GEMM (its own threads): one kernel timed.
  static void grouped_gemm(const T *a, const T *b, T *c, const std::vector<GemmDims> &groups) {
    bool equal = true;
    for (const GemmDims &g : groups)
      equal &= g.m == groups.front().m && g.n == groups.front().n && g.k == groups.front().k;
    if (equal && !groups.empty()) { // a strided batch, as cublasGemmStridedBatchedEx runs it
      const GemmDims &g = groups.front();
      cpu_gemm(a, b, c, g.m, g.n, g.k, static_cast<std::int64_t>(groups.size()));
      return;
    }
    for (const GemmDims &g : groups) {
      cpu_gemm(a, b, c, g.m, g.n, g.k, 1);
      a += g.m * g.k;
      b += g.k * g.n;
      c += g.m * g.n;
    }
  }

  void run_once() {
    const KernelShape &s = m_shape;
    if (s.kind == KernelKind::grouped_gemm) {
      grouped_gemm(m_a.data(), m_b.data(), m_c.data(), m_groups);
      return;
    }
    if (s.kind == KernelKind::attention) {
      if (s.pass == Pass::fwd)
        attention_forward(m_a.data(), m_b.data(), m_lse.data(), s);
      else
        attention_backward(m_a.data(), m_b.data(), m_lse.data(), m_c.data(), s);
    } else if (s.kind == KernelKind::softmax)
      cpu_softmax_rows(m_a.data(), s.batch * s.m, s.n); // stays bounded when repeated
    else
      cpu_gemm(m_a.data(), m_b.data(), m_c.data(), s.m, s.n, s.k, s.batch);
  }

  Precision m_precision;
  KernelShape m_shape;
  Buffer<T> m_a, m_b, m_c, m_lse;
  std::vector<GemmDims> m_groups; // grouped_gemm: the prepared shape's groups
};

} // namespace

template <class T>
void cpu_gemm(const T *a, const T *b, T *c, std::int64_t m, std::int64_t n, std::int64_t k,
              std::int64_t batch) {
  using Map = Eigen::Map<const RowMat<T>>;
  // Batched: one OpenMP loop over the products (Eigen runs each single-threaded inside it), one
  // barrier per call instead of Eigen's per-panel barriers in each of `batch` small GEMMs.
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (batch > 1)
#endif
  for (std::int64_t i = 0; i < batch; ++i) {
    Map ma(a + i * m * k, m, k);
    Map mb(b + i * k * n, k, n);
    Eigen::Map<RowMat<T>> mc(c + i * m * n, m, n);
    mc.noalias() = ma * mb;
  }
}

template <class T> void cpu_softmax_rows(T *x, std::int64_t rows, std::int64_t cols) {
  using Rows = Eigen::Map<RowMat<T>>;
  Rows mx(x, rows, cols);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (rows * cols >= 65536)
#endif
  for (std::int64_t r = 0; r < rows; ++r) {
    auto row = mx.row(r);
    const T max = row.maxCoeff(); // subtract the max: exp never overflows, the sum is >= 1
    row = (row.array() - max).exp();
    row /= row.sum();
  }
}

template <class T>
void cpu_attention(const T *q, const T *k, const T *v, T *out, std::int64_t batch, std::int64_t s,
                   std::int64_t d, T scale) {
  using CMap = Eigen::Map<const RowMat<T>>;
  RowMat<T> scores(s, s);
  for (std::int64_t i = 0; i < batch; ++i) {
    CMap mq(q + i * s * d, s, d), mk(k + i * s * d, s, d), mv(v + i * s * d, s, d);
    scores.noalias() = (mq * mk.transpose()) * scale;
    cpu_softmax_rows(scores.data(), s, s);
    Eigen::Map<RowMat<T>> mo(out + i * s * d, s, d);
    mo.noalias() = scores * mv;
  }
}

template void cpu_gemm<float>(const float *, const float *, float *, std::int64_t, std::int64_t,
                              std::int64_t, std::int64_t);
template void cpu_gemm<double>(const double *, const double *, double *, std::int64_t, std::int64_t,
                               std::int64_t, std::int64_t);
template void cpu_softmax_rows<float>(float *, std::int64_t, std::int64_t);
template void cpu_softmax_rows<double>(double *, std::int64_t, std::int64_t);
template void cpu_attention<float>(const float *, const float *, const float *, float *,
                                   std::int64_t, std::int64_t, std::int64_t, float);
template void cpu_attention<double>(const double *, const double *, const double *, double *,
                                    std::int64_t, std::int64_t, std::int64_t, double);

std::unique_ptr<GemmEngine> make_cpu_engine(Precision precision) {
  switch (precision) {
  case Precision::fp32:
    return std::make_unique<CpuEngine<float>>(precision);
  case Precision::fp64:
    return std::make_unique<CpuEngine<double>>(precision);
  case Precision::fp8:
    throw InputError("engine cpu computes fp32 or fp64, not fp8: FP8 E4M3 is a GPU tensor-core "
                     "format (--engine cublas on compute capability 8.9 or newer)",
                     "", 0, "--dtype");
  default:
    throw InputError("engine cpu computes fp32 or fp64, not " +
                         std::string(precision_name(precision)) +
                         " (fp16/bf16/tf32 need --engine cublas)",
                     "", 0, "--dtype");
  }
}

} // namespace scalefit::kernels

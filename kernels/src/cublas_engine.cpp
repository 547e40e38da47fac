// The `cublas` engine (host code): cublasGemmEx / cublasGemmStridedBatchedEx with fp32
// accumulation (fp64 for fp64), the CUDA softmax kernel, cuDNN's fused SDPA for attention (with
// SCALEFIT_HAVE_CUDNN), CUDA-event timing on its own stream. Inputs are filled on the device on
// that stream; every host copy is stream-ordered and synchronized before the host reads.
// Row-major C = A B is computed as column-major C^T = B^T A^T: cuBLAS gets (n, m, k) with B first.
#include "scalefit/core/error.hpp"
#include "scalefit/kernels/engine.hpp"
#include "cuda_check.hpp"
#include "cuda_kernels.hpp"
#ifdef SCALEFIT_HAVE_CUDNN
#include "cudnn_attention.hpp"
#endif

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>
#include <vector>

namespace scalefit::kernels {

namespace {


cudaDataType_t data_type(Precision p) {
  switch (p) {
  case Precision::fp64:
    return CUDA_R_64F;
  case Precision::fp16:
    return CUDA_R_16F;
  case Precision::bf16:
    return CUDA_R_16BF;
  default:
    return CUDA_R_32F;
  }
}

cublasComputeType_t compute_type(Precision p) {
  switch (p) {
  case Precision::fp64:
    return CUBLAS_COMPUTE_64F;
  case Precision::tf32:
    return CUBLAS_COMPUTE_32F_FAST_TF32;
  default:
    return CUBLAS_COMPUTE_32F;
  }
}

detail::SoftmaxType softmax_type(Precision p) {
  switch (p) {
  case Precision::fp64:
    return detail::SoftmaxType::fp64;
  case Precision::fp16:
    return detail::SoftmaxType::fp16;
  case Precision::bf16:
    return detail::SoftmaxType::bf16;
  default:
    return detail::SoftmaxType::fp32;
  }
}

/// Host bytes of `values` in precision p.
std::vector<unsigned char> to_device_format(std::span<const double> values, Precision p) {
  std::vector<unsigned char> out(values.size() * precision_bytes(p));
  for (std::size_t i = 0; i < values.size(); ++i) {
    switch (p) {
    case Precision::fp64:
      reinterpret_cast<double *>(out.data())[i] = values[i];
      break;
    case Precision::fp16:
      reinterpret_cast<__half *>(out.data())[i] = __float2half(static_cast<float>(values[i]));
      break;
    case Precision::bf16:
      reinterpret_cast<__nv_bfloat16 *>(out.data())[i] =
          __float2bfloat16(static_cast<float>(values[i]));
      break;
    default:
      reinterpret_cast<float *>(out.data())[i] = static_cast<float>(values[i]);
    }
  }
  return out;
}

std::vector<double> from_device_format(const std::vector<unsigned char> &bytes, Precision p) {
  const std::size_t n = bytes.size() / precision_bytes(p);
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (p) {
    case Precision::fp64:
      out[i] = reinterpret_cast<const double *>(bytes.data())[i];
      break;
    case Precision::fp16:
      out[i] = __half2float(reinterpret_cast<const __half *>(bytes.data())[i]);
      break;
    case Precision::bf16:
      out[i] = __bfloat162float(reinterpret_cast<const __nv_bfloat16 *>(bytes.data())[i]);
      break;
    default:
      out[i] = reinterpret_cast<const float *>(bytes.data())[i];
    }
  }
  return out;
}

/// Device memory freed on destruction.
struct DeviceBuffer {
  void *ptr = nullptr;
  std::size_t bytes = 0;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() { release(); }
  void release() {
    if (ptr)
      cudaFree(ptr);
    ptr = nullptr;
    bytes = 0;
  }
  void resize(std::size_t n) {
    if (n <= bytes && ptr)
      return;
    release();
    SCALEFIT_KCUDA_CHECK(cudaMalloc(&ptr, n ? n : 1));
    bytes = n;
  }
};

class CublasEngine final : public GemmEngine {
public:
  explicit CublasEngine(Precision p) : m_precision(p) {
    SCALEFIT_KCUDA_CHECK(cudaGetDevice(&m_device));
    SCALEFIT_KCUDA_CHECK(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking));
    SCALEFIT_KCUDA_CHECK(cudaEventCreate(&m_start));
    SCALEFIT_KCUDA_CHECK(cudaEventCreate(&m_stop));
    SCALEFIT_CUBLAS_CHECK(cublasCreate(&m_handle));
    SCALEFIT_CUBLAS_CHECK(cublasSetStream(m_handle, m_stream));
    // A 32 MiB workspace, as cuBLAS recommends on Hopper for best kernels.
    m_workspace.resize(32u << 20);
    SCALEFIT_CUBLAS_CHECK(cublasSetWorkspace(m_handle, m_workspace.ptr, m_workspace.bytes));
  }
  ~CublasEngine() override {
#ifdef SCALEFIT_HAVE_CUDNN
    m_attention.reset(); // its handle is bound to m_stream
#endif
    cublasDestroy(m_handle);
    cudaEventDestroy(m_start);
    cudaEventDestroy(m_stop);
    cudaStreamDestroy(m_stream);
  }
  std::string_view name() const override { return "cublas"; }
  Precision precision() const override { return m_precision; }
  std::string device() const override {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, m_device) != cudaSuccess)
      return "GPU " + std::to_string(m_device);
    return prop.name;
  }
  std::string library() const override {
    int cublas_version = 0, runtime = 0;
    cublasGetVersion(m_handle, &cublas_version);
    cudaRuntimeGetVersion(&runtime);
    std::string lib =
        "cuBLAS " + std::to_string(cublas_version) + ", CUDA runtime " + std::to_string(runtime);
#ifdef SCALEFIT_HAVE_CUDNN
    lib += ", " + attention().version();
#endif
    return lib;
  }

  std::string fused_attention_unavailable(std::int64_t head_dim) const override {
#ifdef SCALEFIT_HAVE_CUDNN
    return detail::CudnnAttention::unavailable(m_precision, head_dim);
#else
    (void)head_dim;
    return "scalefit was built without the cuDNN frontend (run scripts/setup.sh, or configure "
           "with -DCUDNN_FRONTEND_INCLUDE_DIR=.../include)";
#endif
  }

  void prepare(const KernelShape &shape) override {
    m_shape = shape;
    if (shape.kind == KernelKind::attention) {
      prepare_attention(shape);
      return;
    }
    const std::size_t es = precision_bytes(m_precision);
    const bool sm = shape.kind == KernelKind::softmax;
    const auto na = static_cast<std::size_t>(shape.batch * shape.m * (sm ? shape.n : shape.k));
    const auto nb = sm ? 0 : static_cast<std::size_t>(shape.batch * shape.k * shape.n);
    const auto nc = sm ? 0 : static_cast<std::size_t>(shape.batch * shape.m * shape.n);
    // Uniform values in [-1, 1) generated on the device, on the stream the kernels run on: no
    // host loop, no pageable copy on another stream (O(1) host work for any shape).
    std::uint64_t seed = 12345;
    auto fill = [&](DeviceBuffer &buf, std::size_t n) {
      buf.resize(n * es);
      SCALEFIT_KCUDA_CHECK(detail::launch_fill_uniform(buf.ptr, softmax_type(m_precision),
                                                       static_cast<std::int64_t>(n), seed++, -1.0f,
                                                       1.0f, m_stream));
    };
    fill(m_a, na);
    if (!sm) {
      fill(m_b, nb);
      m_c.resize(nc * es);
    }
    SCALEFIT_KCUDA_CHECK(cudaStreamSynchronize(m_stream));
  }

  double run_us(int reps) override {
    SCALEFIT_KCUDA_CHECK(cudaEventRecord(m_start, m_stream));
    for (int r = 0; r < reps; ++r)
      launch(m_shape, m_a.ptr, m_b.ptr, m_c.ptr);
    SCALEFIT_KCUDA_CHECK(cudaEventRecord(m_stop, m_stream));
    SCALEFIT_KCUDA_CHECK(cudaEventSynchronize(m_stop));
    float ms = 0;
    SCALEFIT_KCUDA_CHECK(cudaEventElapsedTime(&ms, m_start, m_stop));
    return static_cast<double>(ms) * 1e3;
  }

  std::vector<double> evaluate(const KernelShape &shape, std::span<const double> a,
                               std::span<const double> b) override {
    if (shape.kind == KernelKind::attention)
      return evaluate_attention(shape, a);
    const bool sm = shape.kind == KernelKind::softmax;
    const auto na = static_cast<std::size_t>(shape.batch * shape.m * (sm ? shape.n : shape.k));
    const auto nb = sm ? 0 : static_cast<std::size_t>(shape.batch * shape.k * shape.n);
    const auto nc = static_cast<std::size_t>(shape.batch * shape.m * shape.n);
    if (a.size() < na || b.size() < nb)
      throw InputError("operands too short for shape " + shape.name);
    // Every exchange on m_stream, the stream the kernel runs on, then one synchronize before
    // the host reads: copies and kernel are ordered by the stream, not by the legacy stream.
    DeviceBuffer da, db, dc;
    const auto ha = to_device_format(a.subspan(0, na), m_precision);
    da.resize(ha.size());
    SCALEFIT_KCUDA_CHECK(
        cudaMemcpyAsync(da.ptr, ha.data(), ha.size(), cudaMemcpyHostToDevice, m_stream));
    std::vector<unsigned char> hb;
    if (!sm) {
      hb = to_device_format(b.subspan(0, nb), m_precision);
      db.resize(hb.size());
      SCALEFIT_KCUDA_CHECK(
          cudaMemcpyAsync(db.ptr, hb.data(), hb.size(), cudaMemcpyHostToDevice, m_stream));
      dc.resize(nc * precision_bytes(m_precision));
    }
    launch(shape, da.ptr, db.ptr, dc.ptr);
    std::vector<unsigned char> hc(nc * precision_bytes(m_precision));
    SCALEFIT_KCUDA_CHECK(cudaMemcpyAsync(hc.data(), sm ? da.ptr : dc.ptr, hc.size(),
                                         cudaMemcpyDeviceToHost, m_stream));
    SCALEFIT_KCUDA_CHECK(cudaStreamSynchronize(m_stream));
    return from_device_format(hc, m_precision);
  }

private:
#ifdef SCALEFIT_HAVE_CUDNN
  /// Device buffers of an attention problem: m_a = q | k | v, m_b = out | dout,
  /// m_c = dq | dk | dv, m_stats = fp32 log-sum-exp.
  detail::AttentionBuffers attention_buffers(const KernelShape &s, void *qkv, void *od, void *grads,
                                             void *stats) const {
    const std::size_t n = static_cast<std::size_t>(s.batch * s.m * s.k) *
                          precision_bytes(m_precision);
    auto at = [](void *base, std::size_t off) {
      return base ? static_cast<void *>(static_cast<unsigned char *>(base) + off) : nullptr;
    };
    detail::AttentionBuffers b;
    b.q = qkv;
    b.k = at(qkv, n);
    b.v = at(qkv, 2 * n);
    b.out = od;
    b.dout = at(od, n);
    b.dq = grads;
    b.dk = at(grads, n);
    b.dv = at(grads, 2 * n);
    b.stats = stats;
    return b;
  }

  detail::CudnnAttention &attention() const {
    if (!m_attention)
      m_attention = std::make_unique<detail::CudnnAttention>(m_stream);
    return *m_attention;
  }
#endif

  void require_fused(const KernelShape &s) const {
    if (const std::string why = fused_attention_unavailable(s.k); !why.empty())
      throw InputError("--attention fused: " + why, "", 0, "--attention");
  }

  void prepare_attention(const KernelShape &s) {
    require_fused(s);
#ifdef SCALEFIT_HAVE_CUDNN
    attention().build(s, m_precision);
    const std::size_t n = static_cast<std::size_t>(s.batch * s.m * s.k);
    const std::size_t es = precision_bytes(m_precision);
    m_a.resize(3 * n * es);
    m_b.resize(2 * n * es);
    m_c.resize(s.pass == Pass::bwd ? 3 * n * es : 0);
    m_stats.resize(static_cast<std::size_t>(s.batch * s.m) * sizeof(float));
    SCALEFIT_KCUDA_CHECK(detail::launch_fill_uniform(m_a.ptr, softmax_type(m_precision),
                                                     static_cast<std::int64_t>(3 * n), 12345,
                                                     -1.0f, 1.0f, m_stream));
    SCALEFIT_KCUDA_CHECK(detail::launch_fill_uniform(m_b.ptr, softmax_type(m_precision),
                                                     static_cast<std::int64_t>(2 * n), 12346,
                                                     -1.0f, 1.0f, m_stream));
    if (s.pass == Pass::bwd) // out and stats as the backward pass gets them
      attention().forward(attention_buffers(s, m_a.ptr, m_b.ptr, m_c.ptr, m_stats.ptr));
    SCALEFIT_KCUDA_CHECK(cudaStreamSynchronize(m_stream));
#endif
  }

  void launch_attention(const KernelShape &s, void *qkv, void *od, void *grads, void *stats) {
#ifdef SCALEFIT_HAVE_CUDNN
    const detail::AttentionBuffers b = attention_buffers(s, qkv, od, grads, stats);
    if (s.pass == Pass::fwd)
      attention().forward(b);
    else
      attention().backward(b);
#else
    (void)qkv, (void)od, (void)grads, (void)stats;
    require_fused(s);
#endif
  }

  std::vector<double> evaluate_attention(const KernelShape &s, std::span<const double> a) {
    const auto n = static_cast<std::size_t>(s.batch * s.m * s.k);
    const bool bwd = s.pass == Pass::bwd;
    if (s.m != s.n || a.size() < (bwd ? 4 : 3) * n)
      throw InputError("operands too short (or m != n) for attention shape " + s.name);
    require_fused(s);
#ifdef SCALEFIT_HAVE_CUDNN
    attention().build(s, m_precision);
    const std::size_t es = precision_bytes(m_precision);
    DeviceBuffer qkv, od, grads, stats;
    qkv.resize(3 * n * es);
    od.resize(2 * n * es);
    grads.resize(3 * n * es);
    stats.resize(static_cast<std::size_t>(s.batch * s.m) * sizeof(float));
    const auto hin = to_device_format(a.subspan(0, 3 * n), m_precision);
    SCALEFIT_KCUDA_CHECK(
        cudaMemcpyAsync(qkv.ptr, hin.data(), hin.size(), cudaMemcpyHostToDevice, m_stream));
    std::vector<unsigned char> hdo;
    const detail::AttentionBuffers b = attention_buffers(s, qkv.ptr, od.ptr, grads.ptr, stats.ptr);
    attention().forward(b);
    if (bwd) {
      hdo = to_device_format(a.subspan(3 * n, n), m_precision);
      SCALEFIT_KCUDA_CHECK(
          cudaMemcpyAsync(b.dout, hdo.data(), hdo.size(), cudaMemcpyHostToDevice, m_stream));
      attention().backward(b);
    }
    std::vector<unsigned char> hout((bwd ? 3 : 1) * n * es);
    SCALEFIT_KCUDA_CHECK(cudaMemcpyAsync(hout.data(), bwd ? grads.ptr : od.ptr, hout.size(),
                                         cudaMemcpyDeviceToHost, m_stream));
    SCALEFIT_KCUDA_CHECK(cudaStreamSynchronize(m_stream));
    return from_device_format(hout, m_precision);
#else
    return {};
#endif
  }

  void launch(const KernelShape &s, void *a, void *b, void *c) {
    if (s.kind == KernelKind::attention) {
      launch_attention(s, a, b, c, m_stats.ptr);
      return;
    }
    if (s.kind == KernelKind::softmax) {
      SCALEFIT_KCUDA_CHECK(detail::launch_softmax_rows(a, softmax_type(m_precision), s.batch * s.m,
                                                      static_cast<int>(s.n), m_stream));
      return;
    }
    const cudaDataType_t dt = data_type(m_precision);
    const cublasComputeType_t ct = compute_type(m_precision);
    const double alpha64 = 1.0, beta64 = 0.0;
    const float alpha32 = 1.0f, beta32 = 0.0f;
    const void *alpha = m_precision == Precision::fp64 ? static_cast<const void *>(&alpha64)
                                                       : static_cast<const void *>(&alpha32);
    const void *beta = m_precision == Precision::fp64 ? static_cast<const void *>(&beta64)
                                                      : static_cast<const void *>(&beta32);
    const int m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
    // Column-major view: C^T (n x m) = B^T (n x k) * A^T (k x m); leading dims n, k, n.
    if (s.batch == 1) {
      SCALEFIT_CUBLAS_CHECK(cublasGemmEx(m_handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, alpha, b, dt,
                                         n, a, dt, k, beta, c, dt, n, ct, CUBLAS_GEMM_DEFAULT));
    } else {
      SCALEFIT_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
          m_handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, alpha, b, dt, n,
          static_cast<long long>(k) * n, a, dt, k, static_cast<long long>(m) * k, beta, c, dt, n,
          static_cast<long long>(m) * n, static_cast<int>(s.batch), ct, CUBLAS_GEMM_DEFAULT));
    }
  }

  Precision m_precision;
  int m_device = 0;
  cudaStream_t m_stream = nullptr;
  cudaEvent_t m_start = nullptr, m_stop = nullptr;
  cublasHandle_t m_handle = nullptr;
  DeviceBuffer m_workspace, m_a, m_b, m_c, m_stats;
#ifdef SCALEFIT_HAVE_CUDNN
  mutable std::unique_ptr<detail::CudnnAttention> m_attention; // created on first use
#endif
  KernelShape m_shape;
};

} // namespace

int cuda_device_count(std::string *why) {
  int n = 0;
  const cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    if (why)
      *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(rc) + ", " +
             cudaGetErrorString(rc);
    cudaGetLastError(); // clear the sticky-free error so later calls start clean
    return 0;
  }
  if (n == 0 && why)
    *why = "cudaGetDeviceCount found 0 devices";
  return n;
}

std::unique_ptr<GemmEngine> make_cublas_engine(Precision precision) {
  return std::make_unique<CublasEngine>(precision);
}

} // namespace scalefit::kernels

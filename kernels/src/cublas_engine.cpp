// The `cublas` engine (host code): cublasGemmEx / cublasGemmStridedBatchedEx with fp32
// accumulation (fp64 for fp64), the CUDA softmax kernel, cuDNN's fused SDPA for attention (with
// SCALEFIT_HAVE_CUDNN), CUDA-event timing on its own stream. Inputs are filled on the device on
// that stream; every host copy is stream-ordered and synchronized before the host reads.
// Row-major C = A B is computed as column-major C^T = B^T A^T: cuBLAS gets (n, m, k) with B first.
// Grouped GEMMs (MoE experts): equal groups as cublasGemmStridedBatchedEx, unequal ones as one
// cublasGemmEx per expert (Transformer Engine's way; the default) or cublasGemmGroupedBatchedEx
// (cuBLAS 12.5+; one problem per group, device pointer arrays; the types, check formats and the
// grouped call live in cublas_support.cpp). Ran on one H200 (gpu-check, 2026-11-28); the
// multi-stream and multi-GPU paths have not. fp8: the dense GEMMs that kernel_precision gives fp8
// run on cuBLASLt (cublaslt_fp8.hpp), every other kernel of an fp8 engine in bf16.
#include "cublas_support.hpp"
#include "cublaslt_fp8.hpp"
#include "cuda_check.hpp"
#include "cuda_kernels.hpp"
#include "device_buffer.hpp"
#include "scalefit/core/error.hpp"
#include "scalefit/kernels/engine.hpp"
#ifdef SCALEFIT_HAVE_CUDNN
#include "cudnn_attention.hpp"
#endif

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace scalefit::kernels {

using detail::compute_type;
using detail::data_type;
using detail::equal_groups;
using detail::from_device_format;
using detail::group_pointers;
using detail::grouped_sizes;
using detail::launch_grouped_ex;
using detail::to_device_format;

namespace {

using detail::DeviceBuffer;

/// The fill and softmax kernels' element type of precision p.
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
    if (p == Precision::fp8) {
      SCALEFIT_CUBLAS_CHECK(cublasLtCreate(&m_lt));
      // Descales of the timed GEMM, W at byte 0 and X at byte kScaleStride, each 256-byte
      // aligned as a tensor's own cudaMalloc'd scale is (Transformer Engine's scale_inv). With
      // the two 4 bytes apart, cublasLtMatmul answered CUBLAS_STATUS_NOT_SUPPORTED on an H200
      // (cuBLAS 13.1, driver 580) for the first FP8 GEMM although the heuristic had offered an
      // algorithm; 256 bytes apart, every shape ran and passed -c (2026-11-28).
      m_scales.resize(2 * kScaleStride);
    }
  }
  ~CublasEngine() override {
#ifdef SCALEFIT_HAVE_CUDNN
    m_attention.reset(); // its handle is bound to m_stream
#endif
    m_fp8.reset();
    if (m_lt)
      cublasLtDestroy(m_lt);
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
    if (m_lt)
      lib += ", cuBLASLt " + std::to_string(cublasLtGetVersion()) + " (FP8 E4M3 GEMMs)";
#ifdef SCALEFIT_HAVE_CUDNN
    lib += ", " + detail::CudnnAttention::version(); // no handle: attention() makes it
#endif
    return lib;
  }

  std::string fused_attention_unavailable(std::int64_t head_dim) const override {
#ifdef SCALEFIT_HAVE_CUDNN
    return detail::CudnnAttention::unavailable(attention_precision(), head_dim);
#else
    (void)head_dim;
    return "scalefit was built without the cuDNN frontend (run scripts/setup.sh, or configure "
           "with -DCUDNN_FRONTEND_INCLUDE_DIR=.../include)";
#endif
  }

  void prepare(const KernelShape &shape) override {
    m_shape = shape;
    m_fp8.reset();
    if (shape.kind == KernelKind::attention) {
      prepare_attention(shape);
      return;
    }
    const Precision p = kernel_precision(m_precision, shape);
    if (p == Precision::fp8) {
      prepare_fp8(shape);
      return;
    }
    const std::size_t es = precision_bytes(p);
    if (shape.kind == KernelKind::grouped_gemm) {
      const auto [na, nb, nc] = grouped_sizes(shape);
      SCALEFIT_KCUDA_CHECK(detail::launch_fill_uniform(
          (m_a.resize(na * es), m_a.ptr), softmax_type(p), static_cast<std::int64_t>(na), 12345,
          -1.0f, 1.0f, m_stream));
      SCALEFIT_KCUDA_CHECK(detail::launch_fill_uniform(
          (m_b.resize(nb * es), m_b.ptr), softmax_type(p), static_cast<std::int64_t>(nb), 12346,
          -1.0f, 1.0f, m_stream));
      m_c.resize(nc * es);
      upload_group_pointers(shape, m_a.ptr, m_b.ptr, m_c.ptr, m_ptrs);
      SCALEFIT_KCUDA_CHECK(cudaStreamSynchronize(m_stream));
      return;
    }
    const bool sm = shape.kind == KernelKind::softmax;
    const auto na = static_cast<std::size_t>(shape.batch * shape.m * (sm ? shape.n : shape.k));
    const auto nb = sm ? 0 : static_cast<std::size_t>(shape.batch * shape.k * shape.n);
    const auto nc = sm ? 0 : static_cast<std::size_t>(shape.batch * shape.m * shape.n);
    // Uniform values in [-1, 1) generated on the device, on the stream the kernels run on: no
    // host loop, no pageable copy on another stream (O(1) host work for any shape).
    std::uint64_t seed = 12345;
    auto fill = [&](DeviceBuffer &buf, std::size_t n) {
      buf.resize(n * es);
      SCALEFIT_KCUDA_CHECK(detail::launch_fill_uniform(buf.ptr, softmax_type(p),
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
    for (int r = 0; r < reps; ++r) {
      if (m_fp8) // X = m_a, W = m_b
        m_fp8->run(m_a.ptr, m_b.ptr, m_c.ptr, m_workspace.ptr, m_stream);
      else
        launch(m_shape, m_a.ptr, m_b.ptr, m_c.ptr);
    }
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
    if (shape.kind == KernelKind::grouped_gemm)
      return evaluate_grouped(shape, a, b);
    const Precision p = kernel_precision(m_precision, shape);
    const bool sm = shape.kind == KernelKind::softmax;
    const auto na = static_cast<std::size_t>(shape.batch * shape.m * (sm ? shape.n : shape.k));
    const auto nb = sm ? 0 : static_cast<std::size_t>(shape.batch * shape.k * shape.n);
    const auto nc = static_cast<std::size_t>(shape.batch * shape.m * shape.n);
    if (a.size() < na || b.size() < nb)
      throw InputError("operands too short for shape " + shape.name);
    if (p == Precision::fp8)
      return evaluate_fp8(shape, a.subspan(0, na), b.subspan(0, nb));
    // Every exchange on m_stream, the stream the kernel runs on, then one synchronize before
    // the host reads: copies and kernel are ordered by the stream, not by the legacy stream.
    DeviceBuffer da, db, dc;
    const auto ha = to_device_format(a.subspan(0, na), p);
    da.resize(ha.size());
    SCALEFIT_KCUDA_CHECK(
        cudaMemcpyAsync(da.ptr, ha.data(), ha.size(), cudaMemcpyHostToDevice, m_stream));
    std::vector<unsigned char> hb;
    if (!sm) {
      hb = to_device_format(b.subspan(0, nb), p);
      db.resize(hb.size());
      SCALEFIT_KCUDA_CHECK(
          cudaMemcpyAsync(db.ptr, hb.data(), hb.size(), cudaMemcpyHostToDevice, m_stream));
      dc.resize(nc * precision_bytes(p));
    }
    launch(shape, da.ptr, db.ptr, dc.ptr);
    std::vector<unsigned char> hc(nc * precision_bytes(p));
    SCALEFIT_KCUDA_CHECK(cudaMemcpyAsync(hc.data(), sm ? da.ptr : dc.ptr, hc.size(),
                                         cudaMemcpyDeviceToHost, m_stream));
    SCALEFIT_KCUDA_CHECK(cudaStreamSynchronize(m_stream));
    return from_device_format(hc, p);
  }

  std::uint64_t free_memory_bytes() const override {
    std::size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return free_b;
  }

private:
  /// Attention (fused, or the unfused softmax and batched GEMMs) runs in the engine's precision,
  /// in bf16 on an fp8 engine (Transformer Engine's recipe keeps attention in bf16).
  Precision attention_precision() const {
    return m_precision == Precision::fp8 ? Precision::bf16 : m_precision;
  }

  /// The timed FP8 GEMM: X (m x k) and W (n x k) filled on the device with uniform [-1, 1)
  /// values quantized to E4M3 with the scale 448 / amax (amax 1, the fill's range), C in bf16.
  void prepare_fp8(const KernelShape &s) {
    const auto nx = static_cast<std::size_t>(s.m * s.k), nw = static_cast<std::size_t>(s.n * s.k);
    const float scale = fp8_scale(1.0);
    m_a.resize(nx);
    m_b.resize(nw);
    m_c.resize(static_cast<std::size_t>(s.m * s.n) * precision_bytes(Precision::bf16));
    SCALEFIT_KCUDA_CHECK(detail::launch_fill_uniform_fp8(
        m_a.ptr, static_cast<std::int64_t>(nx), 12345, -1.0f, 1.0f, scale, m_stream));
    SCALEFIT_KCUDA_CHECK(detail::launch_fill_uniform_fp8(
        m_b.ptr, static_cast<std::int64_t>(nw), 12346, -1.0f, 1.0f, scale, m_stream));
    m_host_descales[0] = m_host_descales[1] = 1.0f / scale;
    auto *d = static_cast<unsigned char *>(m_scales.ptr);
    SCALEFIT_KCUDA_CHECK(
        cudaMemcpyAsync(d, &m_host_descales[0], sizeof(float), cudaMemcpyHostToDevice, m_stream));
    SCALEFIT_KCUDA_CHECK(cudaMemcpyAsync(d + kScaleStride, &m_host_descales[1], sizeof(float),
                                         cudaMemcpyHostToDevice, m_stream));
    m_fp8 = std::make_unique<detail::Fp8Gemm>(m_lt, s.m, s.n, s.k, reinterpret_cast<float *>(d),
                                              reinterpret_cast<float *>(d + kScaleStride),
                                              m_workspace.bytes);
    SCALEFIT_KCUDA_CHECK(cudaStreamSynchronize(m_stream));
  }

  /// C = A B through the FP8 path: A (m x k) and B (k x n, held transposed as W = B^T, n x k)
  /// each quantized with its own scale 448 / amax on the device (launch_quantize_fp8, modelled
  /// by fp8_quantize_dequantize), the bf16 result returned as double.
  std::vector<double> evaluate_fp8(const KernelShape &s, std::span<const double> a,
                                   std::span<const double> b) {
    double amax_a = 0, amax_b = 0;
    for (double v : a)
      amax_a = std::max(amax_a, std::abs(v));
    for (double v : b)
      amax_b = std::max(amax_b, std::abs(v));
    const float scale_x = fp8_scale(amax_a), scale_w = fp8_scale(amax_b);
    std::vector<float> hx(a.begin(), a.end()), hw(b.size());
    for (std::int64_t p = 0; p < s.k; ++p) // W[j][p] = B[p][j]
      for (std::int64_t j = 0; j < s.n; ++j)
        hw[static_cast<std::size_t>(j * s.k + p)] =
            static_cast<float>(b[static_cast<std::size_t>(p * s.n + j)]);
    const float descales[2] = {1.0f / scale_w, 1.0f / scale_x};
    DeviceBuffer fx, fw, x, w, c, scales;
    fx.resize(hx.size() * sizeof(float));
    fw.resize(hw.size() * sizeof(float));
    x.resize(hx.size());
    w.resize(hw.size());
    c.resize(static_cast<std::size_t>(s.m * s.n) * precision_bytes(Precision::bf16));
    scales.resize(2 * kScaleStride);
    SCALEFIT_KCUDA_CHECK(
        cudaMemcpyAsync(fx.ptr, hx.data(), fx.bytes, cudaMemcpyHostToDevice, m_stream));
    SCALEFIT_KCUDA_CHECK(
        cudaMemcpyAsync(fw.ptr, hw.data(), fw.bytes, cudaMemcpyHostToDevice, m_stream));
    auto *d = static_cast<unsigned char *>(scales.ptr);
    SCALEFIT_KCUDA_CHECK(
        cudaMemcpyAsync(d, &descales[0], sizeof(float), cudaMemcpyHostToDevice, m_stream));
    SCALEFIT_KCUDA_CHECK(cudaMemcpyAsync(d + kScaleStride, &descales[1], sizeof(float),
                                         cudaMemcpyHostToDevice, m_stream));
    SCALEFIT_KCUDA_CHECK(detail::launch_quantize_fp8(static_cast<const float *>(fx.ptr), x.ptr,
                                                     static_cast<std::int64_t>(hx.size()),
                                                     scale_x, m_stream));
    SCALEFIT_KCUDA_CHECK(detail::launch_quantize_fp8(static_cast<const float *>(fw.ptr), w.ptr,
                                                     static_cast<std::int64_t>(hw.size()),
                                                     scale_w, m_stream));
    const detail::Fp8Gemm gemm(m_lt, s.m, s.n, s.k, reinterpret_cast<float *>(d),
                               reinterpret_cast<float *>(d + kScaleStride), m_workspace.bytes);
    gemm.run(x.ptr, w.ptr, c.ptr, m_workspace.ptr, m_stream);
    std::vector<unsigned char> hc(c.bytes);
    SCALEFIT_KCUDA_CHECK(
        cudaMemcpyAsync(hc.data(), c.ptr, hc.size(), cudaMemcpyDeviceToHost, m_stream));
    SCALEFIT_KCUDA_CHECK(cudaStreamSynchronize(m_stream));
    return from_device_format(hc, Precision::bf16);
  }

#ifdef SCALEFIT_HAVE_CUDNN
  /// Device buffers of an attention problem: m_a = q | k | v, m_b = out | dout,
  /// m_c = dq | dk | dv, m_stats = fp32 log-sum-exp.
  detail::AttentionBuffers attention_buffers(const KernelShape &s, void *qkv, void *od, void *grads,
                                             void *stats) const {
    const std::size_t n = static_cast<std::size_t>(s.batch * s.m * s.k) *
                          precision_bytes(attention_precision());
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
    attention().build(s, attention_precision());
    const std::size_t n = static_cast<std::size_t>(s.batch * s.m * s.k);
    const std::size_t es = precision_bytes(attention_precision());
    m_a.resize(3 * n * es);
    m_b.resize(2 * n * es);
    m_c.resize(s.pass == Pass::bwd ? 3 * n * es : 0);
    m_stats.resize(static_cast<std::size_t>(s.batch * s.m) * sizeof(float));
    SCALEFIT_KCUDA_CHECK(detail::launch_fill_uniform(m_a.ptr, softmax_type(attention_precision()),
                                                     static_cast<std::int64_t>(3 * n), 12345,
                                                     -1.0f, 1.0f, m_stream));
    SCALEFIT_KCUDA_CHECK(detail::launch_fill_uniform(m_b.ptr, softmax_type(attention_precision()),
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
    attention().build(s, attention_precision());
    const std::size_t es = precision_bytes(attention_precision());
    DeviceBuffer qkv, od, grads, stats;
    qkv.resize(3 * n * es);
    od.resize(2 * n * es);
    grads.resize(3 * n * es);
    stats.resize(static_cast<std::size_t>(s.batch * s.m) * sizeof(float));
    const auto hin = to_device_format(a.subspan(0, 3 * n), attention_precision());
    SCALEFIT_KCUDA_CHECK(
        cudaMemcpyAsync(qkv.ptr, hin.data(), hin.size(), cudaMemcpyHostToDevice, m_stream));
    std::vector<unsigned char> hdo;
    const detail::AttentionBuffers b = attention_buffers(s, qkv.ptr, od.ptr, grads.ptr, stats.ptr);
    attention().forward(b);
    if (bwd) {
      hdo = to_device_format(a.subspan(3 * n, n), attention_precision());
      SCALEFIT_KCUDA_CHECK(
          cudaMemcpyAsync(b.dout, hdo.data(), hdo.size(), cudaMemcpyHostToDevice, m_stream));
      attention().backward(b);
    }
    std::vector<unsigned char> hout((bwd ? 3 : 1) * n * es);
    SCALEFIT_KCUDA_CHECK(cudaMemcpyAsync(hout.data(), bwd ? grads.ptr : od.ptr, hout.size(),
                                         cudaMemcpyDeviceToHost, m_stream));
    SCALEFIT_KCUDA_CHECK(cudaStreamSynchronize(m_stream));
    return from_device_format(hout, attention_precision());
#else
    return {};
#endif
  }

  /// The device arrays of per-group pointers cublasGemmGroupedBatchedEx reads (B^T, A^T, C^T
  /// in the column-major view), into `ptrs`; stream-ordered, synchronized by the caller.
  void upload_group_pointers(const KernelShape &s, void *a, void *b, void *c, DeviceBuffer &ptrs) {
    if (equal_groups(s) || s.grouped_api != GroupedGemmApi::cublas_grouped)
      return; // the strided batch and the per-expert GEMMs need none
    group_pointers(s, precision_bytes(kernel_precision(m_precision, s)), a, b, c, m_host_ptrs);
    ptrs.resize(m_host_ptrs.size() * sizeof(void *));
    SCALEFIT_KCUDA_CHECK(cudaMemcpyAsync(ptrs.ptr, m_host_ptrs.data(), ptrs.bytes,
                                         cudaMemcpyHostToDevice, m_stream));
  }

  /// A grouped GEMM: equal groups as one strided batch; unequal ones one GEMM per group
  /// (GroupedGemmApi::per_expert) or through cuBLAS's grouped API with its pointer arrays in
  /// `ptrs` (upload_group_pointers).
  void launch_grouped(const KernelShape &s, void *a, void *b, void *c, const DeviceBuffer &ptrs) {
    if (equal_groups(s)) {
      const std::vector<GemmDims> groups = s.groups();
      KernelShape batched = s;
      batched.kind = KernelKind::batched_gemm;
      batched.m = groups.front().m;
      batched.k = groups.front().k;
      batched.group_tokens.clear();
      launch(batched, a, b, c);
      return;
    }
    if (s.grouped_api == GroupedGemmApi::cublas_grouped) {
      launch_grouped_ex(m_handle, kernel_precision(m_precision, s), s,
                        static_cast<void **>(ptrs.ptr));
      return;
    }
    // Per expert: one GEMM per group over the groups' operands stored back to back (A: m x k,
    // B: k x n, C: m x n each, as group_pointers lays them out).
    const std::size_t es = precision_bytes(kernel_precision(m_precision, s));
    auto *pa = static_cast<unsigned char *>(a), *pb = static_cast<unsigned char *>(b),
         *pc = static_cast<unsigned char *>(c);
    // A batch of one: launch() runs cublasGemmEx, in the grouped shape's precision (an fp8
    // engine runs expert GEMMs in bf16; kind gemm would ask for fp8 of bf16 operands).
    KernelShape one;
    one.kind = KernelKind::batched_gemm;
    one.batch = 1;
    for (const GemmDims &g : s.groups()) {
      one.m = g.m;
      one.n = g.n;
      one.k = g.k;
      launch(one, pa, pb, pc);
      pa += static_cast<std::size_t>(g.m * g.k) * es;
      pb += static_cast<std::size_t>(g.k * g.n) * es;
      pc += static_cast<std::size_t>(g.m * g.n) * es;
    }
  }

  std::vector<double> evaluate_grouped(const KernelShape &s, std::span<const double> a,
                                       std::span<const double> b) {
    const Precision p = kernel_precision(m_precision, s);
    const auto [na, nb, nc] = grouped_sizes(s);
    if (a.size() < na || b.size() < nb)
      throw InputError("operands too short for shape " + s.name);
    DeviceBuffer da, db, dc, ptrs;
    const auto ha = to_device_format(a.subspan(0, na), p), hb = to_device_format(b.subspan(0, nb), p);
    da.resize(ha.size());
    db.resize(hb.size());
    dc.resize(nc * precision_bytes(p));
    SCALEFIT_KCUDA_CHECK(
        cudaMemcpyAsync(da.ptr, ha.data(), ha.size(), cudaMemcpyHostToDevice, m_stream));
    SCALEFIT_KCUDA_CHECK(
        cudaMemcpyAsync(db.ptr, hb.data(), hb.size(), cudaMemcpyHostToDevice, m_stream));
    upload_group_pointers(s, da.ptr, db.ptr, dc.ptr, ptrs);
    launch_grouped(s, da.ptr, db.ptr, dc.ptr, ptrs);
    std::vector<unsigned char> hc(dc.bytes);
    SCALEFIT_KCUDA_CHECK(
        cudaMemcpyAsync(hc.data(), dc.ptr, hc.size(), cudaMemcpyDeviceToHost, m_stream));
    SCALEFIT_KCUDA_CHECK(cudaStreamSynchronize(m_stream));
    return from_device_format(hc, p);
  }

  void launch(const KernelShape &s, void *a, void *b, void *c) {
    if (s.kind == KernelKind::grouped_gemm) {
      launch_grouped(s, a, b, c, m_ptrs);
      return;
    }
    if (s.kind == KernelKind::attention) {
      launch_attention(s, a, b, c, m_stats.ptr);
      return;
    }
    if (s.kind == KernelKind::softmax) {
      SCALEFIT_KCUDA_CHECK(detail::launch_softmax_rows(a, softmax_type(attention_precision()),
                                                      s.batch * s.m, static_cast<int>(s.n),
                                                      m_stream));
      return;
    }
    const Precision p = kernel_precision(m_precision, s); // never fp8 here (Fp8Gemm runs those)
    const cudaDataType_t dt = data_type(p);
    const cublasComputeType_t ct = compute_type(p);
    const double alpha64 = 1.0, beta64 = 0.0;
    const float alpha32 = 1.0f, beta32 = 0.0f;
    const void *alpha = p == Precision::fp64 ? static_cast<const void *>(&alpha64)
                                             : static_cast<const void *>(&alpha32);
    const void *beta = p == Precision::fp64 ? static_cast<const void *>(&beta64)
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
  cublasLtHandle_t m_lt = nullptr;         // fp8 engines only
  DeviceBuffer m_workspace, m_a, m_b, m_c, m_stats;
  DeviceBuffer m_ptrs;                     // grouped GEMM: device pointer arrays (B^T, A^T, C^T)
  std::vector<void *> m_host_ptrs;         // their source, alive across the async copy
  static constexpr std::size_t kScaleStride = 256; // bytes between the two device descales
  DeviceBuffer m_scales;                   // fp8: device descales of the timed GEMM (W, X)
  float m_host_descales[2] = {1.0f, 1.0f}; // their source, alive across the async copy
  std::unique_ptr<detail::Fp8Gemm> m_fp8;  // the prepared shape's FP8 plan, if it runs in fp8
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
  if (precision == Precision::fp8) { // refuse before any stream or handle exists
    int device = 0;
    cudaDeviceProp prop{};
    SCALEFIT_KCUDA_CHECK(cudaGetDevice(&device));
    SCALEFIT_KCUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    const std::string why = fp8_refusal("GPU " + std::to_string(device) + " (" + prop.name + ")",
                                        10 * prop.major + prop.minor);
    if (!why.empty())
      throw InputError(why, "", 0, "--dtype");
  }
  return std::make_unique<CublasEngine>(precision);
}

} // namespace scalefit::kernels

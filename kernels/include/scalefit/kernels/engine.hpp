/// \file engine.hpp
/// One interface over the GEMM/softmax/attention implementations that `scalefit-bench kernels`
/// times: `cpu` (Eigen and a flash-style tiled causal attention; fp32, fp64) and `cublas` (cuBLAS
/// cublasGemmEx / cublasGemmStridedBatchedEx, a CUDA softmax kernel, and cuDNN's fused SDPA for
/// attention when built with the cuDNN frontend; fp32, tf32, fp16, bf16, fp64, and fp8 GEMMs through
/// cuBLASLt on sm_89+; built only with SCALEFIT_ENABLE_CUDA), plus naive references and the `-c`
/// check.
#pragma once

#include "scalefit/kernels/attention.hpp"
#include "scalefit/kernels/shapes.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace scalefit::kernels {

/// Arithmetic of a GEMM: storage type of A, B, C (and, for tf32, the tensor-core mode).
/// Accumulation is fp32 for fp32/tf32/fp16/bf16 (Megatron-LM's choice) and fp64 for fp64.
/// fp8 is Transformer Engine's FP8 recipe for the dense GEMMs: A and B in FP8 E4M3 with one
/// scale per tensor, C in bf16, fp32 accumulation (cuBLASLt, compute capability 8.9+); the
/// kernels it does not cover run in bf16 (kernel_precision).
enum class Precision { fp64, fp32, tf32, fp16, bf16, fp8 };
/// "fp64", "fp32", "tf32", "fp16", "bf16", "fp8".
std::string_view precision_name(Precision p);
/// Parses precision_name's output and aliases (double, float, f32, half, bfloat16, e4m3,
/// fp8_e4m3...), case-insensitively. \returns std::nullopt when unknown.
std::optional<Precision> parse_precision(std::string_view name);
/// Storage size of one input element [bytes] (tf32 is stored as fp32: 4; fp8: 1, its output is
/// bf16).
std::size_t precision_bytes(Precision p);

/// The precision a kernel of `shape` runs in on an engine of precision `p`: `p`, except under
/// fp8, where only dense GEMMs (kind gemm) with m, n and k multiples of 16 (cuBLASLt's FP8
/// alignment) run in fp8 and everything else runs in bf16: the batched attention GEMMs, the
/// softmax and fused attention (Transformer Engine keeps attention in bf16), and unaligned GEMMs
/// such as a logits GEMM of odd vocabulary. Records carry this precision as their dtype.
Precision kernel_precision(Precision p, const KernelShape &shape);

/// Device memory the engines allocate to time `shape` on an engine of precision `p` [B]: the
/// operands in kernel_precision(p, shape). GEMM: A (m x k), B (k x n) and C (m x n), each
/// `batch` times (the unfused attention's score GEMM: b a/t matrices of s x s). Softmax: its
/// batch x m x n matrix, in place. Fused attention: q, k, v, out, dout (and backward dq, dk, dv)
/// of batch x s x d each plus fp32 log-sum-exp statistics (batch x s); the cuBLAS workspace and
/// cuDNN's own scratch are extra. Saturates at UINT64_MAX instead of wrapping.
std::uint64_t kernel_device_bytes(const KernelShape &shape, Precision p);

/// "" when every shape's operands (kernel_device_bytes) fit in `available_bytes` of the device
/// they run on; else the refusal for the largest, naming it, its bytes and dimensions, `where`
/// ("GPU 0 free memory", "the host's MemAvailable") and what to change (fused attention, a
/// shorter --seq, a smaller --micro-batch or a larger --tp). available_bytes 0 (unknown): "".
std::string memory_refusal(const std::vector<KernelShape> &shapes, Precision p,
                           std::uint64_t available_bytes, std::string_view where);

/// Whether a GPU of compute capability `sm` = 10 major + minor (80 for 8.0, 89, 90, 100) has FP8
/// tensor cores: 8.9 (Ada) and newer.
bool fp8_supported(int sm);
/// "" when `sm` has FP8 tensor cores, else the refusal naming `device` and its sm.
std::string fp8_refusal(std::string_view device, int sm);
/// The per-tensor FP8 quantization scale 448 / amax (448: E4M3's largest finite value), in fp32
/// as the engine computes it; 1 when amax is 0 or not finite.
float fp8_scale(double amax);
/// `x` rounded to the nearest E4M3 value (3 mantissa bits, exponent bias 7, subnormals down to
/// 2^-9, round half to even, saturating at +-448), as __nv_cvt_float_to_fp8(x, __NV_SATFINITE,
/// __NV_E4M3) rounds: the host model of the device conversion.
double fp8_e4m3_round(double x);
/// What an FP8 GEMM computes from `x`: each value scaled by s = fp8_scale(max |x|) in fp32,
/// rounded to E4M3 and scaled back by 1/s (the dequantized FP8 operand).
std::vector<double> fp8_quantize_dequantize(std::span<const double> x);

/// A GEMM/softmax implementation on one device. Not thread-safe; one shape prepared at a time.
class GemmEngine {
public:
  virtual ~GemmEngine() = default;
  /// "cpu" or "cublas".
  virtual std::string_view name() const = 0;
  /// The precision it computes in.
  virtual Precision precision() const = 0;
  /// The device, e.g. "NVIDIA H100 80GB HBM3" or the CPU model.
  virtual std::string device() const = 0;
  /// Library and version, e.g. "Eigen 3.4.0 (2 threads)" or "cuBLAS 12.4.5, CUDA runtime 12040".
  virtual std::string library() const = 0;
  /// Allocates and fills the operands of `shape`; run_us then times it.
  /// \throws RuntimeError when the memory cannot be allocated.
  virtual void prepare(const KernelShape &shape) = 0;
  /// Runs the prepared kernel `reps` times back to back and returns the elapsed time of all of
  /// them [us] (host steady clock on the CPU; CUDA events on the engine's stream on the GPU).
  virtual double run_us(int reps) = 0;
  /// Computes `shape` on given operands, converting them to the engine's precision, and returns
  /// the result as double. GEMMs: a is batch x m x k, b is batch x k x n (row-major, batches
  /// contiguous), result batch x m x n. Grouped GEMMs: the groups' (shape.groups()) A, B and C
  /// back to back, as naive_grouped_gemm. Softmax: a is batch x m x n, b ignored, result the row
  /// softmax of a. Attention (m = n = s, k = d, scale 1/sqrt(d), shape.causal): a is q | k | v
  /// (each batch x s x d) and, backward, then dout; b ignored; result out (forward) or
  /// dq | dk | dv (backward). \throws InputError when the spans are too short.
  virtual std::vector<double> evaluate(const KernelShape &shape, std::span<const double> a,
                                       std::span<const double> b) = 0;
  /// Free memory of the device the engine allocates on [B] (cudaMemGetInfo on cublas); 0 when
  /// unknown or host memory (the caller then asks the host: MemAvailable).
  virtual std::uint64_t free_memory_bytes() const { return 0; }
  /// Whether this engine can run fused attention (KernelKind::attention) of head size
  /// `head_dim` in its precision. \returns "" when it can, else the reason (for messages).
  virtual std::string fused_attention_unavailable(std::int64_t head_dim) const = 0;
};

/// Whether this build has the cublas engine (SCALEFIT_ENABLE_CUDA).
bool cuda_built();

/// GPUs the CUDA runtime sees (0 in CPU-only builds or when cudaGetDeviceCount fails; then
/// `why`, when given, gets the reason).
int visible_gpus(std::string *why = nullptr);

/// "cublas" when built with CUDA and a GPU is visible, else "cpu".
std::string default_engine_name();

/// The default precision of an engine: fp32 for cpu; the model's training dtype for cublas
/// (fp16 for half, bf16 for bfloat16, tf32 for float).
Precision default_precision(std::string_view engine, DType model_dtype);

/// Creates an engine. \throws InputError (field "--engine" or "--dtype") for an unknown engine,
/// "cublas" in a CPU-only build ("not built with CUDA ... use --engine cpu"), "cublas" with no
/// GPU visible ("no GPU visible ... use --engine cpu"), or a precision the engine lacks (cpu:
/// fp32, fp64).
std::unique_ptr<GemmEngine> make_engine(std::string_view name, Precision precision);

/// Reference GEMM in double with plain loops: c = a * b, batch x (m x k)(k x n), row-major.
std::vector<double> naive_gemm(std::span<const double> a, std::span<const double> b, std::int64_t m,
                               std::int64_t n, std::int64_t k, std::int64_t batch);

/// Reference grouped GEMM in double: per group g (in order) c_g = a_g * b_g of g.m x g.k times
/// g.k x g.n, row-major; a, b and the result are the groups' matrices back to back.
std::vector<double> naive_grouped_gemm(std::span<const double> a, std::span<const double> b,
                                       const std::vector<GemmDims> &groups);

/// Reference row softmax in double (max subtracted first): `rows` rows of `cols` values.
std::vector<double> naive_softmax(std::span<const double> x, std::int64_t rows, std::int64_t cols);

/// The outcome of checking one shape.
struct CheckResult {
  std::int64_t checked = 0; ///< elements compared
  std::int64_t wrong = 0;   ///< elements outside the tolerance
  double max_abs_error = 0; ///< largest |engine - reference|
};

/// A small slice of `shape` for `-c`: m, n <= 48, k <= 64, batch <= 2, same kind and name
/// (grouped GEMMs: the first two groups' tokens shrunk likewise, kept 16 apart when they
/// differed, so the unequal path runs); a
/// dimension over its cap keeps its remainder mod 16 (n = 50257 -> 33), so the slice is
/// 16-aligned exactly where the shape is (kernel_precision(p, slice) = kernel_precision(p, shape)
/// for GEMMs).
/// Attention: s = m = n <= 64, d = k kept (fused kernels constrain the head size), batch <= 2.
KernelShape check_slice(const KernelShape &shape);

/// Checks the engine on check_slice(shape) against the naive reference (naive_grouped_gemm for
/// grouped GEMMs). GEMM operands are small
/// integers in [-2, 2], so with k <= 64 every product sum is exact in all precisions (|C| <= 256,
/// exact even in bf16): any difference is wrong. Softmax inputs are exact in every precision:
/// k/8 in [-4, 4], and on odd rows multiples of 1000 up to +-2000 (an implementation that does not
/// subtract the row max overflows there), compared with a relative
/// tolerance of the precision (fp64 1e-12, fp32/tf32 1e-5, fp16 2e-3, bf16 1.6e-2) plus 1e-6.
/// Attention: q, k, v, dout multiples of 1/8 in [-1, 1] (exact in every precision), forward
/// against naive_attention, backward against naive_attention_backward, with |err| <= tol (1 +
/// |ref|), tol fp64 1e-9, fp32/tf32 1e-4, fp16 1e-2, bf16 5e-2 (P and dS are rounded to the
/// storage type inside fused kernels).
/// FP8 GEMMs (kernel_precision fp8): inputs of magnitude 1/64 to 1, random sign (no E4M3
/// subnormals after scaling), checked twice: against the exact reference within E4M3's bound
/// 0.135 sum_p |a_ip b_pj| + 2^-8 |ref|, and against the reference of the dequantized FP8
/// operands (fp8_quantize_dequantize) within 2^-8 |ref_q| + 2^-9 sum_p |qa_ip qb_pj| (bf16
/// output and fp32 accumulation only), which catches layout and scale errors the first bound is
/// too loose for. Derivation in engine.cpp.
CheckResult check_shape(GemmEngine &engine, const KernelShape &shape, std::uint64_t seed = 1);

} // namespace scalefit::kernels

// cuDNN SDPA graphs (frontend API): causal flash attention forward and backward.
#include "cudnn_attention.hpp"

#include "cuda_check.hpp"
#include "device_buffer.hpp"

#include <cudnn.h>
#include <cudnn_frontend.h>

#include <cmath>
#include <unordered_map>

namespace scalefit::kernels::detail {

namespace fe = cudnn_frontend;

namespace {

#define SCALEFIT_CUDNN_CHECK(expr)                                                                 \
  do {                                                                                             \
    const cudnnStatus_t scalefit_cudnn_rc_ = (expr);                                               \
    if (scalefit_cudnn_rc_ != CUDNN_STATUS_SUCCESS)                                                \
      throw_gpu_error("cuDNN", std::to_string(static_cast<int>(scalefit_cudnn_rc_)),               \
                      cudnnGetErrorString(scalefit_cudnn_rc_), #expr, __FILE__, __LINE__);         \
  } while (0)

// Tensor uids of the variant packs.
enum Uid : std::int64_t { kQ = 1, kK, kV, kO, kStats, kdO, kdQ, kdK, kdV };

/// Throws for a frontend error: "unsupported" kinds become InputError (exit 2: the user picked
/// a shape or precision this cuDNN cannot run), the rest RuntimeError.
void check_fe(fe::error_object err, const char *what) {
  if (err.is_good())
    return;
  const std::string msg = std::string("cuDNN frontend: ") + what + ": " + err.get_message();
  if (err.get_code() == fe::error_code_t::GRAPH_NOT_SUPPORTED)
    throw InputError(msg + " (use --attention unfused)", "", 0, "--attention");
  throw RuntimeError(msg);
}

fe::DataType_t io_type(Precision p) {
  return p == Precision::bf16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF;
}

struct Dims {
  std::int64_t heads = 0, s = 0, d = 0;
  std::vector<std::int64_t> dim() const { return {1, heads, s, d}; }
  std::vector<std::int64_t> stride() const { return {heads * s * d, s * d, d, 1}; }
  std::vector<std::int64_t> stats_dim() const { return {1, heads, s, 1}; }
  std::vector<std::int64_t> stats_stride() const { return {heads * s, s, 1, 1}; }
  bool operator==(const Dims &o) const { return heads == o.heads && s == o.s && d == o.d; }
};

std::shared_ptr<fe::graph::Tensor_attributes>
input(fe::graph::Graph &g, const char *name, Uid uid, const Dims &dm) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim(dm.dim())
                      .set_stride(dm.stride()));
}

/// Builds a validated graph with plans for this handle (heuristics mode A).
void finish(fe::graph::Graph &g, cudnnHandle_t handle) {
  check_fe(g.validate(), "validate");
  check_fe(g.build_operation_graph(handle), "build_operation_graph");
  check_fe(g.create_execution_plans({fe::HeurMode_t::A}), "create_execution_plans");
  check_fe(g.check_support(handle), "check_support");
  check_fe(g.build_plans(handle), "build_plans");
}

} // namespace

struct CudnnAttention::Impl {
  cudnnHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  std::shared_ptr<fe::graph::Graph> fwd, bwd;
  Dims dims;
  Precision precision = Precision::bf16;
  bool causal = true;
  DeviceBuffer workspace; // grows to the largest graph's workspace; none while 0

  void reserve(std::int64_t bytes) {
    if (bytes > 0)
      workspace.resize(static_cast<std::size_t>(bytes));
  }

  std::shared_ptr<fe::graph::Graph> new_graph() const {
    auto g = std::make_shared<fe::graph::Graph>();
    g->set_io_data_type(io_type(precision))
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    return g;
  }

  float scale() const { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(dims.d))); }

  void build_forward() {
    auto g = new_graph();
    auto q = input(*g, "Q", kQ, dims), k = input(*g, "K", kK, dims), v = input(*g, "V", kV, dims);
    auto opts = fe::graph::SDPA_attributes()
                    .set_name("flash_attention")
                    .set_generate_stats(true)
                    .set_causal_mask(causal)
                    .set_attn_scale(scale());
    auto [o, stats] = g->sdpa(q, k, v, opts);
    o->set_output(true).set_uid(kO).set_dim(dims.dim()).set_stride(dims.stride());
    stats->set_output(true)
        .set_uid(kStats)
        .set_data_type(fe::DataType_t::FLOAT)
        .set_dim(dims.stats_dim())
        .set_stride(dims.stats_stride());
    finish(*g, handle);
    std::int64_t ws = 0;
    check_fe(g->get_workspace_size(ws), "get_workspace_size");
    reserve(ws);
    fwd = std::move(g);
  }

  void build_backward() {
    auto g = new_graph();
    auto q = input(*g, "Q", kQ, dims), k = input(*g, "K", kK, dims), v = input(*g, "V", kV, dims),
         o = input(*g, "O", kO, dims), dout = input(*g, "dO", kdO, dims);
    auto stats = g->tensor(fe::graph::Tensor_attributes()
                               .set_name("stats")
                               .set_uid(kStats)
                               .set_dim(dims.stats_dim())
                               .set_stride(dims.stats_stride())
                               .set_data_type(fe::DataType_t::FLOAT));
    auto opts = fe::graph::SDPA_backward_attributes()
                    .set_name("flash_attention_backward")
                    .set_causal_mask(causal)
                    .set_attn_scale(scale());
    auto [dq, dk, dv] = g->sdpa_backward(q, k, v, o, dout, stats, opts);
    dq->set_output(true).set_uid(kdQ).set_dim(dims.dim()).set_stride(dims.stride());
    dk->set_output(true).set_uid(kdK).set_dim(dims.dim()).set_stride(dims.stride());
    dv->set_output(true).set_uid(kdV).set_dim(dims.dim()).set_stride(dims.stride());
    finish(*g, handle);
    std::int64_t ws = 0;
    check_fe(g->get_workspace_size(ws), "get_workspace_size");
    reserve(ws);
    bwd = std::move(g);
  }
};

CudnnAttention::CudnnAttention(cudaStream_t stream) : m_impl(std::make_unique<Impl>()) {
  m_impl->stream = stream;
  SCALEFIT_CUDNN_CHECK(cudnnCreate(&m_impl->handle));
  SCALEFIT_CUDNN_CHECK(cudnnSetStream(m_impl->handle, stream));
}

CudnnAttention::~CudnnAttention() {
  m_impl->fwd.reset();
  m_impl->bwd.reset();
  m_impl->workspace.release();
  if (m_impl->handle)
    cudnnDestroy(m_impl->handle);
}

std::string CudnnAttention::unavailable(Precision precision, std::int64_t head_dim) {
  if (precision != Precision::bf16 && precision != Precision::fp16)
    return "cuDNN fused attention computes fp16 or bf16, not " +
           std::string(precision_name(precision));
  if (head_dim % 8 != 0 || head_dim > 256 || head_dim <= 0)
    return "cuDNN fused attention needs a head size d = h/a that is a multiple of 8 and at most "
           "256, not " +
           std::to_string(head_dim);
  return "";
}

std::string CudnnAttention::version() {
  const std::size_t v = cudnnGetVersion(); // 90190 = 9.19.0
  return "cuDNN " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100) + " (frontend " + std::to_string(CUDNN_FRONTEND_MAJOR_VERSION) +
         "." + std::to_string(CUDNN_FRONTEND_MINOR_VERSION) + "." +
         std::to_string(CUDNN_FRONTEND_PATCH_VERSION) + ")";
}

void CudnnAttention::build(const KernelShape &shape, Precision precision) {
  if (const std::string why = unavailable(precision, shape.k); !why.empty())
    throw InputError(why + " (use --attention unfused)", "", 0, "--attention");
  if (shape.m != shape.n)
    throw InputError("fused attention needs m = n (one sequence length), got shape " + shape.name);
  const Dims dims{shape.batch, shape.m, shape.k};
  Impl &im = *m_impl;
  const bool same = im.fwd && dims == im.dims && precision == im.precision &&
                    shape.causal == im.causal;
  if (!same) {
    im.fwd.reset();
    im.bwd.reset();
    im.dims = dims;
    im.precision = precision;
    im.causal = shape.causal;
    im.build_forward();
  }
  if (shape.pass == Pass::bwd && !im.bwd)
    im.build_backward();
}

void CudnnAttention::forward(const AttentionBuffers &buf) {
  std::unordered_map<std::int64_t, void *> pack = {
      {kQ, buf.q}, {kK, buf.k}, {kV, buf.v}, {kO, buf.out}, {kStats, buf.stats}};
  check_fe(m_impl->fwd->execute(m_impl->handle, pack, m_impl->workspace.ptr), "execute forward");
}

void CudnnAttention::backward(const AttentionBuffers &buf) {
  std::unordered_map<std::int64_t, void *> pack = {
      {kQ, buf.q},         {kK, buf.k},       {kV, buf.v},   {kO, buf.out}, {kStats, buf.stats},
      {kdO, buf.dout},     {kdQ, buf.dq},     {kdK, buf.dk}, {kdV, buf.dv}};
  check_fe(m_impl->bwd->execute(m_impl->handle, pack, m_impl->workspace.ptr), "execute backward");
}

} // namespace scalefit::kernels::detail

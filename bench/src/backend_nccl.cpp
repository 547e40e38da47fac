// The nccl backend (compiled only when SCALEFIT_HAVE_NCCL): one GPU per rank chosen by local
// rank, a world communicator from an id broadcast over MPI (ncclCommInitRank), sub-communicators
// by ncclCommSplit, a dedicated stream, CUDA events for timing, optional CUDA graph capture (-G).
// Host code only: NCCL and the CUDA runtime are host APIs; check data is staged through host
// memory, so no kernel is needed.
#include "scalefit/bench/backend.hpp"
#include "scalefit/bench/check.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <string>

namespace scalefit::bench {
namespace {

ncclDataType_t nccl_type(DType t) {
  switch (t) {
  case DType::int8:
    return ncclInt8;
  case DType::uint8:
    return ncclUint8;
  case DType::int32:
    return ncclInt32;
  case DType::uint32:
    return ncclUint32;
  case DType::int64:
    return ncclInt64;
  case DType::uint64:
    return ncclUint64;
  case DType::half:
    return ncclFloat16;
  case DType::float32:
    return ncclFloat32;
  case DType::float64:
    return ncclFloat64;
  case DType::bfloat16:
    return ncclBfloat16;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(RedOp r) {
  switch (r) {
  case RedOp::sum:
    return ncclSum;
  case RedOp::prod:
    return ncclProd;
  case RedOp::max:
    return ncclMax;
  case RedOp::min:
    return ncclMin;
  case RedOp::avg:
    return ncclAvg;
  }
  return ncclSum;
}

const char *at(const void *p, std::size_t elements, DType t) {
  return static_cast<const char *>(p) + elements * dtype_size(t);
}

class NcclComm final : public Comm {
public:
  NcclComm(ncclComm_t comm, int graph_iters) : m_comm(comm), m_graph_iters(graph_iters) {
    SCALEFIT_NCCL_CHECK(ncclCommUserRank(comm, &m_rank));
    SCALEFIT_NCCL_CHECK(ncclCommCount(comm, &m_size));
    SCALEFIT_CUDA_CHECK(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking));
    SCALEFIT_CUDA_CHECK(cudaEventCreate(&m_start));
    SCALEFIT_CUDA_CHECK(cudaEventCreate(&m_stop));
  }
  ~NcclComm() override {
    drop_graph();
    cudaEventDestroy(m_start);
    cudaEventDestroy(m_stop);
    cudaStreamDestroy(m_stream);
    ncclCommDestroy(m_comm);
  }
  NcclComm(const NcclComm &) = delete;
  NcclComm &operator=(const NcclComm &) = delete;
  int rank() const override { return m_rank; }
  int size() const override { return m_size; }

  void allreduce(const void *s, void *r, std::size_t n, DType t, RedOp o) override {
    SCALEFIT_NCCL_CHECK(ncclAllReduce(s, r, n, nccl_type(t), nccl_op(o), m_comm, m_stream));
  }
  void allgather(const void *s, void *r, std::size_t n, DType t) override {
    SCALEFIT_NCCL_CHECK(ncclAllGather(s, r, n, nccl_type(t), m_comm, m_stream));
  }
  void reducescatter(const void *s, void *r, std::size_t n, DType t, RedOp o) override {
    SCALEFIT_NCCL_CHECK(ncclReduceScatter(s, r, n, nccl_type(t), nccl_op(o), m_comm, m_stream));
  }
  void reduce(const void *s, void *r, std::size_t n, DType t, RedOp o, int root) override {
    SCALEFIT_NCCL_CHECK(ncclReduce(s, r, n, nccl_type(t), nccl_op(o), root, m_comm, m_stream));
  }
  void broadcast(const void *s, void *r, std::size_t n, DType t, int root) override {
    SCALEFIT_NCCL_CHECK(ncclBroadcast(s, r, n, nccl_type(t), root, m_comm, m_stream));
  }
  void alltoall(const void *s, void *r, std::size_t n, DType t) override {
    // nccl-tests' alltoall: grouped point-to-point with every peer.
    SCALEFIT_NCCL_CHECK(ncclGroupStart());
    for (int p = 0; p < m_size; ++p) {
      const std::size_t off = n * static_cast<std::size_t>(p);
      SCALEFIT_NCCL_CHECK(ncclSend(at(s, off, t), n, nccl_type(t), p, m_comm, m_stream));
      SCALEFIT_NCCL_CHECK(
          ncclRecv(const_cast<char *>(at(r, off, t)), n, nccl_type(t), p, m_comm, m_stream));
    }
    SCALEFIT_NCCL_CHECK(ncclGroupEnd());
  }
  void sendrecv(const void *s, void *r, std::size_t n, DType t, int to, int from) override {
    SCALEFIT_NCCL_CHECK(ncclGroupStart());
    SCALEFIT_NCCL_CHECK(ncclSend(s, n, nccl_type(t), to, m_comm, m_stream));
    SCALEFIT_NCCL_CHECK(ncclRecv(r, n, nccl_type(t), from, m_comm, m_stream));
    SCALEFIT_NCCL_CHECK(ncclGroupEnd());
  }
  double time_batch_us(int batch, const std::function<void()> &op,
                       std::uint64_t point_id) override {
    const bool graph = m_graph_iters > 0 && point_id != 0;
    if (graph && (m_graph_exec == nullptr || m_graph_point != point_id || m_graph_batch != batch)) {
      drop_graph();
      SCALEFIT_CUDA_CHECK(cudaStreamBeginCapture(m_stream, cudaStreamCaptureModeThreadLocal));
      for (int i = 0; i < batch; ++i)
        op();
      SCALEFIT_CUDA_CHECK(cudaStreamEndCapture(m_stream, &m_graph));
      SCALEFIT_CUDA_CHECK(cudaGraphInstantiate(&m_graph_exec, m_graph, 0));
      m_graph_point = point_id;
      m_graph_batch = batch;
    }
    SCALEFIT_CUDA_CHECK(cudaEventRecord(m_start, m_stream));
    if (graph)
      SCALEFIT_CUDA_CHECK(cudaGraphLaunch(m_graph_exec, m_stream));
    else
      for (int i = 0; i < batch; ++i)
        op();
    SCALEFIT_CUDA_CHECK(cudaEventRecord(m_stop, m_stream));
    SCALEFIT_CUDA_CHECK(cudaEventSynchronize(m_stop));
    float ms = 0;
    SCALEFIT_CUDA_CHECK(cudaEventElapsedTime(&ms, m_start, m_stop));
    return static_cast<double>(ms) * 1e3;
  }
  void synchronize() override { SCALEFIT_CUDA_CHECK(cudaStreamSynchronize(m_stream)); }

private:
  void drop_graph() {
    if (m_graph_exec)
      cudaGraphExecDestroy(m_graph_exec);
    if (m_graph)
      cudaGraphDestroy(m_graph);
    m_graph_exec = nullptr;
    m_graph = nullptr;
  }
  ncclComm_t m_comm;
  int m_graph_iters = 0;
  int m_rank = 0, m_size = 1;
  cudaStream_t m_stream = nullptr;
  cudaEvent_t m_start = nullptr, m_stop = nullptr;
  cudaGraph_t m_graph = nullptr;
  cudaGraphExec_t m_graph_exec = nullptr;
  std::uint64_t m_graph_point = 0;
  int m_graph_batch = 0;
};

class NcclBackend final : public Backend {
public:
  NcclBackend(int local_rank, int graph_iters) : m_graph_iters(graph_iters) {
    int ndev = 0;
    SCALEFIT_CUDA_CHECK(cudaGetDeviceCount(&ndev));
    m_device = local_rank % ndev;
    SCALEFIT_CUDA_CHECK(cudaSetDevice(m_device));
    cudaDeviceProp prop{};
    SCALEFIT_CUDA_CHECK(cudaGetDeviceProperties(&prop, m_device));
    m_device_name = prop.name;
    int rank = 0, n = 1;
    SCALEFIT_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    SCALEFIT_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    ncclUniqueId id{};
    if (rank == 0)
      SCALEFIT_NCCL_CHECK(ncclGetUniqueId(&id));
    SCALEFIT_MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD));
    SCALEFIT_NCCL_CHECK(ncclCommInitRank(&m_world, n, id, rank));
  }
  ~NcclBackend() override {
    if (m_world)
      ncclCommDestroy(m_world);
  }
  NcclBackend(const NcclBackend &) = delete;
  NcclBackend &operator=(const NcclBackend &) = delete;

  std::string_view name() const override { return "nccl"; }
  bool supports(DType) const override { return true; }
  bool supports(RedOp) const override { return true; }
  std::unique_ptr<Comm> make_comm(MPI_Comm, int color, int key) override {
    // Collective over the world communicator: ranks that sit out pass NCCL_SPLIT_NOCOLOR.
    ncclComm_t sub = nullptr;
    SCALEFIT_NCCL_CHECK(
        ncclCommSplit(m_world, color >= 0 ? color : NCCL_SPLIT_NOCOLOR, key, &sub, nullptr));
    if (color < 0 || sub == nullptr)
      return nullptr;
    return std::make_unique<NcclComm>(sub, m_graph_iters);
  }
  void *alloc(std::size_t bytes) override {
    void *p = nullptr;
    SCALEFIT_CUDA_CHECK(cudaMalloc(&p, bytes > 0 ? bytes : 1));
    SCALEFIT_CUDA_CHECK(cudaMemset(p, 0, bytes > 0 ? bytes : 1));
    return p;
  }
  void release(void *p) override { cudaFree(p); }
  void copy_to_backend(void *d, const void *s, std::size_t b) override {
    SCALEFIT_CUDA_CHECK(cudaMemcpy(d, s, b, cudaMemcpyHostToDevice));
  }
  void copy_to_host(void *d, const void *s, std::size_t b) override {
    SCALEFIT_CUDA_CHECK(cudaMemcpy(d, s, b, cudaMemcpyDeviceToHost));
  }
  std::string device_name() const override { return m_device_name; }
  std::map<std::string, std::string> versions() const override {
    std::map<std::string, std::string> v = make_mpi_backend()->versions();
    int nccl = 0, cuda = 0, driver = 0;
    if (ncclGetVersion(&nccl) == ncclSuccess)
      v["nccl"] = std::to_string(nccl / 10000) + "." + std::to_string(nccl / 100 % 100) + "." +
                  std::to_string(nccl % 100);
    if (cudaRuntimeGetVersion(&cuda) == cudaSuccess)
      v["cuda"] = std::to_string(cuda / 1000) + "." + std::to_string(cuda % 1000 / 10);
    if (cudaDriverGetVersion(&driver) == cudaSuccess)
      v["cuda_driver"] = std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
    return v;
  }

private:
  int m_graph_iters = 0;
  int m_device = 0;
  std::string m_device_name;
  ncclComm_t m_world = nullptr;
};

} // namespace

bool nccl_built() {
  return true;
}

int visible_gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError(); // clear the sticky-free error so later calls start clean
    return 0;
  }
  return n;
}

std::unique_ptr<Backend> make_nccl_backend(int local_rank, int graph_iters) {
  return std::make_unique<NcclBackend>(local_rank, graph_iters);
}

} // namespace scalefit::bench

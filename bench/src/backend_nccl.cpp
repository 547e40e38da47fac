// The nccl backend (compiled only when SCALEFIT_HAVE_NCCL): one GPU per rank chosen by local
// rank, a world communicator from an id broadcast over MPI (ncclCommInitRank), sub-communicators
// by ncclCommSplit, a dedicated non-blocking stream, a host-clock (default, nccl-tests') or
// CUDA-event timer, optional CUDA graph capture (-G).
// Host code only: NCCL and the CUDA runtime are host APIs. Every host/device exchange is ordered
// with the collectives: check data is staged through pinned host memory with cudaMemcpyAsync on
// the communicator's own stream followed by a stream synchronize (never cudaMemcpy on the legacy
// default stream, which a cudaStreamNonBlocking stream does not wait for), and alloc() waits for
// its cudaMemset before returning.
#include "scalefit/bench/backend.hpp"
#include "scalefit/bench/check.hpp"
#include "scalefit/bench/poll.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

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

/// Whether this build and the loaded NCCL both have ncclAlltoAll (NCCL >= 2.28).
bool have_nccl_alltoall() {
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= 22800
  int v = 0;
  return ncclGetVersion(&v) == ncclSuccess && v >= 22800;
#else
  return false;
#endif
}

class NcclComm final : public Comm {
public:
  NcclComm(ncclComm_t comm, const NcclSettings &settings, bool native_alltoall,
           std::string name, bool profiled)
      : m_comm(comm), m_settings(settings), m_native_alltoall(native_alltoall),
        m_name(std::move(name)), m_profiled(profiled) {
    SCALEFIT_NCCL_CHECK(ncclCommUserRank(comm, &m_rank));
    SCALEFIT_NCCL_CHECK(ncclCommCount(comm, &m_size));
    SCALEFIT_CUDA_CHECK(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking));
    SCALEFIT_CUDA_CHECK(cudaEventCreate(&m_start));
    SCALEFIT_CUDA_CHECK(cudaEventCreate(&m_stop));
  }
  ~NcclComm() override {
    drop_graph();
    deregister_quietly();
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
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= 22800
    if (m_native_alltoall) {
      SCALEFIT_NCCL_CHECK(ncclAlltoAll(s, r, n, nccl_type(t), m_comm, m_stream));
      return;
    }
#endif
    // NCCL < 2.28 (and nccl-tests there): grouped point-to-point with every peer.
    SCALEFIT_NCCL_CHECK(ncclGroupStart());
    for (int p = 0; p < m_size; ++p) {
      const std::size_t off = n * static_cast<std::size_t>(p);
      SCALEFIT_NCCL_CHECK(ncclSend(at(s, off, t), n, nccl_type(t), p, m_comm, m_stream));
      SCALEFIT_NCCL_CHECK(
          ncclRecv(const_cast<char *>(at(r, off, t)), n, nccl_type(t), p, m_comm, m_stream));
    }
    SCALEFIT_NCCL_CHECK(ncclGroupEnd());
  }
  void alltoallv(const void *s, void *r, const AlltoallvLayout &l, DType t) override {
    // Grouped point-to-point with every peer, as nccl-tests' alltoallv; a zero count is skipped
    // on both sides (the peer's matching count is zero too).
    SCALEFIT_NCCL_CHECK(ncclGroupStart());
    for (int p = 0; p < m_size; ++p) {
      const auto q = static_cast<std::size_t>(p);
      if (l.send_counts[q] > 0)
        SCALEFIT_NCCL_CHECK(ncclSend(at(s, l.send_displs[q], t), l.send_counts[q], nccl_type(t),
                                     p, m_comm, m_stream));
      if (l.recv_counts[q] > 0)
        SCALEFIT_NCCL_CHECK(ncclRecv(const_cast<char *>(at(r, l.recv_displs[q], t)),
                                     l.recv_counts[q], nccl_type(t), p, m_comm, m_stream));
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
    const bool graph = m_settings.graph_launches > 0 && point_id != 0;
    if (graph && (m_graph_exec == nullptr || m_graph_point != point_id || m_graph_batch != batch)) {
      drop_graph();
      capture(batch, op);
      // Upload, then one untimed launch: the first launch of a graph pays its setup.
      SCALEFIT_CUDA_CHECK(cudaGraphUpload(m_graph_exec, m_stream));
      SCALEFIT_CUDA_CHECK(cudaGraphLaunch(m_graph_exec, m_stream));
      wait_stream();
      m_graph_point = point_id;
      m_graph_batch = batch;
    }
    const int launches = graph ? m_settings.graph_launches : 1;
    auto issue = [&] {
      if (graph)
        for (int l = 0; l < launches; ++l)
          SCALEFIT_CUDA_CHECK(cudaGraphLaunch(m_graph_exec, m_stream));
      else
        for (int i = 0; i < batch; ++i)
          op();
    };
    if (!m_settings.events_timer) {
      // nccl-tests' timer: host clock from before the first issue to after the stream is idle.
      const auto t0 = std::chrono::steady_clock::now();
      issue();
      wait_stream();
      return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                 .count() /
             launches;
    }
    SCALEFIT_CUDA_CHECK(cudaEventRecord(m_start, m_stream));
    issue();
    SCALEFIT_CUDA_CHECK(cudaEventRecord(m_stop, m_stream));
    wait_polling([this] { return query(cudaEventQuery(m_stop)); },
                 [this] { return async_error(); });
    float ms = 0;
    SCALEFIT_CUDA_CHECK(cudaEventElapsedTime(&ms, m_start, m_stop));
    return static_cast<double>(ms) * 1e3 / launches;
  }
  void run_once(const std::function<void()> &op) override {
    if (m_settings.graph_launches <= 0) {
      op();
      wait_stream();
      return;
    }
    // The check goes through a graph of the one operation, as the timed samples do.
    drop_graph();
    capture(1, op);
    SCALEFIT_CUDA_CHECK(cudaGraphLaunch(m_graph_exec, m_stream));
    wait_stream();
    drop_graph();
  }
  int graph_launches() const override {
    return m_settings.graph_launches > 0 ? m_settings.graph_launches : 1;
  }
  void end_point() override { drop_graph(); }
  void register_buffers(void *send, std::size_t send_bytes, void *recv,
                        std::size_t recv_bytes) override {
    deregister_buffers();
    const std::pair<void *, std::size_t> bufs[2] = {{send, send_bytes}, {recv, recv_bytes}};
    for (const auto &[p, n] : bufs) {
      if (m_settings.registration == 1) {
        void *h = nullptr;
        SCALEFIT_NCCL_CHECK(ncclCommRegister(m_comm, p, n, &h));
        m_registered.push_back(h);
      } else if (m_settings.registration == 2) {
        ncclWindow_t w = nullptr;
        // Collective over the communicator: every member registers its block alike.
        SCALEFIT_NCCL_CHECK(ncclCommWindowRegister(m_comm, p, n, &w, NCCL_WIN_COLL_SYMMETRIC));
        m_windows.push_back(w);
      }
    }
  }
  void deregister_buffers() override {
    drop_graph();
    for (void *h : m_registered)
      SCALEFIT_NCCL_CHECK(ncclCommDeregister(m_comm, h));
    for (ncclWindow_t w : m_windows)
      SCALEFIT_NCCL_CHECK(ncclCommWindowDeregister(m_comm, w));
    m_registered.clear();
    m_windows.clear();
  }
  void synchronize() override { wait_stream(); }
  void reset_choice() override {
    if (m_profiled)
      reset_collectives(m_name);
  }
  std::optional<CollChoice> last_choice() const override {
    return m_profiled ? last_collective(m_name) : std::nullopt;
  }
  void copy_in(void *d, const void *s, std::size_t b) override {
    SCALEFIT_CUDA_CHECK(cudaMemcpyAsync(d, s, b, cudaMemcpyHostToDevice, m_stream));
    wait_stream();
  }
  void copy_out(void *d, const void *s, std::size_t b) override {
    SCALEFIT_CUDA_CHECK(cudaMemcpyAsync(d, s, b, cudaMemcpyDeviceToHost, m_stream));
    wait_stream();
  }
  void abort() override { ncclCommAbort(m_comm); }

private:
  /// WorkState of a cudaStreamQuery / cudaEventQuery result; throws on an error.
  static WorkState query(cudaError_t rc) {
    if (rc == cudaErrorNotReady)
      return WorkState::pending;
    SCALEFIT_CUDA_CHECK(rc);
    return WorkState::done;
  }
  /// "" while the communicator is healthy, else NCCL's error and last message.
  std::string async_error() const {
    ncclResult_t r = ncclSuccess;
    if (ncclCommGetAsyncError(m_comm, &r) != ncclSuccess)
      return "ncclCommGetAsyncError failed";
    if (r == ncclSuccess || r == ncclInProgress)
      return "";
    const char *last = ncclGetLastError(m_comm);
    return std::string(ncclGetErrorString(r)) + (last && *last ? std::string(": ") + last : "");
  }
  /// Waits for the stream, polling ncclCommGetAsyncError (nccl-tests' testStreamSynchronize).
  void wait_stream() {
    wait_polling([this] { return query(cudaStreamQuery(m_stream)); },
                 [this] { return async_error(); });
  }
  /// Captures `batch` issues of `op` on the stream into m_graph / m_graph_exec.
  void capture(int batch, const std::function<void()> &op) {
    SCALEFIT_CUDA_CHECK(cudaStreamBeginCapture(m_stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < batch; ++i)
      op();
    SCALEFIT_CUDA_CHECK(cudaStreamEndCapture(m_stream, &m_graph));
    SCALEFIT_CUDA_CHECK(cudaGraphInstantiate(&m_graph_exec, m_graph, 0));
  }
  void drop_graph() {
    if (m_graph_exec)
      cudaGraphExecDestroy(m_graph_exec);
    if (m_graph)
      cudaGraphDestroy(m_graph);
    m_graph_exec = nullptr;
    m_graph = nullptr;
    m_graph_point = 0;
  }
  /// The destructor's deregistration: errors are not thrown from there.
  void deregister_quietly() noexcept {
    for (void *h : m_registered)
      ncclCommDeregister(m_comm, h);
    for (ncclWindow_t w : m_windows)
      ncclCommWindowDeregister(m_comm, w);
    m_registered.clear();
    m_windows.clear();
  }
  ncclComm_t m_comm;
  NcclSettings m_settings;
  bool m_native_alltoall = false;
  int m_rank = 0, m_size = 1;
  cudaStream_t m_stream = nullptr;
  cudaEvent_t m_start = nullptr, m_stop = nullptr;
  cudaGraph_t m_graph = nullptr;
  cudaGraphExec_t m_graph_exec = nullptr;
  std::uint64_t m_graph_point = 0;
  int m_graph_batch = 0;
  std::string m_name; // ncclConfig_t::commName: the profiler plugin's key
  bool m_profiled = false;
  std::vector<void *> m_registered;  // -R 1 handles
  std::vector<ncclWindow_t> m_windows; // -R 2 windows
};

class NcclBackend final : public Backend {
public:
  NcclBackend(int local_rank, const NcclSettings &settings)
      : m_settings(settings), m_native_alltoall(have_nccl_alltoall()) {
    int version = 0;
    if (settings.registration == 2 &&
        (ncclGetVersion(&version) != ncclSuccess || version < 22700))
      throw InputError("-R 2 (symmetric registration, ncclCommWindowRegister) needs NCCL >= "
                       "2.27; this NCCL is " + std::to_string(version),
                       "", 0, "-R");
    int ndev = 0;
    SCALEFIT_CUDA_CHECK(cudaGetDeviceCount(&ndev));
    m_ndev = ndev;
    m_device = local_rank % ndev;
    SCALEFIT_CUDA_CHECK(cudaSetDevice(m_device));
    cudaDeviceProp prop{};
    SCALEFIT_CUDA_CHECK(cudaGetDeviceProperties(&prop, m_device));
    m_device_name = prop.name;
    int l2 = 0, mem_khz = 0, bus_bits = 0;
    if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, m_device) == cudaSuccess && l2 > 0)
      m_l2_bytes = static_cast<std::uint64_t>(l2);
    if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, m_device) == cudaSuccess &&
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, m_device) ==
            cudaSuccess &&
        mem_khz > 0 && bus_bits > 0)
      m_mem_gbps = 2.0 * mem_khz * 1e3 * (bus_bits / 8.0) / 1e9; // DDR: two transfers a clock
    cudaGetLastError(); // an attribute this driver lacks leaves no sticky error
    int rank = 0, n = 1;
    SCALEFIT_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    SCALEFIT_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &n));
    ncclUniqueId id{};
    if (rank == 0)
      SCALEFIT_NCCL_CHECK(ncclGetUniqueId(&id));
    SCALEFIT_MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD));
    // Before NCCL initializes: it reads NCCL_PROFILER_PLUGIN once (algorithm/protocol per point).
    m_profiler = install_profiler_plugin();
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
    // Each communicator gets a name (the profiler plugin keys its records by it); NCCL keeps
    // the pointer, so the names live in a deque that never moves them.
    m_names.push_back("scalefit-" + std::to_string(m_names.size() + 1));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.commName = m_names.back().c_str();
    ncclComm_t sub = nullptr;
    SCALEFIT_NCCL_CHECK(
        ncclCommSplit(m_world, color >= 0 ? color : NCCL_SPLIT_NOCOLOR, key, &sub, &config));
    if (color < 0 || sub == nullptr)
      return nullptr;
    return std::make_unique<NcclComm>(sub, m_settings, m_native_alltoall, m_names.back(),
                                      m_profiler.active());
  }
  void *alloc(std::size_t bytes) override {
    void *p = nullptr;
    const std::size_t n = bytes > 0 ? bytes : 1;
    if (m_settings.nccl_mem_alloc)
      SCALEFIT_NCCL_CHECK(ncclMemAlloc(&p, n));
    else
      SCALEFIT_CUDA_CHECK(cudaMalloc(&p, n));
    // cudaMemset runs on the legacy default stream, which the communicators' non-blocking
    // streams do not wait for: finish it here.
    SCALEFIT_CUDA_CHECK(cudaMemset(p, 0, n));
    SCALEFIT_CUDA_CHECK(cudaDeviceSynchronize());
    return p;
  }
  void release(void *p) override {
    if (m_settings.nccl_mem_alloc)
      ncclMemFree(p);
    else
      cudaFree(p);
  }
  void *alloc_host(std::size_t bytes) override {
    void *p = nullptr;
    SCALEFIT_CUDA_CHECK(cudaMallocHost(&p, bytes > 0 ? bytes : 1));
    return p;
  }
  void release_host(void *p) override { cudaFreeHost(p); }
  std::uint64_t cache_bytes(std::string *source) const override {
    if (source)
      *source = m_l2_bytes > 0 ? "cudaDevAttrL2CacheSize" : "unknown";
    return m_l2_bytes;
  }
  double memory_bandwidth_gbps() const override { return m_mem_gbps; }
  std::uint64_t available_memory_bytes() const override {
    std::size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return free_b;
  }
  int ranks_sharing_memory(int local_ranks) const override {
    return (local_ranks + m_ndev - 1) / std::max(1, m_ndev);
  }
  std::string alltoall_impl() const override {
    return m_native_alltoall ? "ncclAlltoAll" : "grouped ncclSend/ncclRecv";
  }
  std::string timer_name() const override { return m_settings.events_timer ? "events" : "host"; }
  std::string buffer_alloc_name() const override { return nccl_alloc_name(m_settings); }
  std::string profiler_description() const override { return m_profiler.describe(); }
  std::string registration_name() const override {
    return nccl_registration_name(m_settings.registration);
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
  NcclSettings m_settings;
  bool m_native_alltoall = false;
  ProfilerStatus m_profiler;
  std::deque<std::string> m_names; // communicator names, alive as long as the communicators
  int m_device = 0, m_ndev = 1;
  std::uint64_t m_l2_bytes = 0;
  double m_mem_gbps = 0;
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

std::string gpu_identity(int local_rank) {
  const int n = visible_gpu_count();
  char id[32] = {};
  if (n <= 0 || cudaDeviceGetPCIBusId(id, sizeof(id), local_rank % n) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return id;
}

std::unique_ptr<Backend> make_nccl_backend(int local_rank, const NcclSettings &settings) {
  return std::make_unique<NcclBackend>(local_rank, settings);
}

} // namespace scalefit::bench

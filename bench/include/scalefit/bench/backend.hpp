/// \file backend.hpp
/// The backend interface every collective runs through: `mpi` (host buffers, MPI collectives)
/// and `nccl` (device buffers, NCCL on a dedicated stream, CUDA events for timing). The driver
/// (comm.cpp), the collective plug-ins (collective.hpp) and the checks only see this interface, so
/// the MPI path exercises all the logic the GPU path uses; GPU-only code stays in
/// backend_nccl.cpp, compiled only when SCALEFIT_HAVE_NCCL.
#pragma once

#include "scalefit/bench/nccl_profiler.hpp"
#include "scalefit/core/collectives.hpp"

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace scalefit::bench {

/// One rank's side of an AllToAllv (MPI_Alltoallv's arguments; nccl-tests 2.19's alltoallv):
/// `send_counts[p]` elements from `send + send_displs[p]` go to peer p, and `recv_counts[p]`
/// elements from peer p land at `recv + recv_displs[p]` [elements of the op's type]. Each vector
/// holds Comm::size() entries; recv_counts[p] on this rank equals send_counts[me] on rank p.
struct AlltoallvLayout {
  std::vector<std::size_t> send_counts, send_displs, recv_counts, recv_displs;
};

/// A communicator of one group instance. Buffers are the backend's (Backend::alloc); counts in
/// elements of `dtype`; argument order and in-place conventions are NCCL's (in-place when the
/// pointers coincide as nccl-tests lays them out, see collective.hpp).
class Comm {
public:
  virtual ~Comm() = default;
  virtual int rank() const = 0; ///< rank in this communicator
  virtual int size() const = 0; ///< ranks in this communicator
  /// `count` elements per rank reduced with `r` into every rank's recv (send == recv: in place).
  virtual void allreduce(const void *send, void *recv, std::size_t count, DType t, RedOp r) = 0;
  /// `count` elements from each rank; recv holds size() * count.
  virtual void allgather(const void *send, void *recv, std::size_t count, DType t) = 0;
  /// send holds size() * count; each rank receives `count` reduced elements.
  virtual void reducescatter(const void *send, void *recv, std::size_t count, DType t, RedOp r) = 0;
  /// `count` elements per rank reduced with `r` into rank `root`'s recv.
  virtual void reduce(const void *send, void *recv, std::size_t count, DType t, RedOp r,
                      int root) = 0;
  /// `count` elements of rank `root`'s send copied into every rank's recv.
  virtual void broadcast(const void *send, void *recv, std::size_t count, DType t, int root) = 0;
  /// `count` elements to each peer; send and recv hold size() * count.
  virtual void alltoall(const void *send, void *recv, std::size_t count, DType t) = 0;
  /// AllToAllv with per-peer counts and displacements (see AlltoallvLayout); out of place only
  /// (NCCL and nccl-tests define no in-place alltoallv).
  virtual void alltoallv(const void *send, void *recv, const AlltoallvLayout &layout,
                         DType t) = 0;
  /// Sends `count` elements to rank `to` and receives `count` from rank `from`, concurrently.
  virtual void sendrecv(const void *send, void *recv, std::size_t count, DType t, int to,
                        int from) = 0;
  /// Runs `op` `batch` times back to back and returns this rank's elapsed time for the batch
  /// [us], by the backend's timer (Timer): host = a host clock from before the first issue to
  /// after the stream is idle (nccl-tests' definition; MPI_Wtime on mpi); events = CUDA events
  /// recorded on the stream around the batch. `op` issues one operation (and advances the
  /// caller's buffer rotation). `point_id` identifies the (op, size, placement); 0 = warm-up,
  /// always eager. With CUDA graphs (-G N, graph_launches() = N) a timed batch (point_id != 0)
  /// is captured once per point as a graph of `batch` operations, uploaded (cudaGraphUpload)
  /// and launched once untimed; the sample then times N launches and returns their time / N,
  /// i.e. still the time of `batch` operations (nccl-tests' cudaGraphLaunches: deltaSec / iters
  /// / launches per operation).
  /// \throws RuntimeError when a library call fails or the communicator reports an
  /// asynchronous error while waiting (ncclCommGetAsyncError, polled: a dead link ends the wait).
  virtual double time_batch_us(int batch, const std::function<void()> &op,
                               std::uint64_t point_id) = 0;
  /// Waits for every issued operation to finish (a no-op for MPI); nccl polls the stream and
  /// ncclCommGetAsyncError as nccl-tests' testStreamSynchronize does. \throws RuntimeError on an
  /// asynchronous communicator error.
  virtual void synchronize() = 0;
  /// Issues `op` once and waits for it: the `-c` run. With -G it goes through a CUDA graph
  /// captured for this one operation, so the check covers the graph path that was timed
  /// (nccl-tests' check under -G); otherwise op() then synchronize().
  virtual void run_once(const std::function<void()> &op) {
    op();
    synchronize();
  }
  /// CUDA graph launches per sample (-G N on nccl); 1 when operations are issued eagerly.
  virtual int graph_launches() const { return 1; }
  /// The end of a point: drops what was cached for it (the captured graph of -G) while its
  /// buffers are still allocated and registered (NCCL may hold registrations of a graph's
  /// buffers). Called after the point's samples and check.
  virtual void end_point() {}
  /// Registers a block's buffers with the communication library before its points (nccl -R 1:
  /// ncclCommRegister; -R 2: ncclCommWindowRegister with NCCL_WIN_COLL_SYMMETRIC, collective
  /// over the communicator; nccl-tests' -R); a no-op without registration and on mpi.
  /// deregister_buffers() undoes it before the buffers are freed. Sizes in bytes.
  virtual void register_buffers(void * /*send*/, std::size_t /*send_bytes*/, void * /*recv*/,
                                std::size_t /*recv_bytes*/) {}
  virtual void deregister_buffers() {}
  /// Forgets the library's choice seen so far on this communicator (before a point's samples).
  virtual void reset_choice() {}
  /// The algorithm, protocol and channels NCCL chose for the last collective issued on this
  /// communicator since reset_choice(), as scalefit's NCCL profiler plugin recorded it
  /// (nccl_profiler.hpp; the communicator is named through ncclConfig_t::commName); nullopt on
  /// mpi, without the plugin, and for NCCL's point-to-point work (AllToAll(v), SendRecv), which
  /// raises no collective event.
  virtual std::optional<CollChoice> last_choice() const { return std::nullopt; }
  /// Copies `bytes` of host memory into a buffer from Backend::alloc, in order with this
  /// communicator's operations (nccl: cudaMemcpyAsync on its stream, then a stream synchronize,
  /// so a collective issued next sees the data), and returns when the copy is complete.
  virtual void copy_in(void *dst, const void *host_src, std::size_t bytes) = 0;
  /// Copies `bytes` of a buffer from Backend::alloc to host memory after every operation issued
  /// before on this communicator completed (nccl: same stream, then a synchronize).
  virtual void copy_out(void *host_dst, const void *src, std::size_t bytes) = 0;
  /// Aborts the communicator from another thread so a stuck operation returns (the watchdog's
  /// --timeout: ncclCommAbort); a no-op on mpi, where MPI_Abort ends the job.
  virtual void abort() {}
  /// The MPI communicator when the backend is MPI (for --baseline), else MPI_COMM_NULL.
  virtual MPI_Comm mpi_comm() const { return MPI_COMM_NULL; }
};

/// A communication library and the memory it works on.
class Backend {
public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0; ///< "mpi" or "nccl"
  virtual bool supports(DType t) const = 0;  ///< whether the library has this element type
  virtual bool supports(RedOp r) const = 0;  ///< whether the library has this reduction
  /// Builds the communicator of the calling rank's instance. Collective over MPI_COMM_WORLD:
  /// every rank calls it, with `group` = its instance's MPI communicator (MPI_COMM_NULL and
  /// color -1 for ranks that sit the shape out; they get nullptr).
  virtual std::unique_ptr<Comm> make_comm(MPI_Comm group, int color, int key) = 0;
  /// A zero-filled buffer of `bytes` (device memory on nccl; complete before it returns).
  virtual void *alloc(std::size_t bytes) = 0;
  virtual void release(void *buffer) = 0; ///< frees a buffer from alloc()
  /// Host memory for staging check data (pinned with cudaMallocHost on nccl, so copies are
  /// truly asynchronous on the stream; plain malloc on mpi). Not zero-filled.
  virtual void *alloc_host(std::size_t bytes);
  virtual void release_host(void *buffer); ///< frees a buffer from alloc_host()
  /// Where this rank runs: the GPU name (nccl) or the CPU model (mpi).
  virtual std::string device_name() const = 0;
  /// Library versions ("mpi", "nccl", "cuda").
  virtual std::map<std::string, std::string> versions() const = 0;
  /// Whether the buffers are host memory the checks may read and write directly (mpi).
  virtual bool host_accessible() const { return false; }
  /// Whether an in-place ReduceScatter leaves this rank's result at the start of the buffer
  /// (MPI_Reduce_scatter_block with MPI_IN_PLACE) instead of at rank * count (NCCL).
  virtual bool inplace_reducescatter_at_start() const { return false; }
  /// Whether an out-of-place Broadcast leaves the root's receive buffer untouched, its result
  /// being its send buffer (mpi: MPI_Bcast from the send buffer, no copy timed) instead of a
  /// copy in recv (ncclBroadcast).
  virtual bool outofplace_broadcast_root_result_in_send() const { return false; }
  /// The last-level cache the buffers could stay in between operations [B] and where the figure
  /// came from: the GPU's L2 (cudaDevAttrL2CacheSize) on nccl; the host's largest cache level of
  /// cpu0 (/sys/devices/system/cpu/cpu0/cache, else sysconf) on mpi. 0 when unknown.
  virtual std::uint64_t cache_bytes(std::string *source = nullptr) const = 0;
  /// Peak memory bandwidth of the device holding the buffers [GB/s]: on nccl 2 x memory clock x
  /// bus width (cudaDevAttrMemoryClockRate, cudaDevAttrGlobalMemoryBusWidth; DDR); 0 when
  /// unknown (mpi: the host's is not queried).
  virtual double memory_bandwidth_gbps() const { return 0; }
  /// Memory the buffers come from that is free now [B]: device free memory (cudaMemGetInfo) on
  /// nccl; MemAvailable of /proc/meminfo on mpi. 0 when unknown.
  virtual std::uint64_t available_memory_bytes() const = 0;
  /// Ranks of a node that share that memory when `local_ranks` ranks run on the node: all of
  /// them on mpi (host memory); ceil(local_ranks / visible GPUs) on nccl.
  virtual int ranks_sharing_memory(int local_ranks) const { return local_ranks; }
  /// How AllToAll is issued, for the context record ("MPI_Alltoall", "ncclAlltoAll",
  /// "grouped ncclSend/ncclRecv").
  virtual std::string alltoall_impl() const = 0;
  /// The timer's name and definition for the context record and the README ("host", "events").
  virtual std::string timer_name() const = 0;
  /// Where the buffers come from, for the context record: "malloc (host)" on mpi;
  /// "ncclMemAlloc" or "cudaMalloc" on nccl (NcclSettings).
  virtual std::string buffer_alloc_name() const { return "malloc (host)"; }
  /// The context's "nccl_profiler": scalefit's plugin and its path, the user's plugin, or why
  /// there is none (ProfilerStatus::describe); "" on mpi.
  virtual std::string profiler_description() const { return ""; }
  /// Buffer registration with the library (-R) for the context record: "none" on mpi.
  virtual std::string registration_name() const { return "none"; }
};

/// Writes one byte (zero) per page of [p, p + bytes) so that every page is mapped and resident
/// before it is timed (the mpi backend's alloc: calloc's pages are otherwise faulted in by the
/// first timed pass). The memory must be writable and already zero where that matters.
void touch_pages(void *p, std::size_t bytes);

/// The MPI backend on MPI_COMM_WORLD's ranks. `sync_barrier` (--sync barrier): time_batch_us
/// times each operation alone and puts an untimed MPI_Barrier on the group after it, as OSU
/// (osu_allreduce etc.: MPI_Barrier after each timed call) and IMB (-sync 1, its default) do;
/// false: the batch back to back under one clock, as nccl-tests times.
std::unique_ptr<Backend> make_mpi_backend(bool sync_barrier = false);

/// Whether this build has the NCCL backend (SCALEFIT_HAVE_NCCL).
bool nccl_built();

/// GPUs this rank sees (cudaGetDeviceCount); 0 when it fails or in builds without NCCL.
int visible_gpu_count();

/// The GPU the nccl backend picks for a rank of node-local rank `local_rank` (device
/// local_rank % visible GPUs), by its PCI bus id ("0000:1B:00.0", unique on a node whatever
/// CUDA_VISIBLE_DEVICES each rank has); "" when unknown, or in builds without NCCL.
std::string gpu_identity(int local_rank);

/// How the nccl backend issues, times and allocates (scalefit-bench comm's -G, --timer,
/// --alloc, -R).
struct NcclSettings {
  /// -G N: CUDA graph launches per sample (0: eager). Each sample's batch is captured once per
  /// point and launched N times (nccl-tests' -G / cudaGraphLaunches).
  int graph_launches = 0;
  bool events_timer = false; ///< --timer events: CUDA events instead of the host clock
  /// --alloc: buffers from ncclMemAlloc (true, nccl-tests >= 2.19's default: cuMem memory NCCL
  /// can register for NVLS and symmetric kernels) or cudaMalloc (false).
  bool nccl_mem_alloc = true;
  /// -R: 0 no registration, 1 local (ncclCommRegister), 2 symmetric (ncclCommWindowRegister,
  /// NCCL >= 2.27, needs ncclMemAlloc buffers), as nccl-tests' -R.
  int registration = 0;
};

/// Names of the allocation and registration settings for the context record and the banner:
/// "ncclMemAlloc" / "cudaMalloc"; "none" / "local (ncclCommRegister)" / "symmetric
/// (ncclCommWindowRegister)".
std::string nccl_alloc_name(const NcclSettings &s);
std::string nccl_registration_name(int registration);

/// The NCCL backend: GPU `local_rank % visible GPUs`, a world communicator from an id broadcast
/// over MPI (ncclCommInitRank); sub-communicators by ncclCommSplit. Collective over
/// MPI_COMM_WORLD. `settings`: graphs, timer, allocation and registration (NcclSettings).
/// \throws InputError when not built with NCCL or when -R 2 meets an NCCL older than 2.27;
/// RuntimeError when a CUDA/NCCL call fails.
std::unique_ptr<Backend> make_nccl_backend(int local_rank, const NcclSettings &settings);

/// MPI_Datatype of a type, or MPI_DATATYPE_NULL when MPI has none (half, bfloat16).
MPI_Datatype mpi_datatype(DType t);
/// MPI_Op of a reduction, or MPI_OP_NULL when MPI has none (avg).
MPI_Op mpi_op(RedOp r);

} // namespace scalefit::bench

/// \file backend.hpp
/// The backend interface every collective runs through: `mpi` (host buffers, MPI collectives)
/// and `nccl` (device buffers, NCCL on a dedicated stream, CUDA events for timing). The driver
/// (comm.cpp), the collective plug-ins (collective.hpp) and the checks only see this interface, so
/// the MPI path exercises all the logic the GPU path uses; GPU-only code stays in
/// backend_nccl.cpp, compiled only when SCALEFIT_HAVE_NCCL.
#pragma once

#include "scalefit/core/collectives.hpp"

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace scalefit::bench {

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
  /// Sends `count` elements to rank `to` and receives `count` from rank `from`, concurrently.
  virtual void sendrecv(const void *send, void *recv, std::size_t count, DType t, int to,
                        int from) = 0;
  /// Runs `op` `batch` times back to back and returns this rank's elapsed time for the batch,
  /// from issue to completion [us] (MPI_Wtime; or CUDA events on the stream). `point_id`
  /// identifies the (op, size, placement) so a backend may cache a captured CUDA graph.
  virtual double time_batch_us(int batch, const std::function<void()> &op,
                               std::uint64_t point_id) = 0;
  /// Waits for every issued operation to finish (a no-op for MPI).
  virtual void synchronize() = 0;
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
  virtual void *alloc(std::size_t bytes) = 0; ///< zero-filled buffer of `bytes`
  virtual void release(void *buffer) = 0; ///< frees a buffer from alloc()
  /// Copies `bytes` from host memory into a buffer from alloc() (cudaMemcpy for nccl).
  virtual void copy_to_backend(void *dst, const void *host_src, std::size_t bytes) = 0;
  /// Copies `bytes` from a buffer from alloc() into host memory.
  virtual void copy_to_host(void *host_dst, const void *src, std::size_t bytes) = 0;
  /// Where this rank runs: the GPU name (nccl) or the CPU model (mpi).
  virtual std::string device_name() const = 0;
  /// Library versions ("mpi", "nccl", "cuda").
  virtual std::map<std::string, std::string> versions() const = 0;
  /// Whether the buffers are host memory the checks may read and write directly (mpi).
  virtual bool host_accessible() const { return false; }
  /// Whether an in-place ReduceScatter leaves this rank's result at the start of the buffer
  /// (MPI_Reduce_scatter_block with MPI_IN_PLACE) instead of at rank * count (NCCL).
  virtual bool inplace_reducescatter_at_start() const { return false; }
};

/// The MPI backend on MPI_COMM_WORLD's ranks.
std::unique_ptr<Backend> make_mpi_backend();

/// Whether this build has the NCCL backend (SCALEFIT_HAVE_NCCL).
bool nccl_built();

/// GPUs this rank sees (cudaGetDeviceCount); 0 when it fails or in builds without NCCL.
int visible_gpu_count();

/// The NCCL backend: GPU `local_rank % visible GPUs`, a world communicator from an id broadcast
/// over MPI (ncclCommInitRank); sub-communicators by ncclCommSplit. Collective over
/// MPI_COMM_WORLD. `graph_iters` > 0 captures each sample's batch as a CUDA graph (-G).
/// \throws InputError when not built with NCCL; RuntimeError when a CUDA/NCCL call fails.
std::unique_ptr<Backend> make_nccl_backend(int local_rank, int graph_iters);

/// MPI_Datatype of a type, or MPI_DATATYPE_NULL when MPI has none (half, bfloat16).
MPI_Datatype mpi_datatype(DType t);
/// MPI_Op of a reduction, or MPI_OP_NULL when MPI has none (avg).
MPI_Op mpi_op(RedOp r);

} // namespace scalefit::bench

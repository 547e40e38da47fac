/// \file guard.hpp
/// What keeps a sweep from hurting the machine or the data: the --out lock (one writer per
/// file), the watchdog (--timeout per operation; the launcher's death), and the memory estimate
/// made before anything is allocated.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace scalefit::bench {

class Comm;
class ProgressBoard;

/// Called first thing in main, before MPI_Init: whether this process was started by an MPI
/// launcher (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID in the environment). If
/// so it sets PR_SET_PDEATHSIG (SIGTERM) so the rank ends with its launcher, and the watchdog
/// watches the parent. A singleton (`scalefit-bench comm` run without mpirun, e.g. under nohup)
/// is left alone: its parent is a shell that may well exit first. Returns the decision.
bool watch_launcher_from_start();

/// The decision of watch_launcher_from_start (false if it was never called).
bool launcher_watched();

/// An exclusive lock on an output file, held for the whole run: flock(LOCK_EX | LOCK_NB) on
/// `<path>.lock` beside it (created, holding the owner's pid and host), removed on release. A
/// second job that wants the same --out (to append, or to --resume it) is refused at once.
class OutputLock {
public:
  /// Takes the lock of `path`, creating its directory if needed. \throws InputError (field
  /// --out, exit 2) naming the file, the lock file and the holder's pid/host when another process
  /// holds it, or when the lock file cannot be created.
  explicit OutputLock(const std::string &path);
  ~OutputLock(); ///< removes the lock file, then releases the lock
  OutputLock(const OutputLock &) = delete;
  OutputLock &operator=(const OutputLock &) = delete;
  /// The lock file's path (`<path>.lock`).
  const std::string &lock_path() const { return m_lock_path; }

private:
  std::string m_lock_path;
  int m_fd = -1;
};

/// Runs `write` (rank 0 appending to --out/--csv). With more than one rank, an output error
/// (InputError: a full disk, an unwritable file; std::filesystem::filesystem_error) ends the
/// whole job at once: rank 0 prints "scalefit-bench: error: ..." and calls
/// MPI_Abort(MPI_COMM_WORLD, kExitUsage), so no rank waits for it in the next collective until
/// --timeout (exit 2, as one rank gets by the exception). With one rank the error propagates.
void stop_every_rank_on_output_error(int nranks, const std::function<void()> &write);

/// A thread that ends the job when it cannot make progress:
///  - --timeout: when an armed step (barrier + a batch of operations + the gather of times)
///    runs longer than its expected duration (batch x the warm-up's time per operation; 0 before
///    it is known) plus --timeout seconds, it prints on stderr what timed out, aborts the current
///    communicator (ncclCommAbort on nccl) and calls MPI_Abort(MPI_COMM_WORLD, kExitInternal).
///    (Called from this thread: Open MPI's MPI_Abort tolerates it; the job is ending either
///    way.) With a ProgressBoard (set_board), rank 0 prints "scalefit-bench: timeout after T s
///    in <what> (point P): rank(s) R (HOST) had not arrived (last seen at point K: <name>);
///    aborting the job (exit 3)", and the other ranks wait 2 s (so that rank 0's message comes
///    first and its MPI_Abort ends the job) before printing whether rank 0 took their last
///    progress report. Without one: "scalefit-bench: rank R on HOST: timeout: <what> did not
///    complete within ...".
///  - the launcher's death (when launcher_watched()): when the parent process changes
///    (mpirun/orted gone, the rank re-parented), it prints a line and _exit()s at once, so no
///    record is appended after the job was killed; PR_SET_PDEATHSIG covers the immediate case.
/// Polls every 20 ms.
class Watchdog {
public:
  /// `timeout_s` 0 disables the timeout (the parent check still runs).
  explicit Watchdog(double timeout_s);
  ~Watchdog();
  Watchdog(const Watchdog &) = delete;
  Watchdog &operator=(const Watchdog &) = delete;
  /// Names the work the next steps belong to ("allreduce 1048576 B float out-of-place world
  /// n=4 (1x4)") and the communicator to abort on a timeout (may be null).
  void set_point(const std::string &what, Comm *comm);
  /// Starts a step expected to take `expected_s` seconds: the deadline is now + expected_s +
  /// the timeout (nothing when the timeout is 0).
  void arm(double expected_s = 0);
  /// Ends the step.
  void disarm();
  /// The progress board whose table the timeout message reads (null: none). Set before arming.
  void set_board(ProgressBoard *board) { m_board.store(board, std::memory_order_release); }
  /// A barrier over MPI_COMM_WORLD: the board's (rank 0 takes in progress reports while it
  /// waits) when one is set, else MPI_Barrier. Collective.
  void barrier();

private:
  void loop();
  double m_timeout_s;
  std::atomic<std::int64_t> m_deadline_ns{0}; ///< steady_clock ns; 0: disarmed
  std::atomic<double> m_expected_s{0};
  std::atomic<ProgressBoard *> m_board{nullptr};
  std::mutex m_mutex; ///< guards m_what, m_comm, m_stop
  std::condition_variable m_cv;
  std::string m_what;
  Comm *m_comm = nullptr;
  bool m_stop = false;
  long m_parent = 0;
  std::thread m_thread;
};

/// The memory judgement made before allocating: `per_rank_bytes` for each of `sharing` ranks
/// that draw from one pool of `available_bytes` (MemAvailable, or a GPU's free memory; 0:
/// unknown, no judgement). Returns "" when it fits, else the refusal message naming the figures
/// ("the sweep needs X per rank x N ranks sharing <pool> = T, but only A is available ...").
std::string memory_refusal(std::uint64_t per_rank_bytes, int sharing,
                           std::uint64_t available_bytes, const std::string &pool);

/// The one-rank-per-GPU judgement of the nccl backend, made before NCCL or any buffer touches a
/// GPU: `hosts[r]` is world rank r's host and `gpus[r]` the GPU it would pick (gpu_identity; ""
/// unknown, not judged). Returns "" when no two ranks of a host pick the same GPU, else the
/// refusal naming the first such host, its rank count, the GPUs the ranks see and two ranks that
/// would share one ("more ranks than GPUs on node H: ...; launch at most G ranks per node").
std::string shared_gpu_refusal(const std::vector<std::string> &hosts,
                               const std::vector<std::string> &gpus);

} // namespace scalefit::bench

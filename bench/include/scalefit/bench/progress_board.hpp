/// \file progress_board.hpp
/// Where every rank is in a sweep, reported out of band to rank 0, so that a hang names what it
/// waited on and who had not arrived (issue 17, section 3).
///
/// Each rank's main thread publishes the point it starts (a sequence number, the same on every
/// rank because every rank walks the same sweep, and its name: "allreduce 1048576 B float
/// out-of-place world n=4 (1x4)") as a small MPI_Issend to rank 0 on a duplicate of
/// MPI_COMM_WORLD. Rank 0 takes the reports in whenever its main thread publishes and while it
/// waits in ProgressBoard::barrier (an MPI_Ibarrier polled with MPI_Test), so that when a rank
/// hangs, rank 0's table holds every rank that reached the barrier. The watchdog thread
/// (guard.hpp) reads the table without calling MPI (MPI is initialized without thread support):
/// on rank 0 it names the op, size, group and the ranks that had not arrived, with the point each
/// was last seen at; on another rank it says whether rank 0 took that rank's last report (a
/// synchronous send completes only once rank 0 received it), i.e. whether rank 0 itself is stuck.
/// The mechanism is host-side only: it works alike on the mpi and nccl backends.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace scalefit::bench {

/// What one rank last reported: the point's sequence number (0: nothing yet) and its name.
struct RankProgress {
  std::uint64_t seq = 0;
  std::string what;
};

/// The out-of-band progress reports of a sweep (see the file comment). Main-thread methods
/// (constructor, publish, barrier, finish) are called by every rank in the same order; the
/// report methods may be called from the watchdog thread.
class ProgressBoard {
public:
  /// Collective over MPI_COMM_WORLD: duplicates it. `hosts[r]` is world rank r's host (for the
  /// messages; may be shorter than the world).
  explicit ProgressBoard(std::vector<std::string> hosts);
  ~ProgressBoard(); ///< frees the duplicate (call finish() first in a run that ends normally)
  ProgressBoard(const ProgressBoard &) = delete;
  ProgressBoard &operator=(const ProgressBoard &) = delete;

  /// Main thread, every rank: this rank starts point `seq` (> the previous one) named `what`
  /// (truncated at 180 characters). Rank 0 records itself and takes in pending reports; another
  /// rank sends its report to rank 0 (MPI_Issend). Test builds (SCALEFIT_TEST_HOOKS): the world
  /// rank SCALEFIT_TEST_HANG_RANK sleeps forever before publishing point
  /// SCALEFIT_TEST_HANG_POINT, as a rank that hangs does.
  void publish(std::uint64_t seq, const std::string &what);
  /// Main thread, every rank: a barrier over MPI_COMM_WORLD (MPI_Ibarrier polled with MPI_Test)
  /// during which rank 0 takes in reports and the others see theirs taken.
  void barrier();
  /// Main thread, every rank, at the end of a sweep: rank 0 takes in every report still in
  /// flight (every rank publishes the same points), the others wait for theirs to be taken.
  void finish();

  /// The timeout message of the calling rank (watchdog thread; no MPI call): on rank 0, "in
  /// WHAT (point P): rank(s) R (HOST) had not arrived (last seen at point K: NAME)" or what else
  /// the table says (every rank had started the point; rank 0 itself had not reached the
  /// barrier); on another rank, whether rank 0 took this rank's last report. `what` names the
  /// step that timed out (the watchdog's point).
  std::string hang_report(const std::string &what) const;
  /// Whether this rank is rank 0 of MPI_COMM_WORLD (the collector).
  bool collector() const { return m_rank == 0; }
  /// A copy of the table (rank 0: every rank's last report; elsewhere: this rank's only).
  std::vector<RankProgress> table() const;

private:
  void drain();          ///< rank 0: receive every report that has arrived
  void test_pending();   ///< ranks != 0: complete the sends rank 0 received
  MPI_Comm m_comm = MPI_COMM_NULL;
  int m_rank = 0, m_size = 1;
  std::vector<std::string> m_hosts;
  mutable std::mutex m_mutex;                    ///< guards m_table
  std::vector<RankProgress> m_table;             ///< rank 0: per rank; else: [0] = this rank
  std::vector<std::uint64_t> m_received;         ///< rank 0: reports taken from each rank
  std::uint64_t m_published = 0;                 ///< reports this rank made
  std::atomic<bool> m_in_barrier{false};         ///< main thread polling in barrier()
  struct Pending {
    MPI_Request request;
    std::uint64_t seq;
    std::vector<char> buffer;
  };
  std::vector<Pending> m_pending;                ///< ranks != 0: sends not yet taken
  std::atomic<std::uint64_t> m_taken_seq{0};     ///< ranks != 0: highest report rank 0 took
};

/// Formats a rank list as "rank 2" or "ranks 2,3" (sorted as given).
std::string rank_list(const std::vector<int> &ranks);

} // namespace scalefit::bench

// The --out lock, the watchdog and the memory judgement (see guard.hpp).
#include "scalefit/bench/guard.hpp"

#include "scalefit/bench/backend.hpp"
#include "scalefit/bench/check.hpp"
#include "scalefit/bench/progress_board.hpp"
#include "scalefit/bench/sysinfo.hpp"
#include "scalefit/core/error.hpp"

#include <fcntl.h>
#include <mpi.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cmath>
#include <limits>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace scalefit::bench {

namespace {
std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string this_host() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0)
    return "unknown host";
  return name;
}
} // namespace

namespace {
bool g_watch_launcher = false;
} // namespace

bool watch_launcher_from_start() {
  for (const char *v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (std::getenv(v) != nullptr) {
      g_watch_launcher = true;
      break;
    }
  if (g_watch_launcher)
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  return g_watch_launcher;
}

bool launcher_watched() {
  return g_watch_launcher;
}

OutputLock::OutputLock(const std::string &path) : m_lock_path(path + ".lock") {
  namespace fs = std::filesystem;
  const fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty())
    fs::create_directories(parent, ec);
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd =
        ::open(m_lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
      throw InputError("cannot create the lock file '" + m_lock_path + "': " + std::strerror(errno),
                       "", 0, "--out");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      char holder[256] = {};
      const ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
      ::close(fd);
      std::string who = n > 0 ? std::string(holder, static_cast<std::size_t>(n)) : "";
      while (!who.empty() && (who.back() == '\n' || who.back() == ' '))
        who.pop_back();
      if (err == EWOULDBLOCK)
        throw InputError("'" + path + "' is being written by another scalefit-bench job" +
                             (who.empty() ? "" : " (" + who + ")") + ", which holds '" +
                             m_lock_path +
                             "'; wait for it to finish (--resume afterwards) or choose another "
                             "--out",
                         "", 0, "--out");
      throw InputError("cannot lock '" + m_lock_path + "': " + std::strerror(err), "", 0, "--out");
    }
    // The previous holder may have removed the file between our open and our lock: then we
    // hold a lock on an unlinked inode that nobody else can see. Retry on the path's inode.
    struct stat by_fd {}, by_path {};
    if (::fstat(fd, &by_fd) == 0 && ::stat(m_lock_path.c_str(), &by_path) == 0 &&
        by_fd.st_ino == by_path.st_ino && by_fd.st_dev == by_path.st_dev) {
      const std::string me = "pid " + std::to_string(::getpid()) + " on " + this_host() + "\n";
      if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, me.data(), me.size(), 0) < 0) {
        // the holder's name is informative only
      }
      m_fd = fd;
      return;
    }
    ::close(fd);
  }
  throw InputError("cannot lock '" + m_lock_path + "': it keeps being replaced", "", 0, "--out");
}

OutputLock::~OutputLock() {
  if (m_fd >= 0) {
    ::unlink(m_lock_path.c_str());
    ::close(m_fd);
  }
}

Watchdog::Watchdog(double timeout_s) : m_timeout_s(timeout_s), m_parent(::getppid()) {
  m_thread = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> g(m_mutex);
    m_stop = true;
  }
  m_cv.notify_all();
  m_thread.join();
}

void Watchdog::set_point(const std::string &what, Comm *comm) {
  std::lock_guard<std::mutex> g(m_mutex);
  m_what = what;
  m_comm = comm;
}

void Watchdog::arm(double expected_s) {
  if (m_timeout_s <= 0)
    return;
  expected_s = std::isfinite(expected_s) ? std::max(0.0, expected_s) : 0.0;
  m_expected_s.store(expected_s, std::memory_order_relaxed);
  // Saturate: a deadline past int64 nanoseconds (292 years) would wrap negative and fire at once.
  const double limit_ns = (m_timeout_s + expected_s) * 1e9;
  const std::int64_t now = now_ns();
  const double room = static_cast<double>(std::numeric_limits<std::int64_t>::max() - now) / 2;
  m_deadline_ns.store(limit_ns >= room ? now + static_cast<std::int64_t>(room)
                                       : now + static_cast<std::int64_t>(limit_ns),
                      std::memory_order_release);
}

void Watchdog::disarm() {
  m_deadline_ns.store(0, std::memory_order_release);
}

void Watchdog::barrier() {
  if (ProgressBoard *b = m_board.load(std::memory_order_acquire))
    b->barrier();
  else
    SCALEFIT_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

void Watchdog::loop() {
  std::unique_lock<std::mutex> lock(m_mutex);
  while (!m_stop) {
    m_cv.wait_for(lock, std::chrono::milliseconds(20));
    if (m_stop)
      break;
    if (g_watch_launcher && ::getppid() != m_parent) {
      std::fprintf(stderr,
                   "scalefit-bench: the launcher (parent pid %ld) is gone; stopping this rank "
                   "(pid %ld) without writing more\n",
                   m_parent, static_cast<long>(::getpid()));
      std::fflush(stderr);
      std::_Exit(kExitInternal);
    }
    const std::int64_t deadline = m_deadline_ns.load(std::memory_order_acquire);
    if (deadline == 0 || now_ns() < deadline)
      continue;
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const double expected = m_expected_s.load(std::memory_order_relaxed);
    if (const ProgressBoard *board = m_board.load(std::memory_order_acquire)) {
      if (!board->collector()) { // rank 0 names the late ranks; give its MPI_Abort the lead
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::seconds(2));
        lock.lock();
      }
      const std::string report = board->hang_report(m_what);
      if (board->collector())
        std::fprintf(stderr, "scalefit-bench: timeout after %.3g s %s; aborting the job (exit %d)\n",
                     m_timeout_s + expected, report.c_str(), static_cast<int>(kExitInternal));
      else
        std::fprintf(stderr,
                     "scalefit-bench: rank %d on %s: timeout after %.3g s %s; aborting the job "
                     "(exit %d)\n",
                     rank, this_host().c_str(), m_timeout_s + expected, report.c_str(),
                     static_cast<int>(kExitInternal));
    } else {
      std::fprintf(stderr,
                   "scalefit-bench: rank %d on %s: timeout: %s did not complete within --timeout "
                   "%g s beyond its expected %.3g s (barrier, operations and gather with the "
                   "other ranks); a rank or a link is stuck; aborting the job\n",
                   rank, this_host().c_str(), m_what.c_str(), m_timeout_s, expected);
    }
    std::fflush(stderr);
    if (m_comm)
      m_comm->abort();
    MPI_Abort(MPI_COMM_WORLD, kExitInternal);
    std::_Exit(kExitInternal);
  }
}

void stop_every_rank_on_output_error(int nranks, const std::function<void()> &write) {
  std::string why;
  try {
    write();
    return;
  } catch (const InputError &e) {
    if (nranks <= 1)
      throw;
    why = e.what();
  } catch (const std::filesystem::filesystem_error &e) {
    if (nranks <= 1)
      throw InputError(e.what(), "", 0, "--out");
    why = std::string("field '--out': ") + e.what();
  }
  std::fflush(stdout);
  std::fprintf(stderr,
               "scalefit-bench: error: %s; stopping all %d ranks (exit %d): rank 0 cannot write "
               "its output\n",
               why.c_str(), nranks, static_cast<int>(kExitUsage));
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, kExitUsage);
  std::_Exit(kExitUsage);
}

std::string memory_refusal(std::uint64_t per_rank_bytes, int sharing,
                           std::uint64_t available_bytes, const std::string &pool) {
  if (available_bytes == 0 || per_rank_bytes == 0)
    return "";
  const long double total = static_cast<long double>(per_rank_bytes) * std::max(1, sharing);
  if (total <= static_cast<long double>(available_bytes))
    return "";
  return "the sweep needs " + human_bytes(per_rank_bytes) + " per rank x " +
         std::to_string(sharing) + " rank" + (sharing == 1 ? "" : "s") + " sharing " + pool +
         " = " + human_bytes(static_cast<std::uint64_t>(total)) + ", but only " +
         human_bytes(available_bytes) +
         " is available; lower -e (the largest size), use --hot (no rotation buffers) or fewer "
         "ranks per node";
}

std::string shared_gpu_refusal(const std::vector<std::string> &hosts,
                               const std::vector<std::string> &gpus) {
  for (std::size_t r = 0; r < hosts.size() && r < gpus.size(); ++r) {
    if (gpus[r].empty())
      continue;
    for (std::size_t q = 0; q < r; ++q) {
      if (hosts[q] != hosts[r] || gpus[q] != gpus[r])
        continue;
      std::vector<std::string> distinct; // the GPUs this host's ranks pick
      int ranks = 0;
      for (std::size_t k = 0; k < hosts.size() && k < gpus.size(); ++k)
        if (hosts[k] == hosts[r]) {
          ++ranks;
          if (std::find(distinct.begin(), distinct.end(), gpus[k]) == distinct.end())
            distinct.push_back(gpus[k]);
        }
      const std::string g = std::to_string(distinct.size());
      return "more ranks than GPUs on node " + hosts[r] + ": " + std::to_string(ranks) +
             " ranks share " + g + " GPU" + (distinct.size() == 1 ? "" : "s") + " (ranks " +
             std::to_string(q) + " and " + std::to_string(r) + " would both use GPU " + gpus[r] +
             "); the nccl backend runs one rank per GPU, as nccl-tests: launch at most " + g +
             " rank" + (distinct.size() == 1 ? "" : "s") +
             " per node (mpirun --map-by ppr:" + g + ":node, srun --ntasks-per-node=" + g +
             "), or use --backend mpi";
    }
  }
  return "";
}

} // namespace scalefit::bench

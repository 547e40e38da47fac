// Out-of-band progress reports to rank 0 and the hang message built from them (see
// progress_board.hpp).
#include "scalefit/bench/progress_board.hpp"

#include "scalefit/bench/check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

namespace scalefit::bench {
namespace {

constexpr int kTag = 17;
constexpr std::size_t kWhatBytes = 184;
constexpr std::size_t kMessageBytes = 8 + kWhatBytes; ///< seq (8 B, native order), name (NUL-padded)

std::vector<char> encode(std::uint64_t seq, const std::string &what) {
  std::vector<char> b(kMessageBytes, '\0');
  std::memcpy(b.data(), &seq, 8);
  std::memcpy(b.data() + 8, what.data(), std::min(what.size(), kWhatBytes - 1));
  return b;
}

#ifdef SCALEFIT_TEST_HOOKS
/// Test builds only: whether this world rank is SCALEFIT_TEST_HANG_RANK and `seq` is
/// SCALEFIT_TEST_HANG_POINT (a hung rank for the tests of the timeout message).
bool test_hang_here(int rank, std::uint64_t seq) {
  const char *r = std::getenv("SCALEFIT_TEST_HANG_RANK");
  const char *p = std::getenv("SCALEFIT_TEST_HANG_POINT");
  return r && p && std::atoi(r) == rank && std::strtoull(p, nullptr, 10) == seq;
}
#endif

} // namespace

std::string rank_list(const std::vector<int> &ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i)
    s += (i ? "," : "") + std::to_string(ranks[i]);
  return s;
}

ProgressBoard::ProgressBoard(std::vector<std::string> hosts) : m_hosts(std::move(hosts)) {
  SCALEFIT_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &m_comm));
  MPI_Comm_rank(m_comm, &m_rank);
  MPI_Comm_size(m_comm, &m_size);
  m_table.resize(m_rank == 0 ? static_cast<std::size_t>(m_size) : 1);
  m_received.assign(static_cast<std::size_t>(m_size), 0);
}

ProgressBoard::~ProgressBoard() {
  for (Pending &p : m_pending) // an abandoned run (an exception; main aborts the job)
    MPI_Request_free(&p.request);
  if (m_comm != MPI_COMM_NULL)
    MPI_Comm_free(&m_comm);
}

void ProgressBoard::publish(std::uint64_t seq, const std::string &what) {
#ifdef SCALEFIT_TEST_HOOKS
  if (test_hang_here(m_rank, seq))
    for (;;) // a hung rank: never reaches this point (the job is aborted around it)
      std::this_thread::sleep_for(std::chrono::seconds(1));
#endif
  ++m_published;
  if (m_rank == 0) {
    {
      std::lock_guard<std::mutex> g(m_mutex);
      m_table[0] = {seq, what.substr(0, kWhatBytes - 1)};
    }
    drain();
    return;
  }
  {
    std::lock_guard<std::mutex> g(m_mutex);
    m_table[0] = {seq, what.substr(0, kWhatBytes - 1)};
  }
  test_pending();
  m_pending.push_back({MPI_REQUEST_NULL, seq, encode(seq, what)});
  Pending &p = m_pending.back();
  SCALEFIT_MPI_CHECK(MPI_Issend(p.buffer.data(), static_cast<int>(kMessageBytes), MPI_BYTE, 0,
                                kTag, m_comm, &p.request));
}

void ProgressBoard::drain() {
  for (;;) {
    int flag = 0;
    MPI_Status st;
    SCALEFIT_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, kTag, m_comm, &flag, &st));
    if (!flag)
      return;
    char buf[kMessageBytes];
    SCALEFIT_MPI_CHECK(MPI_Recv(buf, static_cast<int>(kMessageBytes), MPI_BYTE, st.MPI_SOURCE,
                                kTag, m_comm, MPI_STATUS_IGNORE));
    std::uint64_t seq = 0;
    std::memcpy(&seq, buf, 8);
    buf[kMessageBytes - 1] = '\0';
    const std::size_t src = static_cast<std::size_t>(st.MPI_SOURCE);
    ++m_received[src];
    std::lock_guard<std::mutex> g(m_mutex);
    if (seq >= m_table[src].seq)
      m_table[src] = {seq, std::string(buf + 8)};
  }
}

void ProgressBoard::test_pending() {
  auto done = [this](Pending &p) {
    int flag = 0;
    SCALEFIT_MPI_CHECK(MPI_Test(&p.request, &flag, MPI_STATUS_IGNORE));
    if (flag && p.seq > m_taken_seq.load(std::memory_order_relaxed))
      m_taken_seq.store(p.seq, std::memory_order_relaxed);
    return flag != 0;
  };
  m_pending.erase(std::remove_if(m_pending.begin(), m_pending.end(), done), m_pending.end());
}

void ProgressBoard::barrier() {
  MPI_Request req = MPI_REQUEST_NULL;
  SCALEFIT_MPI_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &req));
  m_in_barrier.store(true, std::memory_order_release);
  for (int flag = 0; !flag;) {
    if (m_rank == 0)
      drain();
    else if (!m_pending.empty())
      test_pending();
    SCALEFIT_MPI_CHECK(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
  }
  m_in_barrier.store(false, std::memory_order_release);
}

void ProgressBoard::finish() {
  if (m_rank == 0) {
    auto all_in = [this] {
      for (int r = 1; r < m_size; ++r)
        if (m_received[static_cast<std::size_t>(r)] < m_published)
          return false;
      return true;
    };
    while (!all_in())
      drain();
    return;
  }
  while (!m_pending.empty())
    test_pending();
}

std::vector<RankProgress> ProgressBoard::table() const {
  std::lock_guard<std::mutex> g(m_mutex);
  return m_table;
}

std::string ProgressBoard::hang_report(const std::string &what) const {
  const std::vector<RankProgress> t = table();
  const RankProgress me = t.empty() ? RankProgress{} : t[0];
  auto host = [this](int r) {
    return static_cast<std::size_t>(r) < m_hosts.size() ? m_hosts[static_cast<std::size_t>(r)]
                                                         : std::string("?");
  };
  auto hosts_of = [&](const std::vector<int> &ranks) {
    std::vector<std::string> h;
    for (int r : ranks)
      if (std::find(h.begin(), h.end(), host(r)) == h.end())
        h.push_back(host(r));
    std::string s;
    for (std::size_t i = 0; i < h.size(); ++i)
      s += (i ? "," : "") + h[i];
    return s;
  };
  auto seen = [](const RankProgress &p) {
    return p.seq == 0 ? std::string("not seen since the start")
                      : fmt::format("last seen at point {}: {}", p.seq, p.what);
  };
  std::string s = fmt::format("in {}", what.empty() ? me.what : what);
  if (me.seq > 0)
    s += fmt::format(" ({}point {})", what.empty() || what == me.what ? "" : "after ", me.seq);
  if (m_rank != 0) {
    const std::uint64_t taken = m_taken_seq.load(std::memory_order_relaxed);
    if (me.seq > 0 && taken < me.seq)
      return s + fmt::format(": rank 0 ({}), which collects the ranks' progress, has not taken "
                             "this rank's report of point {}: rank 0 had not arrived (stuck "
                             "itself, or still on an earlier point)",
                             host(0), me.seq);
    return s + fmt::format(": rank 0 took this rank's report of point {}; rank 0's message names "
                           "the ranks that had not arrived (none comes if rank 0 is stuck itself)",
                           me.seq);
  }
  // Rank 0: group the ranks behind it by the point they were last seen at.
  std::map<std::uint64_t, std::vector<int>> behind, ahead;
  for (int r = 1; r < static_cast<int>(t.size()); ++r) {
    const RankProgress &p = t[static_cast<std::size_t>(r)];
    if (p.seq < me.seq)
      behind[p.seq].push_back(r);
    else if (p.seq > me.seq)
      ahead[p.seq].push_back(r);
  }
  const bool waiting = m_in_barrier.load(std::memory_order_acquire);
  if (!behind.empty()) {
    std::string parts;
    for (const auto &[seq, ranks] : behind) {
      parts += parts.empty() ? ": " : "; ";
      parts += fmt::format("{} ({}) had not arrived ({})", rank_list(ranks), hosts_of(ranks),
                           seen(t[static_cast<std::size_t>(ranks.front())]));
    }
    return s + parts;
  }
  if (!ahead.empty()) {
    std::string parts = fmt::format(": rank 0 ({}) had not arrived (stuck at point {}: {})",
                                    host(0), me.seq, me.what);
    for (const auto &[seq, ranks] : ahead)
      parts += fmt::format("; {} waited at point {}: {}", rank_list(ranks), seq,
                           t[static_cast<std::size_t>(ranks.front())].what);
    return s + parts;
  }
  if (waiting)
    return s + ": every rank had started this point; rank 0 waits at its barrier, so a rank is "
               "stuck inside the point (an operation, a GPU or a link), not in reaching it";
  return s + ": every rank had started this point and rank 0 is inside its operations: an "
             "operation did not complete (a link, a GPU, or a rank stuck inside it)";
}

} // namespace scalefit::bench

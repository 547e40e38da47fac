// `--groups pairs`: round-robin pair schedule, the slow-player rule and the MPI driver (see
// pairs.hpp).
#include "scalefit/bench/pairs.hpp"

#include "scalefit/bench/check.hpp"
#include "scalefit/bench/collective.hpp"
#include "scalefit/bench/verify.hpp"
#include "scalefit/core/error.hpp"
#include "scalefit/core/stats.hpp"
#include "scalefit/core/timing.hpp"
#include "scalefit/core/units.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

namespace scalefit::bench {
namespace {

constexpr int kMaxPlayers = 4096;

double median_of(std::vector<double> v) {
  if (v.empty())
    return 0;
  const std::size_t h = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(h), v.end());
  const double hi = v[h];
  if (v.size() % 2 == 1)
    return hi;
  return 0.5 * (hi + *std::max_element(v.begin(), v.begin() + static_cast<long>(h)));
}

/// The ops the pair sweep times: SendRecv and AllReduce among --ops, both when it names neither.
std::vector<Op> pair_ops(const std::vector<Op> &ops) {
  std::vector<Op> out;
  for (Op op : {Op::sendrecv, Op::allreduce})
    if (std::find(ops.begin(), ops.end(), op) != ops.end())
      out.push_back(op);
  if (out.empty())
    out = {Op::sendrecv, Op::allreduce};
  return out;
}

/// A pair's records and analysis are per (op, kind, bytes).
struct PointKey {
  Op op;
  bool inter;
  int node; // intra: the node whose ranks play; inter: -1
  std::uint64_t bytes;
  bool operator<(const PointKey &o) const {
    return std::tie(op, inter, node, bytes) < std::tie(o.op, o.inter, o.node, o.bytes);
  }
};

} // namespace

std::vector<std::vector<std::pair<int, int>>> round_robin(int n) {
  if (n > kMaxPlayers)
    throw InputError("pairs of " + std::to_string(n) + " players: at most " +
                         std::to_string(kMaxPlayers),
                     "", 0, "--groups");
  std::vector<std::vector<std::pair<int, int>>> rounds;
  if (n < 2)
    return rounds;
  const int m = n % 2 == 0 ? n : n + 1; // odd: a phantom player m - 1; its opponent rests
  const int fixed = m - 1;
  for (int r = 0; r < m - 1; ++r) {
    std::vector<std::pair<int, int>> round;
    auto pos = [&](int i) { return (i + r) % (m - 1); };
    auto add = [&](int a, int b) {
      if (a < n && b < n)
        round.emplace_back(std::min(a, b), std::max(a, b));
    };
    add(fixed, pos(0));
    for (int i = 1; i < m / 2; ++i)
      add(pos(i), pos(m - 1 - i));
    rounds.push_back(std::move(round));
  }
  return rounds;
}

std::vector<SlowPlayer> slow_players(const std::vector<PairTime> &times, int nplayers,
                                     double threshold) {
  std::vector<std::vector<double>> of(static_cast<std::size_t>(std::max(0, nplayers)));
  for (const PairTime &t : times)
    for (int p : {t.a, t.b})
      if (p >= 0 && p < nplayers && std::isfinite(t.time_us) && t.time_us > 0)
        of[static_cast<std::size_t>(p)].push_back(t.time_us);
  std::vector<double> scores;
  std::vector<int> who;
  for (int p = 0; p < nplayers; ++p)
    if (!of[static_cast<std::size_t>(p)].empty()) {
      scores.push_back(median_of(of[static_cast<std::size_t>(p)]));
      who.push_back(p);
    }
  std::vector<SlowPlayer> slow;
  if (scores.size() < 3)
    return slow;
  const double med = median_of(scores);
  std::vector<double> dev;
  for (double s : scores)
    dev.push_back(std::abs(s - med));
  const double mad = median_of(dev);
  const double bar = std::max(threshold, med > 0 ? 3 * 1.4826 * mad / med : 0.0);
  for (std::size_t i = 0; i < scores.size(); ++i) {
    // Dominance: every pair of this player slower than every pair without it (by the threshold).
    double own_min = 1e300, others_max = 0;
    std::vector<double> others;
    for (const PairTime &t : times) {
      if (!std::isfinite(t.time_us) || t.time_us <= 0 || t.a < 0 || t.b < 0 || t.a >= nplayers ||
          t.b >= nplayers)
        continue;
      if (t.a == who[i] || t.b == who[i]) {
        own_min = std::min(own_min, t.time_us);
      } else {
        others_max = std::max(others_max, t.time_us);
        others.push_back(t.time_us);
      }
    }
    // at least 3 pairs without it (4 players or more): one or two pairs are no reference
    const bool dominant =
        others.size() >= 3 && own_min < 1e300 && own_min > others_max * (1 + threshold);
    if (!(scores[i] > med * (1 + bar)) && !dominant)
      continue;
    const double ref = scores[i] > med * (1 + bar) ? med : median_of(others);
    SlowPlayer s;
    s.player = who[i];
    s.score_us = scores[i];
    s.median_us = ref;
    s.slowdown = scores[i] / ref - 1;
    const auto &mine = of[static_cast<std::size_t>(who[i])];
    s.pairs = static_cast<int>(mine.size());
    s.slow_pairs = static_cast<int>(std::count_if(
        mine.begin(), mine.end(), [&](double t) { return t > ref * (1 + threshold); }));
    slow.push_back(s);
  }
  std::sort(slow.begin(), slow.end(),
            [](const SlowPlayer &x, const SlowPlayer &y) { return x.slowdown > y.slowdown; });
  return slow;
}

int run_pairs(const PairsRun &run) {
  const CommOptions &o = run.options;
  const NodeLayout &layout = run.layout;
  if (layout.ranks_per_node <= 0)
    throw InputError("--groups pairs needs the same number of ranks on every node", "", 0,
                     "--groups");
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const int rpn = layout.ranks_per_node, nn = layout.nnodes;
  const std::size_t es = dtype_size(run.dtype);
  const std::vector<Op> ops = pair_ops(o.ops);
  std::map<PointKey, std::vector<PairTime>> results; // rank 0
  std::vector<double> all(static_cast<std::size_t>(nranks));
  std::vector<int> colors(static_cast<std::size_t>(nranks));
  std::uint64_t point_id = 1ull << 40; // apart from the main sweep's ids
  auto node_name = [&](int node) {
    for (int r = 0; r < nranks; ++r)
      if (layout.node_of_rank[static_cast<std::size_t>(r)] == node)
        return fmt::format("node {} ({}, first rank {})", node,
                           run.hosts_per_rank[static_cast<std::size_t>(r)], r);
    return fmt::format("node {}", node);
  };

  for (const bool inter : {true, false}) {
    const int players = inter ? nn : rpn;
    if (players < 2)
      continue;
    const auto rounds = round_robin(players);
    const GroupShape shape{"pairs", 2, inter ? 2 : 1, inter ? 1 : 2};
    if (rank == 0) {
      std::printf("#\n# Pairs %s: %d %s, %zu rounds of concurrent pairs (round-robin)%s\n",
                  inter ? "across nodes" : "inside nodes", players, inter ? "nodes" : "ranks per node",
                  rounds.size(),
                  inter && rpn > 1 ? fmt::format(", {} pair instances per node pair (one per "
                                                 "local rank)", rpn).c_str()
                                   : "");
      std::printf("# %5s %-14s %12s %10s %9s %9s\n", "round", "pair", "size(B)", "time(us)",
                  "algbw", "busbw");
      std::fflush(stdout);
    }
    for (std::size_t r = 0; r < rounds.size(); ++r) {
      const auto &pairs = rounds[r];
      const int node = layout.node_of_rank[static_cast<std::size_t>(rank)];
      const int local = layout.local_rank[static_cast<std::size_t>(rank)];
      const int me = inter ? node : local;
      int color = -1, key = 0;
      for (std::size_t q = 0; q < pairs.size(); ++q)
        if (pairs[q].first == me || pairs[q].second == me) {
          color = inter ? static_cast<int>(q) * rpn + local
                        : node * static_cast<int>(pairs.size()) + static_cast<int>(q);
          key = pairs[q].first == me ? 0 : 1;
        }
      SCALEFIT_MPI_CHECK(
          MPI_Allgather(&color, 1, MPI_INT, colors.data(), 1, MPI_INT, MPI_COMM_WORLD));
      MPI_Comm sub = MPI_COMM_NULL;
      run.watchdog.set_point(fmt::format("creating the pairs communicators of round {}", r),
                             nullptr);
      run.watchdog.arm(60);
      SCALEFIT_MPI_CHECK(
          MPI_Comm_split(MPI_COMM_WORLD, color >= 0 ? color : MPI_UNDEFINED, key, &sub));
      std::unique_ptr<Comm> comm = run.backend.make_comm(sub, color, key);
      run.watchdog.disarm();
      std::optional<Buffers> bufs;
      const std::uint64_t max_bytes = run.sizes.empty() ? 0 : run.sizes.back();
      if (comm)
        bufs.emplace(run.backend, std::max<std::size_t>(max_bytes, es),
                     std::max<std::size_t>(max_bytes, es));
      for (Op op : ops) {
        const Collective &coll = collective(op);
        for (std::uint64_t size : run.sizes) {
          const std::size_t count = count_per_rank(op, size, es, 2);
          if (count == 0)
            continue;
          const std::uint64_t bytes = effective_bytes(op, size, es, 2);
          CollArgs a;
          a.count = count;
          a.dtype = run.dtype;
          a.redop = RedOp::sum;
          a.root = -1;
          a.rank = comm ? comm->rank() : 0;
          a.nranks = 2;
          Comm *cp = comm.get();
          const std::function<void()> op_fn = [&coll, cp, &bufs, &a] {
            coll.run(*cp, bufs->send, bufs->recv, a);
          };
          run.watchdog.set_point(fmt::format("pairs round {} {} {} B", r, op_name(op), bytes),
                                 cp);
          // Warm-up, then one batch size for every pair (the slowest pair's: both ranks of a
          // pair must issue as many operations).
          const int warm = std::max(1, o.warmup_iters);
          run.watchdog.arm(60);
          SCALEFIT_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
          double op_us = cp ? cp->time_batch_us(warm, op_fn, 0) / warm : 0.0, max_op_us = 0;
          SCALEFIT_MPI_CHECK(
              MPI_Allreduce(&op_us, &max_op_us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
          run.watchdog.disarm();
          const int batch =
              o.batch > 0 ? o.batch : calibrate_batch(max_op_us, o.batch_time_us, 1 << 20);
          const int nsamples = o.fixed_samples > 0 ? o.fixed_samples : 5;
          ++point_id;
          std::map<int, std::vector<double>> pair_samples; // rank 0: color -> per-sample max
          for (int s = 0; s < nsamples; ++s) {
            run.watchdog.arm(4e-6 * batch * std::max(max_op_us, 1.0));
            SCALEFIT_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
            const double t = cp ? cp->time_batch_us(batch, op_fn, point_id) / batch : -1.0;
            SCALEFIT_MPI_CHECK(
                MPI_Gather(&t, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
            run.watchdog.disarm();
            if (rank != 0)
              continue;
            std::map<int, double> worst;
            for (int q = 0; q < nranks; ++q)
              if (const int c = colors[static_cast<std::size_t>(q)]; c >= 0)
                worst[c] = std::max(worst[c], all[static_cast<std::size_t>(q)]);
            for (const auto &[c, v] : worst)
              pair_samples[c].push_back(v);
          }
          if (comm)
            comm->end_point();
          if (rank != 0)
            continue;
          for (const auto &[c, samples] : pair_samples) {
            // The instance's two world ranks, in key order (the pair's first, then second).
            std::vector<int> ranks;
            for (int q = 0; q < nranks; ++q)
              if (colors[static_cast<std::size_t>(q)] == c)
                ranks.push_back(q);
            if (ranks.size() != 2)
              continue;
            const int n0 = layout.node_of_rank[static_cast<std::size_t>(ranks[0])],
                      n1 = layout.node_of_rank[static_cast<std::size_t>(ranks[1])];
            const int l0 = layout.local_rank[static_cast<std::size_t>(ranks[0])],
                      l1 = layout.local_rank[static_cast<std::size_t>(ranks[1])];
            const int pa = inter ? n0 : l0, pb = inter ? n1 : l1;
            MeasurementRecord m;
            m.op = op;
            m.group = shape;
            m.dtype = run.dtype;
            m.redop = RedOp::sum;
            m.root = -1;
            m.placement = Placement::out_of_place;
            m.method = inter ? fmt::format("pair_n{}.g{}-n{}.g{}", std::min(n0, n1), l0,
                                           std::max(n0, n1), l1)
                             : fmt::format("pair_n{}.g{}-n{}.g{}", n0, std::min(l0, l1), n0,
                                           std::max(l0, l1));
            m.bytes = bytes;
            m.count = count;
            const Summary st = summarize(samples);
            m.time_us = st.mean;
            m.algbw_gbps = gbps(static_cast<double>(bytes), m.time_us);
            m.busbw_gbps = m.algbw_gbps * busbw_factor(op, 2);
            m.stats = st;
            m.iters_per_sample = batch;
            m.samples_us = samples;
            m.extra = {{"pair",
                        {{"ranks", ranks},
                         {"hosts",
                          {run.hosts_per_rank[static_cast<std::size_t>(ranks[0])],
                           run.hosts_per_rank[static_cast<std::size_t>(ranks[1])]}},
                         {"nodes", {n0, n1}},
                         {"local_ranks", {l0, l1}},
                         {"round", r}}},
                       {"statistic", "mean"},
                       {"across_ranks", "max of the pair's two ranks per sample"}};
            run.write(m);
            results[PointKey{op, inter, inter ? -1 : n0, bytes}].push_back(
                PairTime{pa, pb, m.time_us});
            std::printf("  %5zu %-14s %12llu %10.2f %9.2f %9.2f\n", r,
                        m.method.substr(5).c_str(), static_cast<unsigned long long>(bytes),
                        m.time_us, m.algbw_gbps, m.busbw_gbps);
          }
          std::fflush(stdout);
        }
      }
      run.watchdog.set_point("", nullptr);
      if (comm)
        comm->deregister_buffers();
      bufs.reset();
      comm.reset();
      if (sub != MPI_COMM_NULL)
        MPI_Comm_free(&sub);
    }
  }

  // The analysis: slow players per point, and per player over points.
  int findings = 0;
  if (rank == 0) {
    constexpr double kThreshold = 0.15;
    std::printf("#\n# Slow nodes and ranks (per point: a player's median pair time above the "
                "median of all players' by more than max(15%%, 3 x 1.4826 MAD))\n");
    for (const auto &[k, times] : results) {
      const int players = k.inter ? nn : rpn;
      for (const SlowPlayer &s : slow_players(times, players, kThreshold)) {
        ++findings;
        const std::string who =
            k.inter ? node_name(s.player)
                    : fmt::format("rank {} of {}", s.player, node_name(k.node));
        std::printf("# SLOW %s: %s %llu B: %s %.0f%% slower than the median (busbw "
                    "%.0f%% below: %.2f vs %.2f us); %d of %d pairs slow\n",
                    who.c_str(), std::string(op_name(k.op)).c_str(),
                    static_cast<unsigned long long>(k.bytes),
                    s.slow_pairs == s.pairs ? "every pair" : "its median pair", s.slowdown * 100, (1 - 1 / (1 + s.slowdown)) * 100, s.score_us, s.median_us,
                    s.slow_pairs, s.pairs);
      }
    }
    if (findings == 0)
      std::printf("# no slow node or rank found\n");
    std::fflush(stdout);
  }
  SCALEFIT_MPI_CHECK(MPI_Bcast(&findings, 1, MPI_INT, 0, MPI_COMM_WORLD));
  return findings;
}

} // namespace scalefit::bench

/// \file pairs.hpp
/// `--groups pairs`: find the slow node, GPU or link. Every node is timed against every other
/// node in n - 1 rounds of n/2 concurrent pairs (a round-robin tournament, the circle method),
/// one pair instance per local rank (so every GPU's NIC path of a node pair runs at once); and
/// every rank pair inside a node the same way, on all nodes at once. SendRecv and a two-rank
/// AllReduce at the sweep's sizes; each pair's time is a record (group kind "pairs", `method`
/// naming the pair). The analysis names the players (nodes, or GPUs of a node) whose pairs are
/// consistently slower than the others' by a robust rule (medians and MAD), as a cluster operator
/// needs: "node gpu017: every pair 31% below the median busbw at 256 MiB".
///
/// The schedule and the analysis are pure functions, unit-tested without MPI; run_pairs is the
/// MPI driver comm.cpp calls.
#pragma once

#include "scalefit/bench/backend.hpp"
#include "scalefit/bench/groups.hpp"
#include "scalefit/bench/guard.hpp"
#include "scalefit/bench/options.hpp"
#include "scalefit/core/records.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace scalefit::bench {

/// A round-robin tournament of `n` players (the circle method: player n-1 fixed, the others
/// rotating): n - 1 rounds (n rounds when n is odd, each with one player resting) of floor(n/2)
/// disjoint pairs, every pair of players meeting exactly once. Pairs are (lower, higher).
/// n < 2 gives no rounds. \throws InputError when n > 4096 (field "--groups").
std::vector<std::vector<std::pair<int, int>>> round_robin(int n);

/// One pair's measured time at one point [us] (players: node indices, or local ranks).
struct PairTime {
  int a = 0, b = 0;
  double time_us = 0;
};

/// A player that is consistently slower than the others.
struct SlowPlayer {
  int player = 0;
  double score_us = 0;     ///< median over the player's pairs of their time [us]
  double median_us = 0;    ///< median over all players of their score [us] (dominance: the
                           ///< median of the pairs without this player)
  double slowdown = 0;     ///< score / median - 1 (0.31: 31% slower, busbw 24% lower)
  int pairs = 0;           ///< the player's pairs at this point
  int slow_pairs = 0;      ///< of them, those slower than the median score by the threshold
};

/// The slow players at one point (op, kind, size) from its pair times, by a rule robust to the
/// slow player's own pairs: each player's score is the median of its pairs' times (a slow node
/// slows all its pairs, a healthy node only the one it plays against the slow node); a player
/// is slow when score > median(scores) x (1 + max(threshold, 3 x 1.4826 x MAD(scores) /
/// median(scores))). Or by dominance: each of its pairs is slower than every pair without it (at
/// least 3 of them) by more than the threshold (what one slow node does to a pair schedule when the
/// pair is as slow as its slower member; it holds where noise on one healthy pair, on a few
/// players, lifts two healthy medians and the MAD with them: 4 nodes, one healthy pair 70x slow).
/// Sorted slowest first. Needs >= 3 players (with 2 the pair cannot say which side is slow: empty).
/// `threshold`: relative, e.g. 0.15.
std::vector<SlowPlayer> slow_players(const std::vector<PairTime> &times, int nplayers,
                                     double threshold);

/// What run_pairs needs from the comm driver.
struct PairsRun {
  const CommOptions &options;
  const NodeLayout &layout;
  const std::vector<std::string> &hosts_per_rank; ///< host of every world rank
  Backend &backend;
  DType dtype = DType::float32;
  std::vector<std::uint64_t> sizes;               ///< the sweep's sizes [B]
  Watchdog &watchdog;
  std::function<void(const MeasurementRecord &)> write; ///< rank 0: appends a record
};

/// Times every pair (inter-node rounds when there are >= 2 nodes, intra-node rounds when nodes
/// hold >= 2 ranks) for SendRecv and AllReduce (those of --ops, both when --ops names neither),
/// writes one record per pair and point, and prints (rank 0) a table per round and the slow
/// players per point. Collective over MPI_COMM_WORLD. \returns how many (point, player)
/// findings were reported as slow (0: none).
/// \throws InputError when the layout is not uniform (ranks per node differ).
int run_pairs(const PairsRun &run);

} // namespace scalefit::bench

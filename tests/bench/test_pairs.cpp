// --groups pairs: the round-robin schedule and the slow-player rule (pairs.hpp).
#include "scalefit/bench/pairs.hpp"
#include "scalefit/core/error.hpp"

#include <gtest/gtest.h>

#include <set>

using namespace scalefit;
using namespace scalefit::bench;

TEST(RoundRobin, EveryPairMeetsOnceInConcurrentRounds) {
  for (int n = 2; n <= 17; ++n) {
    const auto rounds = round_robin(n);
    EXPECT_EQ(rounds.size(), static_cast<std::size_t>(n % 2 == 0 ? n - 1 : n)) << n;
    std::set<std::pair<int, int>> seen;
    for (const auto &round : rounds) {
      EXPECT_EQ(round.size(), static_cast<std::size_t>(n / 2)) << n;
      std::set<int> busy; // a player plays at most once per round
      for (const auto &[a, b] : round) {
        EXPECT_LT(a, b);
        EXPECT_GE(a, 0);
        EXPECT_LT(b, n);
        EXPECT_TRUE(busy.insert(a).second) << n;
        EXPECT_TRUE(busy.insert(b).second) << n;
        EXPECT_TRUE(seen.insert({a, b}).second) << n << ": " << a << "-" << b << " twice";
      }
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(n * (n - 1) / 2)) << n;
  }
  EXPECT_TRUE(round_robin(1).empty());
  EXPECT_TRUE(round_robin(0).empty());
  EXPECT_THROW(round_robin(5000), InputError);
}

namespace {
/// Every pair of `n` players at 100 us, pairs that include `slow` at `slow_us`.
std::vector<PairTime> all_pairs(int n, int slow, double slow_us) {
  std::vector<PairTime> t;
  for (const auto &round : round_robin(n))
    for (const auto &[a, b] : round)
      t.push_back({a, b, (a == slow || b == slow) ? slow_us : 100.0});
  return t;
}
} // namespace

TEST(SlowPlayers, TheSlowNodeIsNamedNotItsPartners) {
  // 4 nodes: half of all pairs include the slow node; the pair-level median cannot tell, the
  // per-player median does.
  const auto slow = slow_players(all_pairs(4, 2, 131.0), 4, 0.15);
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].player, 2);
  EXPECT_NEAR(slow[0].slowdown, 0.31, 1e-12);
  EXPECT_EQ(slow[0].pairs, 3);
  EXPECT_EQ(slow[0].slow_pairs, 3);
  EXPECT_DOUBLE_EQ(slow[0].median_us, 100.0);
  // 16 nodes, node 11 slow by 20%: found; a 10% slowdown is below the 15% threshold.
  ASSERT_EQ(slow_players(all_pairs(16, 11, 120.0), 16, 0.15).size(), 1u);
  EXPECT_EQ(slow_players(all_pairs(16, 11, 120.0), 16, 0.15)[0].player, 11);
  EXPECT_TRUE(slow_players(all_pairs(16, 11, 110.0), 16, 0.15).empty());
}

// A CI run of the integration test below (4 emulated nodes on 2 shared cores, node 2 made 20 ms
// slow): one healthy pair (1-3) lost 7 ms to the machine, which lifted nodes 1 and 3's medians
// and the MAD with them, and the median rule found nothing. Every pair of node 2 is slower than
// every pair without it: the dominance rule names it, against the healthy pairs' median.
TEST(SlowPlayers, OneNoisyHealthyPairDoesNotHideTheSlowNode) {
  const std::vector<PairTime> t = {{0, 3, 49.92},    {1, 2, 21099.88}, {1, 3, 7342.61},
                                   {0, 2, 21552.59}, {2, 3, 22124.77}, {0, 1, 106.98}};
  const auto slow = slow_players(t, 4, 0.15);
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].player, 2);
  EXPECT_DOUBLE_EQ(slow[0].median_us, 106.98); // median of 49.92, 106.98, 7342.61
  EXPECT_EQ(slow[0].slow_pairs, 3);
  // the same pairs without the slow node's: one pair without each player is no reference for
  // dominance, and the medians name nobody
  EXPECT_TRUE(slow_players({{0, 3, 49.92}, {1, 3, 7342.61}, {0, 1, 106.98}}, 4, 0.15).empty());
}

TEST(SlowPlayers, HealthyAndDegenerateCasesFlagNothing) {
  EXPECT_TRUE(slow_players(all_pairs(8, -1, 0), 8, 0.15).empty()); // all equal
  // Two players: one pair cannot say which side is slow.
  EXPECT_TRUE(slow_players({{0, 1, 500.0}}, 2, 0.15).empty());
  // Spread-out healthy timings: the MAD term keeps noise from being called slow.
  std::vector<PairTime> noisy;
  const double t[] = {100, 130, 90, 140, 95, 125, 105, 135, 98, 128, 101, 133};
  int i = 0;
  for (const auto &round : round_robin(4))
    for (const auto &[a, b] : round)
      noisy.push_back({a, b, t[i++ % 12]});
  EXPECT_TRUE(slow_players(noisy, 4, 0.15).empty());
  // Bad values are ignored, not crashes.
  EXPECT_TRUE(slow_players({{0, 9, 100.0}, {-1, 1, 100.0}}, 3, 0.15).empty());
}

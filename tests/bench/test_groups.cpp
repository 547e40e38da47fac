// Group shapes for given (nranks, nnodes), incl. emulated nodes; concurrent instance assignment.
#include "scalefit/bench/groups.hpp"
#include "scalefit/core/error.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

using namespace scalefit;
using namespace scalefit::bench;

namespace {
const std::vector<GroupKind> kAll{GroupKind::world, GroupKind::intra, GroupKind::inter};

std::vector<std::string> labels(const std::vector<GroupShape> &shapes) {
  std::vector<std::string> out;
  for (const auto &s : shapes)
    out.push_back(s.label());
  return out;
}
} // namespace

TEST(Layout, EmulatedNodesAreContiguousBlocks) {
  const NodeLayout l = emulated_layout(8, 2);
  EXPECT_TRUE(l.emulated);
  EXPECT_EQ(l.nnodes, 2);
  EXPECT_EQ(l.ranks_per_node, 4);
  EXPECT_EQ(l.node_of_rank, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(l.local_rank, (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}));
}

TEST(Layout, EmulatedNodesMustDivideTheRanks) {
  EXPECT_THROW(emulated_layout(6, 4), InputError);
  EXPECT_THROW(emulated_layout(4, 0), InputError);
  EXPECT_THROW(emulated_layout(4, 8), InputError);
}

TEST(Layout, FromKeysNumbersNodesByFirstRank) {
  // Round-robin placement: ranks 0,2 on host A (key 0), 1,3 on host B (key 1).
  const NodeLayout l = layout_from_keys({0, 1, 0, 1});
  EXPECT_EQ(l.nnodes, 2);
  EXPECT_EQ(l.ranks_per_node, 2);
  EXPECT_EQ(l.node_of_rank, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(l.local_rank, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(layout_from_keys({0, 0, 0, 3}).ranks_per_node, 0); // non-uniform
}

TEST(Shapes, FourRanksOnTwoEmulatedNodes) {
  // world 2x2; intra 2 ranks; inter 2 nodes x 1; inter 2 nodes x 2 is world (listed once).
  EXPECT_EQ(labels(enumerate_shapes(emulated_layout(4, 2), kAll)),
            (std::vector<std::string>{"world n=4 (2x2)", "intra n=2 (1x2)", "inter n=2 (2x1)"}));
}

TEST(Shapes, SixteenRanksOnFourNodes) {
  EXPECT_EQ(labels(enumerate_shapes(emulated_layout(16, 4), kAll)),
            (std::vector<std::string>{"world n=16 (4x4)", "intra n=2 (1x2)", "intra n=4 (1x4)",
                                      "inter n=2 (2x1)", "inter n=8 (2x4)", "inter n=4 (4x1)"}));
}

TEST(Shapes, OneNodeHasNoInterAndIntraFullNodeIsWorld) {
  EXPECT_EQ(labels(enumerate_shapes(emulated_layout(4, 1), kAll)),
            (std::vector<std::string>{"world n=4 (1x4)", "intra n=2 (1x2)"}));
}

TEST(Shapes, NonPowerOfTwoCountsEndWithTheFullCount) {
  // 3 nodes x 6 ranks: intra 2, 4, 6; inter 2 and 3 nodes, 1 rank/node and full nodes.
  EXPECT_EQ(labels(enumerate_shapes(emulated_layout(18, 3), kAll)),
            (std::vector<std::string>{"world n=18 (3x6)", "intra n=2 (1x2)", "intra n=4 (1x4)",
                                      "intra n=6 (1x6)", "inter n=2 (2x1)", "inter n=12 (2x6)",
                                      "inter n=3 (3x1)"}));
}

TEST(Shapes, OnlyTheRequestedKinds) {
  EXPECT_EQ(labels(enumerate_shapes(emulated_layout(8, 2), {GroupKind::inter})),
            (std::vector<std::string>{"inter n=2 (2x1)", "inter n=8 (2x4)"}));
  EXPECT_EQ(labels(enumerate_shapes(layout_from_keys({0, 0, 0, 3}), kAll)),
            (std::vector<std::string>{"world n=4 (2x2)"}));
}

namespace {
/// Checks an assignment: instances have the shape's size, nodes and ranks per node.
void expect_instances_match(const NodeLayout &l, const GroupShape &s, int want_instances) {
  const auto m = assign_instances(l, s);
  std::map<int, std::vector<int>> members;
  for (int r = 0; r < l.nranks(); ++r)
    if (m[static_cast<std::size_t>(r)].color >= 0)
      members[m[static_cast<std::size_t>(r)].color].push_back(r);
  EXPECT_EQ(static_cast<int>(members.size()), want_instances) << s.label();
  EXPECT_EQ(count_instances(m), want_instances);
  for (const auto &[color, ranks] : members) {
    EXPECT_EQ(static_cast<int>(ranks.size()), s.nranks) << s.label() << " color " << color;
    std::map<int, int> per_node;
    std::set<int> keys;
    for (int r : ranks) {
      ++per_node[l.node_of_rank[static_cast<std::size_t>(r)]];
      keys.insert(m[static_cast<std::size_t>(r)].key);
    }
    EXPECT_EQ(static_cast<int>(per_node.size()), s.nnodes) << s.label();
    for (const auto &[node, k] : per_node)
      EXPECT_EQ(k, s.ranks_per_node) << s.label();
    // keys are 0..n-1 inside an instance
    EXPECT_EQ(static_cast<int>(keys.size()), s.nranks);
    EXPECT_EQ(*keys.begin(), 0);
    EXPECT_EQ(*keys.rbegin(), s.nranks - 1);
  }
}
} // namespace

TEST(Instances, RunConcurrentlyAndMatchTheShape) {
  const NodeLayout l = emulated_layout(16, 4);
  expect_instances_match(l, {"world", 16, 4, 4}, 1);
  expect_instances_match(l, {"intra", 2, 1, 2}, 8);
  expect_instances_match(l, {"intra", 4, 1, 4}, 4);
  expect_instances_match(l, {"inter", 2, 2, 1}, 8); // 2 node blocks x 4 local ranks
  expect_instances_match(l, {"inter", 8, 2, 4}, 2);
  expect_instances_match(l, {"inter", 4, 4, 1}, 4);
}

TEST(Instances, LeftoverRanksSitOut) {
  // 3 nodes x 6: intra groups of 4 leave local ranks 4, 5; inter 2 nodes leaves node 2 out.
  const NodeLayout l = emulated_layout(18, 3);
  expect_instances_match(l, {"intra", 4, 1, 4}, 3);
  const auto m = assign_instances(l, {"inter", 2, 2, 1});
  EXPECT_EQ(m[12].color, -1); // rank 12 is on node 2
  EXPECT_GE(m[0].color, 0);
  expect_instances_match(l, {"inter", 2, 2, 1}, 6);
}

TEST(Instances, RoundRobinLayout) {
  const NodeLayout l = layout_from_keys({0, 1, 0, 1});
  expect_instances_match(l, {"intra", 2, 1, 2}, 2);
  expect_instances_match(l, {"inter", 2, 2, 1}, 2);
}

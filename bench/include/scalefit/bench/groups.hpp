/// \file groups.hpp
/// Group shapes: the sub-communicators `--groups world,intra,inter` sweeps, as TP groups (inside a
/// node) and DP/PP groups (across nodes) use them. Pure functions of the node layout, so that the
/// whole logic is unit-tested without MPI; comm.cpp builds the communicators from them.
///
/// Instances run concurrently: every rank belongs to at most one instance of a shape, and all
/// instances time the same operation at the same moment (as real TP/DP groups do). A sample's time
/// is the max over all ranks of all instances.
#pragma once

#include "scalefit/bench/options.hpp"
#include "scalefit/core/collectives.hpp"

#include <vector>

namespace scalefit::bench {

/// Which node each rank of MPI_COMM_WORLD is on.
struct NodeLayout {
  std::vector<int> node_of_rank; ///< node index per world rank; nodes numbered by lowest rank
  std::vector<int> local_rank;   ///< index of the rank among its node's ranks (rank order)
  int nnodes = 1;                ///< distinct nodes
  int ranks_per_node = 1;        ///< ranks on each node; 0 when nodes hold different counts
  bool emulated = false;         ///< nodes from --emulate-nodes
  int nranks() const { return static_cast<int>(node_of_rank.size()); }
};

/// Layout from a node key per rank (e.g. the lowest world rank of each rank's shared-memory
/// communicator): equal keys are one node; nodes are numbered in order of their first rank.
/// \throws InputError when `node_key` is empty.
NodeLayout layout_from_keys(const std::vector<int> &node_key);

/// Layout of `nranks` ranks split into `k` pseudo-nodes of contiguous blocks (--emulate-nodes).
/// \throws InputError (field "--emulate-nodes") unless 1 <= k <= nranks and k divides nranks.
NodeLayout emulated_layout(int nranks, int k);

/// Why some of `kinds` yield no group on `layout` (enumerate_shapes lists none of them), in one
/// sentence naming each: inter on 1 node ("no inter-node group exists on 1 node"), intra with 1
/// rank per node, intra or inter on a layout whose nodes hold different rank counts. "" when
/// every kind asked for has groups (pairs always has). `scalefit-bench comm` refuses a sweep
/// that would then measure nothing (exit 2 naming --groups) and notes the rest on stderr.
std::string unavailable_groups(const NodeLayout &layout, const std::vector<GroupKind> &kinds);

/// The distinct shapes to sweep for `kinds` on a layout, in order world, intra, inter:
///  - world: all ranks.
///  - intra: g = 2, 4, 8, ... ranks of one node (and the node's full count when not a power of 2).
///  - inter: k = 2, 4, ... nodes (and all nodes), with 1 rank per node and with all ranks per node.
/// A shape equal to an earlier one (same ranks, nodes, ranks per node; e.g. inter over all nodes
/// with full nodes, which is world) is listed once, under its first kind. Intra and inter need a
/// uniform layout (ranks_per_node > 0); on a non-uniform one they yield nothing.
std::vector<GroupShape> enumerate_shapes(const NodeLayout &layout,
                                         const std::vector<GroupKind> &kinds);

/// The instance of `shape` a rank belongs to.
struct GroupMembership {
  int color = -1; ///< instance index (>= 0), or -1 when the rank sits this shape out
  int key = 0;    ///< the rank's order inside its instance
};

/// Assigns every world rank to an instance of `shape` (concurrent instances):
///  - world: one instance.
///  - intra g: on each node, local ranks [0,g), [g,2g), ...; leftover local ranks sit out.
///  - inter k, 1 rank/node: node blocks [0,k), [k,2k), ...; in each block one instance per local
///    rank l holding local rank l of each node. Leftover nodes sit out.
///  - inter k, full nodes: one instance per node block holding all its ranks.
/// \returns one membership per world rank.
std::vector<GroupMembership> assign_instances(const NodeLayout &layout, const GroupShape &shape);

/// Number of distinct instances (colors) in an assignment.
int count_instances(const std::vector<GroupMembership> &members);

} // namespace scalefit::bench

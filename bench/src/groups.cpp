// Node layouts, group-shape enumeration and concurrent instance assignment (see groups.hpp).
#include "scalefit/bench/groups.hpp"

#include "scalefit/core/error.hpp"

#include <algorithm>
#include <map>

namespace scalefit::bench {
namespace {

/// 2, 4, 8, ... <= limit, plus limit itself when it is not a power of two (and >= 2).
std::vector<int> doubling_sizes(int limit) {
  std::vector<int> out;
  int g = 2;
  for (; g <= limit; g *= 2)
    out.push_back(g);
  if (limit >= 2 && (out.empty() || out.back() != limit))
    out.push_back(limit);
  return out;
}

} // namespace

NodeLayout layout_from_keys(const std::vector<int> &node_key) {
  if (node_key.empty())
    throw InputError("no ranks", "", 0, "nodes");
  NodeLayout l;
  std::map<int, int> node_of_key;
  std::vector<int> count;
  for (int key : node_key) {
    auto [it, added] = node_of_key.try_emplace(key, static_cast<int>(count.size()));
    if (added)
      count.push_back(0);
    l.node_of_rank.push_back(it->second);
    l.local_rank.push_back(count[static_cast<std::size_t>(it->second)]++);
  }
  l.nnodes = static_cast<int>(count.size());
  const bool uniform =
      std::all_of(count.begin(), count.end(), [&](int c) { return c == count[0]; });
  l.ranks_per_node = uniform ? count[0] : 0;
  return l;
}

NodeLayout emulated_layout(int nranks, int k) {
  if (k < 1 || k > nranks || nranks % k != 0)
    throw InputError("must divide the number of ranks (" + std::to_string(nranks) + ") into " +
                         "equal blocks, got " + std::to_string(k),
                     "", 0, "--emulate-nodes");
  std::vector<int> keys;
  const int per = nranks / k;
  for (int r = 0; r < nranks; ++r)
    keys.push_back(r / per);
  NodeLayout l = layout_from_keys(keys);
  l.emulated = true;
  return l;
}

std::vector<GroupShape> enumerate_shapes(const NodeLayout &layout,
                                         const std::vector<GroupKind> &kinds) {
  std::vector<GroupShape> shapes;
  auto add = [&](GroupShape s) {
    for (const GroupShape &o : shapes)
      if (o.nranks == s.nranks && o.nnodes == s.nnodes && o.ranks_per_node == s.ranks_per_node)
        return;
    shapes.push_back(std::move(s));
  };
  const int n = layout.nranks(), nn = layout.nnodes, p = layout.ranks_per_node;
  auto wants = [&](GroupKind k) { return std::find(kinds.begin(), kinds.end(), k) != kinds.end(); };
  if (wants(GroupKind::world))
    add(GroupShape{"world", n, nn, p > 0 ? p : std::max(1, n / std::max(1, nn))});
  if (p <= 0)
    return shapes;
  if (wants(GroupKind::intra))
    for (int g : doubling_sizes(p))
      add(GroupShape{"intra", g, 1, g});
  if (wants(GroupKind::inter))
    for (int k : doubling_sizes(nn)) {
      add(GroupShape{"inter", k, k, 1});
      if (p > 1)
        add(GroupShape{"inter", k * p, k, p});
    }
  return shapes;
}

std::string unavailable_groups(const NodeLayout &layout, const std::vector<GroupKind> &kinds) {
  auto wants = [&](GroupKind k) { return std::find(kinds.begin(), kinds.end(), k) != kinds.end(); };
  const int nn = layout.nnodes, p = layout.ranks_per_node;
  const std::string nodes = std::to_string(nn) + (layout.emulated ? " emulated" : "") + " node" +
                            (nn == 1 ? "" : "s");
  std::string why;
  auto say = [&why](const std::string &s) { why += (why.empty() ? "" : "; ") + s; };
  if (wants(GroupKind::inter) && nn < 2)
    say("no inter-node group exists on " + nodes +
        " (--groups inter needs ranks on 2 or more nodes, or --emulate-nodes K >= 2)");
  else if (wants(GroupKind::inter) && p <= 0)
    say("no inter-node group: the " + nodes + " hold different rank counts");
  if (wants(GroupKind::intra) && p <= 0)
    say("no intra-node group: the " + nodes + " hold different rank counts");
  else if (wants(GroupKind::intra) && p == 1)
    say("no intra-node group exists with 1 rank per node (--groups intra needs 2 or more)");
  return why;
}

std::vector<GroupMembership> assign_instances(const NodeLayout &layout, const GroupShape &shape) {
  const int n = layout.nranks();
  std::vector<GroupMembership> m(static_cast<std::size_t>(n));
  const int p = layout.ranks_per_node;
  for (int r = 0; r < n; ++r) {
    const int node = layout.node_of_rank[static_cast<std::size_t>(r)];
    const int local = layout.local_rank[static_cast<std::size_t>(r)];
    GroupMembership &g = m[static_cast<std::size_t>(r)];
    if (shape.kind == "world" || (shape.nranks == n && shape.nnodes == layout.nnodes)) {
      g = {0, r};
    } else if (shape.nnodes == 1) { // intra: blocks of local ranks on every node
      const int per_node = p / shape.nranks;
      const int block = local / shape.nranks;
      if (block < per_node)
        g = {node * per_node + block, local % shape.nranks};
    } else { // inter: blocks of shape.nnodes nodes
      const int nblocks = layout.nnodes / shape.nnodes;
      const int block = node / shape.nnodes;
      if (block >= nblocks)
        continue;
      if (shape.ranks_per_node == 1)
        g = {block * p + local, node % shape.nnodes};
      else
        g = {block, (node % shape.nnodes) * p + local};
    }
  }
  return m;
}

int count_instances(const std::vector<GroupMembership> &members) {
  std::vector<int> colors;
  for (const auto &g : members)
    if (g.color >= 0)
      colors.push_back(g.color);
  std::sort(colors.begin(), colors.end());
  return static_cast<int>(std::unique(colors.begin(), colors.end()) - colors.begin());
}

} // namespace scalefit::bench

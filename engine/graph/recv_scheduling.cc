// Recv scheduling over the union of the partitions: one global topological
// order, then ASAP, ALAP, the schedule S and the taint of every node, each in
// one pass over it; then, per device, a sorted list of candidate finishes to
// pick each Recv's control input by binary search. O((N + E) + N log N).
#include "engine/graph/recv_scheduling.h"

#include <algorithm>
#include <cstdint>
#include <deque>

#include "absl/strings/str_cat.h"
#include "engine/graph/control_flow.h"

namespace sluice {
namespace {

// The union of the partitions with global node indices: partition p's node id
// i is offset[p] + i.
struct Union {
  std::vector<int> offset;
  std::vector<Node*> node;         // nullptr for removed ids
  std::vector<int> partition;      // partition of each global index
  std::vector<int> link_succ;      // for a linked Send: its Recv
  std::vector<int> link_pred;      // for a linked Recv: its Send
  std::vector<bool> in_loop;       // runs in a non-root frame
  int Global(int p, const Node* n) const { return offset[p] + n->id(); }
};

absl::Status BuildUnion(const std::vector<Graph*>& partitions, const std::vector<SendRecvLink>& links, Union* u) {
  const int num_partitions = static_cast<int>(partitions.size());
  u->offset.assign(num_partitions + 1, 0);
  for (int p = 0; p < num_partitions; ++p) {
    u->offset[p + 1] = u->offset[p] + (partitions[p] == nullptr ? 0 : partitions[p]->num_node_ids());
  }
  const int total = u->offset[num_partitions];
  u->node.assign(total, nullptr);
  u->partition.assign(total, -1);
  u->link_succ.assign(total, -1);
  u->link_pred.assign(total, -1);
  u->in_loop.assign(total, false);
  for (int p = 0; p < num_partitions; ++p) {
    const Graph* g = partitions[p];
    if (g == nullptr) continue;
    bool has_loops = false;
    for (int id = 0; id < g->num_node_ids(); ++id) {
      Node* n = g->FindNodeId(id);
      if (n == nullptr) continue;
      u->node[u->offset[p] + id] = n;
      u->partition[u->offset[p] + id] = p;
      has_loops |= n->IsEnter();
    }
    if (!has_loops) continue;
    std::vector<ControlFlowInfo> info;
    absl::Status s = BuildControlFlowInfo(*g, &info);
    if (!s.ok()) return s;
    for (int id = 0; id < g->num_node_ids(); ++id) u->in_loop[u->offset[p] + id] = !info[id].frame_name.empty();
  }
  for (const SendRecvLink& l : links) {
    auto valid = [&](int p, int id) {
      return p >= 0 && p < num_partitions && partitions[p] != nullptr && id >= 0 &&
             id < partitions[p]->num_node_ids() && partitions[p]->FindNodeId(id) != nullptr;
    };
    if (!valid(l.send_partition, l.send_node) || !valid(l.recv_partition, l.recv_node)) {
      return absl::InvalidArgumentError(absl::StrCat("Send/Recv link (partition ", l.send_partition, " node ",
                                                     l.send_node, " -> partition ", l.recv_partition, " node ",
                                                     l.recv_node, ") names a missing node"));
    }
    const int send = u->offset[l.send_partition] + l.send_node;
    const int recv = u->offset[l.recv_partition] + l.recv_node;
    u->link_succ[send] = recv;
    u->link_pred[recv] = send;
  }
  return absl::OkStatus();
}

// Calls fn(successor) for each successor of global node g, leaving out loop
// back edges (out of NextIteration).
template <typename Fn>
void ForEachSuccessor(const Union& u, int g, Fn fn) {
  const Node* n = u.node[g];
  if (!n->IsNextIteration()) {
    const int base = u.offset[u.partition[g]];
    for (const Edge* e : n->out_edges()) fn(base + e->dst->id());
  }
  if (u.link_succ[g] >= 0) fn(u.link_succ[g]);
}

absl::StatusOr<std::vector<int>> TopologicalOrder(const Union& u) {
  const int total = static_cast<int>(u.node.size());
  std::vector<int> pending(total, 0);
  int live = 0;
  for (int g = 0; g < total; ++g) {
    if (u.node[g] == nullptr) continue;
    ++live;
    ForEachSuccessor(u, g, [&](int s) { ++pending[s]; });
  }
  std::vector<int> order;
  order.reserve(live);
  for (int g = 0; g < total; ++g) {
    if (u.node[g] != nullptr && pending[g] == 0) order.push_back(g);
  }
  for (size_t i = 0; i < order.size(); ++i) {
    ForEachSuccessor(u, order[i], [&](int s) {
      if (--pending[s] == 0) order.push_back(s);
    });
  }
  if (static_cast<int>(order.size()) != live) {
    return absl::InvalidArgumentError("the partitions and their Send/Recv links form a cycle");
  }
  return order;
}

}  // namespace

absl::StatusOr<int> ScheduleRecvsAlap(const std::vector<Graph*>& partitions, const std::vector<SendRecvLink>& links) {
  if (links.empty()) return 0;
  Union u;
  absl::Status s = BuildUnion(partitions, links, &u);
  if (!s.ok()) return s;
  auto order_or = TopologicalOrder(u);
  if (!order_or.ok()) return order_or.status();
  const std::vector<int>& order = *order_or;
  const int total = static_cast<int>(u.node.size());

  // A linked Recv this pass may delay.
  auto schedulable = [&](int g) {
    const Node* n = u.node[g];
    return u.link_pred[g] >= 0 && n->type_string() == "_Recv" && !u.in_loop[g] && n->in_edges().empty();
  };

  // ASAP start and the makespan, unit cost.
  std::vector<int64_t> asap(total, 0);
  int64_t makespan = 0;
  for (int g : order) {
    makespan = std::max(makespan, asap[g] + 1);
    ForEachSuccessor(u, g, [&](int succ) { asap[succ] = std::max(asap[succ], asap[g] + 1); });
  }
  // ALAP start.
  std::vector<int64_t> alap(total, 0);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int g = *it;
    int64_t latest_finish = makespan;
    ForEachSuccessor(u, g, [&](int succ) { latest_finish = std::min(latest_finish, alap[succ]); });
    alap[g] = latest_finish - 1;
  }
  // S, and which nodes may be dead or lie after a loop.
  std::vector<int64_t> start(total, 0);
  std::vector<bool> tainted(total, false);
  for (int g : order) {
    if (schedulable(g)) start[g] = std::max(start[g], alap[g]);
    const Node* n = u.node[g];
    if (n->IsSwitch() || n->IsExit()) tainted[g] = true;
    ForEachSuccessor(u, g, [&](int succ) {
      start[succ] = std::max(start[succ], start[g] + 1);
      if (tainted[g]) tainted[succ] = true;
    });
  }

  int added = 0;
  const int num_partitions = static_cast<int>(partitions.size());
  for (int p = 0; p < num_partitions; ++p) {
    if (partitions[p] == nullptr) continue;
    // Candidates by (finish, global index).
    std::vector<std::pair<int64_t, int>> candidates;
    std::vector<int> recvs;
    for (int g = u.offset[p]; g < u.offset[p + 1]; ++g) {
      const Node* n = u.node[g];
      if (n == nullptr) continue;
      if (schedulable(g)) recvs.push_back(g);
      // An Enter runs in the enclosing frame but its out-edges lead into the loop.
      if (n->type_string() != "_Recv" && !n->IsEnter() && !u.in_loop[g] && !tainted[g]) {
        candidates.emplace_back(start[g] + 1, g);
      }
    }
    if (recvs.empty() || candidates.empty()) continue;
    std::sort(candidates.begin(), candidates.end());
    for (int r : recvs) {
      // The last candidate with finish <= S(r).
      auto it = std::upper_bound(candidates.begin(), candidates.end(), std::make_pair(start[r], total));
      if (it == candidates.begin()) continue;
      --it;
      partitions[p]->AddControlEdge(u.node[it->second], u.node[r]);
      ++added;
    }
  }
  return added;
}

}  // namespace sluice

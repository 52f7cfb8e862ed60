// Topological order, reverse reachability, Switch reach and node edges.
#include "engine/graph/algorithm.h"

#include <deque>
#include <functional>
#include <queue>

namespace sluice {

std::vector<Node*> TopologicalOrder(const Graph& graph) {
  std::vector<int> pending(graph.num_node_ids(), 0);
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (Node* n : graph.nodes()) {
    for (const Edge* e : n->in_edges()) {
      if (!e->src->IsNextIteration()) ++pending[n->id()];
    }
    if (pending[n->id()] == 0) ready.push(n->id());
  }
  std::vector<Node*> order;
  order.reserve(graph.num_nodes());
  while (!ready.empty()) {
    Node* n = graph.FindNodeId(ready.top());
    ready.pop();
    order.push_back(n);
    if (n->IsNextIteration()) continue;
    for (const Edge* e : n->out_edges()) {
      if (--pending[e->dst->id()] == 0) ready.push(e->dst->id());
    }
  }
  return order;
}

std::vector<bool> ReverseReachable(const Graph& graph, const std::vector<Node*>& roots) {
  std::vector<bool> seen(graph.num_node_ids(), false);
  std::vector<Node*> stack;
  for (Node* r : roots) {
    if (!seen[r->id()]) {
      seen[r->id()] = true;
      stack.push_back(r);
    }
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge* e : n->in_edges()) {
      if (!seen[e->src->id()]) {
        seen[e->src->id()] = true;
        stack.push_back(e->src);
      }
    }
  }
  return seen;
}

std::vector<bool> DownstreamOfSwitch(const Graph& graph) {
  std::vector<bool> seen(graph.num_node_ids(), false);
  std::deque<const Node*> queue;
  for (Node* n : graph.nodes()) {
    if (n->IsSwitch()) {
      seen[n->id()] = true;
      queue.push_back(n);
    }
  }
  while (!queue.empty()) {
    const Node* n = queue.front();
    queue.pop_front();
    for (const Edge* e : n->out_edges()) {
      if (!seen[e->dst->id()]) {
        seen[e->dst->id()] = true;
        queue.push_back(e->dst);
      }
    }
  }
  return seen;
}

NodeEdges EdgesOf(const Node& n) {
  NodeEdges edges;
  for (const Edge* e : n.in_edges()) {
    if (e->IsControlEdge()) edges.control_inputs.push_back(e->src);
  }
  for (const Edge* e : n.out_edges()) edges.outs.push_back({e->src_output, e->dst, e->dst_input});
  return edges;
}

}  // namespace sluice

// Graph traversals shared by the passes: topological order (ignoring
// NextIteration back edges) and reverse reachability; and a node's edges,
// saved for a pass that rebuilds the node under its name.
#ifndef SLUICE_ENGINE_GRAPH_ALGORITHM_H_
#define SLUICE_ENGINE_GRAPH_ALGORITHM_H_

#include <vector>

#include "engine/graph/graph.h"

namespace sluice {

// Nodes in a topological order of the graph without NextIteration out edges;
// ties go to the smaller node id. REQUIRES: CheckForIllegalCycles passed.
std::vector<Node*> TopologicalOrder(const Graph& graph);

// Ids of every node some node of `roots` depends on (roots included), by
// data or control edges. Indexed by node id.
std::vector<bool> ReverseReachable(const Graph& graph, const std::vector<Node*>& roots);

// Indexed by node id: whether a Switch output reaches the node (by data or
// control edges), so that it may be dead (on an untaken branch) at run time.
std::vector<bool> DownstreamOfSwitch(const Graph& graph);

// What a node's replacement must be connected to once the node is removed
// (constant folding's Consts, the shape no-ops' Identities).
struct NodeEdges {
  struct Out {
    int src_output;  // kControlSlot for a control edge
    Node* dst;
    int dst_input;
  };
  std::vector<Node*> control_inputs;
  std::vector<Out> outs;
};
NodeEdges EdgesOf(const Node& n);

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_ALGORITHM_H_

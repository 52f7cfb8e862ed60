// Gradients through while loops built by BuildWhileLoop
// (engine/graph/control_flow_builders.h), for AddSymbolicGradients.
//
// AddSymbolicGradients treats each loop on a path from the xs to the ys as
// one unit (a LoopRegion): its inputs are the tensors entering it (initial
// values and captured tensors), its outputs the Exit values and the stacked
// per-iteration values. Once every output's gradient is known, the loop's
// gradient is built as a second loop that runs the iterations backwards:
//   - The forward loop is extended to save, at each iteration's index, the
//     loop variables the body reads (a TensorArray per variable, filled as
//     the loop runs; TensorFlow saves with stacks, an equivalent).
//   - The backward loop runs trip-count times. Iteration k reads the saved
//     variables of forward iteration k, recomputes the body on them (a copy
//     of the forward body's nodes, nested loops and conds included) and
//     differentiates that copy with AddSymbolicGradients, which recurses for
//     nested loops. The gradients of the loop variables are its loop
//     variables; those of captured tensors are summed across iterations.
// The body is recomputed rather than every intermediate saved: memory grows
// with the loop variables only, at the price of running the body twice.
// Stateful ops in a body (random ops, variable updates) would give other
// values when recomputed: they are refused (Unimplemented, naming the node).
// Thread safety: mutates the graph; one caller at a time.
#ifndef SLUICE_ENGINE_GRAPH_WHILE_GRADIENT_H_
#define SLUICE_ENGINE_GRAPH_WHILE_GRADIENT_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "engine/graph/gradients.h"

namespace sluice {

struct LoopRegion {
  std::string frame;
  Node* loop_cond = nullptr;
  // Every node of the loop: its Enter nodes, all nodes in its frame and the
  // frames nested in it, its Exit nodes and the TensorArrayGatherV3 nodes
  // that stack its per-iteration values.
  absl::flat_hash_set<int> members;
};

// The loops whose Exit nodes satisfy `relevant`, outermost only (a loop
// nested in another is a member of the outer one). Errors: an Exit that is
// not part of a loop with BuildWhileLoop's shape (Unimplemented).
absl::Status FindLoopRegions(const Graph& graph, const std::function<bool(const Node*)>& relevant,
                             std::vector<LoopRegion>* loops);

// Builds the gradient of `loop`. `output_grad(node, index)` gives the summed
// gradient of an output of a member node (absent if none reached it).
// `input_grads` receives a gradient for each data edge entering the loop
// from outside (absent for edges that carry no gradient).
absl::Status AddWhileLoopGradient(Graph* graph, const LoopRegion& loop,
                                  const std::function<Gradient(const Node*, int)>& output_grad,
                                  const std::string& name_prefix,
                                  std::vector<std::pair<const Edge*, Gradient>>* input_grads);

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_WHILE_GRADIENT_H_

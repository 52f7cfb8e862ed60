// Identity-chain removal: an Identity that only forwards a tensor from one
// node to others on the same device is dropped and its consumers read its
// input directly, so a chain x -> Identity -> Identity -> y costs nothing per
// step.
//
// Left alone (where an Identity means more than forwarding):
//  - a ref or resource input: an Identity of a variable's ref is a *read*,
//    the snapshot of the value at that point of the step;
//  - any control input or control output, a loop frame (the Identity of a
//    loop body or a cond's pivot carries control dependencies), an input
//    from a control-flow op (Switch outputs, Enter), an input or consumer on
//    another device (the Identity is where a transfer happens);
//  - a consumer that is an internal node (`_Send`, `_Retval`: the fetched
//    tensor), no consumer at all (a target), or `keep`.
//
// Thread safety: a free function over the caller's graph.
#ifndef SLUICE_ENGINE_GRAPH_OPTIMIZER_IDENTITY_H_
#define SLUICE_ENGINE_GRAPH_OPTIMIZER_IDENTITY_H_

#include <functional>

#include "engine/graph/graph.h"

namespace sluice {

struct IdentityRemovalOptions {
  // Nodes for which this returns true are not removed.
  std::function<bool(const Node*)> keep;
};

// Returns the number of Identity nodes removed. Nothing is removed in a graph
// whose loop frames are malformed.
int RemoveIdentityChains(const IdentityRemovalOptions& options, Graph* graph);

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_OPTIMIZER_IDENTITY_H_

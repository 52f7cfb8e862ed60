// Stacks for static shape inference: a StackPopV2 returns what the
// StackPushV2s onto the same stack pushed, so its shape is the widening of
// their element shapes. (TensorFlow's Python sets the pops of a while loop's
// gradient to the shapes of the forward values they stack; a GraphDef's pops
// otherwise carry no shape.) ShapeRefiner orders each pop after every push
// onto its stack and asks StackShapes for the pop's shape.
// Thread safety: one instance per thread.
#ifndef SLUICE_ENGINE_GRAPH_SHAPE_STACKS_H_
#define SLUICE_ENGINE_GRAPH_SHAPE_STACKS_H_

#include <vector>

#include "engine/framework/shape_inference.h"
#include "engine/graph/graph.h"

namespace sluice {

class StackShapes {
 public:
  // Resolves every push's and pop's handle back through Enter, Exit,
  // Identity and Switch to the StackV2 that made it. When a push's handle
  // cannot be resolved (it comes from elsewhere, or through a Merge), that
  // push could feed any stack, so no pop gets a shape.
  explicit StackShapes(const Graph& graph);

  // The pushes a pop waits for (empty for a node that is no resolved pop, or
  // when some push is unresolved).
  const std::vector<const Node*>& PushesBefore(const Node* pop) const;
  // The pops waiting for a push (empty for any other node).
  const std::vector<const Node*>& PopsAfter(const Node* push) const;

  // A pass of shape inference begins: no push seen yet.
  void StartPass();
  // The pass saw `push` with this element shape.
  void Pushed(const Node* push, const PartialShape& elem);
  // The widening of the element shapes pushed onto the pop's stack, when the
  // pass saw every push onto it (and there is one); else unknown.
  PartialShape PopShape(const Node* pop) const;

 private:
  // All empty when no pop can get a shape (no stack, no push, no pop, or an
  // unresolved push), so a graph without stacks allocates nothing.
  std::vector<int> stack_of_;                     // per node id: StackV2 node id, -1 for none
  std::vector<std::vector<const Node*>> pushes_;  // per pop node id
  std::vector<std::vector<const Node*>> pops_;    // per push node id
  // Per StackV2 node id, this pass: pushes seen, and their widened shape.
  std::vector<int> seen_;
  std::vector<PartialShape> widened_;
  std::vector<int> total_;  // per StackV2 node id: pushes in the graph
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_SHAPE_STACKS_H_

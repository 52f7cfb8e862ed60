// Stacks and TensorArrays for static shape inference: what a StackPopV2, a
// TensorArrayReadV3 or a TensorArrayGatherV3 returns is what was pushed onto
// (written into) the same container, so its element shape is the widening of
// the shapes written there. (TensorFlow's Python sets these shapes on the
// graph's tensors: a while loop gradient's pops take the forward values'
// shapes, and a TensorArray infers its element shape from its first write; a
// GraphDef's readers otherwise carry no shape.) ShapeRefiner orders each
// reader after every writer into its container and asks ContainerShapes for
// the element shape.
//
// Writers and what they write: StackPushV2 its value; TensorArrayWriteV3 its
// value; TensorArrayScatterV3 its value's rows (dim 0 dropped);
// TensorArraySplitV3 pieces of its value (dim 0 unknown). Readers:
// StackPopV2, TensorArrayReadV3, TensorArrayGatherV3.
// A container is a StackV2 or a TensorArrayV3 node, or the gradient array
// of one (TensorArrayGradV3 with a `source`: every such node naming the same
// array and source is the same array, as at run time).
// Thread safety: one instance per thread.
#ifndef SLUICE_ENGINE_GRAPH_SHAPE_CONTAINERS_H_
#define SLUICE_ENGINE_GRAPH_SHAPE_CONTAINERS_H_

#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/graph.h"

namespace sluice {

class ContainerShapes {
 public:
  // Resolves every writer's and reader's handle back through Enter, Exit,
  // Identity and Switch to its container. When a writer's handle cannot be
  // resolved (it comes from elsewhere, or through a Merge), that writer could
  // write into any container of its kind, so no reader of that kind gets a
  // shape.
  explicit ContainerShapes(const Graph& graph);

  // The writers a reader waits for (empty for a node that is no resolved
  // reader, or when some writer of its kind is unresolved).
  const std::vector<const Node*>& WritersBefore(const Node* reader) const;
  // The readers waiting for a writer (empty for any other node).
  const std::vector<const Node*>& ReadersAfter(const Node* writer) const;

  // A pass of shape inference begins: no writer seen yet.
  void StartPass();
  // The pass saw `writer`, whose inputs have these shapes.
  void Written(const Node* writer, absl::Span<const PartialShape> inputs);
  // The widening of the element shapes written into the reader's container
  // when the pass saw every writer into it (and there is one); unknown
  // otherwise, and for a node that is no resolved reader.
  PartialShape ElementShape(const Node* reader) const;

 private:
  // All empty when no reader can get a shape (no container, no writer, no
  // reader, or an unresolved writer), so a graph without stacks or
  // TensorArrays allocates nothing.
  std::vector<int> container_of_;  // per node id: container index, -1 for none
  // Per container index (one list per container, not per node: a stack of
  // 20,000 pushes and pops would otherwise hold 20,000 copies of each list).
  std::vector<std::vector<const Node*>> writers_;
  std::vector<std::vector<const Node*>> readers_;
  std::vector<bool> is_reader_;  // per node id
  // Per container index, this pass: writers seen, and their widened shape.
  std::vector<int> seen_;
  std::vector<PartialShape> widened_;
  std::vector<int> total_;  // per container index: writers in the graph
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_SHAPE_CONTAINERS_H_

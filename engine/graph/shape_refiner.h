// Shape inference over a whole graph: runs each op's shape function in
// topological order (NextIteration back edges contribute unknown shapes) and
// records every output's PartialShape; a loop's Merge gets the widest shape
// its iterations take (a fixpoint over its back edge). Along the edges it also carries what
// shape functions read besides shapes: the element shapes a handle's shape
// function declares (InferenceContext::set_output_handle_shapes: a
// VarHandleOp's `shape`, a queue's `shapes`, a TensorArray's element shape)
// and the known values of small integer tensors (shape_values.h). A stack's
// pops and a TensorArray's reads come after every push or write into it and
// take the shapes written there (shape_containers.h). Errors name the node.
// Thread safety: one refiner per thread.
#ifndef SLUICE_ENGINE_GRAPH_SHAPE_REFINER_H_
#define SLUICE_ENGINE_GRAPH_SHAPE_REFINER_H_

#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/graph.h"
#include "engine/graph/shape_containers.h"

namespace sluice {

class ShapeRefiner {
 public:
  absl::Status InferShapes(const Graph& graph);
  // REQUIRES: InferShapes succeeded; `node` belongs to that graph.
  const PartialShape& OutputShape(const Node* node, int output) const { return shapes_[node->id()][output]; }
  // The output's value when it is known statically in full: a small Const's,
  // or a small integer value shape_values.h knows whole (Rank(x), Shape(x) of
  // a fully defined x); else null.
  // REQUIRES: InferShapes succeeded; `node` belongs to that graph.
  const Tensor* OutputValue(const Node* node, int output) const {
    return values_as_tensors_[node->id()][output].get();
  }

 private:
  // One pass in topological order. `assumed[e]` is the shape assumed for back
  // edge e into a Merge (none: its entering value's); null: back edges are
  // unknown.
  absl::Status InferOnce(const Graph& graph, const std::vector<std::optional<PartialShape>>* assumed,
                         ContainerShapes* containers);
  std::vector<std::vector<PartialShape>> shapes_;
  std::vector<std::vector<std::unique_ptr<Tensor>>> values_as_tensors_;  // per node and output
  std::vector<std::vector<std::vector<PartialShape>>> handle_shapes_;  // per node and output
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_SHAPE_REFINER_H_

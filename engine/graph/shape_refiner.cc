// ShapeRefiner: per-node shape functions in topological order.
#include "engine/graph/shape_refiner.h"

#include <deque>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace sluice {
namespace {
constexpr int64_t kMaxConstElementsForShapes = 1 << 16;

// The element shapes a resource node declares in a `shapes` list attr (the
// queues), when every entry is a valid shape; else none.
std::vector<PartialShape> DeclaredElementShapes(const NodeDef& def) {
  const AttrValue* a = FindAttr(def, "shapes");
  if (a == nullptr || !a->has_list()) return {};
  std::vector<PartialShape> out;
  for (const TensorShapeProto& p : a->list().shape()) {
    auto shape = PartialShape::FromProto(p);
    if (!shape.ok()) return {};
    out.push_back(*std::move(shape));
  }
  return out;
}
}  // namespace

absl::Status ShapeRefiner::InferShapes(const Graph& graph) {
  shapes_.assign(graph.num_node_ids(), {});
  std::vector<std::unique_ptr<Tensor>> const_values(graph.num_node_ids());
  std::vector<int> pending(graph.num_node_ids(), 0);
  std::deque<Node*> ready;
  for (Node* n : graph.nodes()) {
    shapes_[n->id()].assign(n->num_outputs(), PartialShape::Unknown());
    for (const Edge* e : n->in_edges()) {
      if (!e->src->IsNextIteration()) ++pending[n->id()];
    }
    if (pending[n->id()] == 0) ready.push_back(n);
  }
  while (!ready.empty()) {
    Node* n = ready.front();
    ready.pop_front();
    std::vector<PartialShape> inputs(n->num_inputs());
    std::vector<const Tensor*> input_tensors(n->num_inputs(), nullptr);
    std::vector<PartialShape> inputs_as_shapes(n->num_inputs(), PartialShape::Unknown());
    std::vector<std::vector<PartialShape>> handle_shapes(n->num_inputs());
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge() || e->src->IsNextIteration()) continue;
      // Only a handle (a ref output: a queue's) can declare element shapes.
      if (IsRefType(e->src->output_type(e->src_output))) {
        handle_shapes[e->dst_input] = DeclaredElementShapes(e->src->def());
      }
      inputs[e->dst_input] = shapes_[e->src->id()][e->src_output];
      input_tensors[e->dst_input] = const_values[e->src->id()].get();
      // Shape(x)'s value is x's shape: as much of it as is known now.
      if (e->src->type_string() == "Shape" && e->src->num_inputs() == 1) {
        for (const Edge* x : e->src->in_edges()) {
          if (!x->IsControlEdge() && !x->src->IsNextIteration()) {
            inputs_as_shapes[e->dst_input] = shapes_[x->src->id()][x->src_output];
          }
        }
      }
    }
    InferenceContext ctx(&n->def(), &n->op_def(), std::move(inputs), std::move(input_tensors), n->num_outputs());
    ctx.set_inputs_as_shapes(std::move(inputs_as_shapes));
    ctx.set_input_handle_shapes(std::move(handle_shapes));
    absl::Status s = n->op_def().shape_fn ? n->op_def().shape_fn(&ctx) : shape_fns::Unknown(&ctx);
    if (!s.ok()) {
      if (absl::StartsWith(s.message(), "node '")) return s;
      return absl::Status(s.code(), absl::StrCat(NodeContext(n->def()), s.message()));
    }
    // Whatever a shape function computed (MatMul's [m, n] from two inputs,
    // a Reshape's values), an output no tensor can have is this node's error.
    for (int i = 0; i < n->num_outputs(); ++i) {
      absl::Status bounds = ctx.output(i).CheckBounds();
      if (!bounds.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(NodeContext(n->def()), "output ", i, ": ", bounds.message()));
      }
      shapes_[n->id()][i] = ctx.output(i);
    }
    if (n->type_string() == "Const") {
      TensorProto proto;
      // Small constants (shapes, axes) feed shape functions; big ones are
      // not materialized here.
      auto shape = GetNodeAttr(n->def(), "value", &proto).ok() ? Tensor::ValidateProto(proto)
                                                               : absl::StatusOr<TensorShape>(absl::InvalidArgumentError(""));
      if (shape.ok() && shape->num_elements() <= kMaxConstElementsForShapes) {
        auto t = Tensor::FromProto(proto);
        if (t.ok()) const_values[n->id()] = std::make_unique<Tensor>(std::move(t).value());
      }
    }
    if (n->IsNextIteration()) continue;
    for (const Edge* e : n->out_edges()) {
      if (--pending[e->dst->id()] == 0) ready.push_back(e->dst);
    }
  }
  return absl::OkStatus();
}

}  // namespace sluice

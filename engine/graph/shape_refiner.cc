// ShapeRefiner: per-node shape functions in topological order, with the
// element shapes resource handles declare and the known values of small
// integer tensors (shape_values.h) carried along the edges.
#include "engine/graph/shape_refiner.h"

#include <deque>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/graph/shape_values.h"

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

// The shape a VarHandleOp declares for its variable (its `shape` attr).
std::vector<PartialShape> DeclaredVariableShape(const NodeDef& def) {
  TensorShapeProto proto;
  if (!GetNodeAttr(def, "shape", &proto).ok()) return {};
  auto shape = PartialShape::FromProto(proto);
  if (!shape.ok()) return {};
  return {*std::move(shape)};
}

// Does each output of `n` forward its input 0 (a handle passes through
// unchanged)?
bool ForwardsInput0(const Node& n) {
  return n.IsEnter() || n.IsExit() || n.IsSwitch() || n.IsNextIteration() || n.type_string() == "Identity" ||
         n.type_string() == "RefIdentity";
}

bool IsHandleType(DataType t) { return t == DT_RESOURCE || IsRefType(t); }

// The most specific shape both `a` and `b` fit (Merge's rule).
PartialShape Widen(const PartialShape& a, const PartialShape& b) {
  if (!a.rank_known() || !b.rank_known() || a.rank() != b.rank()) return PartialShape::Unknown();
  std::vector<int64_t> dims(a.dims().begin(), a.dims().end());
  for (int d = 0; d < a.rank(); ++d) {
    if (b.dim(d) != dims[d]) dims[d] = kUnknownDim;
  }
  return PartialShape::FromDims(dims);
}

}  // namespace

std::vector<PartialShape> ShapeRefiner::HandleShapesOf(const Node& n, int output,
                                                       absl::Span<const Edge* const> data_inputs) const {
  if (!IsHandleType(n.output_type(output))) return {};
  if (n.type_string() == "VarHandleOp") return DeclaredVariableShape(n.def());
  if (n.num_inputs() == 0) return DeclaredElementShapes(n.def());
  auto of = [&](const Edge* e) -> const std::vector<PartialShape>* {
    if (e == nullptr || e->src->IsNextIteration()) return nullptr;  // not inferred yet
    return &handle_shapes_[e->src->id()][e->src_output];
  };
  if (ForwardsInput0(n)) {
    const std::vector<PartialShape>* in = of(data_inputs[0]);
    return in != nullptr ? *in : std::vector<PartialShape>{};
  }
  if (n.IsMerge() && output == 0) {  // any input may arrive: only what they all declare
    const std::vector<PartialShape>* first = nullptr;
    for (const Edge* e : data_inputs) {
      const std::vector<PartialShape>* in = of(e);
      if (in == nullptr || (first != nullptr && *in != *first)) return {};
      first = in;
    }
    return first != nullptr ? *first : std::vector<PartialShape>{};
  }
  return DeclaredElementShapes(n.def());
}

absl::Status ShapeRefiner::InferShapes(const Graph& graph) {
  // Loops: each pass gives a Merge's back edge the shape assumed for it (at
  // first none: the Merge takes its entering value's shape) and checks the
  // assumption against the shape the loop body then infers for the back
  // edge. A Merge whose output would change is rerun with the wider shape.
  // Shapes only widen, so this ends; at the fixpoint every iteration's values
  // fit the Merge's shape. Past kMaxLoopPasses, or when a pass fails with
  // nothing left to widen, back edges count as unknown instead.
  constexpr int kMaxLoopPasses = 8;
  std::vector<std::optional<PartialShape>> assumed(graph.num_edge_ids());
  for (int pass = 0; pass < kMaxLoopPasses; ++pass) {
    // A failed pass may fail on a narrow assumption (a loop's result used
    // as its first iteration's shape): widen what it reached, and try again.
    absl::Status s = InferOnce(graph, &assumed);
    bool settled = true;
    for (Node* n : graph.nodes()) {
      if (!n->IsMerge()) continue;
      for (const Edge* e : n->in_edges()) {
        if (e->IsControlEdge() || !e->src->IsNextIteration()) continue;
        const PartialShape& actual = shapes_[e->src->id()][e->src_output];
        if (!(Widen(shapes_[n->id()][0], actual) == shapes_[n->id()][0])) {
          assumed[e->id] = assumed[e->id] ? Widen(*assumed[e->id], actual) : actual;
          settled = false;
        }
      }
    }
    if (settled) {
      if (s.ok()) return s;
      break;
    }
  }
  return InferOnce(graph, nullptr);
}

absl::Status ShapeRefiner::InferOnce(const Graph& graph, const std::vector<std::optional<PartialShape>>* assumed) {
  shapes_.assign(graph.num_node_ids(), {});
  handle_shapes_.assign(graph.num_node_ids(), {});
  std::vector<std::vector<std::optional<KnownValue>>> values(graph.num_node_ids());  // per node and output
  std::vector<std::unique_ptr<Tensor>> const_values(graph.num_node_ids());
  std::vector<int> pending(graph.num_node_ids(), 0);
  std::deque<Node*> ready;
  absl::Status first_error;
  for (Node* n : graph.nodes()) {
    shapes_[n->id()].assign(n->num_outputs(), PartialShape::Unknown());
    handle_shapes_[n->id()].assign(n->num_outputs(), {});
    values[n->id()].resize(n->num_outputs());
    for (const Edge* e : n->in_edges()) {
      if (!e->src->IsNextIteration()) ++pending[n->id()];
    }
    if (pending[n->id()] == 0) ready.push_back(n);
  }
  while (!ready.empty()) {
    Node* n = ready.front();
    ready.pop_front();
    const int num_inputs = n->num_inputs();
    std::vector<PartialShape> inputs(num_inputs);
    std::vector<const Tensor*> input_tensors(num_inputs, nullptr);
    std::vector<std::optional<KnownValue>> input_values(num_inputs);
    std::vector<PartialShape> inputs_as_shapes(num_inputs, PartialShape::Unknown());
    std::vector<std::vector<PartialShape>> handle_shapes(num_inputs);
    std::vector<const Edge*> data_inputs(num_inputs, nullptr);
    std::vector<const Edge*> back_edges;  // into a Merge, with shapes assumed
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge()) continue;
      data_inputs[e->dst_input] = e;
      if (e->src->IsNextIteration()) {
        if (assumed != nullptr && n->IsMerge()) back_edges.push_back(e);
        continue;
      }
      const int src = e->src->id();
      inputs[e->dst_input] = shapes_[src][e->src_output];
      handle_shapes[e->dst_input] = handle_shapes_[src][e->src_output];
      input_values[e->dst_input] = values[src][e->src_output];
      if (input_values[e->dst_input]) inputs_as_shapes[e->dst_input] = input_values[e->dst_input]->AsShape();
      if (e->src_output == 0) input_tensors[e->dst_input] = const_values[src].get();
    }
    if (!back_edges.empty()) {
      // No assumption yet: as if the back edge brought the entering value.
      PartialShape entering;
      for (const Edge* e : data_inputs) {
        if (e != nullptr && !e->src->IsNextIteration()) {
          entering = inputs[e->dst_input];
          break;
        }
      }
      for (const Edge* e : back_edges) {
        const std::optional<PartialShape>& a = (*assumed)[e->id];
        inputs[e->dst_input] = a ? *a : entering;
      }
    }
    InferenceContext ctx(&n->def(), &n->op_def(), inputs, std::move(input_tensors), n->num_outputs());
    ctx.set_inputs_as_shapes(std::move(inputs_as_shapes));
    ctx.set_input_handle_shapes(handle_shapes);
    absl::Status s = n->op_def().shape_fn ? n->op_def().shape_fn(&ctx) : shape_fns::Unknown(&ctx);
    if (!s.ok() && !absl::StartsWith(s.message(), "node '")) {
      s = absl::Status(s.code(), absl::StrCat(NodeContext(n->def()), s.message()));
    }
    // Whatever a shape function computed (MatMul's [m, n] from two inputs,
    // a Reshape's values), an output no tensor can have is this node's error.
    for (int i = 0; i < n->num_outputs() && s.ok(); ++i) {
      absl::Status bounds = ctx.output(i).CheckBounds();
      if (!bounds.ok()) {
        s = absl::InvalidArgumentError(absl::StrCat(NodeContext(n->def()), "output ", i, ": ", bounds.message()));
      }
    }
    if (!s.ok()) {
      // Under loop assumptions, the pass goes on with this node's outputs
      // unknown, so the loops it reaches still widen.
      if (assumed == nullptr) return s;
      if (first_error.ok()) first_error = s;
    } else {
      for (int i = 0; i < n->num_outputs(); ++i) {
        shapes_[n->id()][i] = ctx.output(i);
        handle_shapes_[n->id()][i] = HandleShapesOf(*n, i, data_inputs);
      }
    }
    if (n->type_string() == "Const") {
      TensorProto proto;
      // Small constants (shapes, axes) feed shape functions; big ones are
      // not materialized here.
      auto shape = GetNodeAttr(n->def(), "value", &proto).ok() ? Tensor::ValidateProto(proto)
                                                               : absl::StatusOr<TensorShape>(absl::InvalidArgumentError(""));
      if (shape.ok() && shape->num_elements() <= kMaxConstElementsForShapes) {
        auto t = Tensor::FromProto(proto);
        if (t.ok()) {
          const_values[n->id()] = std::make_unique<Tensor>(std::move(t).value());
          values[n->id()][0] = KnownValueOfTensor(*const_values[n->id()]);
        }
      }
    } else {
      for (int i = 0; i < n->num_outputs(); ++i) {
        values[n->id()][i] = KnownValueOfNode(*n, i, input_values, inputs, handle_shapes);
      }
    }
    if (n->IsNextIteration()) continue;
    for (const Edge* e : n->out_edges()) {
      if (--pending[e->dst->id()] == 0) ready.push_back(e->dst);
    }
  }
  return first_error;
}

}  // namespace sluice

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
}  // namespace

absl::Status ShapeRefiner::InferShapes(const Graph& graph) {
  // Loops: each pass gives a Merge's back edge the shape assumed for it (at
  // first none: the Merge takes its entering value's shape) and checks the
  // assumption against the shape the loop body then infers for the back
  // edge. A Merge whose output would change is rerun with the wider shape.
  // Shapes only widen, so this ends; at the fixpoint every iteration's values
  // fit the Merge's shape. Past kMaxLoopPasses, or when a pass fails with
  // nothing left to widen, back edges count as unknown instead.
  constexpr int kMaxLoopPasses = 8;
  bool has_loops = false;
  for (Node* n : graph.nodes()) has_loops |= n->IsNextIteration();
  ContainerShapes containers(graph);
  if (!has_loops) return InferOnce(graph, nullptr, &containers);
  std::vector<std::optional<PartialShape>> assumed(graph.num_edge_ids());
  for (int pass = 0; pass < kMaxLoopPasses; ++pass) {
    // A failed pass may fail on a narrow assumption (a loop's result used
    // as its first iteration's shape): widen what it reached, and try again.
    absl::Status s = InferOnce(graph, &assumed, &containers);
    bool settled = true;
    for (Node* n : graph.nodes()) {
      if (!n->IsMerge()) continue;
      for (const Edge* e : n->in_edges()) {
        if (e->IsControlEdge() || !e->src->IsNextIteration()) continue;
        const PartialShape& actual = shapes_[e->src->id()][e->src_output];
        if (!(shapes_[n->id()][0].Widen(actual) == shapes_[n->id()][0])) {
          assumed[e->id] = assumed[e->id] ? assumed[e->id]->Widen(actual) : actual;
          settled = false;
        }
      }
    }
    if (settled) {
      if (s.ok()) return s;
      break;
    }
  }
  return InferOnce(graph, nullptr, &containers);
}

absl::Status ShapeRefiner::InferOnce(const Graph& graph, const std::vector<std::optional<PartialShape>>* assumed,
                                     ContainerShapes* containers) {
  containers->StartPass();
  shapes_.assign(graph.num_node_ids(), {});
  handle_shapes_.assign(graph.num_node_ids(), {});
  std::vector<std::vector<std::optional<KnownValue>>> values(graph.num_node_ids());  // per node and output
  std::vector<std::vector<std::unique_ptr<Tensor>>>& tensors = values_as_tensors_;
  tensors.clear();
  tensors.resize(graph.num_node_ids());
  std::vector<int> pending(graph.num_node_ids(), 0);
  // Of a container reader's pending count (a stack's pop, a TensorArray's
  // read), the writers into its container not yet seen.
  std::vector<int> writers_pending(graph.num_node_ids(), 0);
  std::deque<Node*> ready;
  absl::Status first_error;
  for (Node* n : graph.nodes()) {
    shapes_[n->id()].assign(n->num_outputs(), PartialShape::Unknown());
    handle_shapes_[n->id()].assign(n->num_outputs(), {});
    values[n->id()].resize(n->num_outputs());
    tensors[n->id()].resize(n->num_outputs());
    for (const Edge* e : n->in_edges()) {
      if (!e->src->IsNextIteration()) ++pending[n->id()];
    }
    writers_pending[n->id()] = static_cast<int>(containers->WritersBefore(n).size());
    pending[n->id()] += writers_pending[n->id()];
    if (pending[n->id()] == 0) ready.push_back(n);
  }
  for (;;) {
    if (ready.empty()) {
      // Readers still waiting only for writers that wait for them in turn
      // (a push of a popped value): they go on, with unknown shapes.
      for (Node* n : graph.nodes()) {
        if (pending[n->id()] > 0 && pending[n->id()] == writers_pending[n->id()]) {
          pending[n->id()] = writers_pending[n->id()] = 0;
          ready.push_back(n);
        }
      }
      if (ready.empty()) break;
    }
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
      input_tensors[e->dst_input] = tensors[src][e->src_output].get();
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
    const bool container_reader = !containers->WritersBefore(n).empty();
    const bool stack_pop = container_reader && n->type_string() == "StackPopV2";
    if (container_reader && !stack_pop && num_inputs > 0) {
      // A TensorArray's read or gather: the element shape its handle
      // declares, refined by what was written into the array.
      const PartialShape written = containers->ElementShape(n);
      std::vector<PartialShape>& declared = handle_shapes[0];
      if (declared.empty()) {
        declared = {written};
      } else {
        auto merged = declared[0].Merge(written);
        if (merged.ok()) declared[0] = *std::move(merged);
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
        handle_shapes_[n->id()][i] = ctx.output_handle_shapes(i);
      }
      if (stack_pop) shapes_[n->id()][0] = containers->ElementShape(n);
    }
    if (!containers->ReadersAfter(n).empty()) containers->Written(n, inputs);
    for (const Node* reader : containers->ReadersAfter(n)) {
      if (writers_pending[reader->id()] == 0) continue;  // released early, with an unknown shape
      --writers_pending[reader->id()];
      if (--pending[reader->id()] == 0) ready.push_back(graph.FindNodeId(reader->id()));
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
          tensors[n->id()][0] = std::make_unique<Tensor>(std::move(t).value());
          values[n->id()][0] = KnownValueOfTensor(*tensors[n->id()][0]);
        }
      }
    } else {
      for (int i = 0; i < n->num_outputs(); ++i) {
        values[n->id()][i] = KnownValueOfNode(*n, i, input_values, inputs, handle_shapes);
        if (values[n->id()][i]) {
          std::optional<Tensor> t = TensorOfKnownValue(*values[n->id()][i], n->output_type(i));
          if (t) tensors[n->id()][i] = std::make_unique<Tensor>(*std::move(t));
        }
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

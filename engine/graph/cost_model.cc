// CostModel: static estimates from shapes, and measured replacements.
#include "engine/graph/cost_model.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "engine/framework/node_def_util.h"
#include "engine/graph/shape_refiner.h"

namespace sluice {
namespace {

// Ops that move no data and do no arithmetic: their time is the overhead.
bool IsFree(const std::string& op) {
  static const auto* kFree = new absl::flat_hash_set<std::string>{
      "NoOp",  "Const", "VariableV2", "Variable",   "Identity", "Placeholder", "_Send",       "_Recv",
      "Shape", "ShapeN", "Size",      "Rank",       "Reshape",  "ExpandDims",  "Squeeze",     "StopGradient",
      "Enter", "Exit",  "NextIteration", "Switch", "Merge",    "LoopCond",    "_CheckpointSnapshot"};
  return kFree->contains(op);
}

class Shapes {
 public:
  Shapes(const ShapeRefiner& refiner, int64_t unknown_dim) : refiner_(refiner), unknown_dim_(unknown_dim) {}

  // Dims with unknown ones replaced; {} (one element) for an unknown rank.
  std::vector<double> Dims(const PartialShape& shape) const {
    std::vector<double> dims;
    if (!shape.rank_known()) return dims;
    for (int64_t d : shape.dims()) dims.push_back(static_cast<double>(d < 0 ? unknown_dim_ : d));
    return dims;
  }
  std::vector<double> Output(const Node* node, int port) const { return Dims(refiner_.OutputShape(node, port)); }
  // The shape of the value feeding input `port`; {} when it is not connected.
  std::vector<double> Input(const Node* node, int port) const {
    for (const Edge* e : node->in_edges()) {
      if (e->dst_input == port && !e->IsControlEdge()) return Output(e->src, e->src_output);
    }
    return {};
  }
  static double Elements(const std::vector<double>& dims) {
    double n = 1;
    for (double d : dims) n *= d;
    return n;
  }
  // dims[i] counted from the front (i >= 0) or the back (i < 0); 1 if absent.
  static double At(const std::vector<double>& dims, int i) {
    const int n = static_cast<int>(dims.size());
    const int k = i < 0 ? n + i : i;
    return k >= 0 && k < n ? dims[k] : 1;
  }

 private:
  const ShapeRefiner& refiner_;
  const int64_t unknown_dim_;
};

// The product of a pooling op's window (`ksize`), 1 when absent.
double WindowSize(const Node* node) {
  std::vector<int64_t> ksize;
  if (!GetNodeAttr(node->def(), "ksize", &ksize).ok()) return 1;
  double n = 1;
  for (int64_t k : ksize) n *= static_cast<double>(std::max<int64_t>(k, 1));
  return n;
}

bool BoolAttr(const Node* node, const char* name) {
  bool value = false;
  return GetNodeAttr(node->def(), name, &value).ok() && value;
}

double EstimateFlops(const Node* node, const Shapes& shapes) {
  const std::string& op = node->type_string();
  if (IsFree(op) || node->num_outputs() == 0) return 0;
  const std::vector<double> out = shapes.Output(node, 0);
  if (op == "MatMul") {
    const std::vector<double> a = shapes.Input(node, 0);
    const double k = BoolAttr(node, "transpose_a") ? Shapes::At(a, 0) : Shapes::At(a, 1);
    return 2.0 * Shapes::Elements(out) * k;
  }
  if (op == "BatchMatMul" || op == "BatchMatMulV2") {
    const std::vector<double> x = shapes.Input(node, 0);
    const double k = BoolAttr(node, "adj_x") ? Shapes::At(x, -2) : Shapes::At(x, -1);
    return 2.0 * Shapes::Elements(out) * k;
  }
  if (op == "Conv2D") {
    const std::vector<double> filter = shapes.Input(node, 1);  // [kh, kw, in, out]
    return 2.0 * Shapes::Elements(out) * Shapes::At(filter, 0) * Shapes::At(filter, 1) * Shapes::At(filter, 2);
  }
  if (op == "Conv2DBackpropInput") {
    const std::vector<double> filter = shapes.Input(node, 1);
    const std::vector<double> grad = shapes.Input(node, 2);
    return 2.0 * Shapes::Elements(grad) * Shapes::At(filter, 0) * Shapes::At(filter, 1) * Shapes::At(filter, 2);
  }
  if (op == "Conv2DBackpropFilter") {  // the output is the filter
    const std::vector<double> grad = shapes.Input(node, 2);
    return 2.0 * Shapes::Elements(grad) * Shapes::At(out, 0) * Shapes::At(out, 1) * Shapes::At(out, 2);
  }
  if (op == "MaxPool" || op == "AvgPool") return Shapes::Elements(out) * WindowSize(node);
  if (op == "MaxPoolGrad" || op == "AvgPoolGrad") {
    return Shapes::Elements(shapes.Input(node, node->num_inputs() - 1)) * WindowSize(node);
  }
  if (op == "SoftmaxCrossEntropyWithLogits" || op == "SparseSoftmaxCrossEntropyWithLogits" || op == "Softmax" ||
      op == "LogSoftmax") {
    return 5.0 * Shapes::Elements(shapes.Input(node, 0));
  }
  // Element-wise ops and reductions: one FLOP per element of the larger of
  // the first input and the first output.
  return std::max(Shapes::Elements(out), node->num_inputs() > 0 ? Shapes::Elements(shapes.Input(node, 0)) : 0.0);
}

int64_t Bytes(const std::vector<double>& dims, DataType dtype) {
  const int size = DataTypeSize(BaseType(dtype));
  const double bytes = Shapes::Elements(dims) * (size > 0 ? size : 8);
  constexpr double kMax = 9.0e18;
  return static_cast<int64_t>(std::min(bytes, kMax));
}

}  // namespace

absl::StatusOr<CostModel> CostModel::Estimate(const Graph& graph, const CostModelOptions& options,
                                              const Graph* as_run) {
  ShapeRefiner refiner;
  absl::Status s = refiner.InferShapes(graph);
  if (!s.ok()) return s;
  ShapeRefiner run_refiner;
  if (as_run != nullptr && !run_refiner.InferShapes(*as_run).ok()) as_run = nullptr;
  const int64_t unknown_dim = std::max<int64_t>(options.unknown_dim, 1);
  const Shapes shapes(refiner, unknown_dim);
  const Shapes run_shapes(run_refiner, unknown_dim);
  CostModel model;
  model.options_ = options;
  const int n = graph.num_node_ids();
  model.flops_.assign(n, 0);
  model.compute_ns_.assign(n, 0);
  model.output_bytes_.assign(n, {});
  model.variable_elements_.assign(n, 0);
  model.measured_.assign(n, false);
  for (int id = 0; id < n; ++id) {
    const Node* original = graph.FindNodeId(id);
    if (original == nullptr) continue;
    // The node whose shapes and op count: the same node as run, where there
    // is one. One the session removes (a constant input of a folded node)
    // is not run: no FLOPs, no bytes, only the model's overhead.
    const Node* node = original;
    const Shapes* node_shapes = &shapes;
    if (as_run != nullptr) {
      node = as_run->FindNode(original->name());
      node_shapes = &run_shapes;
      if (node == nullptr || node->num_outputs() != original->num_outputs()) {
        model.output_bytes_[id].assign(original->num_outputs(), 0);
        model.compute_ns_[id] = options.node_overhead_ns;
        continue;
      }
    }
    std::vector<int64_t>& bytes = model.output_bytes_[id];
    for (int port = 0; port < node->num_outputs(); ++port) {
      bytes.push_back(Bytes(node_shapes->Output(node, port), node->output_type(port)));
    }
    if (node->type_string() == "VariableV2" || node->type_string() == "Variable") {
      TensorShapeProto shape;
      if (GetNodeAttr(node->def(), "shape", &shape).ok()) {
        auto partial = PartialShape::FromProto(shape);
        if (partial.ok()) model.variable_elements_[id] = static_cast<int64_t>(Shapes::Elements(shapes.Dims(*partial)));
      }
    }
    // A node folded into a Const (IsFree) costs what a Const costs.
    const double flops = EstimateFlops(node, *node_shapes);
    model.flops_[id] = flops;
    double touched = 0;
    if (!IsFree(node->type_string())) {
      for (int64_t b : bytes) touched += static_cast<double>(b);
      for (const Edge* e : node->in_edges()) {
        if (!e->IsControlEdge()) touched += static_cast<double>(Bytes(node_shapes->Output(e->src, e->src_output),
                                                                      e->src->output_type(e->src_output)));
      }
    }
    model.compute_ns_[id] =
        options.node_overhead_ns + std::max(flops / options.flops_per_ns, touched / options.bytes_per_ns);
  }
  return model;
}

int CostModel::ApplyMeasured(const Graph& graph, absl::Span<const std::pair<std::string, double>> measured) {
  int applied = 0;
  for (const auto& [name, ns] : measured) {
    const Node* node = graph.FindNode(name);
    if (node == nullptr || node->id() >= static_cast<int>(compute_ns_.size()) || !(ns >= 0)) continue;
    compute_ns_[node->id()] = ns;
    measured_[node->id()] = true;
    ++applied;
  }
  return applied;
}

}  // namespace sluice

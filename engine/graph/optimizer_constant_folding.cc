// Constant folding: find foldable nodes in topological order (their values
// computed as they are found, from their inputs' values), then replace each by
// Consts and remove the constant inputs nothing consumes any more. Repeated
// for a few rounds, since folded values sharpen shape inference.
#include "engine/graph/optimizer_constant_folding.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/framework/device.h"
#include "engine/framework/op_kernel.h"
#include "engine/graph/algorithm.h"
#include "engine/graph/control_flow.h"
#include "engine/graph/shape_refiner.h"

namespace sluice {
namespace {

// The CPU allocator, refusing any one allocation over `cap` bytes: a kernel
// whose output size is not known statically (BroadcastGradientArgs, a Fill
// of computed dims) fails instead of materializing a big value.
class CappedAllocator : public Allocator {
 public:
  explicit CappedAllocator(int64_t cap) : cap_(static_cast<size_t>(std::max<int64_t>(cap, 0))) {}
  std::string Name() const override { return "constant_folding"; }
  void* AllocateRaw(size_t alignment, size_t num_bytes) override {
    return num_bytes > cap_ ? nullptr : CpuAllocator()->AllocateRaw(alignment, num_bytes);
  }
  void DeallocateRaw(void* ptr, size_t num_bytes) override { CpuAllocator()->DeallocateRaw(ptr, num_bytes); }
  AllocatorStats GetStats() const override { return CpuAllocator()->GetStats(); }

 private:
  const size_t cap_;
};

// The CPU device kernels are evaluated on (one per FoldConstants call,
// outliving every tensor it allocates): no stateful kernel runs there, so
// its ResourceMgr stays empty.
struct FoldingDevice {
  explicit FoldingDevice(int64_t cap)
      : allocator(cap),
        device("/job:localhost/replica:0/task:0/device:CPU:0", kDeviceCpu, &allocator, /*intra_op_threads=*/1) {}
  CappedAllocator allocator;
  Device device;
};

bool IsShapeOp(const Node* n) {
  const std::string& op = n->type_string();
  return op == "Shape" || op == "ShapeN" || op == "Size" || op == "Rank";
}

bool HasRefOrResource(const DataTypeVector& types) {
  for (DataType t : types) {
    if (IsRefType(t) || BaseType(t) == DT_RESOURCE) return true;
  }
  return false;
}

// Unplaced, or placed on a CPU device.
bool OnCpu(const Node* n) {
  const std::string& d = n->assigned_device().empty() ? n->requested_device() : n->assigned_device();
  return d.empty() || absl::StrContains(d, "/device:CPU:") || absl::StrContains(d, "/cpu:");
}

// Whether `n` may be folded at all, whatever its inputs.
bool Eligible(const Node* n, const std::vector<ControlFlowInfo>& frames, const std::vector<bool>& conditional) {
  if (n->IsStateful() || n->IsControlFlow()) return false;
  if (!frames[n->id()].frame_name.empty() || conditional[n->id()]) return false;
  const std::string& op = n->type_string();
  if (op == "Placeholder" || op == "PlaceholderWithDefault" || absl::StartsWith(op, "_")) return false;
  // Random ops are stateful; an op taking a seed is treated as random too.
  if (FindAttr(n->def(), "seed") != nullptr || FindAttr(n->def(), "seed2") != nullptr) return false;
  // Reads the file system, which may change between steps.
  if (op == "MatchingFiles") return false;
  if (n->num_outputs() == 0) return false;
  if (HasRefOrResource(n->input_types()) || HasRefOrResource(n->output_types())) return false;
  // Strings have no size bound known before they are computed.
  for (DataType t : n->output_types()) {
    if (t == DT_STRING) return false;
  }
  // On another device type (a GPU) only integer results (shape arithmetic)
  // are folded: they are exact on every device, while a float kernel of that
  // device may round differently from the CPU's (and is what its tests test).
  if (!OnCpu(n)) {
    for (DataType t : n->output_types()) {
      if (t != DT_INT32 && t != DT_INT64) return false;
    }
  }
  return true;
}

int64_t BytesOf(DataType dtype, const PartialShape& shape) {
  int64_t elements = 1;
  for (int64_t d : shape.dims()) elements *= d;  // CheckBounds keeps this in range
  return elements * static_cast<int64_t>(DataTypeSize(dtype));
}

// A vector of `dims` as `dtype` (int32 or int64), or nullopt when a value
// does not fit.
std::optional<Tensor> IntVector(DataType dtype, absl::Span<const int64_t> dims) {
  const TensorShape shape({static_cast<int64_t>(dims.size())});
  if (dtype == DT_INT64) return Tensor::FromVector<int64_t>(dims, shape);
  if (dtype != DT_INT32) return std::nullopt;
  std::vector<int32_t> v;
  for (int64_t d : dims) {
    if (d > std::numeric_limits<int32_t>::max()) return std::nullopt;
    v.push_back(static_cast<int32_t>(d));
  }
  return Tensor::FromVector<int32_t>(absl::MakeConstSpan(v), shape);
}

// The values of a Shape, ShapeN, Size or Rank node from its inputs' static
// shapes, or nullopt when they are not known well enough.
std::optional<std::vector<Tensor>> EvaluateShapeOp(const Node* n, const ShapeRefiner& refiner) {
  std::vector<PartialShape> shapes(n->num_inputs());
  for (const Edge* e : n->in_edges()) {
    if (e->IsControlEdge()) continue;
    shapes[e->dst_input] = refiner.OutputShape(e->src, e->src_output);
  }
  const std::string& op = n->type_string();
  std::vector<Tensor> out;
  if (op == "Rank") {
    if (!shapes[0].rank_known()) return std::nullopt;
    out.push_back(Tensor::Scalar<int32_t>(shapes[0].rank()));
    return out;
  }
  for (const PartialShape& s : shapes) {
    if (!s.IsFullyDefined()) return std::nullopt;
  }
  const DataType dtype = n->output_type(0);
  if (op == "Size") {
    int64_t size = 1;
    for (int64_t d : shapes[0].dims()) size *= d;
    if (dtype == DT_INT64) out.push_back(Tensor::Scalar<int64_t>(size));
    else if (size <= std::numeric_limits<int32_t>::max()) out.push_back(Tensor::Scalar<int32_t>(static_cast<int32_t>(size)));
    else return std::nullopt;
    return out;
  }
  for (const PartialShape& s : shapes) {  // Shape and ShapeN
    std::optional<Tensor> t = IntVector(dtype, s.dims());
    if (!t) return std::nullopt;
    out.push_back(*std::move(t));
  }
  return out;
}

// Runs `n`'s CPU kernel on `inputs`; nullopt when there is none, it is async,
// or it fails (the step will report that failure when it runs).
std::optional<std::vector<Tensor>> EvaluateKernel(Device* device, const Node* n, std::vector<Tensor> inputs) {
  auto kernel = KernelRegistry::Global()->CreateKernel(device, n->def(), n->op_def());
  if (!kernel.ok() || (*kernel)->AsAsync() != nullptr) return std::nullopt;
  std::vector<TensorValue> values;
  for (Tensor& t : inputs) values.push_back(TensorValue{&t, nullptr});
  OpKernelContext::Params params;
  params.device = device;
  params.op_kernel = kernel->get();
  params.inputs = values;
  OpKernelContext ctx(&params);
  (*kernel)->Compute(&ctx);
  if (!ctx.status().ok()) return std::nullopt;
  std::vector<Tensor> out;
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    KernelOutput* o = ctx.mutable_output(i);
    if (!o->is_set || o->ref != nullptr || o->value.dtype() != n->output_type(i)) return std::nullopt;
    out.push_back(o->value);
  }
  return out;
}

// Replaces `n` by one Const per output that has consumers; output 0's Const,
// always made, takes `n`'s name and its control outputs.
void ReplaceWithConsts(Graph* graph, Node* n, const std::vector<Tensor>& values) {
  const NodeEdges edges = EdgesOf(*n);
  const std::string name = n->name();
  const std::string requested = n->def().device();
  const std::string assigned = n->assigned_device();
  std::vector<bool> used(values.size(), false);
  used[0] = true;  // the named one, always (a node without consumers is kept for its name)
  for (const NodeEdges::Out& o : edges.outs) used[o.src_output == kControlSlot ? 0 : o.src_output] = true;
  graph->RemoveNode(n);

  std::vector<Node*> consts(values.size(), nullptr);
  for (size_t i = 0; i < values.size(); ++i) {
    if (!used[i]) continue;
    NodeDef def;
    def.set_name(name);
    for (int k = 0; i > 0; ++k) {  // outputs after the first get names of their own
      def.set_name(absl::StrCat(name, "/_folded_output_", i, k == 0 ? "" : absl::StrCat("_", k)));
      if (graph->FindNode(def.name()) == nullptr) break;
    }
    def.set_op("Const");
    def.set_device(requested);
    AttrValue dtype;
    dtype.set_type(values[i].dtype());
    (*def.mutable_attr())["dtype"] = dtype;
    AttrValue value;
    values[i].AsProtoTensorContent(value.mutable_tensor());
    (*def.mutable_attr())["value"] = value;
    auto added = graph->AddNode(std::move(def), /*internal=*/absl::StartsWith(name, "_"));
    CHECK(added.ok()) << added.status();  // a free name, a valid Const
    consts[i] = *added;
    consts[i]->set_assigned_device(assigned);
    for (Node* c : edges.control_inputs) graph->AddControlEdge(c, consts[i]);
  }
  for (const NodeEdges::Out& o : edges.outs) {
    if (o.src_output == kControlSlot) graph->AddControlEdge(consts[0], o.dst);
    else graph->AddEdge(consts[o.src_output], 0, o.dst, o.dst_input);
  }
}

// One round; returns what it did.
ConstantFoldingStats FoldOnce(const ConstantFoldingOptions& options, Device* device, Graph* graph) {
  ConstantFoldingStats stats;
  std::vector<ControlFlowInfo> frames;
  if (!BuildControlFlowInfo(*graph, &frames).ok()) return stats;
  ShapeRefiner refiner;
  const bool have_shapes = refiner.InferShapes(*graph).ok();
  const std::vector<bool> conditional = DownstreamOfSwitch(*graph);
  const std::vector<Node*> order = TopologicalOrder(*graph);

  // values[id]: every output of a node known to be constant.
  std::vector<std::optional<std::vector<Tensor>>> values(graph->num_node_ids());
  std::vector<Node*> folded;
  for (Node* n : order) {
    if (!Eligible(n, frames, conditional)) continue;
    const bool protect = options.keep && options.keep(n);
    bool inputs_constant = true;
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge() || !IsShapeOp(n)) inputs_constant &= values[e->src->id()].has_value();
    }
    if (!inputs_constant) continue;
    bool ref_input = false;  // a variable's Shape is read at run time, initialized or not
    for (const Edge* e : n->in_edges()) {
      if (!e->IsControlEdge()) ref_input |= IsRefType(e->src->output_type(e->src_output));
    }
    if (ref_input) continue;
    if (n->type_string() == "Const") {
      TensorProto proto;
      if (!GetNodeAttr(n->def(), "value", &proto).ok()) continue;
      auto shape = Tensor::ValidateProto(proto);
      if (!shape.ok() || shape->num_elements() * DataTypeSize(proto.dtype()) > options.max_constant_bytes) continue;
      auto t = Tensor::FromProto(proto);
      if (t.ok() && t->dtype() == n->output_type(0)) values[n->id()] = std::vector<Tensor>{*std::move(t)};
      continue;
    }
    if (protect) continue;
    std::optional<std::vector<Tensor>> out;
    if (IsShapeOp(n)) {
      if (have_shapes) out = EvaluateShapeOp(n, refiner);
    } else {
      // Outputs known statically to be too big are not computed (others are
      // bounded by the device's allocator).
      bool fits = true;
      for (int i = 0; have_shapes && i < n->num_outputs(); ++i) {
        const PartialShape& s = refiner.OutputShape(n, i);
        if (s.IsFullyDefined()) fits &= BytesOf(n->output_type(i), s) <= options.max_constant_bytes;
      }
      if (!fits) continue;
      std::vector<Tensor> inputs(n->num_inputs());
      for (const Edge* e : n->in_edges()) {
        if (!e->IsControlEdge()) inputs[e->dst_input] = (*values[e->src->id()])[e->src_output];
      }
      out = EvaluateKernel(device, n, std::move(inputs));
    }
    if (!out) continue;
    bool fits = true;
    for (const Tensor& t : *out) fits &= static_cast<int64_t>(t.TotalBytes()) <= options.max_constant_bytes;
    if (!fits) continue;
    values[n->id()] = std::move(out);
    folded.push_back(n);
  }
  if (folded.empty()) return stats;

  // Consumers first (reverse topological order): a folded node whose
  // consumers were all folded is removed instead of replaced, and so is a
  // constant input nothing consumes any more. Nodes that never had
  // consumers (kept for their name) are replaced, not removed.
  std::vector<bool> had_consumers(graph->num_node_ids(), false);
  for (Node* n : graph->nodes()) had_consumers[n->id()] = !n->out_edges().empty();
  std::vector<int> unused;  // constant inputs of folded nodes
  for (auto it = folded.rbegin(); it != folded.rend(); ++it) {
    Node* n = *it;
    for (const Edge* e : n->in_edges()) {
      if (values[e->src->id()].has_value()) unused.push_back(e->src->id());
    }
    ++stats.folded;
    if (n->out_edges().empty() && had_consumers[n->id()]) {
      graph->RemoveNode(n);
      continue;
    }
    ReplaceWithConsts(graph, n, *values[n->id()]);
  }
  while (!unused.empty()) {
    Node* n = graph->FindNodeId(unused.back());
    unused.pop_back();
    if (n == nullptr || !n->out_edges().empty() || (options.keep && options.keep(n))) continue;
    for (const Edge* e : n->in_edges()) {
      // Consts made above (new ids) stay: they replaced folded nodes.
      const int src = e->src->id();
      if (src < static_cast<int>(values.size()) && values[src].has_value()) unused.push_back(src);
    }
    graph->RemoveNode(n);
    ++stats.removed;
  }
  return stats;
}

}  // namespace

ConstantFoldingStats FoldConstants(const ConstantFoldingOptions& options, Graph* graph) {
  ConstantFoldingStats total;
  FoldingDevice device(options.max_constant_bytes);
  for (int round = 0; round < options.max_rounds; ++round) {
    ConstantFoldingStats s = FoldOnce(options, &device.device, graph);
    total.folded += s.folded;
    total.removed += s.removed;
    if (s.folded == 0) break;
  }
  return total;
}

}  // namespace sluice

// Shape no-ops (see optimizer_shape_noops.h): static shapes from the shape
// refiner; each no-op is rebuilt as an Identity under its own name.
#include "engine/graph/optimizer_shape_noops.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "engine/framework/device_name.h"
#include "engine/framework/node_def_util.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/types.h"
#include "engine/graph/algorithm.h"
#include "engine/graph/shape_refiner.h"
#include "engine/platform/logging.h"

namespace sluice {
namespace {

bool IsShapePreservingWhenShapesMatch(const std::string& op) {
  static const auto* ops = new absl::flat_hash_set<std::string>{
      "Reshape", "BroadcastTo", "Tile", "Squeeze", "Sum", "Mean", "Prod", "Max", "Min"};
  return ops->contains(op);
}

bool DeviceHasIdentity(const Node* n, DataType type) {
  auto d = ParseDeviceName(n->assigned_device());
  if (!d.ok() || !d->has_type) return true;  // unplaced: every device type has one
  NodeDef probe;
  probe.set_op("Identity");
  (*probe.mutable_attr())["T"] = MakeAttr(type);
  return KernelRegistry::Global()->HasKernel(d->type, probe);
}

bool IsNoOp(const Node* n, const ShapeRefiner& refiner) {
  if (!IsShapePreservingWhenShapesMatch(n->type_string()) || n->num_inputs() < 1 || n->num_outputs() != 1) {
    return false;
  }
  const Edge* in = n->input_edge(0);
  if (in == nullptr) return false;
  const DataType type = in->src->output_type(in->src_output);
  if (IsRefType(type) || type != n->output_type(0)) return false;
  const PartialShape& before = refiner.OutputShape(in->src, in->src_output);
  const PartialShape& after = refiner.OutputShape(n, 0);
  if (!before.IsFullyDefined() || !after.IsFullyDefined() || !(before == after)) return false;
  // The shape, multiples or axes (input 1) must be known whole too: one
  // computed at run time could be one the kernel refuses (a Reshape to a fed
  // size that does not fit), and the Identity would hide that error.
  if (n->num_inputs() > 1) {
    const Edge* arg = n->input_edge(1);
    if (arg == nullptr || refiner.OutputValue(arg->src, arg->src_output) == nullptr) return false;
  }
  return DeviceHasIdentity(n, type);
}

void ReplaceWithIdentity(Graph* graph, Node* n) {
  const Edge* in = n->input_edge(0);
  Node* src = in->src;
  const int src_output = in->src_output;
  const NodeEdges edges = EdgesOf(*n);
  NodeDef def;  // inputs are connected below
  def.set_name(n->name());
  def.set_op("Identity");
  def.set_device(n->def().device());
  (*def.mutable_attr())["T"] = MakeAttr(n->output_type(0));
  const std::string assigned = n->assigned_device();
  const bool internal = absl::StartsWith(n->name(), "_");
  graph->RemoveNode(n);
  auto added = graph->AddNode(std::move(def), internal);
  CHECK(added.ok()) << added.status();  // the name just freed, a valid Identity
  Node* identity = *added;
  identity->set_assigned_device(assigned);
  graph->AddEdge(src, src_output, identity, 0);
  for (Node* c : edges.control_inputs) graph->AddControlEdge(c, identity);
  for (const NodeEdges::Out& o : edges.outs) {
    if (o.src_output == kControlSlot) {
      graph->AddControlEdge(identity, o.dst);
    } else {
      graph->AddEdge(identity, 0, o.dst, o.dst_input);
    }
  }
}

}  // namespace

int ReplaceShapeNoOpsWithIdentities(const ShapeNoOpOptions& options, Graph* graph) {
  ShapeRefiner refiner;
  if (!refiner.InferShapes(*graph).ok()) return 0;
  // After a Switch a node is dead when any input is; its Identity would be
  // dead with input 0 only.
  const std::vector<bool> conditional = DownstreamOfSwitch(*graph);
  std::vector<Node*> noops;
  for (Node* n : graph->nodes()) {
    if (!conditional[n->id()] && IsNoOp(n, refiner) && !(options.keep && options.keep(n))) noops.push_back(n);
  }
  for (Node* n : noops) ReplaceWithIdentity(graph, n);
  return static_cast<int>(noops.size());
}

}  // namespace sluice

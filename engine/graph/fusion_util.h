// What the fusion passes (optimizer_fusion.cc, optimizer_pool_grad_fusion.cc)
// share: node tests, and the replacement of a chain by its fused node.
// Thread safety: functions of their arguments; ReplaceWithFusedNode mutates
// the caller's graph.
#ifndef SLUICE_ENGINE_GRAPH_FUSION_UTIL_H_
#define SLUICE_ENGINE_GRAPH_FUSION_UTIL_H_

#include <string>
#include <utility>
#include <vector>

#include "engine/framework/device_name.h"
#include "engine/framework/node_def_util.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/types.h"
#include "engine/graph/graph.h"

namespace sluice {
namespace fusion {

// The node's "T" attr is float32, and so is its output 0.
inline bool IsFloat(const Node* n) {
  DataType t;
  return GetNodeAttr(n->def(), "T", &t).ok() && t == DT_FLOAT && n->num_outputs() >= 1 &&
         n->output_type(0) == DT_FLOAT;
}

// The attr's value, or `absent` when the node has none (or not a string).
inline std::string StringAttr(const Node* n, const char* name, const char* absent) {
  std::string v;
  return GetNodeAttr(n->def(), name, &v).ok() ? v : absent;
}

// Whether the node's assigned device can run `fused_op` on float32: a CPU
// always (the fused ops' CPU kernels are part of the core kernels), another
// device type when this process registers a kernel of the op for it (the
// GPU's, engine/kernels/gpu, in a --config=cuda build). Unplaced: false.
inline bool DeviceRunsFused(const Node* n, const char* fused_op) {
  auto d = ParseDeviceName(n->assigned_device());
  if (!d.ok() || !d->has_type) return false;
  if (d->type == kDeviceCpu) return true;
  NodeDef probe;
  probe.set_op(fused_op);
  (*probe.mutable_attr())["T"] = MakeAttr(DT_FLOAT);
  return KernelRegistry::Global()->HasKernel(d->type, probe);
}

// The node's only data out edge, or null when it has none or several.
inline const Edge* SoleDataOut(const Node* n) {
  const Edge* found = nullptr;
  for (const Edge* e : n->out_edges()) {
    if (e->IsControlEdge()) continue;
    if (found != nullptr) return nullptr;
    found = e;
  }
  return found;
}

// The edges a fused node takes over from its chain.
struct FusedEdges {
  std::vector<std::pair<Node*, int>> data_in;  // (src, src_output) by the fused node's input index
  std::vector<Node*> control_in, control_out;  // may hold members and duplicates: both are dropped
  std::vector<std::pair<int, std::pair<Node*, int>>> data_out;  // (fused output, (dst, dst_input))
};

// Removes the chain's `members` (null entries skipped) and adds `def` in their
// place, assigned to `device`, with `edges`. The def and edges are the pass's
// own: an unconnected input or an invalid def is our bug (CHECK).
Node* ReplaceWithFusedNode(Graph* graph, const std::vector<Node*>& members, NodeDef def, const std::string& device,
                           FusedEdges edges);

}  // namespace fusion
}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_FUSION_UTIL_H_

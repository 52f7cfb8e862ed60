// Identity-chain removal: each removable Identity's consumers are moved onto
// its input, in topological order, so a chain collapses onto its head.
#include "engine/graph/optimizer_identity.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "engine/graph/algorithm.h"
#include "engine/graph/control_flow.h"

namespace sluice {
namespace {

bool Removable(const Node* n, const std::vector<ControlFlowInfo>& frames) {
  if (n->type_string() != "Identity" || n->num_inputs() != 1) return false;
  if (!frames[n->id()].frame_name.empty()) return false;
  const Edge* in = nullptr;
  for (const Edge* e : n->in_edges()) {
    if (e->IsControlEdge()) return false;
    in = e;
  }
  if (in == nullptr || in->src->IsControlFlow()) return false;
  const DataType t = in->src->output_type(in->src_output);
  if (IsRefType(t) || BaseType(t) == DT_RESOURCE) return false;
  if (in->src->assigned_device() != n->assigned_device()) return false;
  if (n->out_edges().empty()) return false;
  for (const Edge* e : n->out_edges()) {
    if (e->IsControlEdge() || absl::StartsWith(e->dst->type_string(), "_")) return false;
    if (e->dst->assigned_device() != n->assigned_device()) return false;
  }
  return true;
}

}  // namespace

int RemoveIdentityChains(const IdentityRemovalOptions& options, Graph* graph) {
  std::vector<ControlFlowInfo> frames;
  if (!BuildControlFlowInfo(*graph, &frames).ok()) return 0;
  int removed = 0;
  for (Node* n : TopologicalOrder(*graph)) {
    if (!Removable(n, frames) || (options.keep && options.keep(n))) continue;
    const Edge* in = n->input_edge(0);
    Node* src = in->src;
    const int src_output = in->src_output;
    std::vector<const Edge*> outs = n->out_edges();
    for (const Edge* e : outs) {
      Node* dst = e->dst;
      const int dst_input = e->dst_input;
      graph->RemoveEdge(e);
      graph->AddEdge(src, src_output, dst, dst_input);
    }
    graph->RemoveNode(n);
    ++removed;
  }
  return removed;
}

}  // namespace sluice

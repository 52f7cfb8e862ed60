// See fusion_util.h.
#include "engine/graph/fusion_util.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "engine/platform/logging.h"

namespace sluice {
namespace fusion {

Node* ReplaceWithFusedNode(Graph* graph, const std::vector<Node*>& members, NodeDef def, const std::string& device,
                           FusedEdges edges) {
  const absl::flat_hash_set<const Node*> chain(members.begin(), members.end());
  auto outside = [&](std::vector<Node*>* nodes) {
    nodes->erase(std::remove_if(nodes->begin(), nodes->end(), [&](Node* n) { return chain.contains(n); }),
                 nodes->end());
    std::sort(nodes->begin(), nodes->end(), [](Node* a, Node* b) { return a->id() < b->id(); });
    nodes->erase(std::unique(nodes->begin(), nodes->end()), nodes->end());
  };
  outside(&edges.control_in);
  outside(&edges.control_out);
  for (const auto& [src, port] : edges.data_in) CHECK(src != nullptr) << "a fused chain input is not connected";
  for (Node* n : members) {
    if (n != nullptr) graph->RemoveNode(n);
  }
  const bool internal = !def.name().empty() && def.name()[0] == '_';
  auto fused = graph->AddNode(std::move(def), internal);
  // The def is ours and its name was just freed: failing here is our bug.
  CHECK(fused.ok()) << "fusion made an invalid node: " << fused.status();
  Node* f = *fused;
  f->set_assigned_device(device);
  for (size_t i = 0; i < edges.data_in.size(); ++i) {
    graph->AddEdge(edges.data_in[i].first, edges.data_in[i].second, f, static_cast<int>(i));
  }
  for (Node* src : edges.control_in) graph->AddControlEdge(src, f);
  for (Node* dst : edges.control_out) graph->AddControlEdge(f, dst);
  for (const auto& [port, to] : edges.data_out) graph->AddEdge(f, port, to.first, to.second);
  return f;
}

}  // namespace fusion
}  // namespace sluice

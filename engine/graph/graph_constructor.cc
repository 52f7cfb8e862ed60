// GraphDef -> Graph with full validation.
#include "engine/graph/graph_constructor.h"

#include <deque>

#include "absl/strings/str_cat.h"
#include "engine/graph/control_flow.h"
#include "engine/graph/shape_refiner.h"

namespace sluice {

bool TypesCompatible(DataType src, DataType dst) {
  if (src == dst) return true;
  return IsRefType(src) && !IsRefType(dst) && BaseType(src) == dst;
}

namespace {

absl::Status InputError(const NodeDef& def, int position, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(NodeContext(def), "input ", position, " ('", def.input(position), "'): ", message));
}

}  // namespace

absl::Status CheckForIllegalCycles(const Graph& graph) {
  std::vector<int> pending(graph.num_node_ids(), 0);
  std::deque<Node*> ready;
  for (Node* n : graph.nodes()) {
    for (const Edge* e : n->in_edges()) {
      if (!e->src->IsNextIteration()) ++pending[n->id()];
    }
    if (pending[n->id()] == 0) ready.push_back(n);
  }
  int visited = 0;
  while (!ready.empty()) {
    Node* n = ready.front();
    ready.pop_front();
    ++visited;
    if (n->IsNextIteration()) continue;
    for (const Edge* e : n->out_edges()) {
      if (--pending[e->dst->id()] == 0) ready.push_back(e->dst);
    }
  }
  if (visited == graph.num_nodes()) return absl::OkStatus();
  // Walk backwards from an unvisited node along unvisited inputs until a node
  // repeats: that node lies on a cycle.
  Node* start = nullptr;
  for (Node* n : graph.nodes()) {
    if (pending[n->id()] > 0) {
      start = n;
      break;
    }
  }
  std::vector<int> seen_at(graph.num_node_ids(), -1);
  std::vector<Node*> path;
  Node* cur = start;
  while (seen_at[cur->id()] < 0) {
    seen_at[cur->id()] = static_cast<int>(path.size());
    path.push_back(cur);
    Node* next = nullptr;
    for (const Edge* e : cur->in_edges()) {
      if (!e->src->IsNextIteration() && pending[e->src->id()] > 0) {
        next = e->src;
        break;
      }
    }
    if (next == nullptr) break;
    cur = next;
  }
  std::string cycle;
  for (size_t i = seen_at[cur->id()] < 0 ? 0 : seen_at[cur->id()]; i < path.size(); ++i) {
    absl::StrAppend(&cycle, path[i]->name(), " <- ");
  }
  absl::StrAppend(&cycle, cur->name());
  return absl::InvalidArgumentError(absl::StrCat("node '", cur->name(), "' (op ", cur->type_string(),
                                                 ") is on a cycle that does not pass through a NextIteration node: ",
                                                 cycle));
}

absl::Status ConvertGraphDefToGraph(const GraphConstructorOptions& options, const GraphDef& graph_def, Graph* graph) {
  std::vector<Node*> added;
  added.reserve(graph_def.node_size());
  for (int k = 0; k < graph_def.node_size(); ++k) {
    const NodeDef& def = graph_def.node(k);
    auto node = graph->AddNode(def, options.allow_internal_names);
    if (!node.ok()) {
      // A node without a name can only be pointed at by its position.
      if (def.name().empty()) {
        return absl::Status(node.status().code(),
                            absl::StrCat(node.status().message(), " (node #", k, " of the GraphDef)"));
      }
      return node.status();
    }
    added.push_back(*node);
  }
  if (graph_def.has_versions()) graph->set_versions(graph_def.versions());
  for (Node* node : added) {
    const NodeDef& def = node->def();
    int data_inputs = 0;
    bool seen_control = false;
    for (int i = 0; i < def.input_size(); ++i) {
      auto id = ParseTensorName(def.input(i));
      if (!id.ok()) return InputError(def, i, id.status().message());
      Node* src = graph->FindNode(id->node);
      if (src == nullptr) {
        std::vector<std::string> names;
        for (Node* n : graph->nodes()) names.push_back(n->name());
        std::string suggestion = ClosestMatch(id->node, names);
        return InputError(def, i, absl::StrCat("no node named '", id->node, "' in the graph",
                                               suggestion.empty() ? "" : absl::StrCat(" (did you mean '", suggestion, "'?)")));
      }
      if (id->IsControl()) {
        seen_control = true;
        graph->AddControlEdge(src, node);
        continue;
      }
      if (seen_control) return InputError(def, i, "data input after a control input ('^...' inputs must come last)");
      if (data_inputs >= node->num_inputs()) {
        return absl::InvalidArgumentError(absl::StrCat(NodeContext(def), "op ", def.op(), " takes ", node->num_inputs(),
                                                       " data input(s) but the node lists more"));
      }
      if (id->index >= src->num_outputs()) {
        return InputError(def, i, absl::StrCat("node '", src->name(), "' (op ", src->type_string(), ") has only ",
                                               src->num_outputs(), " output(s)"));
      }
      DataType src_type = src->output_type(id->index);
      DataType dst_type = node->input_type(data_inputs);
      if (!TypesCompatible(src_type, dst_type)) {
        return InputError(def, i, absl::StrCat("has type ", DataTypeString(src_type), " but op ", def.op(),
                                               " expects ", DataTypeString(dst_type), " here"));
      }
      graph->AddEdge(src, id->index, node, data_inputs);
      ++data_inputs;
    }
    if (data_inputs != node->num_inputs()) {
      return absl::InvalidArgumentError(absl::StrCat(NodeContext(def), "op ", def.op(), " takes ", node->num_inputs(),
                                                     " data input(s) but the node has ", data_inputs));
    }
  }
  absl::Status s = CheckForIllegalCycles(*graph);
  if (!s.ok()) return s;
  std::vector<ControlFlowInfo> cf_info;
  s = BuildControlFlowInfo(*graph, &cf_info);
  if (!s.ok()) return s;
  if (options.infer_shapes) {
    ShapeRefiner refiner;
    s = refiner.InferShapes(*graph);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Graph>> GraphFromGraphDef(const GraphDef& graph_def,
                                                         const GraphConstructorOptions& options) {
  auto graph = std::make_unique<Graph>();
  absl::Status s = ConvertGraphDefToGraph(options, graph_def, graph.get());
  if (!s.ok()) return s;
  return graph;
}

}  // namespace sluice

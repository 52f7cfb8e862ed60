// Feed/fetch rewrite and pruning.
#include "engine/graph/subgraph.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/framework/rendezvous.h"
#include "engine/graph/algorithm.h"
#include "engine/graph/control_flow.h"

namespace sluice {
namespace {

absl::StatusOr<std::pair<Node*, int>> FindTensor(const Graph& graph, const std::string& name, const char* what) {
  auto id = ParseTensorName(name);
  if (!id.ok() || id->IsControl()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", name, "' is not a tensor name ('node' or 'node:port')"));
  }
  Node* node = graph.FindNode(id->node);
  if (node == nullptr) {
    std::vector<std::string> names;
    for (Node* n : graph.nodes()) names.push_back(n->name());
    std::string suggestion = ClosestMatch(id->node, names);
    return absl::NotFoundError(absl::StrCat(what, " '", name, "': no node named '", id->node, "' in the graph",
                                            suggestion.empty() ? "" : absl::StrCat(" (did you mean '", suggestion, "'?)")));
  }
  if (id->index >= node->num_outputs()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", name, "': node '", node->name(), "' has only ",
                                                   node->num_outputs(), " output(s)"));
  }
  return std::make_pair(node, id->index);
}

std::string UniqueName(const Graph& graph, const std::string& base) {
  std::string name = base;
  for (int i = 1; graph.FindNode(name) != nullptr; ++i) name = absl::StrCat(base, "_", i);
  return name;
}

std::string SafeName(const std::string& tensor) { return absl::StrReplaceAll(tensor, {{":", "_"}, {"^", "_"}}); }

// A tensor inside a while loop has one value per iteration (or none, when
// the loop stops first): the step cannot feed or fetch it. (Without this
// check, a fetch's _Send ran once per iteration into a rendezvous read once,
// and the Run timed out waiting.)
absl::Status CheckOutsideLoops(const Graph& graph, const std::vector<std::string>& feeds,
                               const std::vector<std::pair<Node*, int>>& feed_tensors,
                               const std::vector<std::string>& fetches,
                               const std::vector<std::pair<Node*, int>>& fetch_tensors) {
  bool has_loops = false;
  for (Node* n : graph.nodes()) has_loops |= n->IsEnter();
  if (!has_loops) return absl::OkStatus();
  std::vector<ControlFlowInfo> info;
  if (!BuildControlFlowInfo(graph, &info).ok()) return absl::OkStatus();  // validation reports the graph
  auto check = [&](const char* what, const std::vector<std::string>& names,
                   const std::vector<std::pair<Node*, int>>& tensors) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Node* n = tensors[i].first;
      // The frame of the node's outputs: an Exit's leave the loop, an Enter's enter it.
      std::string frame = n->IsExit() ? info[n->id()].parent_frame : info[n->id()].frame_name;
      if (n->IsEnter() && !GetNodeAttr(n->def(), "frame_name", &frame).ok()) continue;
      if (frame.empty()) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot ", what, " '", names[i], "': it is inside the while loop '", frame,
          "', where it has a value per iteration; ", what, " a tensor outside the loop (an Exit's output) instead"));
    }
    return absl::OkStatus();
  };
  absl::Status s = check("feed", feeds, feed_tensors);
  if (!s.ok()) return s;
  return check("fetch", fetches, fetch_tensors);
}

}  // namespace

absl::Status RewriteGraphForExecution(const RewriteOptions& options, const std::vector<std::string>& feeds,
                                      const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                                      Graph* graph, RewriteResult* result) {
  result->feed_keys.clear();
  result->fetch_keys.clear();
  result->feed_nodes.clear();
  std::vector<Node*> roots;
  // Resolve everything before changing the graph, so errors leave it intact.
  std::vector<std::pair<Node*, int>> feed_tensors, fetch_tensors;
  absl::flat_hash_set<std::string> seen_feeds;
  for (const std::string& f : feeds) {
    auto t = FindTensor(*graph, f, "feed");
    if (!t.ok()) return t.status();
    if (IsRefType(t->first->output_type(t->second))) {
      return absl::InvalidArgumentError(absl::StrCat("feed '", f, "' is a reference (a Variable); feed a value instead"));
    }
    std::string canonical = absl::StrCat(t->first->name(), ":", t->second);
    if (!seen_feeds.insert(canonical).second) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", f, "' is fed twice"));
    }
    feed_tensors.push_back(*t);
  }
  for (const std::string& f : fetches) {
    auto t = FindTensor(*graph, f, "fetch");
    if (!t.ok()) return t.status();
    fetch_tensors.push_back(*t);
  }
  absl::Status loops = CheckOutsideLoops(*graph, feeds, feed_tensors, fetches, fetch_tensors);
  if (!loops.ok()) return loops;
  std::vector<Node*> target_nodes;
  for (const std::string& name : targets) {
    Node* n = graph->FindNode(name);
    if (n == nullptr) {
      std::vector<std::string> names;
      for (Node* node : graph->nodes()) names.push_back(node->name());
      std::string suggestion = ClosestMatch(name, names);
      return absl::NotFoundError(absl::StrCat("target '", name, "': no node of that name in the graph",
                                              suggestion.empty() ? "" : absl::StrCat(" (did you mean '", suggestion, "'?)")));
    }
    target_nodes.push_back(n);
  }

  for (size_t i = 0; i < feeds.size(); ++i) {
    auto [src, port] = feed_tensors[i];
    const std::string device = options.use_assigned_devices ? src->assigned_device() : options.device_name;
    std::string tensor_name = absl::StrCat(src->name(), ":", port);
    NodeDef def;
    def.set_name(UniqueName(*graph, absl::StrCat("_recv_", SafeName(tensor_name))));
    def.set_op("_Recv");
    (*def.mutable_attr())["tensor_type"] = MakeAttr(src->output_type(port));
    (*def.mutable_attr())["tensor_name"] = MakeAttr(tensor_name);
    (*def.mutable_attr())["send_device"] = MakeAttr(options.client_device);
    (*def.mutable_attr())["send_device_incarnation"] = MakeAttr(static_cast<int64_t>(1));
    (*def.mutable_attr())["recv_device"] = MakeAttr(device);
    (*def.mutable_attr())["client_terminated"] = MakeAttr(true);
    def.set_device(device);
    auto recv = graph->AddNode(def, /*internal=*/true);
    if (!recv.ok()) return recv.status();
    (*recv)->set_assigned_device(device);
    std::vector<const Edge*> to_move;
    for (const Edge* e : src->out_edges()) {
      if (e->src_output == port) to_move.push_back(e);
    }
    for (const Edge* e : to_move) {
      Node* dst = e->dst;
      int dst_input = e->dst_input;
      graph->RemoveEdge(e);
      graph->AddEdge(*recv, 0, dst, dst_input);
    }
    result->feed_keys.push_back(
        Rendezvous::CreateKey(options.client_device, 1, device, tensor_name));
    result->feed_nodes.push_back((*recv)->name());
  }
  for (size_t i = 0; i < fetches.size(); ++i) {
    auto [src, port] = fetch_tensors[i];
    const std::string device = options.use_assigned_devices ? src->assigned_device() : options.device_name;
    // A fetched tensor that is also fed comes from its _Recv.
    std::string tensor_name = absl::StrCat(src->name(), ":", port);
    Node* from = src;
    int from_port = port;
    if (seen_feeds.contains(tensor_name)) {
      from = graph->FindNode(absl::StrCat("_recv_", SafeName(tensor_name)));
      from_port = 0;
    }
    NodeDef def;
    def.set_name(UniqueName(*graph, absl::StrCat("_send_", SafeName(tensor_name))));
    def.set_op("_Send");
    (*def.mutable_attr())["T"] = MakeAttr(BaseType(src->output_type(port)));
    (*def.mutable_attr())["tensor_name"] = MakeAttr(tensor_name);
    (*def.mutable_attr())["send_device"] = MakeAttr(device);
    (*def.mutable_attr())["send_device_incarnation"] = MakeAttr(static_cast<int64_t>(options.device_incarnation));
    (*def.mutable_attr())["recv_device"] = MakeAttr(options.client_device);
    (*def.mutable_attr())["client_terminated"] = MakeAttr(true);
    def.set_device(device);
    auto send = graph->AddNode(def, /*internal=*/true);
    if (!send.ok()) return send.status();
    (*send)->set_assigned_device(device);
    graph->AddEdge(from, from_port, *send, 0);
    roots.push_back(*send);
    result->fetch_keys.push_back(Rendezvous::CreateKey(device, options.device_incarnation,
                                                       options.client_device, tensor_name));
  }
  roots.insert(roots.end(), target_nodes.begin(), target_nodes.end());
  PruneForRoots(roots, graph);
  return absl::OkStatus();
}

void PruneForRoots(const std::vector<Node*>& roots, Graph* graph) {
  std::vector<bool> keep = ReverseReachable(*graph, roots);
  for (Node* n : graph->nodes()) {
    if (!keep[n->id()]) graph->RemoveNode(n);
  }
}

}  // namespace sluice

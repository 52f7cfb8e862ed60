// The batch-norm fusion pass (see optimizer_batch_norm_fusion.h): each
// candidate (a Relu forward, a FusedBatchNormGradV3 backward) is matched
// and replaced by its fused node before the next is looked at.
#include "engine/graph/optimizer_batch_norm_fusion.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "engine/framework/types.h"
#include "engine/graph/algorithm.h"
#include "engine/graph/fusion_util.h"

namespace sluice {
namespace {

using fusion::DeviceRunsFused;
using fusion::IsFloat;

bool Kept(const BatchNormFusionOptions& options, const Node* n) { return options.keep && options.keep(n); }

// A member: float32 (and its U, when it has one), not kept, on `device`.
bool Fits(const BatchNormFusionOptions& options, const Node* n, const std::string& device) {
  DataType u;
  if (GetNodeAttr(n->def(), "U", &u).ok() && u != DT_FLOAT) return false;
  return IsFloat(n) && !Kept(options, n) && n->assigned_device() == device;
}

// The data edges out of n's output `port`.
std::vector<const Edge*> DataOut(const Node* n, int port) {
  std::vector<const Edge*> out;
  for (const Edge* e : n->out_edges()) {
    if (!e->IsControlEdge() && e->src_output == port) out.push_back(e);
  }
  return out;
}

// n's output `port` is read by `edge` only.
bool OnlyReader(const Node* n, int port, const Edge* edge) {
  const std::vector<const Edge*> out = DataOut(n, port);
  return out.size() == 1 && out[0] == edge;
}

// The chain's members read each other only along `chain_edges` (a second
// data edge between members, AddN(bn:0, bn:1) or a gradient that reads the
// ReluGrad twice, would leave the fused node an input from a removed node),
// and none of the fused node's inputs from outside the chain (the members'
// own, and `extra_inputs`) depends on a member (the fused node would be in a
// cycle).
bool Separable(const Graph& graph, const std::vector<Node*>& members, const std::vector<const Edge*>& chain_edges,
               std::vector<Node*> extra_inputs = {}) {
  auto member = [&](const Node* n) { return std::find(members.begin(), members.end(), n) != members.end(); };
  std::vector<Node*> roots = std::move(extra_inputs);
  for (const Node* m : members) {
    for (const Edge* e : m->in_edges()) {
      if (!member(e->src)) {
        roots.push_back(e->src);
      } else if (!e->IsControlEdge() && std::find(chain_edges.begin(), chain_edges.end(), e) == chain_edges.end()) {
        return false;
      }
    }
  }
  const std::vector<bool> upstream = ReverseReachable(graph, roots);
  for (const Node* m : members) {
    if (upstream[m->id()]) return false;
  }
  return true;
}

void CopyAttrs(const Node* from, const std::vector<const char*>& names, NodeDef* def) {
  for (const char* name : names) {
    auto it = from->def().attr().find(name);
    if (it != from->def().attr().end()) (*def->mutable_attr())[name] = it->second;
  }
}

// ---- Forward: FusedBatchNormV3 [+ AddN] + Relu ----

struct ForwardChain {
  Node* batch_norm = nullptr;
  Node* add = nullptr;  // AddN of two, or null
  int side_port = -1;   // the AddN's input that is not the batch norm's y
  Node* relu = nullptr;
};

// `e` is output 0 of a FusedBatchNormV3 that fits and that only `e` reads.
Node* BatchNormFeeding(const BatchNormFusionOptions& options, const Edge* e, const std::string& device) {
  if (e == nullptr || e->src_output != 0 || e->src->type_string() != "FusedBatchNormV3") return nullptr;
  if (!Fits(options, e->src, device) || !OnlyReader(e->src, 0, e)) return nullptr;
  return e->src;
}

bool MatchForward(const BatchNormFusionOptions& options, const Graph& graph, Node* relu, ForwardChain* chain) {
  const std::string& device = relu->assigned_device();
  if (!Fits(options, relu, device) || !DeviceRunsFused(relu, "_FusedBatchNormEx")) return false;
  const Edge* in = relu->input_edge(0);
  if (in == nullptr) return false;
  *chain = ForwardChain{};
  chain->relu = relu;
  chain->batch_norm = BatchNormFeeding(options, in, device);
  if (chain->batch_norm == nullptr) {
    Node* add = in->src;
    int64_t n = 0;
    if (in->src_output != 0 || add->type_string() != "AddN" || !GetNodeAttr(add->def(), "N", &n).ok() || n != 2 ||
        !Fits(options, add, device) || !OnlyReader(add, 0, in)) {
      return false;
    }
    for (int i = 0; i < 2 && chain->batch_norm == nullptr; ++i) {
      chain->batch_norm = BatchNormFeeding(options, add->input_edge(i), device);
      chain->side_port = 1 - i;
    }
    if (chain->batch_norm == nullptr) return false;
    chain->add = add;
  }
  std::vector<Node*> members = {chain->batch_norm, chain->relu};
  std::vector<const Edge*> chain_edges = {in};
  if (chain->add != nullptr) {
    members.push_back(chain->add);
    chain_edges.push_back(chain->add->input_edge(1 - chain->side_port));
  }
  return Separable(graph, members, chain_edges);
}

void FuseForward(const ForwardChain& chain, Graph* graph) {
  NodeDef def;
  def.set_name(chain.relu->name());
  def.set_op("_FusedBatchNormEx");
  def.set_device(chain.relu->requested_device());
  CopyAttrs(chain.batch_norm, {"T", "U", "epsilon", "exponential_avg_factor", "data_format", "is_training"}, &def);
  (*def.mutable_attr())["num_side_inputs"] = MakeAttr(int64_t{chain.add != nullptr ? 1 : 0});
  (*def.mutable_attr())["activation_mode"] = MakeAttr("Relu");
  fusion::FusedEdges edges;
  edges.data_in.assign(chain.add != nullptr ? 6 : 5, {nullptr, 0});
  const std::vector<Node*> members = {chain.relu, chain.add, chain.batch_norm};
  for (const Node* m : members) {
    if (m == nullptr) continue;
    for (const Edge* e : m->in_edges()) {
      if (e->IsControlEdge()) {
        edges.control_in.push_back(e->src);
      } else if (m == chain.batch_norm) {
        edges.data_in[e->dst_input] = {e->src, e->src_output};
      } else if (m == chain.add && e->dst_input == chain.side_port) {
        edges.data_in[5] = {e->src, e->src_output};
      }
    }
    for (const Edge* e : m->out_edges()) {
      if (e->IsControlEdge()) {
        edges.control_out.push_back(e->dst);
      } else if (m == chain.relu || (m == chain.batch_norm && e->src_output > 0)) {
        // y (the Relu's) and the batch norm's statistics, at their own ports.
        edges.data_out.push_back({e->src_output, {e->dst, e->dst_input}});
      }
    }
  }
  const std::string device = chain.relu->assigned_device();
  fusion::ReplaceWithFusedNode(graph, members, std::move(def), device, std::move(edges));
}

// ---- Backward: ReluGrad + FusedBatchNormGradV3 ----

struct BackwardChain {
  Node* relu_grad = nullptr;
  Node* grad = nullptr;            // FusedBatchNormGradV3
  std::pair<Node*, int> offset;    // the forward batch norm's offset
  bool side = false;               // the ReluGrad's output has other readers
};

bool MatchBackward(const BatchNormFusionOptions& options, const Graph& graph, Node* grad, BackwardChain* chain) {
  const std::string& device = grad->assigned_device();
  if (!Fits(options, grad, device) || !DeviceRunsFused(grad, "_FusedBatchNormGradEx")) return false;
  const Edge* dy = grad->input_edge(0);
  if (dy == nullptr || dy->src_output != 0 || dy->src->type_string() != "ReluGrad") return false;
  Node* relu_grad = dy->src;
  if (!Fits(options, relu_grad, device)) return false;
  // The offset: input 2 of the batch norm whose reserve_space_1 (output 3)
  // this gradient reads.
  const Edge* reserve = grad->input_edge(3);
  if (reserve == nullptr || reserve->src_output != 3) return false;
  const std::string forward = reserve->src->type_string();
  if (forward != "FusedBatchNormV3" && forward != "_FusedBatchNormEx") return false;
  const Edge* offset = reserve->src->input_edge(2);
  if (offset == nullptr) return false;
  *chain = BackwardChain{relu_grad, grad, {offset->src, offset->src_output}, DataOut(relu_grad, 0).size() > 1};
  // The offset, taken from the forward node, is an input of the fused node too.
  return Separable(graph, {relu_grad, grad}, {dy}, {offset->src});
}

void FuseBackward(const BackwardChain& chain, Graph* graph) {
  NodeDef def;
  def.set_name(chain.grad->name());
  def.set_op("_FusedBatchNormGradEx");
  def.set_device(chain.grad->requested_device());
  CopyAttrs(chain.grad, {"T", "U", "epsilon", "data_format", "is_training"}, &def);
  (*def.mutable_attr())["num_side_inputs"] = MakeAttr(int64_t{chain.side ? 1 : 0});
  (*def.mutable_attr())["activation_mode"] = MakeAttr("Relu");
  // y_backprop, x, scale, reserve_space_1..3, offset, y.
  fusion::FusedEdges edges;
  edges.data_in.assign(8, {nullptr, 0});
  edges.data_in[6] = chain.offset;
  for (const Edge* e : chain.relu_grad->in_edges()) {
    if (e->IsControlEdge()) edges.control_in.push_back(e->src);
    else edges.data_in[e->dst_input == 0 ? 0 : 7] = {e->src, e->src_output};
  }
  for (const Edge* e : chain.grad->in_edges()) {
    if (e->IsControlEdge()) edges.control_in.push_back(e->src);
    else if (e->dst_input > 0) edges.data_in[e->dst_input] = {e->src, e->src_output};
  }
  for (const Edge* e : chain.relu_grad->out_edges()) {
    if (e->IsControlEdge()) edges.control_out.push_back(e->dst);
    else if (e->dst != chain.grad) edges.data_out.push_back({5, {e->dst, e->dst_input}});
  }
  for (const Edge* e : chain.grad->out_edges()) {
    if (e->IsControlEdge()) edges.control_out.push_back(e->dst);
    else edges.data_out.push_back({e->src_output, {e->dst, e->dst_input}});
  }
  const std::string device = chain.grad->assigned_device();
  fusion::ReplaceWithFusedNode(graph, {chain.grad, chain.relu_grad}, std::move(def), device, std::move(edges));
}

// The names of the nodes of type `op`, taken before the graph changes.
std::vector<std::string> NamesOf(const Graph& graph, const char* op) {
  std::vector<std::string> names;
  for (const Node* n : graph.nodes()) {
    if (n->type_string() == op) names.push_back(n->name());
  }
  return names;
}

}  // namespace

BatchNormFusionResult FuseBatchNormRelu(const BatchNormFusionOptions& options, Graph* graph) {
  BatchNormFusionResult result;
  if (options.fuse_forward) {
    for (const std::string& name : NamesOf(*graph, "Relu")) {
      Node* relu = graph->FindNode(name);
      ForwardChain chain;
      if (relu == nullptr || relu->type_string() != "Relu" || !MatchForward(options, *graph, relu, &chain)) continue;
      FuseForward(chain, graph);
      ++result.forward;
      if (chain.add != nullptr) ++result.with_side;
    }
  }
  if (options.fuse_backward) {
    for (const std::string& name : NamesOf(*graph, "FusedBatchNormGradV3")) {
      Node* grad = graph->FindNode(name);
      BackwardChain chain;
      if (grad == nullptr || grad->type_string() != "FusedBatchNormGradV3" ||
          !MatchBackward(options, *graph, grad, &chain)) {
        continue;
      }
      FuseBackward(chain, graph);
      ++result.backward;
    }
  }
  return result;
}

}  // namespace sluice

// The MaxPoolGrad + ReluGrad [+ BiasAddGrad] fusion (see
// optimizer_pool_grad_fusion.h): find the chains first, then replace each by
// one node carrying the chain's edges.
#include "engine/graph/optimizer_pool_grad_fusion.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "engine/graph/algorithm.h"
#include "engine/graph/fusion_util.h"
#include "engine/platform/logging.h"

namespace sluice {
namespace {

using fusion::IsFloat;
using fusion::DeviceRunsFused;
using fusion::SoleDataOut;
using fusion::StringAttr;

struct Chain {
  Node* pool_grad = nullptr;  // MaxPoolGrad
  Node* relu_grad = nullptr;  // ReluGrad
  Node* bias_grad = nullptr;  // BiasAddGrad, or null
};

bool Fits(const PoolGradFusionOptions& options, const Node* n, const std::string& device) {
  return IsFloat(n) && !(options.keep && options.keep(n)) && n->assigned_device() == device &&
         StringAttr(n, "data_format", "NHWC") == "NHWC";
}

bool Match(const PoolGradFusionOptions& options, const Graph& graph, Node* relu_grad, Chain* chain) {
  const std::string& device = relu_grad->assigned_device();
  if (!DeviceRunsFused(relu_grad, "_FusedMaxPoolGrad") || !Fits(options, relu_grad, device)) return false;
  const Edge* gradient = relu_grad->input_edge(0);
  const Edge* features = relu_grad->input_edge(1);
  if (gradient == nullptr || features == nullptr || gradient->src_output != 0) return false;
  Node* pool_grad = gradient->src;
  if (pool_grad->type_string() != "MaxPoolGrad" || !Fits(options, pool_grad, device)) return false;
  if (SoleDataOut(pool_grad) != gradient) return false;
  // The mask must be taken on the tensor the pool's windows searched.
  const Edge* orig_input = pool_grad->input_edge(0);
  if (orig_input == nullptr || orig_input->src != features->src || orig_input->src_output != features->src_output) {
    return false;
  }
  chain->pool_grad = pool_grad;
  chain->relu_grad = relu_grad;
  chain->bias_grad = nullptr;
  if (options.fuse_bias_grad) {
    for (const Edge* e : relu_grad->out_edges()) {
      if (e->IsControlEdge() || e->src_output != 0 || e->dst->type_string() != "BiasAddGrad") continue;
      if (Fits(options, e->dst, device)) {
        chain->bias_grad = e->dst;
        break;
      }
    }
  }
  // The fused node takes every input of the chain: one that depends on a
  // member (through a control edge out of it) would make a cycle.
  std::vector<Node*> roots;
  for (Node* n : {chain->relu_grad, chain->bias_grad}) {
    if (n == nullptr) continue;
    for (const Edge* e : n->in_edges()) {
      if (e->src != pool_grad && e->src != relu_grad) roots.push_back(e->src);
    }
  }
  const std::vector<bool> upstream = ReverseReachable(graph, roots);
  return !upstream[pool_grad->id()] && !upstream[relu_grad->id()];
}

NodeDef FusedDef(const Chain& chain) {
  NodeDef def;
  def.set_name(chain.relu_grad->name());
  def.set_op("_FusedMaxPoolGrad");
  def.set_device(chain.relu_grad->requested_device());
  for (const char* name : {"T", "ksize", "strides", "padding", "explicit_paddings", "data_format"}) {
    auto it = chain.pool_grad->def().attr().find(name);
    if (it != chain.pool_grad->def().attr().end()) (*def.mutable_attr())[name] = it->second;
  }
  return def;
}

void Fuse(const Chain& chain, Graph* graph) {
  const std::vector<Node*> members = {chain.bias_grad, chain.relu_grad, chain.pool_grad};
  auto member = [&](const Node* n) { return std::find(members.begin(), members.end(), n) != members.end(); };
  fusion::FusedEdges edges;
  edges.data_in.assign(3, {nullptr, 0});  // MaxPoolGrad's three inputs
  for (const Node* n : members) {
    if (n == nullptr) continue;
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge()) edges.control_in.push_back(e->src);
      else if (n == chain.pool_grad) edges.data_in[e->dst_input] = {e->src, e->src_output};
    }
    for (const Edge* e : n->out_edges()) {
      if (e->IsControlEdge()) {
        edges.control_out.push_back(e->dst);
      } else if (!member(e->dst)) {
        // Only ReluGrad's and BiasAddGrad's outputs leave the chain.
        CHECK(n != chain.pool_grad) << "MaxPoolGrad's output has a consumer outside the chain";
        edges.data_out.push_back({n == chain.relu_grad ? 0 : 1, {e->dst, e->dst_input}});
      }
    }
  }
  const std::string device = chain.relu_grad->assigned_device();
  fusion::ReplaceWithFusedNode(graph, members, FusedDef(chain), device, std::move(edges));
}

}  // namespace

int FuseMaxPoolReluGrad(const PoolGradFusionOptions& options, Graph* graph) {
  int fused = 0;
  std::vector<std::string> candidates;
  for (Node* n : graph->nodes()) {
    if (n->type_string() == "ReluGrad") candidates.push_back(n->name());
  }
  for (const std::string& name : candidates) {
    Node* relu_grad = graph->FindNode(name);
    Chain chain;
    if (relu_grad == nullptr || relu_grad->type_string() != "ReluGrad") continue;
    if (!Match(options, *graph, relu_grad, &chain)) continue;
    Fuse(chain, graph);
    ++fused;
  }
  return fused;
}

}  // namespace sluice

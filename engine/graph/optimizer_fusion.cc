// The bias + activation fusion pass (see optimizer_fusion.h): find the chains
// first, then replace each by one node carrying the chain's edges.
#include "engine/graph/optimizer_fusion.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "engine/framework/device_name.h"
#include "engine/framework/types.h"
#include "engine/graph/algorithm.h"
#include "engine/graph/fusion_util.h"
#include "engine/platform/logging.h"

namespace sluice {
namespace {

struct Chain {
  Node* product = nullptr;   // MatMul or Conv2D
  Node* bias_add = nullptr;
  Node* relu = nullptr;      // null: the chain ends at the BiasAdd
  Node* last() const { return relu != nullptr ? relu : bias_add; }
};

using fusion::IsFloat;
using fusion::DeviceRunsFused;
using fusion::SoleDataOut;
using fusion::StringAttr;

bool Kept(const FusionOptions& options, const Node* n) { return options.keep && options.keep(n); }

// Can `p` (the producer feeding a BiasAdd) head a fused chain?
bool ProductFits(const FusionOptions& options, const Node* p) {
  if (!IsFloat(p) || Kept(options, p)) return false;
  if (p->type_string() == "MatMul") return options.fuse_matmul;
  if (p->type_string() != "Conv2D" || !options.fuse_conv2d) return false;
  if (StringAttr(p, "data_format", "NHWC") != "NHWC") return false;
  const std::string padding = StringAttr(p, "padding", "");
  if (padding != "SAME" && padding != "VALID") return false;
  std::vector<int64_t> dilations;
  if (GetNodeAttr(p->def(), "dilations", &dilations).ok()) {
    for (int64_t d : dilations) {
      if (d != 1) return false;
    }
  }
  return true;
}

bool Match(const FusionOptions& options, const Graph& graph, Node* bias_add, Chain* chain) {
  if (!IsFloat(bias_add) || Kept(options, bias_add)) return false;
  if (StringAttr(bias_add, "data_format", "NHWC") != "NHWC") return false;
  const Edge* in = bias_add->input_edge(0);
  if (in == nullptr || in->src_output != 0 || SoleDataOut(in->src) != in) return false;
  Node* product = in->src;
  if (!ProductFits(options, product)) return false;
  if (!DeviceRunsFused(bias_add, product->type_string() == "MatMul" ? "_FusedMatMul" : "_FusedConv2D") ||
      product->assigned_device() != bias_add->assigned_device()) {
    return false;
  }
  chain->product = product;
  chain->bias_add = bias_add;
  chain->relu = nullptr;
  if (options.fuse_relu) {
    const Edge* out = SoleDataOut(bias_add);
    if (out != nullptr && out->dst->type_string() == "Relu" && out->dst_input == 0 && IsFloat(out->dst) &&
        !Kept(options, out->dst) && out->dst->assigned_device() == bias_add->assigned_device()) {
      chain->relu = out->dst;
    }
  }
  // The fused node takes every input of the chain. One that depends on the
  // product or the BiasAdd (through a control edge out of them) would make a
  // cycle; the product's own inputs cannot (the graph has none).
  std::vector<Node*> roots;
  for (Node* n : {chain->bias_add, chain->relu}) {
    if (n == nullptr) continue;
    for (const Edge* e : n->in_edges()) {
      if (e->src != product && e->src != bias_add) roots.push_back(e->src);
    }
  }
  const std::vector<bool> upstream = ReverseReachable(graph, roots);
  return !upstream[product->id()] && !upstream[bias_add->id()];
}

// The fused node's NodeDef: the product's attrs (those the fused op has) and
// the epilogue's.
NodeDef FusedDef(const Chain& chain) {
  const Node* p = chain.product;
  const bool matmul = p->type_string() == "MatMul";
  NodeDef def;
  def.set_name(chain.last()->name());
  def.set_op(matmul ? "_FusedMatMul" : "_FusedConv2D");
  def.set_device(chain.last()->requested_device());
  const std::vector<const char*> carried =
      matmul ? std::vector<const char*>{"T", "transpose_a", "transpose_b"}
             : std::vector<const char*>{"T", "strides", "padding", "explicit_paddings", "data_format", "dilations",
                                        "use_cudnn_on_gpu"};
  for (const char* name : carried) {
    auto it = p->def().attr().find(name);
    if (it != p->def().attr().end()) (*def.mutable_attr())[name] = it->second;
  }
  (*def.mutable_attr())["num_args"] = MakeAttr(int64_t{1});
  AttrValue fused_ops;
  fused_ops.mutable_list()->add_s("BiasAdd");
  if (chain.relu != nullptr) fused_ops.mutable_list()->add_s("Relu");
  (*def.mutable_attr())["fused_ops"] = fused_ops;
  return def;
}

void Fuse(const Chain& chain, Graph* graph) {
  // Inputs: a, b (or input, filter), bias; then the edges to carry over.
  fusion::FusedEdges edges;
  edges.data_in.assign(3, {nullptr, 0});
  for (const Edge* e : chain.product->in_edges()) {
    if (e->IsControlEdge()) edges.control_in.push_back(e->src);
    else edges.data_in[e->dst_input] = {e->src, e->src_output};
  }
  for (const Edge* e : chain.bias_add->in_edges()) {
    if (e->IsControlEdge()) edges.control_in.push_back(e->src);
    else if (e->dst_input == 1) edges.data_in[2] = {e->src, e->src_output};
  }
  if (chain.relu != nullptr) {
    for (const Edge* e : chain.relu->in_edges()) {
      if (e->IsControlEdge()) edges.control_in.push_back(e->src);
    }
  }
  for (const Node* n : {chain.product, chain.bias_add, chain.relu}) {
    if (n == nullptr) continue;
    for (const Edge* e : n->out_edges()) {
      if (e->IsControlEdge()) edges.control_out.push_back(e->dst);
      else if (n == chain.last()) edges.data_out.push_back({e->src_output, {e->dst, e->dst_input}});
    }
  }
  const std::string device = chain.last()->assigned_device();
  fusion::ReplaceWithFusedNode(graph, {chain.relu, chain.bias_add, chain.product}, FusedDef(chain), device,
                               std::move(edges));
}

}  // namespace

int FuseBiasActivation(const FusionOptions& options, Graph* graph) {
  // Each chain is matched on the graph as the fusions before it left it
  // (chains never share a node, but a cycle check sees the whole graph).
  int fused = 0;
  std::vector<std::string> candidates;
  for (Node* n : graph->nodes()) {
    if (n->type_string() == "BiasAdd") candidates.push_back(n->name());
  }
  for (const std::string& name : candidates) {
    Node* bias_add = graph->FindNode(name);
    Chain chain;
    if (bias_add == nullptr || bias_add->type_string() != "BiasAdd") continue;
    if (!Match(options, *graph, bias_add, &chain)) continue;
    Fuse(chain, graph);
    ++fused;
  }
  return fused;
}

}  // namespace sluice

// The data format pass (see optimizer_layout.h): convert the layout nodes,
// then the nodes between them in topological order, then drop inverse pairs
// of the pass's Transposes.
#include "engine/graph/optimizer_layout.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/framework/device_name.h"
#include "engine/framework/node_def_util.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/tensor.h"
#include "engine/framework/types.h"
#include "engine/graph/algorithm.h"
#include "engine/graph/graph_builder.h"
#include "engine/platform/logging.h"

namespace sluice {
namespace {

// Where a node keeps its 4-D tensors: data inputs, shape inputs (int32
// vectors in the node's format) and outputs.
struct LayoutPorts {
  std::vector<int> data_inputs;
  std::vector<int> shape_inputs;
  std::vector<int> outputs;
};

// The layout nodes: their format is an attr, their 4-D tensors use it.
const LayoutPorts* LayoutNodePorts(const std::string& op) {
  static const auto* table = new absl::flat_hash_map<std::string, LayoutPorts>{
      {"Conv2D", {{0}, {}, {0}}},
      {"Conv2DBackpropInput", {{2}, {0}, {0}}},
      {"Conv2DBackpropFilter", {{0, 2}, {}, {}}},  // the filter gradient is HWIO in both formats
      {"MaxPool", {{0}, {}, {0}}},
      {"MaxPoolGrad", {{0, 1, 2}, {}, {0}}},
      {"AvgPool", {{0}, {}, {0}}},
      {"AvgPoolGrad", {{1}, {0}, {0}}},
  };
  auto it = table->find(op);
  return it == table->end() ? nullptr : &it->second;
}

// Nodes that compute the same in any format: the bias ops (any rank, format
// attr) and element-wise ops whose inputs all have the output's shape.
bool BetweenNodePorts(const Node* n, LayoutPorts* ports) {
  static const auto* elementwise = new absl::flat_hash_set<std::string>{
      "Relu",     "Relu6",        "Elu",          "Selu",     "Softplus",     "LeakyRelu",     "Sigmoid",
      "Tanh",     "Identity",     "ReluGrad",     "Relu6Grad", "EluGrad",     "SeluGrad",      "SoftplusGrad",
      "LeakyReluGrad", "SigmoidGrad", "TanhGrad", "AddN"};
  if (n->type_string() == "BiasAdd") {
    *ports = LayoutPorts{{0}, {}, {0}};
  } else if (n->type_string() == "BiasAddGrad") {
    *ports = LayoutPorts{{0}, {}, {}};  // the bias gradient is 1-D
  } else if (elementwise->contains(n->type_string()) && n->num_outputs() == 1 && n->num_inputs() > 0) {
    *ports = LayoutPorts{{}, {}, {0}};
    for (int i = 0; i < n->num_inputs(); ++i) ports->data_inputs.push_back(i);
  } else {
    return false;
  }
  return true;
}

std::string FormatOf(const Node* n) {
  std::string format;
  return GetNodeAttr(n->def(), "data_format", &format).ok() ? format : "NHWC";
}

// perm[i] = from.find(to[i]): a Transpose by it takes `from` to `to`, and the
// same indexing rearranges a strides/ksize list.
std::vector<int64_t> PermBetween(const std::string& from, const std::string& to) {
  std::vector<int64_t> perm;
  for (char c : to) perm.push_back(static_cast<int64_t>(from.find(c)));
  return perm;
}

class LayoutPass {
 public:
  LayoutPass(const LayoutOptions& options, Graph* graph) : options_(options), graph_(graph) {}

  LayoutResult Run() {
    for (Node* n : graph_->nodes()) {
      const LayoutPorts* ports = LayoutNodePorts(n->type_string());
      if (ports == nullptr || ours_.contains(n)) continue;
      const std::string from = FormatOf(n);
      const std::string to = DeviceFormat(n);
      if ((from != "NHWC" && from != "NCHW") || from == to || !Convertible(n, *ports)) continue;
      Convert(n, *ports, from, to);
    }
    // No layout node converted: nothing between them can be fed by ours (the
    // usual case, an NHWC model; the topological sort is skipped).
    if (ours_.empty()) return result_;
    const absl::flat_hash_set<const Node*> leading = BetweenNodesLeadingToLayoutNodes();
    for (Node* n : TopologicalOrder(*graph_)) {
      LayoutPorts ports;
      if (ours_.contains(n) || !BetweenNodePorts(n, &ports)) continue;
      // BiasAddGrad's result is 1-D: converting it only saves Transposes.
      if (!leading.contains(n) && !ports.outputs.empty()) continue;
      std::string inner, outer;
      if (!FedByOurTransposes(n, ports, &inner, &outer) || !Convertible(n, ports)) continue;
      Convert(n, ports, outer, inner);
    }
    entries_.clear();  // only Convert shares entries; nodes go from here on
    CancelInversePairs();
    result_.transposes = static_cast<int>(ours_.size());
    return result_;
  }

 private:
  struct Transposition {
    std::string from, to;
    bool into_converted = false;  // made for a converted node's input (else for its output)
  };

  std::string DeviceFormat(const Node* n) const {
    auto d = ParseDeviceName(n->assigned_device());
    if (!d.ok() || !d->has_type) return "NHWC";
    auto it = options_.format_by_device_type.find(d->type);
    return it == options_.format_by_device_type.end() ? "NHWC" : it->second;
  }

  bool DeviceHasKernel(const Node* n, const char* op, DataType type, const char* type_attr) const {
    auto d = ParseDeviceName(n->assigned_device());
    if (!d.ok() || !d->has_type) return false;
    NodeDef probe;
    probe.set_op(op);
    (*probe.mutable_attr())[type_attr] = MakeAttr(type);
    if (std::string(op) == "Transpose") (*probe.mutable_attr())["Tperm"] = MakeAttr(DT_INT32);
    return KernelRegistry::Global()->HasKernel(d->type, probe);
  }

  // Every rewired input is connected and the device can transpose (or
  // permute) it.
  bool Convertible(const Node* n, const LayoutPorts& ports) const {
    for (int i : ports.data_inputs) {
      const Edge* e = n->input_edge(i);
      if (e == nullptr) return false;
      if (!DeviceHasKernel(n, "Transpose", BaseType(n->input_type(i)), "T")) return false;
    }
    for (int i : ports.shape_inputs) {
      const Edge* e = n->input_edge(i);
      if (e == nullptr) return false;
      if (!DeviceHasKernel(n, "DataFormatVecPermute", BaseType(n->input_type(i)), "T")) return false;
    }
    for (int o : ports.outputs) {
      if (!DeviceHasKernel(n, "Transpose", BaseType(n->output_type(o)), "T")) return false;
    }
    return true;
  }

  // The nodes between layout nodes worth converting: those whose result
  // reaches a converted layout node (through one of our Transposes into it)
  // by data edges through such nodes only. Converting one that reaches none
  // (a Relu before a Reshape, say) would only move the Transpose after it.
  absl::flat_hash_set<const Node*> BetweenNodesLeadingToLayoutNodes() const {
    std::vector<const Node*> stack;
    for (const auto& [t, how] : ours_) {
      if (how.into_converted) stack.push_back(t->input_edge(0)->src);
    }
    absl::flat_hash_set<const Node*> leading;
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      LayoutPorts ports;
      if (ours_.contains(n) || leading.contains(n) || !BetweenNodePorts(n, &ports)) continue;
      leading.insert(n);
      for (int i : ports.data_inputs) {
        if (const Edge* e = n->input_edge(i); e != nullptr) stack.push_back(e->src);
      }
    }
    return leading;
  }

  // Whether every data input of `n` leaves one of our Transposes of the same
  // formats, on n's device (and, for the bias ops, into n's format); sets the
  // Transposes' source (`inner`) and result (`outer`) formats.
  bool FedByOurTransposes(const Node* n, const LayoutPorts& ports, std::string* inner, std::string* outer) const {
    for (size_t k = 0; k < ports.data_inputs.size(); ++k) {
      const Edge* e = n->input_edge(ports.data_inputs[k]);
      if (e == nullptr) return false;
      auto it = ours_.find(e->src);
      if (it == ours_.end() || e->src->assigned_device() != n->assigned_device()) return false;
      if (k == 0) {
        *inner = it->second.from;
        *outer = it->second.to;
      } else if (it->second.from != *inner || it->second.to != *outer) {
        return false;
      }
    }
    return n->def().attr().count("data_format") == 0 || FormatOf(n) == *outer;
  }

  // The node `out` a builder of the pass made (CHECKed: the pass's own
  // defs), placed on `device`.
  static Node* Placed(const GraphBuilder& b, Output out, const std::string& device) {
    CHECK(b.ok()) << "the layout pass made an invalid node: " << b.status();
    out.node->set_assigned_device(device);
    return out.node;
  }

  // A Transpose of src:port from `from` to `to`, on `device`, with its own
  // permutation constant, which runs after `src` (so it joins src's frame).
  Node* AddTranspose(Node* src, int port, const std::string& from, const std::string& to, const std::string& device,
                     const std::string& base, bool into_converted) {
    const std::vector<int64_t> perm = PermBetween(from, to);
    GraphBuilder b(graph_);
    Output perm_const = b.WithControlDependencies({src}).Const(
        base + "_perm", Tensor::FromVector<int32_t>(std::vector<int32_t>(perm.begin(), perm.end())));
    Placed(b, perm_const, device);
    Node* t = Placed(b, b.Op(base, "Transpose", {Output{src, port}, perm_const}), device);
    ours_[t] = Transposition{from, to, into_converted};
    return t;
  }

  // DataFormatVecPermute(x) from `from` to `to`, on `device`, after `controls`.
  Node* AddVecPermute(Output x, const std::string& name, const std::string& from, const std::string& to,
                      const std::string& device, const std::vector<Node*>& controls = {}) {
    GraphBuilder b = GraphBuilder(graph_).WithControlDependencies(controls);
    return Placed(b,
                  b.Op(name, "DataFormatVecPermute", {x}, {{"src_format", MakeAttr(from)}, {"dst_format", MakeAttr(to)}}),
                  device);
  }

  void Convert(Node* n, const LayoutPorts& ports, const std::string& from, const std::string& to) {
    const std::string device = n->assigned_device();
    const std::string base = absl::StrCat(n->name(), "/_layout");
    std::vector<Node*> controls;
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge()) controls.push_back(e->src);
    }
    for (int i : ports.data_inputs) {
      const Edge* e = n->input_edge(i);
      Node* src = e->src;
      const int port = e->src_output;
      graph_->RemoveEdge(e);
      // One Transpose per tensor, format and device, shared by its readers;
      // a node with control inputs gets its own, which waits for them too
      // (the node read its inputs, refs included, only after them).
      const std::string name = absl::StrCat(base, "_to_", to, "_", i);
      Node* entry = nullptr;
      if (controls.empty()) {
        Node*& shared = entries_[{src, port, to, device}];
        if (shared == nullptr) shared = AddTranspose(src, port, from, to, device, name, /*into_converted=*/true);
        entry = shared;
      } else {
        entry = AddTranspose(src, port, from, to, device, name, /*into_converted=*/true);
        for (Node* c : controls) graph_->AddControlEdge(c, entry);
      }
      graph_->AddEdge(entry, 0, n, i);
    }
    for (int i : ports.shape_inputs) {
      const Edge* e = n->input_edge(i);
      Node* src = e->src;
      const int port = e->src_output;
      graph_->RemoveEdge(e);
      Node* permute =
          AddVecPermute(Output{src, port}, absl::StrCat(base, "_shape_", i, "_to_", to), from, to, device, controls);
      graph_->AddEdge(permute, 0, n, i);
    }
    for (int o : ports.outputs) {
      std::vector<const Edge*> outs;
      for (const Edge* e : n->out_edges()) {
        if (!e->IsControlEdge() && e->src_output == o) outs.push_back(e);
      }
      if (outs.empty()) continue;
      Node* back = AddTranspose(n, o, to, from, device, absl::StrCat(base, "_to_", from, "_out_", o),
                                /*into_converted=*/false);
      for (const Edge* e : outs) {
        Node* dst = e->dst;
        const int input = e->dst_input;
        graph_->RemoveEdge(e);
        graph_->AddEdge(back, 0, dst, input);
      }
    }
    auto* attrs = n->mutable_def()->mutable_attr();
    if (attrs->count("data_format") != 0) (*attrs)["data_format"] = MakeAttr(to);
    const std::vector<int64_t> perm = PermBetween(from, to);
    for (const char* name : {"strides", "ksize", "dilations", "explicit_paddings"}) {
      std::vector<int64_t> values;
      if (!GetNodeAttr(n->def(), name, &values).ok() || values.empty()) continue;
      const size_t width = values.size() / 4;  // 2 for explicit_paddings' (before, after) pairs
      if (values.size() != 4 * width) continue;  // the kernel reports the bad list
      std::vector<int64_t> permuted;
      for (int64_t p : perm) {
        for (size_t j = 0; j < width; ++j) permuted.push_back(values[p * width + j]);
      }
      (*attrs)[name] = MakeAttr(permuted);
    }
    ++result_.converted_nodes;
  }

  void RemoveOurs(Node* t) {
    Node* perm = t->input_edge(1)->src;
    ours_.erase(t);
    graph_->RemoveNode(t);
    if (perm->out_edges().empty()) graph_->RemoveNode(perm);
  }

  // Shape(t(x)) for a Transpose t of ours from `from` to `to` becomes
  // DataFormatVecPermute(Shape(x), from -> to): a gradient's Shape of a
  // converted node's input then no longer keeps a Transpose running just for
  // its dims.
  void ShapesBeforeTransposes() {
    std::vector<const Edge*> shape_reads;
    for (const auto& [t, unused] : ours_) {
      for (const Edge* e : t->out_edges()) {
        if (!e->IsControlEdge() && e->dst->type_string() == "Shape") shape_reads.push_back(e);
      }
    }
    for (const Edge* e : shape_reads) {
      Node* t = e->src;
      Node* shape = e->dst;
      if (!DeviceHasKernel(shape, "DataFormatVecPermute", BaseType(shape->output_type(0)), "T")) continue;
      const Transposition how = ours_.at(t);
      const Edge* x = t->input_edge(0);
      std::vector<const Edge*> outs;
      for (const Edge* o : shape->out_edges()) {
        if (!o->IsControlEdge()) outs.push_back(o);
      }
      Node* permute = AddVecPermute(Output{shape, 0}, absl::StrCat(shape->name(), "/_layout_to_", how.to), how.from,
                                    how.to, shape->assigned_device());
      for (const Edge* o : outs) {
        Node* dst = o->dst;
        const int input = o->dst_input;
        graph_->RemoveEdge(o);
        graph_->AddEdge(permute, 0, dst, input);
      }
      graph_->RemoveEdge(e);
      graph_->AddEdge(x->src, x->src_output, shape, 0);
    }
  }

  // t2(t1(x)) with t2 undoing t1: t2's consumers read x. Then every
  // Transpose of ours that nothing reads goes.
  void CancelInversePairs() {
    std::vector<Node*> transposes;
    for (const auto& [t, unused] : ours_) transposes.push_back(const_cast<Node*>(t));
    std::sort(transposes.begin(), transposes.end(), [](const Node* a, const Node* b) { return a->id() < b->id(); });
    for (Node* t2 : transposes) {
      const Edge* in = t2->input_edge(0);
      auto t1 = ours_.find(in->src);
      if (t1 == ours_.end() || t1->second.from != ours_[t2].to || t1->second.to != ours_[t2].from) continue;
      const Edge* x = in->src->input_edge(0);
      std::vector<const Edge*> outs(t2->out_edges().begin(), t2->out_edges().end());
      for (const Edge* e : outs) {
        if (e->IsControlEdge()) continue;  // ours have none out
        Node* dst = e->dst;
        const int input = e->dst_input;
        graph_->RemoveEdge(e);
        graph_->AddEdge(x->src, x->src_output, dst, input);
      }
      RemoveOurs(t2);
      ++result_.cancelled_transposes;
    }
    ShapesBeforeTransposes();
    for (bool removed = true; removed;) {
      removed = false;
      for (Node* t : graph_->nodes()) {
        if (ours_.contains(t) && t->out_edges().empty()) {
          RemoveOurs(t);
          ++result_.cancelled_transposes;
          removed = true;
        }
      }
    }
  }

  const LayoutOptions& options_;
  Graph* graph_;
  absl::flat_hash_map<const Node*, Transposition> ours_;
  // Transposes into a node's format by (source, output, format, device).
  absl::flat_hash_map<std::tuple<const Node*, int, std::string, std::string>, Node*> entries_;
  LayoutResult result_;
};

}  // namespace

LayoutResult ConvertDataFormats(const LayoutOptions& options, Graph* graph) {
  return LayoutPass(options, graph).Run();
}

}  // namespace sluice

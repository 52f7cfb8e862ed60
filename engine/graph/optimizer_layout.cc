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
#include "engine/graph/control_flow.h"
#include "engine/graph/graph_builder.h"
#include "engine/platform/logging.h"

namespace sluice {
namespace {

// Where a node keeps its 4-D tensors: data inputs, shape inputs (int32
// vectors in the node's format) and outputs; and whether a data_format attr
// (NHWC when absent) says which format they are in.
struct LayoutPorts {
  std::vector<int> data_inputs;
  std::vector<int> shape_inputs;
  std::vector<int> outputs;
  bool has_format = true;
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

// Nodes that compute the same in any format: the bias and batch norm ops
// (format attr; the per-channel tensors are 1-D) and element-wise ops. A node
// between is converted only when every data input leaves a Transpose between
// the same formats, so every input is 4-D and moves the same way, and
// broadcasting (x + y with y of [N, C, 1, 1]) pairs the same elements.
bool BetweenNodePorts(const Node* n, LayoutPorts* ports) {
  static const auto* elementwise = new absl::flat_hash_set<std::string>{
      "Relu",     "Relu6",        "Elu",          "Selu",     "Softplus",     "LeakyRelu",     "Sigmoid",
      "Tanh",     "Identity",     "ReluGrad",     "Relu6Grad", "EluGrad",     "SeluGrad",      "SoftplusGrad",
      "LeakyReluGrad", "SigmoidGrad", "TanhGrad", "AddN",     "Add",          "AddV2",         "Sub",
      "Mul",      "RealDiv",      "Maximum",      "Minimum",  "SquaredDifference"};
  const std::string& op = n->type_string();
  if (op == "BiasAdd") {
    *ports = LayoutPorts{{0}, {}, {0}};
  } else if (op == "BiasAddGrad") {
    *ports = LayoutPorts{{0}, {}, {}};  // the bias gradient is 1-D
  } else if (op == "FusedBatchNormV3") {
    *ports = LayoutPorts{{0}, {}, {0}};  // x in, y out; the statistics are per channel
  } else if (op == "FusedBatchNormGradV3") {
    *ports = LayoutPorts{{0, 1}, {}, {0}};  // y_backprop and x in, x_backprop out
  } else if (elementwise->contains(op) && n->num_outputs() == 1 && n->num_inputs() > 0) {
    *ports = LayoutPorts{{}, {}, {0}, /*has_format=*/false};
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

// The formats a user's Transpose by a constant 4-D permutation moves between,
// when the permutation is NHWC <-> NCHW and nothing else orders the node: no
// control inputs or outputs, no control inputs on the permutation (which a
// cond's branch may make dead), not a read of a variable's reference (which
// its readers would then read at their own time, after updates the
// Transpose ran before).
bool UserTransposeFormats(const Node* u, std::string* from, std::string* to) {
  if (u->type_string() != "Transpose" || u->num_inputs() != 2) return false;
  const Edge* x = u->input_edge(0);
  const Edge* perm_edge = u->input_edge(1);
  if (x == nullptr || perm_edge == nullptr || IsRefType(x->src->output_type(x->src_output))) return false;
  for (const Edge* e : u->in_edges()) {
    if (e->IsControlEdge()) return false;
  }
  for (const Edge* e : u->out_edges()) {
    if (e->IsControlEdge()) return false;
  }
  if (perm_edge->src->type_string() != "Const" || !perm_edge->src->in_edges().empty()) return false;
  TensorProto proto;
  if (!GetNodeAttr(perm_edge->src->def(), "value", &proto).ok()) return false;
  auto perm = Tensor::FromProto(proto);
  if (!perm.ok() || perm->dims() != 1 || perm->NumElements() != 4) return false;
  std::vector<int64_t> values;
  for (int64_t i = 0; i < 4; ++i) {
    if (perm->dtype() == DT_INT32) {
      values.push_back(perm->data<int32_t>()[i]);
    } else if (perm->dtype() == DT_INT64) {
      values.push_back(perm->data<int64_t>()[i]);
    } else {
      return false;
    }
  }
  for (const auto& [a, b] : {std::pair<const char*, const char*>{"NHWC", "NCHW"}, {"NCHW", "NHWC"}}) {
    if (values == PermBetween(a, b)) {
      *from = a;
      *to = b;
      return true;
    }
  }
  return false;
}

class LayoutPass {
 public:
  LayoutPass(const LayoutOptions& options, Graph* graph) : options_(options), graph_(graph) {}

  LayoutResult Run() {
    // The nodes whose outputs are in the root frame: a permutation Const
    // after one of them needs no control edge (one into a loop does). Nodes
    // the pass makes have later ids and get the edge.
    std::vector<ControlFlowInfo> frames;
    if (BuildControlFlowInfo(*graph_, &frames).ok()) {
      outputs_in_root_frame_.assign(frames.size(), false);
      for (Node* n : graph_->nodes()) {
        outputs_in_root_frame_[n->id()] = frames[n->id()].frame_name.empty() && !n->IsEnter();
      }
    }
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

  // Whether `later` takes back what `earlier` did.
  static bool Undoes(const Transposition& later, const Transposition& earlier) {
    return later.from == earlier.to && later.to == earlier.from;
  }

  bool Kept(const Node* n) const { return options_.keep && options_.keep(n); }

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
  // reaches a converted layout node (through one of our Transposes into it),
  // or a user's Transpose that may undo ours, by data edges through such
  // nodes only. Converting one that reaches none (a Relu before a Reshape,
  // say) would only move the Transpose after it.
  absl::flat_hash_set<const Node*> BetweenNodesLeadingToLayoutNodes() const {
    std::vector<const Node*> stack;
    for (const auto& [t, how] : ours_) {
      if (how.into_converted) stack.push_back(t->input_edge(0)->src);
    }
    // A user's NHWC <-> NCHW Transpose counts as one: converting the nodes
    // before it brings ours next to it, where the two cancel.
    for (const Node* n : graph_->nodes()) {
      std::string from, to;
      if (!ours_.contains(n) && UserTransposeFormats(n, &from, &to)) stack.push_back(n->input_edge(0)->src);
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

  // The formats `t` moves between when it is one of our Transposes or a
  // user's NHWC <-> NCHW one that the pass may bypass.
  bool TranspositionOf(const Node* t, Transposition* how) const {
    if (auto it = ours_.find(t); it != ours_.end()) {
      *how = it->second;
      return true;
    }
    return !Kept(t) && UserTransposeFormats(t, &how->from, &how->to);
  }

  // Whether every data input of `n` leaves a Transpose (ours, or a user's
  // the pass may bypass) of the same formats, on n's device (and, for the
  // ops with a format attr, into n's format); sets the Transposes' source
  // (`inner`) and result (`outer`) formats. (A gradient's ReluGrad reads a
  // user's Transpose of the loss's gradient, and one of ours of the relu.)
  bool FedByOurTransposes(const Node* n, const LayoutPorts& ports, std::string* inner, std::string* outer) const {
    for (size_t k = 0; k < ports.data_inputs.size(); ++k) {
      const Edge* e = n->input_edge(ports.data_inputs[k]);
      if (e == nullptr) return false;
      Transposition how;
      if (!TranspositionOf(e->src, &how) || e->src->assigned_device() != n->assigned_device()) return false;
      if (k == 0) {
        *inner = how.from;
        *outer = how.to;
      } else if (how.from != *inner || how.to != *outer) {
        return false;
      }
    }
    return !ports.has_format || FormatOf(n) == *outer;
  }

  // The node `out` a builder of the pass made (CHECKed: the pass's own
  // defs), placed on `device`.
  static Node* Placed(const GraphBuilder& b, Output out, const std::string& device) {
    CHECK(b.ok()) << "the layout pass made an invalid node: " << b.status();
    out.node->set_assigned_device(device);
    return out.node;
  }

  // A Transpose of src:port from `from` to `to`, on `device`, with its own
  // permutation constant, which runs after `src` when src's outputs are in
  // a loop (so it joins src's frame and iteration).
  Node* AddTranspose(Node* src, int port, const std::string& from, const std::string& to, const std::string& device,
                     const std::string& base, bool into_converted) {
    const std::vector<int64_t> perm = PermBetween(from, to);
    const bool in_root_frame =
        src->id() < static_cast<int>(outputs_in_root_frame_.size()) && outputs_in_root_frame_[src->id()];
    GraphBuilder b(graph_);
    Output perm_const = b.WithControlDependencies(in_root_frame ? std::vector<Node*>{} : std::vector<Node*>{src})
                            .Const(base + "_perm",
                                   Tensor::FromVector<int32_t>(std::vector<int32_t>(perm.begin(), perm.end())));
    Placed(b, perm_const, device);
    Node* t = Placed(b, b.Op(base, "Transpose", {Output{src, port}, perm_const}), device);
    ours_[t] = Transposition{from, to, into_converted};
    return t;
  }

  // DataFormatVecPermute(x) from `from` to `to`, on `device`, after `controls`.
  Node* AddVecPermute(Output x, const std::string& name, const std::string& from, const std::string& to,
                      const std::string& device, const std::vector<Node*>& controls = {}) {
    GraphBuilder b = GraphBuilder(graph_).WithControlDependencies(controls);
    Node* p = Placed(
        b, b.Op(name, "DataFormatVecPermute", {x}, {{"src_format", MakeAttr(from)}, {"dst_format", MakeAttr(to)}}),
        device);
    permutes_[p] = Transposition{from, to};
    return p;
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
      MoveReaders(outs, back, 0);
    }
    auto* attrs = n->mutable_def()->mutable_attr();
    if (ports.has_format) (*attrs)["data_format"] = MakeAttr(to);
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

  // Each of `edges` (data edges) reads src:port instead.
  void MoveReaders(const std::vector<const Edge*>& edges, Node* src, int port) {
    for (const Edge* e : edges) {
      Node* dst = e->dst;
      const int input = e->dst_input;
      graph_->RemoveEdge(e);
      graph_->AddEdge(src, port, dst, input);
    }
  }

  static std::vector<const Edge*> DataOutEdges(const Node* n) {
    std::vector<const Edge*> outs;
    for (const Edge* e : n->out_edges()) {
      if (!e->IsControlEdge()) outs.push_back(e);
    }
    return outs;
  }

  void RemoveOurs(Node* t) {
    Node* perm = t->input_edge(1)->src;
    ours_.erase(t);
    graph_->RemoveNode(t);
    if (perm->out_edges().empty()) graph_->RemoveNode(perm);
  }

  // Shape(t(x)) for a Transpose t of ours from `from` to `to` becomes
  // DataFormatVecPermute(Shape(x), from -> to), and so does a ShapeN's
  // output for an input t(x): a gradient's shape of a converted node's input
  // (Sluice's gradients take Shape, TensorFlow's ShapeN) then no longer keeps
  // a Transpose running just for its dims. The same for a user's NHWC <->
  // NCHW Transpose that only shapes read (the images' Transpose, once ours
  // after it cancelled), which then goes.
  void ShapesBeforeTransposes() {
    auto is_shape = [](const Node* n) { return n->type_string() == "Shape" || n->type_string() == "ShapeN"; };
    std::vector<Node*> users;
    for (Node* n : graph_->nodes()) {
      Transposition how;
      if (ours_.contains(n) || !TranspositionOf(n, &how) || n->out_edges().empty()) continue;
      bool only_shapes = true;
      for (const Edge* e : n->out_edges()) only_shapes &= is_shape(e->dst);
      if (only_shapes) users.push_back(n);
    }
    std::vector<const Edge*> shape_reads;
    for (const auto& [t, unused] : ours_) {
      for (const Edge* e : t->out_edges()) {
        if (!e->IsControlEdge() && is_shape(e->dst)) shape_reads.push_back(e);
      }
    }
    for (const Node* u : users) {
      for (const Edge* e : u->out_edges()) shape_reads.push_back(e);
    }
    for (const Edge* e : shape_reads) {
      Node* t = e->src;
      Node* shape = e->dst;
      const int port = e->dst_input;  // a ShapeN's output i is input i's shape
      if (!DeviceHasKernel(shape, "DataFormatVecPermute", BaseType(shape->output_type(port)), "T")) continue;
      Transposition how;
      CHECK(TranspositionOf(t, &how));
      const Edge* x = t->input_edge(0);
      std::vector<const Edge*> outs;
      for (const Edge* o : DataOutEdges(shape)) {
        if (o->src_output == port) outs.push_back(o);
      }
      Node* permute = AddVecPermute(Output{shape, port}, absl::StrCat(shape->name(), "/_layout_", port, "_to_", how.to),
                                    how.from, how.to, shape->assigned_device());
      MoveReaders(outs, permute, 0);
      graph_->RemoveEdge(e);
      graph_->AddEdge(x->src, x->src_output, shape, port);
    }
    for (Node* u : users) RemoveUserTransposeIfUnread(u);
  }

  void RemoveUserTransposeIfUnread(Node* u) {
    if (!u->out_edges().empty()) return;
    Node* perm = u->input_edge(1)->src;
    graph_->RemoveNode(u);
    ++result_.removed_user_transposes;
    if (perm->out_edges().empty() && !Kept(perm)) graph_->RemoveNode(perm);
  }

  // Our Transposes, in the order they were made.
  std::vector<Node*> OursById() const {
    std::vector<Node*> transposes;
    for (const auto& [t, unused] : ours_) transposes.push_back(const_cast<Node*>(t));
    std::sort(transposes.begin(), transposes.end(), [](const Node* a, const Node* b) { return a->id() < b->id(); });
    return transposes;
  }

  // A Transpose of ours that undoes the one it reads, ours or a user's NHWC
  // <-> NCHW one (a graph that transposes its NHWC images into NCHW for its
  // convolutions), goes: its readers read the earlier one's input. A user's
  // Transpose that undoes one of ours (an NCHW result back to NHWC before a
  // flatten) has its readers read our Transpose's input. A user's Transpose
  // left unread goes (with its permutation Const, when nothing else reads
  // that); kept nodes (targets) are not bypassed. Then shapes read before our
  // Transposes, inverse permutes cancel, and our nodes left unread go.
  void CancelInversePairs() {
    for (Node* t : OursById()) {
      const Transposition how = ours_.at(t);
      Node* before = t->input_edge(0)->src;
      Transposition earlier;
      if (TranspositionOf(before, &earlier) && Undoes(how, earlier)) {
        const Edge* x = before->input_edge(0);
        MoveReaders(DataOutEdges(t), x->src, x->src_output);  // ours have no control edges out
        RemoveOurs(t);
        ++result_.cancelled_transposes;
        if (!ours_.contains(before)) RemoveUserTransposeIfUnread(before);
        continue;
      }
      std::vector<Node*> after;
      for (const Edge* e : DataOutEdges(t)) {
        Transposition later;
        if (e->dst_input == 0 && !ours_.contains(e->dst) && TranspositionOf(e->dst, &later) && Undoes(later, how)) {
          after.push_back(e->dst);
        }
      }
      const Edge* x = t->input_edge(0);
      for (Node* u : after) {
        MoveReaders(DataOutEdges(u), x->src, x->src_output);
        RemoveUserTransposeIfUnread(u);
      }
    }
    ShapesBeforeTransposes();
    CancelInversePermutes();
    RemoveUnreadOfOurs();
  }

  // DataFormatVecPermute p2(p1(v)) of ours with p2 undoing p1 (a shape that
  // ShapesBeforeTransposes permuted, read by a converted node's shape input):
  // p2's readers read v.
  void CancelInversePermutes() {
    std::vector<Node*> permutes;
    for (Node* n : graph_->nodes()) {
      if (permutes_.contains(n)) permutes.push_back(n);
    }
    for (Node* p2 : permutes) {
      const Edge* in = p2->input_edge(0);
      auto p1 = permutes_.find(in->src);
      if (p1 == permutes_.end() || !Undoes(permutes_.at(p2), p1->second)) continue;
      const Edge* v = in->src->input_edge(0);
      MoveReaders(DataOutEdges(p2), v->src, v->src_output);
    }
  }

  // Our Transposes (with their permutations) and DataFormatVecPermutes that
  // nothing reads go, until none is left.
  void RemoveUnreadOfOurs() {
    for (bool removed = true; removed;) {
      removed = false;
      for (Node* n : graph_->nodes()) {
        if (!n->out_edges().empty()) continue;
        if (ours_.contains(n)) {
          RemoveOurs(n);
          ++result_.cancelled_transposes;
          removed = true;
        } else if (permutes_.erase(n) > 0) {
          graph_->RemoveNode(n);
          ++result_.cancelled_permutes;
          removed = true;
        }
      }
    }
  }

  const LayoutOptions& options_;
  Graph* graph_;
  absl::flat_hash_map<const Node*, Transposition> ours_;
  // Our DataFormatVecPermutes (into_converted unused).
  absl::flat_hash_map<const Node*, Transposition> permutes_;
  // By node id, as the pass found the graph: whether the node's outputs are
  // in the root frame.
  std::vector<bool> outputs_in_root_frame_;
  // Transposes into a node's format by (source, output, format, device).
  absl::flat_hash_map<std::tuple<const Node*, int, std::string, std::string>, Node*> entries_;
  LayoutResult result_;
};

}  // namespace

LayoutResult ConvertDataFormats(const LayoutOptions& options, Graph* graph) {
  return LayoutPass(options, graph).Run();
}

}  // namespace sluice

// FindLoopRegions and AddWhileLoopGradient: the backward loop of a while
// loop, recomputing the body from saved loop variables.
#include "engine/graph/while_gradient.h"

#include <algorithm>
#include <deque>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

bool IsFloatLike(DataType t) { return DataTypeIsFloating(BaseType(t)); }

bool BoolAttr(const Node* n, const char* name) {
  auto it = n->def().attr().find(name);
  return it != n->def().attr().end() && it->second.b();
}

std::string FrameName(const Node* enter) {
  std::string f;
  GetNodeAttr(enter->def(), "frame_name", &f).IgnoreError();
  return f;
}

Node* InputNode(const Node* n, int i) {
  const Edge* e = n->input_edge(i);
  return e == nullptr ? nullptr : e->src;
}

// A gradient computed as MatMul(a, b, transpose_a), possibly released
// through a gradient gate's Identity, with nothing else reading it: summed over
// iterations it is one product of the stacked a's and b's. Returns the MatMul
// and adds what to remove once the sum replaces it (the Identity, the MatMul).
Node* DeferrableProduct(const Output& g, std::vector<Node*>* replaced) {
  Node* n = g.node;
  if (n == nullptr) return nullptr;
  auto read_only_by = [](const Node* x, const Node* reader) {
    for (const Edge* e : x->out_edges()) {
      if (!e->IsControlEdge() && e->dst != reader) return false;
    }
    return true;
  };
  std::vector<Node*> nodes;
  if (n->type_string() == "Identity") {
    if (!n->out_edges().empty() || n->input_edge(0) == nullptr) return nullptr;
    nodes.push_back(n);
    n = n->input_edge(0)->src;
    if (!read_only_by(n, nodes[0])) return nullptr;
  } else if (!read_only_by(n, nullptr)) {
    return nullptr;
  }
  if (n->type_string() != "MatMul" || !BoolAttr(n, "transpose_a") || BoolAttr(n, "transpose_b")) return nullptr;
  if (!IsFloatLike(n->output_type(0))) return nullptr;
  nodes.push_back(n);
  replaced->insert(replaced->end(), nodes.begin(), nodes.end());
  return n;
}

absl::Status NotOurLoop(const Node* n, const std::string& why) {
  return absl::UnimplementedError(absl::StrCat(NodeContext(n->def()), "gradients through this loop are not supported: ",
                                               why, " (only loops built by BuildWhileLoop are differentiated)"));
}

struct LoopVar {
  Node* enter = nullptr;
  Node* merge = nullptr;
  Node* sw = nullptr;
  Node* next = nullptr;
  Node* exit = nullptr;
  bool counter = false;
  bool stack_flow = false;
  DataType dtype() const { return enter->output_type(0); }
};

struct LoopShape {
  Node* loop_cond = nullptr;
  std::string frame;
  int64_t parallel_iterations = 10;
  std::vector<LoopVar> vars;
  int counter = -1;
};

absl::Status AnalyzeLoop(Node* loop_cond, LoopShape* shape) {
  shape->loop_cond = loop_cond;
  std::vector<Node*> switches;
  for (const Edge* e : loop_cond->out_edges()) {
    if (!e->IsControlEdge() && e->dst->IsSwitch() && e->dst_input == 1) switches.push_back(e->dst);
  }
  std::sort(switches.begin(), switches.end(), [](Node* a, Node* b) { return a->id() < b->id(); });
  for (Node* sw : switches) {
    LoopVar v;
    v.sw = sw;
    v.merge = InputNode(sw, 0);
    if (v.merge == nullptr || !v.merge->IsMerge() || v.merge->num_inputs() != 2) {
      return NotOurLoop(sw, "its Switch is not fed by a two-input Merge");
    }
    v.enter = InputNode(v.merge, 0);
    v.next = InputNode(v.merge, 1);
    if (v.enter == nullptr || !v.enter->IsEnter() || v.next == nullptr || !v.next->IsNextIteration()) {
      return NotOurLoop(v.merge, "its Merge is not Merge(Enter, NextIteration)");
    }
    for (const Edge* e : sw->out_edges()) {
      if (!e->IsControlEdge() && e->src_output == 0 && e->dst->IsExit()) v.exit = e->dst;
    }
    v.counter = BoolAttr(v.enter, "_loop_counter");
    v.stack_flow = BoolAttr(v.enter, "_loop_stack_flow");
    if (v.counter) shape->counter = static_cast<int>(shape->vars.size());
    shape->vars.push_back(v);
  }
  if (shape->vars.empty()) return NotOurLoop(loop_cond, "no Switch reads its LoopCond");
  if (shape->counter < 0 || shape->vars[shape->counter].exit == nullptr) {
    return NotOurLoop(loop_cond, "it has no iteration counter");
  }
  shape->frame = FrameName(shape->vars[0].enter);
  GetNodeAttr(shape->vars[0].enter->def(), "parallel_iterations", &shape->parallel_iterations).IgnoreError();
  return absl::OkStatus();
}

// The loop's LoopCond, from one of its Exit nodes.
absl::StatusOr<Node*> LoopCondOfExit(const Node* exit) {
  Node* sw = InputNode(exit, 0);
  if (sw == nullptr || !sw->IsSwitch()) return NotOurLoop(exit, "its Exit is not fed by a Switch");
  Node* lc = InputNode(sw, 1);
  if (lc == nullptr || !lc->IsLoopCond()) return NotOurLoop(exit, "its Switch is not controlled by a LoopCond");
  return lc;
}

absl::Status BuildRegion(const Graph& graph, Node* loop_cond, LoopRegion* region) {
  LoopShape shape;
  absl::Status s = AnalyzeLoop(loop_cond, &shape);
  if (!s.ok()) return s;
  region->frame = shape.frame;
  region->loop_cond = loop_cond;
  std::deque<Node*> q;
  for (Node* n : graph.nodes()) {
    if (n->IsEnter() && FrameName(n) == shape.frame) {
      region->members.insert(n->id());
      q.push_back(n);
    }
  }
  auto is_own_exit = [&](const Node* n) {
    if (!n->IsExit()) return false;
    auto lc = LoopCondOfExit(n);
    return lc.ok() && *lc == loop_cond;
  };
  while (!q.empty()) {
    Node* n = q.front();
    q.pop_front();
    if (is_own_exit(n)) {
      for (const Edge* e : n->out_edges()) {
        if (!e->IsControlEdge() && e->dst->type_string() == "TensorArrayGatherV3" && e->dst_input == 2 &&
            BoolAttr(e->dst, "_loop_stacked")) {
          region->members.insert(e->dst->id());
        }
      }
      continue;
    }
    for (const Edge* e : n->out_edges()) {
      if (region->members.insert(e->dst->id()).second) q.push_back(e->dst);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status FindLoopRegions(const Graph& graph, const std::function<bool(const Node*)>& relevant,
                             std::vector<LoopRegion>* loops) {
  loops->clear();
  std::vector<Node*> loop_conds;
  absl::flat_hash_set<int> seen;
  for (Node* n : graph.nodes()) {
    if (!n->IsExit() || !relevant(n)) continue;
    auto lc = LoopCondOfExit(n);
    if (!lc.ok()) return lc.status();
    if (seen.insert((*lc)->id()).second) loop_conds.push_back(*lc);
  }
  std::vector<LoopRegion> all(loop_conds.size());
  for (size_t i = 0; i < loop_conds.size(); ++i) {
    absl::Status s = BuildRegion(graph, loop_conds[i], &all[i]);
    if (!s.ok()) return s;
  }
  std::vector<bool> nested(all.size(), false);
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = 0; j < all.size() && !nested[i]; ++j) {
      nested[i] = i != j && all[j].members.contains(all[i].loop_cond->id());
    }
  }
  for (size_t i = 0; i < all.size(); ++i) {
    if (!nested[i]) loops->push_back(std::move(all[i]));
  }
  return absl::OkStatus();
}

absl::Status AddWhileLoopGradient(Graph* graph, const LoopRegion& region,
                                  const std::function<Gradient(const Node*, int)>& output_grad,
                                  const std::string& name_prefix,
                                  std::vector<std::pair<const Edge*, Gradient>>* input_grads) {
  input_grads->clear();
  LoopShape shape;
  absl::Status s = AnalyzeLoop(region.loop_cond, &shape);
  if (!s.ok()) return s;
  const LoopVar& counter = shape.vars[shape.counter];
  const AttrValue pi = MakeAttr(shape.parallel_iterations);
  auto member = [&](const Node* n) { return region.members.contains(n->id()); };

  absl::flat_hash_map<int, int> var_of_switch;
  for (size_t i = 0; i < shape.vars.size(); ++i) var_of_switch[shape.vars[i].sw->id()] = static_cast<int>(i);
  std::vector<bool> differentiable(shape.vars.size());
  for (size_t i = 0; i < shape.vars.size(); ++i) {
    const LoopVar& v = shape.vars[i];
    differentiable[i] = !v.counter && !v.stack_flow && IsFloatLike(v.dtype());
  }

  // Stacked per-iteration outputs and the in-loop values they stack.
  struct Stacked {
    Node* gather;
    Output y;
    Gradient grad;
  };
  std::vector<Stacked> stacked;
  std::vector<int> sorted_members(region.members.begin(), region.members.end());
  std::sort(sorted_members.begin(), sorted_members.end());
  for (int id : sorted_members) {
    Node* n = graph->FindNodeId(id);
    if (n->type_string() != "TensorArrayGatherV3" || !BoolAttr(n, "_loop_stacked")) continue;
    Gradient grad = output_grad(n, 0);
    if (!grad.present()) continue;
    Node* handle = InputNode(n, 0);
    const Node* write = nullptr;
    for (const Edge* e : handle->out_edges()) {
      if (!e->dst->IsEnter() || FrameName(e->dst) != shape.frame) continue;
      for (const Edge* w : e->dst->out_edges()) {
        if (w->dst->type_string() == "TensorArrayWriteV3" && w->dst_input == 0) write = w->dst;
      }
    }
    if (write == nullptr) return NotOurLoop(n, "no TensorArrayWriteV3 in the loop fills this stacked output");
    const Edge* value = write->input_edge(2);
    stacked.push_back({n, Output{value->src, value->src_output}, grad});
  }

  // The body nodes to recompute: everything the differentiable next values
  // and the stacked values depend on inside the loop.
  std::vector<Output> roots;
  for (size_t i = 0; i < shape.vars.size(); ++i) {
    if (!differentiable[i]) continue;
    const Edge* e = shape.vars[i].next->input_edge(0);
    roots.push_back(Output{e->src, e->src_output});
  }
  for (const Stacked& st : stacked) roots.push_back(st.y);
  absl::flat_hash_set<int> in_body;
  std::vector<bool> needed(shape.vars.size(), false);
  std::vector<Node*> invariants;  // constant Enter nodes of this frame the body reads
  absl::flat_hash_set<int> invariant_ids;
  std::deque<Node*> q;
  auto visit = [&](Node* src, bool data, int port) -> absl::Status {
    auto v = var_of_switch.find(src->id());
    if (v != var_of_switch.end()) {
      if (data && port == 1) needed[v->second] = true;
      return absl::OkStatus();
    }
    if (src->IsEnter() && FrameName(src) == shape.frame) {
      if (!BoolAttr(src, "is_constant")) return NotOurLoop(src, "the body reads a loop variable's Enter");
      if (invariant_ids.insert(src->id()).second) invariants.push_back(src);
      return absl::OkStatus();
    }
    if (!member(src)) return NotOurLoop(src, "the body reads a value from outside the loop without an Enter");
    if (src->IsMerge() && InputNode(src, 1) != nullptr && InputNode(src, 1)->IsNextIteration()) {
      bool own = false;
      for (const LoopVar& lv : shape.vars) own |= lv.merge == src;
      if (own) return NotOurLoop(src, "the body reads a loop variable's Merge");
    }
    if (in_body.insert(src->id()).second) q.push_back(src);
    return absl::OkStatus();
  };
  for (const Output& r : roots) {
    s = visit(r.node, true, r.index);
    if (!s.ok()) return s;
  }
  auto drain = [&]() -> absl::Status {
    while (!q.empty()) {
      Node* n = q.front();
      q.pop_front();
      if (n->IsStateful() && !absl::StartsWith(n->type_string(), "TensorArray") &&
          n->type_string() != "ReadVariableOp") {
        return absl::UnimplementedError(absl::StrCat(
            NodeContext(n->def()), "op ", n->type_string(), " is stateful, and the gradient of while_loop '", shape.frame,
            "' recomputes its body; compute it outside the loop and use the value inside"));
      }
      for (const Edge* e : n->in_edges()) {
        absl::Status st = visit(e->src, !e->IsControlEdge(), e->src_output);
        if (!st.ok()) return st;
      }
    }
    return absl::OkStatus();
  };
  s = drain();
  if (!s.ok()) return s;
  // A nested loop's copy keeps its iteration counter (its gradient needs the
  // trip count) and the Exits of the variables it copies.
  for (bool grew = true; grew;) {
    grew = false;
    std::vector<int> ids(in_body.begin(), in_body.end());
    std::sort(ids.begin(), ids.end());
    for (int id : ids) {
      Node* n = graph->FindNodeId(id);
      if (!n->IsSwitch() || InputNode(n, 1) == nullptr || !InputNode(n, 1)->IsLoopCond()) continue;
      for (const Edge* e : n->out_edges()) {
        if (!e->IsControlEdge() && e->dst->IsExit() && member(e->dst)) grew |= in_body.insert(e->dst->id()).second;
      }
      if (!n->IsSwitch()) continue;
      Node* lc = InputNode(n, 1);
      for (const Edge* e : lc->out_edges()) {
        Node* sw = e->dst;
        if (!sw->IsSwitch() || e->dst_input != 1 || in_body.contains(sw->id())) continue;
        Node* merge = InputNode(sw, 0);
        Node* enter = merge == nullptr ? nullptr : InputNode(merge, 0);
        if (enter == nullptr || !BoolAttr(enter, "_loop_counter")) continue;
        // Copy the counter from its NextIteration back (its Switch included).
        s = visit(InputNode(merge, 1), true, 0);
        if (!s.ok()) return s;
        grew = true;
      }
    }
    s = drain();
    if (!s.ok()) return s;
  }

  // Save the variables the body reads: a TensorArray per variable, written
  // at the counter's index by the forward loop.
  GraphBuilder b(graph, name_prefix);
  const std::string frame_leaf = shape.frame.substr(shape.frame.rfind('/') + 1);
  GraphBuilder fb = b.WithSubPrefix(frame_leaf + "_save");
  Node* anchor = InputNode(counter.enter, 0);  // the counter's initial value: in the loop's parent frame
  const Output counter_value{counter.sw, 1};
  auto enter_attrs = [&](const std::string& frame, bool constant) {
    return AttrList{{"frame_name", MakeAttr(frame)}, {"is_constant", MakeAttr(constant)}, {"parallel_iterations", pi}};
  };
  struct Saved {
    Output handle, flow;
    DataType dtype;
  };
  // Writes `value` (a tensor of the forward frame) at the counter's index
  // each iteration; the backward loop reads it back.
  auto save = [&](const Output& value, Saved* out) -> absl::Status {
    const DataType dtype = BaseType(value.dtype());
    Output size = fb.WithControlDependencies({anchor}).Scalar<int32_t>("size", 0);
    Node* ta = fb.AddNode("saved", "TensorArrayV3", {size}, {{"dtype", MakeAttr(dtype)}, {"dynamic_size", MakeAttr(true)}});
    if (ta == nullptr) return fb.status();
    Output flow_enter = fb.Op("flow_enter", "Enter", {Output{ta, 1}}, enter_attrs(shape.frame, false));
    Node* flow_merge = fb.AddNode("flow_merge", "Merge", {flow_enter, flow_enter});
    if (flow_merge == nullptr) return fb.status();
    Node* flow_switch = fb.AddNode("flow_switch", "Switch", {Output{flow_merge, 0}, Output{shape.loop_cond, 0}});
    if (flow_switch == nullptr) return fb.status();
    Output flow_exit = fb.Op("flow_exit", "Exit", {Output{flow_switch, 0}});
    Output handle = fb.Op("handle", "Enter", {Output{ta, 0}}, enter_attrs(shape.frame, true));
    Output written = fb.Op("write", "TensorArrayWriteV3", {handle, counter_value, value, Output{flow_switch, 1}});
    Output flow_next = fb.Op("flow_next", "NextIteration", {written});
    if (!fb.ok()) return fb.status();
    graph->RemoveEdge(flow_merge->input_edge(1));
    graph->AddEdge(flow_next.node, 0, flow_merge, 1);
    *out = {Output{ta, 0}, flow_exit, dtype};
    return absl::OkStatus();
  };
  std::map<int, Saved> saved;
  for (size_t i = 0; i < shape.vars.size(); ++i) {
    if (!needed[i] || shape.vars[i].counter) continue;
    s = save(Output{shape.vars[i].sw, 1}, &saved[static_cast<int>(i)]);
    if (!s.ok()) return s;
  }
  // Matrix products of this loop's own frame (not of loops nested in it) are
  // saved too rather than recomputed: the backward loop's copy of such a
  // node keeps its place for the gradient functions, and its uses are then
  // pointed at the saved value, so the copy never runs. The rest of the body
  // (element-wise work, mostly) is recomputed.
  std::vector<Node*> saved_products;
  std::map<int, Saved> saved_product_values;
  {
    // How deep in nested frames each body node's output is (0: this frame),
    // from the mapped inputs (depth 0) through Enter (+1) and Exit (-1);
    // NextIteration back edges are ignored.
    absl::flat_hash_map<int, int> depth;
    std::vector<Node*> pending_nodes;
    for (int id : in_body) pending_nodes.push_back(graph->FindNodeId(id));
    std::sort(pending_nodes.begin(), pending_nodes.end(), [](Node* a, Node* c) { return a->id() < c->id(); });
    auto input_depth = [&](const Edge* e, int* d) {
      if (in_body.contains(e->src->id())) {
        auto it = depth.find(e->src->id());
        if (it == depth.end()) return false;
        *d = it->second;
        return true;
      }
      *d = 0;  // a loop variable, a captured tensor or the pivot
      return true;
    };
    for (bool progress = true; progress;) {
      progress = false;
      for (Node* n : pending_nodes) {
        if (depth.contains(n->id())) continue;
        int d = 0;
        bool known = false;
        for (const Edge* e : n->in_edges()) {
          if (e->src->IsNextIteration()) continue;
          int di = 0;
          if (!input_depth(e, &di)) {
            known = false;
            break;
          }
          if (!known) d = di;
          known = true;
        }
        if (!known) continue;
        if (n->IsEnter()) ++d;
        if (n->IsExit()) --d;
        depth[n->id()] = d;
        progress = true;
      }
    }
    for (Node* n : pending_nodes) {
      const std::string& op = n->type_string();
      auto it = depth.find(n->id());
      if (it == depth.end() || it->second != 0 || n->num_outputs() != 1 || !IsFloatLike(n->output_type(0))) continue;
      if (op == "MatMul" || op == "BatchMatMul" || op == "BatchMatMulV2" || op == "Conv2D" || op == "Einsum") {
        saved_products.push_back(n);
        s = save(Output{n, 0}, &saved_product_values[n->id()]);
        if (!s.ok()) return s;
      }
    }
  }

  // The backward loop, in its own frame. Its variables: the remaining
  // iteration count, the gradient of each differentiable variable and the
  // summed gradient of each float captured tensor.
  std::string leaf = frame_leaf + "_grad";
  for (int i = 1; graph->FindNode(absl::StrCat(b.prefix(), "/", leaf, "/pivot")) != nullptr; ++i) {
    leaf = absl::StrCat(frame_leaf, "_grad_", i);
  }
  GraphBuilder gb = b.WithSubPrefix(leaf);
  const std::string grad_frame = gb.prefix();
  std::vector<Output> init;
  init.push_back(Output{counter.exit, 0});
  std::vector<int> dv_vars;  // loop var index per gradient variable
  for (size_t i = 0; i < shape.vars.size(); ++i) {
    if (!differentiable[i]) continue;
    const LoopVar& v = shape.vars[i];
    Gradient g = v.exit != nullptr ? output_grad(v.exit, 0) : Gradient();
    if (g.present()) {
      init.push_back(DenseGradient(&gb, g));
    } else {
      Output like = v.exit != nullptr ? Output{v.exit, 0} : Output{InputNode(v.enter, 0), v.enter->input_edge(0)->src_output};
      init.push_back(gb.Op("zeros", "ZerosLike", {like}));
    }
    dv_vars.push_back(static_cast<int>(i));
  }
  std::vector<Node*> float_invariants;
  for (Node* inv : invariants) {
    if (IsFloatLike(inv->output_type(0))) float_invariants.push_back(inv);
  }
  std::vector<Output> dys;  // dense gradients of the stacked outputs, outside the loop
  for (const Stacked& st : stacked) dys.push_back(DenseGradient(&gb, st.grad));
  if (!gb.ok()) return gb.status();

  // Loop variables are added in two rounds: the count and the variables'
  // gradients first, the captured tensors' accumulators once the body's
  // gradient shows which are sparse.
  std::vector<Node*> merges;
  std::vector<Output> exits, idents;
  Output loop_cond;
  auto add_var = [&](const Output& initial) {
    Output enter = gb.Op("enter", "Enter", {initial}, enter_attrs(grad_frame, false));
    Node* merge = gb.AddNode("merge", "Merge", {enter, enter});
    merges.push_back(merge);
    if (loop_cond.valid() && merge != nullptr) {
      Node* sw = gb.AddNode("switch", "Switch", {Output{merge, 0}, loop_cond});
      if (sw == nullptr) return;
      exits.push_back(gb.Op("exit", "Exit", {Output{sw, 0}}));
      idents.push_back(gb.Op(idents.empty() ? "pivot" : "value", "Identity", {Output{sw, 1}}));
    }
  };
  for (const Output& i : init) add_var(i);
  if (!gb.ok()) return gb.status();
  Output zero = gb.WithControlDependencies({merges[0]}).Scalar<int32_t>("zero", 0);
  Output more = gb.Op("more", "Greater", {Output{merges[0], 0}, zero});
  loop_cond = gb.Op("loop_cond", "LoopCond", {more});
  for (Node* merge : merges) {
    Node* sw = gb.AddNode("switch", "Switch", {Output{merge, 0}, loop_cond});
    if (sw == nullptr) return gb.status();
    exits.push_back(gb.Op("exit", "Exit", {Output{sw, 0}}));
    idents.push_back(gb.Op(idents.empty() ? "pivot" : "value", "Identity", {Output{sw, 1}}));
  }
  if (!gb.ok()) return gb.status();
  Node* pivot = idents[0].node;

  const int body_start = graph->num_node_ids();
  GraphBuilder bb = gb.WithSubPrefix("body");
  Output k = bb.Op("index", "Sub", {idents[0], bb.WithControlDependencies({pivot}).Scalar<int32_t>("one", 1)});
  std::map<std::pair<int, int>, Output> entered;
  auto enter_constant = [&](const Output& t) {
    auto key = std::make_pair(t.node->id(), t.index);
    auto it = entered.find(key);
    if (it != entered.end()) return it->second;
    Output e = bb.Op("captured", "Enter", {t}, enter_attrs(grad_frame, true));
    entered.emplace(key, e);
    return e;
  };
  std::map<std::pair<int, int>, Output> tensor_map;
  tensor_map[{counter.sw->id(), 1}] = k;
  std::map<int, Output> reads;
  for (const auto& [i, sv] : saved) {
    const LoopVar& v = shape.vars[i];
    Output read = bb.Op("saved_value", "TensorArrayReadV3", {enter_constant(sv.handle), k, enter_constant(sv.flow)},
                        {{"dtype", MakeAttr(sv.dtype)}});
    tensor_map[{v.sw->id(), 1}] = read;
    reads[i] = read;
  }
  std::map<int, Output> product_reads;
  for (const auto& [id, sv] : saved_product_values) {
    product_reads[id] = bb.Op("saved_product", "TensorArrayReadV3",
                              {enter_constant(sv.handle), k, enter_constant(sv.flow)}, {{"dtype", MakeAttr(sv.dtype)}});
  }
  for (Node* inv : invariants) {
    const Edge* e = inv->input_edge(0);
    tensor_map[{inv->id(), 0}] = enter_constant(Output{e->src, e->src_output});
  }
  if (!bb.ok()) return bb.status();

  // Copy the body into the backward frame; nested frames get new names.
  std::vector<Node*> body_nodes;
  for (int id : in_body) body_nodes.push_back(graph->FindNodeId(id));
  std::sort(body_nodes.begin(), body_nodes.end(), [](Node* a, Node* c) { return a->id() < c->id(); });
  absl::flat_hash_map<int, Node*> clone_of;
  for (Node* n : body_nodes) {
    NodeDef def = n->def();
    def.set_name(absl::StrCat(grad_frame, "/recompute/", n->name()));
    def.clear_input();
    if (n->IsEnter()) (*def.mutable_attr())["frame_name"] = MakeAttr(absl::StrCat(grad_frame, "/", FrameName(n)));
    auto c = graph->AddNodeLike(*n, def);
    if (!c.ok()) return c.status();
    clone_of[n->id()] = *c;
  }
  auto map_output = [&](const Output& o) -> Output {
    auto c = clone_of.find(o.node->id());
    if (c != clone_of.end()) return Output{c->second, o.index};
    auto t = tensor_map.find({o.node->id(), o.index});
    return t == tensor_map.end() ? Output() : t->second;
  };
  for (Node* n : body_nodes) {
    Node* c = clone_of[n->id()];
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge()) {
        auto cs = clone_of.find(e->src->id());
        graph->AddControlEdge(cs != clone_of.end() ? cs->second : pivot, c);
        continue;
      }
      Output src = map_output(Output{e->src, e->src_output});
      if (!src.valid()) {
        return absl::InternalError(absl::StrCat("while_loop gradient: no value for input ", e->dst_input, " of '",
                                                n->name(), "' from '", e->src->name(), "'"));
      }
      graph->AddEdge(src.node, src.index, c, e->dst_input);
    }
  }

  // Differentiate the recomputed body.
  std::vector<Output> ys, grad_ys, xs;
  size_t next_dv = 1;
  for (int i : dv_vars) {
    const Edge* e = shape.vars[i].next->input_edge(0);
    ys.push_back(map_output(Output{e->src, e->src_output}));
    grad_ys.push_back(idents[next_dv++]);
  }
  for (size_t m = 0; m < stacked.size(); ++m) {
    ys.push_back(map_output(stacked[m].y));
    grad_ys.push_back(bb.Op("stacked_grad", "Gather", {enter_constant(dys[m]), k}));
  }
  std::vector<int> x_of_dv(dv_vars.size(), -1);
  for (size_t d = 0; d < dv_vars.size(); ++d) {
    auto r = reads.find(dv_vars[d]);
    if (r == reads.end()) continue;
    x_of_dv[d] = static_cast<int>(xs.size());
    xs.push_back(r->second);
  }
  const size_t first_invariant_x = xs.size();
  for (Node* inv : float_invariants) xs.push_back(tensor_map[{inv->id(), 0}]);
  for (const Output& y : ys) {
    if (!y.valid()) return absl::InternalError("while_loop gradient: a recomputed value is missing");
  }
  if (!bb.ok()) return bb.status();
  std::vector<Gradient> grads(xs.size());
  if (!ys.empty() && !xs.empty()) {
    s = AddSymbolicGradients(graph, ys, xs, grad_ys, &grads, absl::StrCat(grad_frame, "/body_grad"));
    if (!s.ok()) return s;
  }
  // A product with a captured matrix transposed (a MatMul gradient's
  // dz W^T) reads a transpose made once before the loop: the GEMM then reads
  // the matrix in place instead of repacking its transpose every iteration.
  {
    const int end = graph->num_node_ids();
    std::map<std::pair<int, int>, Output> transposed;
    for (int id = body_start; id < end; ++id) {
      Node* n = graph->FindNodeId(id);
      if (n == nullptr || n->type_string() != "MatMul" || !BoolAttr(n, "transpose_b")) continue;
      const Edge* e = n->input_edge(1);
      if (e == nullptr || !e->src->IsEnter() || !BoolAttr(e->src, "is_constant") || FrameName(e->src) != grad_frame) {
        continue;
      }
      const Edge* in = e->src->input_edge(0);
      if (in == nullptr) continue;
      auto key = std::make_pair(in->src->id(), in->src_output);
      auto it = transposed.find(key);
      if (it == transposed.end()) {
        GraphBuilder ob = gb.WithControlDependencies({init[0].node});
        Output t = gb.Op("transposed", "Transpose",
                         {Output{in->src, in->src_output}, ob.Const("swap", Tensor::FromVector<int32_t>({1, 0}))});
        if (!gb.ok()) return gb.status();
        it = transposed.emplace(key, enter_constant(t)).first;
      }
      graph->RemoveEdge(e);
      graph->AddEdge(it->second.node, it->second.index, n, 1);
      (*n->mutable_def()->mutable_attr())["transpose_b"] = MakeAttr(false);
    }
  }
  // Uses of a saved product's copy (the recomputed body's and the gradient
  // functions') read the saved value instead.
  for (Node* n : saved_products) {
    Node* copy = clone_of[n->id()];
    const Output& read = product_reads[n->id()];
    std::vector<const Edge*> uses;
    for (const Edge* e : copy->out_edges()) {
      if (!e->IsControlEdge()) uses.push_back(e);
    }
    for (const Edge* e : uses) {
      Node* dst = e->dst;
      const int dst_input = e->dst_input;
      graph->RemoveEdge(e);
      graph->AddEdge(read.node, read.index, dst, dst_input);
    }
  }

  std::vector<Output> next(idents.size());
  next[0] = k;
  for (size_t d = 0; d < dv_vars.size(); ++d) {
    const Output& current = idents[1 + d];
    if (x_of_dv[d] >= 0 && grads[x_of_dv[d]].present()) {
      next[1 + d] = DenseGradient(&bb, grads[x_of_dv[d]]);
    } else {
      next[1 + d] = bb.Op("zeros", "ZerosLike", {current});
    }
  }
  // Captured tensors' gradients, summed over the iterations: dense ones in an
  // accumulator variable; sparse ones (a Gather of a captured table, say)
  // appended per iteration to TensorArrays of values and indices that are
  // concatenated after the loop, so no iteration touches the whole tensor.
  absl::flat_hash_map<int, Gradient> grad_of_enter;
  struct SparseSum {
    int invariant;
    Output values_ta, indices_ta;
    size_t values_var, indices_var;
    Output dense_shape;
    DataType values_dtype, indices_dtype;
  };
  std::vector<SparseSum> sparse_sums;
  std::vector<std::pair<int, size_t>> dense_sums;  // invariant, loop var
  struct ProductSum {
    int invariant;
    Node* product;  // the iteration's a^T b, replaced by one product after the loop
    Output a_ta, b_ta;
    size_t a_var, b_var;
  };
  std::vector<ProductSum> product_sums;
  std::vector<Node*> replaced_products;  // removed once the sums are built
  for (size_t a = 0; a < float_invariants.size(); ++a) {
    const Gradient& g = grads[first_invariant_x + a];
    if (!g.present()) continue;
    Node* inv = float_invariants[a];
    const Edge* src = inv->input_edge(0);
    const Output outside{src->src, src->src_output};
    if (g.is_sparse) {
      SparseSum sum;
      sum.invariant = inv->id();
      sum.values_dtype = BaseType(g.sparse.values.dtype());
      sum.indices_dtype = BaseType(g.sparse.indices.dtype());
      Output size = gb.WithControlDependencies({init[0].node}).Scalar<int32_t>("sum_size", 0);
      Node* values = gb.AddNode("sum_values", "TensorArrayV3", {size},
                                {{"dtype", MakeAttr(sum.values_dtype)}, {"dynamic_size", MakeAttr(true)}});
      Node* indices = gb.AddNode("sum_indices", "TensorArrayV3", {size},
                                 {{"dtype", MakeAttr(sum.indices_dtype)}, {"dynamic_size", MakeAttr(true)}});
      if (values == nullptr || indices == nullptr) return gb.status();
      sum.values_ta = Output{values, 0};
      sum.indices_ta = Output{indices, 0};
      sum.dense_shape = gb.Op("sum_shape", "Shape", {outside}, {{"out_type", MakeAttr(g.sparse.dense_shape.dtype())}});
      sum.values_var = idents.size();
      add_var(Output{values, 1});
      sum.indices_var = idents.size();
      add_var(Output{indices, 1});
      if (!gb.ok()) return gb.status();
      next.push_back(bb.Op("append_values", "TensorArrayWriteV3",
                           {enter_constant(sum.values_ta), k, g.sparse.values, idents[sum.values_var]}));
      next.push_back(bb.Op("append_indices", "TensorArrayWriteV3",
                           {enter_constant(sum.indices_ta), k, g.sparse.indices, idents[sum.indices_var]}));
      sparse_sums.push_back(sum);
    } else if (Node* product = DeferrableProduct(g.dense, &replaced_products); product != nullptr) {
      // The iteration's gradient is one product a^T b (a MatMul's gradient
      // for its second operand, as a recurrent kernel's): a and b are
      // appended per iteration and multiplied once after the loop, one large
      // product instead of a small one and a whole-tensor Add per iteration.
      // Element 0 of each array is an empty [0, n] block, so an array is
      // never empty (a loop that ran no iteration gives zeros).
      ProductSum sum;
      sum.invariant = inv->id();
      sum.product = product;
      GraphBuilder ob = gb.WithControlDependencies({init[0].node});
      const DataType dtype = BaseType(product->output_type(0));
      Output origin = ob.Const("sum_origin", Tensor::FromVector<int32_t>({0, 0}));
      // [0, rows of the tensor] and [0, its columns]: the shapes of a's and
      // b's rows, with no rows.
      Output no_a = ob.Op("sum_no_a", "Transpose",
                          {ob.Op("sum_no_a_t", "Slice", {outside, origin, ob.Const("sum_all_rows", Tensor::FromVector<int32_t>({-1, 0}))}),
                           ob.Const("sum_swap", Tensor::FromVector<int32_t>({1, 0}))});
      Output no_b = ob.Op("sum_no_b", "Slice", {outside, origin, ob.Const("sum_all_cols", Tensor::FromVector<int32_t>({0, -1}))});
      Output size = ob.Scalar<int32_t>("sum_size", 0);
      const std::vector<std::pair<Output, Output*>> arrays = {{no_a, &sum.a_ta}, {no_b, &sum.b_ta}};
      std::vector<Output> flows;
      for (const auto& [empty, ta] : arrays) {
        Node* array = gb.AddNode("product_sum", "TensorArrayV3", {size},
                                 {{"dtype", MakeAttr(dtype)}, {"dynamic_size", MakeAttr(true)}});
        if (array == nullptr) return gb.status();
        *ta = Output{array, 0};
        flows.push_back(gb.Op("product_sum_first", "TensorArrayWriteV3", {*ta, ob.Scalar<int32_t>("zero", 0), empty, Output{array, 1}}));
      }
      if (!gb.ok()) return gb.status();
      sum.a_var = idents.size();
      add_var(flows[0]);
      sum.b_var = idents.size();
      add_var(flows[1]);
      if (!gb.ok()) return gb.status();
      // Iteration k is written at k + 1, the remaining count before this one.
      const Edge* a = product->input_edge(0);
      const Edge* b = product->input_edge(1);
      next.push_back(bb.Op("append_a", "TensorArrayWriteV3",
                           {enter_constant(sum.a_ta), idents[0], Output{a->src, a->src_output}, idents[sum.a_var]}));
      next.push_back(bb.Op("append_b", "TensorArrayWriteV3",
                           {enter_constant(sum.b_ta), idents[0], Output{b->src, b->src_output}, idents[sum.b_var]}));
      product_sums.push_back(sum);
    } else {
      const size_t slot = idents.size();
      add_var(gb.Op("acc_zeros", "ZerosLike", {outside}));
      if (!gb.ok()) return gb.status();
      next.push_back(bb.Op("acc", "Add", {idents[slot], g.dense}));
      dense_sums.emplace_back(inv->id(), slot);
    }
  }
  if (!bb.ok()) return bb.status();
  for (size_t i = 0; i < merges.size(); ++i) {
    Output n = bb.Op("next", "NextIteration", {next[i]});
    if (!bb.ok()) return bb.status();
    graph->RemoveEdge(merges[i]->input_edge(1));
    graph->AddEdge(n.node, 0, merges[i], 1);
  }
  // Nodes built for the body without inputs (constants of gradient
  // functions) run in the backward frame: tie them to its pivot.
  for (int id = body_start; id < graph->num_node_ids(); ++id) {
    Node* n = graph->FindNodeId(id);
    if (n != nullptr && n->in_edges().empty()) graph->AddControlEdge(pivot, n);
  }

  // Gradients of what enters the loop.
  for (size_t d = 0; d < dv_vars.size(); ++d) grad_of_enter[shape.vars[dv_vars[d]].enter->id()].dense = exits[1 + d];
  for (const auto& [inv, slot] : dense_sums) grad_of_enter[inv].dense = exits[slot];
  for (const ProductSum& sum : product_sums) {
    const DataType dtype = BaseType(sum.product->output_type(0));
    Output a = gb.Op("summed_a", "TensorArrayConcatV3", {sum.a_ta, exits[sum.a_var]}, {{"dtype", MakeAttr(dtype)}});
    Output b2 = gb.Op("summed_b", "TensorArrayConcatV3", {sum.b_ta, exits[sum.b_var]}, {{"dtype", MakeAttr(dtype)}});
    std::map<std::string, AttrValue> attrs(sum.product->def().attr().begin(), sum.product->def().attr().end());
    grad_of_enter[sum.invariant].dense = gb.Op("summed_product", "MatMul", {a, b2}, attrs);
  }
  for (Node* n : replaced_products) graph->RemoveNode(n);
  for (const SparseSum& sum : sparse_sums) {
    Gradient& g = grad_of_enter[sum.invariant];
    g.is_sparse = true;
    g.sparse.values = gb.Op("summed_values", "TensorArrayConcatV3", {sum.values_ta, exits[sum.values_var]},
                            {{"dtype", MakeAttr(sum.values_dtype)}});
    g.sparse.indices = gb.Op("summed_indices", "TensorArrayConcatV3", {sum.indices_ta, exits[sum.indices_var]},
                             {{"dtype", MakeAttr(sum.indices_dtype)}});
    g.sparse.dense_shape = sum.dense_shape;
  }
  for (int id : sorted_members) {
    Node* n = graph->FindNodeId(id);
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge() || member(e->src)) continue;
      auto it = grad_of_enter.find(n->id());
      input_grads->emplace_back(e, it != grad_of_enter.end() ? it->second : Gradient());
    }
  }
  return b.status();
}

}  // namespace sluice

// BuildWhileLoop and BuildCond: TensorFlow's loop and conditional
// constructions, plus the capture pass that routes outside tensors in.
#include "engine/graph/control_flow_builders.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

// A scope under `b` that no node uses yet ("while", "while_1", ...).
std::string UniqueScope(GraphBuilder* b, const std::string& name) {
  auto full = [&](const std::string& leaf) { return b->prefix().empty() ? leaf : absl::StrCat(b->prefix(), "/", leaf); };
  std::string leaf = name;
  for (int i = 1; b->graph()->FindNode(full(leaf) + "/pivot") != nullptr; ++i) leaf = absl::StrCat(name, "_", i);
  return leaf;
}

// Nodes [first_id, end) were built inside a construct that began at node id
// `outside_below`. Data edges from older nodes are routed through `route`
// (one route per tensor); nodes left without any input get a control edge
// from `pivot`, so they run where the construct's other nodes run. A control
// edge from outside cannot be routed: an error naming both nodes.
absl::Status CaptureAndAnchor(GraphBuilder* b, int outside_below, int first_id,
                              const std::function<Output(const Output&)>& route, Node* pivot) {
  Graph* g = b->graph();
  const int end = g->num_node_ids();
  std::map<std::pair<int, int>, Output> routed;
  for (int id = first_id; id < end; ++id) {
    Node* n = g->FindNodeId(id);
    if (n == nullptr) continue;
    std::vector<const Edge*> outside;
    for (const Edge* e : n->in_edges()) {
      if (e->src->id() < outside_below) outside.push_back(e);
    }
    for (const Edge* e : outside) {
      if (e->IsControlEdge()) {
        return absl::InvalidArgumentError(absl::StrCat("node '", n->name(), "' inside a loop or branch has a control "
                                                       "dependency on '", e->src->name(), "' from outside it"));
      }
      std::pair<int, int> key{e->src->id(), e->src_output};
      auto it = routed.find(key);
      if (it == routed.end()) {
        Output r = route(Output{e->src, e->src_output});
        if (!b->ok()) return b->status();
        it = routed.emplace(key, r).first;
      }
      const int dst_input = e->dst_input;
      g->RemoveEdge(e);
      g->AddEdge(it->second.node, it->second.index, n, dst_input);
    }
    if (n->in_edges().empty()) g->AddControlEdge(pivot, n);
  }
  return b->status();
}

AttrValue FrameAttr(const std::string& frame) { return MakeAttr(frame); }

}  // namespace

absl::StatusOr<WhileLoop> BuildWhileLoop(GraphBuilder* b, const std::vector<Output>& init, const WhileCondFn& cond,
                                         const WhileBodyFn& body, const WhileLoopOptions& options) {
  if (!b->ok()) return b->status();
  if (init.empty()) return absl::InvalidArgumentError("a while_loop needs at least one loop variable");
  for (const Output& v : init) {
    if (!v.valid()) return absl::InvalidArgumentError("a while_loop's initial value is null");
  }
  Graph* g = b->graph();
  const int loop_start = g->num_node_ids();
  const std::string leaf = UniqueScope(b, options.name);
  GraphBuilder lb = b->WithSubPrefix(leaf);
  const std::string frame = lb.prefix();
  const AttrValue pi = MakeAttr(int64_t{options.parallel_iterations});

  std::vector<Output> vars = init;
  vars.push_back(b->Scalar<int32_t>(leaf + "_counter_init", 0));
  const size_t n = vars.size(), counter = n - 1;
  std::vector<Node*> merges(n), switches(n);
  std::vector<Output> merged(n), exits(n), idents(n);
  Node* pivot_merge = nullptr;
  for (size_t i = 0; i < n; ++i) {
    AttrList attrs = {{"frame_name", FrameAttr(frame)}, {"is_constant", MakeAttr(false)}, {"parallel_iterations", pi}};
    if (i == counter) attrs["_loop_counter"] = MakeAttr(true);
    Output enter = lb.Op(i == counter ? "counter_enter" : "enter", "Enter", {vars[i]}, attrs);
    merges[i] = lb.AddNode(i == counter ? "counter_merge" : "merge", "Merge", {enter, enter});
    if (!lb.ok()) return lb.status();
    merged[i] = Output{merges[i], 0};
  }
  pivot_merge = merges[0];
  const std::vector<Output> user_merged(merged.begin(), merged.begin() + counter);

  // The condition, with captured tensors entered as loop constants.
  std::map<std::pair<int, int>, Output> entered;
  auto enter_constant = [&](const Output& t) {
    auto key = std::make_pair(t.node->id(), t.index);
    auto it = entered.find(key);
    if (it != entered.end()) return it->second;
    Output e = lb.Op("captured", "Enter", {t},
                     {{"frame_name", FrameAttr(frame)}, {"is_constant", MakeAttr(true)}, {"parallel_iterations", pi}});
    entered.emplace(key, e);
    return e;
  };
  int region = g->num_node_ids();
  GraphBuilder cb = lb.WithSubPrefix("cond");
  Output pred = cond(cb, user_merged);
  if (!lb.ok()) return lb.status();
  if (!pred.valid() || pred.dtype() != DT_BOOL) {
    return absl::InvalidArgumentError(absl::StrCat("the condition of while_loop '", frame, "' must be a bool scalar",
                                                   pred.valid() ? absl::StrCat(", got ", DataTypeString(pred.dtype()))
                                                                : std::string()));
  }
  absl::Status s = CaptureAndAnchor(&lb, loop_start, region, enter_constant, pivot_merge);
  if (!s.ok()) return s;
  // CaptureAndAnchor re-pointed edges; `pred` itself may have been captured.
  Output loop_cond = lb.Op("loop_cond", "LoopCond", {pred});
  if (!lb.ok()) return lb.status();
  if (pred.node->id() < loop_start) {
    const Edge* e = loop_cond.node->input_edge(0);
    g->RemoveEdge(e);
    Output r = enter_constant(pred);
    g->AddEdge(r.node, r.index, loop_cond.node, 0);
  }
  for (size_t i = 0; i < n; ++i) {
    switches[i] = lb.AddNode(i == counter ? "counter_switch" : "switch", "Switch", {merged[i], loop_cond});
    if (!lb.ok()) return lb.status();
    exits[i] = lb.Op(i == counter ? "trip_count" : "exit", "Exit", {Output{switches[i], 0}});
    idents[i] = lb.Op(i == 0 ? "pivot" : "body_value", "Identity", {Output{switches[i], 1}});
  }
  if (!lb.ok()) return lb.status();
  // Ensure the pivot name (used by UniqueScope) is the first var's Identity.
  Node* pivot = idents[0].node;

  region = g->num_node_ids();
  GraphBuilder bb = lb.WithSubPrefix("body");
  const std::vector<Output> user_idents(idents.begin(), idents.begin() + counter);
  WhileBody result = body(bb, user_idents);
  if (!lb.ok()) return lb.status();
  if (result.next.size() != counter) {
    return absl::InvalidArgumentError(absl::StrCat("the body of while_loop '", frame, "' returned ", result.next.size(),
                                                   " values for ", counter, " loop variables"));
  }
  for (size_t i = 0; i < counter; ++i) {
    if (!result.next[i].valid() || result.next[i].dtype() != init[i].dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the body of while_loop '", frame, "' returned ",
          result.next[i].valid() ? DataTypeString(result.next[i].dtype()) : std::string("null"), " for loop variable ",
          i, ", which is ", DataTypeString(init[i].dtype())));
    }
  }
  std::vector<Output> next = result.next;
  next.push_back(bb.Op("next_count", "Add", {idents[counter], bb.Scalar<int32_t>("one", 1)}));

  // Per-iteration values: TensorArrays written at the counter's index, their
  // flows carried as extra loop variables.
  struct Stack {
    Output handle;
    Node* merge;
    Output exit_flow;
    DataType dtype;
  };
  std::vector<Stack> stacks;
  for (size_t m = 0; m < result.per_iteration.size(); ++m) {
    const Output& y = result.per_iteration[m];
    if (!y.valid()) return absl::InvalidArgumentError(absl::StrCat("while_loop '", frame, "': a per-iteration value is null"));
    // The size is tied to the counter's initial value, so the body's
    // capture pass below leaves it in the loop's parent frame.
    Output size = b->WithControlDependencies({vars[counter].node}).Scalar<int32_t>(leaf + "_stack_size", 0);
    Node* ta = b->AddNode(leaf + "_stack", "TensorArrayV3", {size},
                          {{"dtype", MakeAttr(y.dtype())}, {"dynamic_size", MakeAttr(true)}});
    if (ta == nullptr) return b->status();
    Output handle = bb.Op("stack_handle", "Enter", {Output{ta, 0}},
                          {{"frame_name", FrameAttr(frame)}, {"is_constant", MakeAttr(true)}, {"parallel_iterations", pi}});
    Output flow_enter = lb.Op("stack_flow_enter", "Enter", {Output{ta, 1}},
                              {{"frame_name", FrameAttr(frame)},
                               {"is_constant", MakeAttr(false)},
                               {"parallel_iterations", pi},
                               {"_loop_stack_flow", MakeAttr(true)}});
    Node* flow_merge = lb.AddNode("stack_flow_merge", "Merge", {flow_enter, flow_enter});
    if (!lb.ok()) return lb.status();
    Node* flow_switch = lb.AddNode("stack_flow_switch", "Switch", {Output{flow_merge, 0}, loop_cond});
    if (!lb.ok()) return lb.status();
    Output flow_exit = lb.Op("stack_flow_exit", "Exit", {Output{flow_switch, 0}});
    Output written = bb.Op("stack_write", "TensorArrayWriteV3", {handle, idents[counter], y, Output{flow_switch, 1}});
    Output flow_next = bb.Op("stack_flow_next", "NextIteration", {written});
    if (!lb.ok()) return lb.status();
    g->RemoveEdge(flow_merge->input_edge(1));
    g->AddEdge(flow_next.node, 0, flow_merge, 1);
    stacks.push_back({Output{ta, 0}, flow_merge, flow_exit, y.dtype()});
  }
  for (size_t i = 0; i < n; ++i) {
    Output next_iteration = bb.Op(i == counter ? "counter_next" : "next", "NextIteration", {next[i]});
    if (!lb.ok()) return lb.status();
    g->RemoveEdge(merges[i]->input_edge(1));
    g->AddEdge(next_iteration.node, 0, merges[i], 1);
  }
  s = CaptureAndAnchor(&lb, loop_start, region, enter_constant, pivot);
  if (!s.ok()) return s;

  WhileLoop loop;
  loop.outputs.assign(exits.begin(), exits.begin() + counter);
  loop.trip_count = exits[counter];
  for (const Stack& st : stacks) {
    Output indices = b->Op(leaf + "_stack_indices", "Range",
                           {b->Scalar<int32_t>(leaf + "_stack_start", 0), loop.trip_count,
                            b->Scalar<int32_t>(leaf + "_stack_delta", 1)});
    loop.stacked.push_back(b->Op(leaf + "_stacked", "TensorArrayGatherV3", {st.handle, indices, st.exit_flow},
                                 {{"dtype", MakeAttr(st.dtype)}, {"_loop_stacked", MakeAttr(true)}}));
  }
  if (!b->ok()) return b->status();
  return loop;
}

absl::StatusOr<std::vector<Output>> BuildCond(GraphBuilder* b, Output pred, const BranchFn& then_branch,
                                              const BranchFn& else_branch, const std::string& name) {
  if (!b->ok()) return b->status();
  if (!pred.valid() || pred.dtype() != DT_BOOL) {
    return absl::InvalidArgumentError(absl::StrCat("the predicate of cond '", name, "' must be a bool scalar"));
  }
  Graph* g = b->graph();
  const int cond_start = g->num_node_ids();
  GraphBuilder cb = b->WithSubPrefix(UniqueScope(b, name));
  Node* pivot_switch = cb.AddNode("pivot_switch", "Switch", {pred, pred});
  if (!cb.ok()) return cb.status();
  Node* pivots[2] = {cb.Op("pivot_f", "Identity", {Output{pivot_switch, 0}}).node,
                     cb.Op("pivot", "Identity", {Output{pivot_switch, 1}}).node};
  if (!cb.ok()) return cb.status();
  std::vector<Output> outs[2];
  const BranchFn* fns[2] = {&else_branch, &then_branch};
  for (int branch = 1; branch >= 0; --branch) {
    const int region = g->num_node_ids();
    GraphBuilder bb = cb.WithSubPrefix(branch == 1 ? "then" : "else");
    std::vector<Output> values = (*fns[branch])(bb);
    if (!cb.ok()) return cb.status();
    GraphBuilder ob = bb.WithControlDependencies({pivots[branch]});
    for (const Output& v : values) {
      if (!v.valid()) return absl::InvalidArgumentError(absl::StrCat("a branch of cond '", name, "' returned null"));
      outs[branch].push_back(ob.Op("output", "Identity", {v}));
    }
    std::map<std::pair<int, int>, Output> switched;
    auto route = [&](const Output& t) {
      Node* sw = cb.AddNode("switch", "Switch", {t, pred});
      return sw == nullptr ? Output() : Output{sw, branch};
    };
    absl::Status s = CaptureAndAnchor(&cb, cond_start, region, route, pivots[branch]);
    if (!s.ok()) return s;
  }
  if (outs[0].size() != outs[1].size()) {
    return absl::InvalidArgumentError(absl::StrCat("the branches of cond '", name, "' return ", outs[1].size(), " and ",
                                                   outs[0].size(), " values"));
  }
  std::vector<Output> merged;
  for (size_t i = 0; i < outs[0].size(); ++i) {
    if (outs[0][i].dtype() != outs[1][i].dtype()) {
      return absl::InvalidArgumentError(absl::StrCat("the branches of cond '", name, "' return ",
                                                     DataTypeString(outs[1][i].dtype()), " and ",
                                                     DataTypeString(outs[0][i].dtype()), " for output ", i));
    }
    merged.push_back(cb.Op("merge", "Merge", {outs[0][i], outs[1][i]}));
  }
  if (!cb.ok()) return cb.status();
  return merged;
}

}  // namespace sluice

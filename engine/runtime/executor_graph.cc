// ExecutorGraph construction: kernels, frame layout and pending counts.
#include "engine/runtime/executor_graph.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "engine/graph/control_flow.h"

namespace sluice {

absl::Status BuildExecutorGraph(Device* device, std::unique_ptr<const Graph> graph, ExecutorGraph* out) {
  std::vector<ControlFlowInfo> cf;
  absl::Status s = BuildControlFlowInfo(*graph, &cf);
  if (!s.ok()) return s;
  out->items.clear();
  out->items.resize(graph->num_node_ids());
  out->frames.clear();
  out->frames.push_back(FrameInfo());
  absl::flat_hash_map<std::string, int> frame_index{{"", 0}};
  auto frame_of = [&](const std::string& name) {
    auto [it, inserted] = frame_index.emplace(name, static_cast<int>(out->frames.size()));
    if (inserted) {
      out->frames.push_back(FrameInfo());
      out->frames.back().name = name;
    }
    return it->second;
  };
  for (Node* n : graph->nodes()) {
    NodeItem& item = out->items[n->id()];
    item.node = n;
    auto kernel = KernelRegistry::Global()->CreateKernel(device, n->def(), n->op_def());
    if (!kernel.ok()) return kernel.status();
    item.kernel = std::move(kernel).value();
    item.async_kernel = item.kernel->AsAsync();
    item.is_expensive = item.kernel->IsExpensive();
    item.is_merge = n->IsMerge();
    item.is_enter = n->IsEnter();
    item.is_exit = n->IsExit();
    item.is_next_iteration = n->IsNextIteration();
    item.is_switch = n->IsSwitch();
    item.outputs_may_be_dead = item.is_switch || n->type_string() == "_Recv";
    item.runs_when_dead = n->type_string() == "_Send";
    item.is_control_trigger = n->type_string() == "ControlTrigger";
    item.allows_uninitialized_input = n->op_def().allows_uninitialized_input;
    item.num_inputs = n->num_inputs();
    item.num_outputs = n->num_outputs();
    for (DataType t : n->input_types()) item.input_is_ref.push_back(IsRefType(t));
    for (DataType t : n->output_types()) item.output_base_types.push_back(BaseType(t));
    item.frame = frame_of(cf[n->id()].frame_name);
    FrameInfo& frame = out->frames[item.frame];
    item.frame_local_id = static_cast<int>(frame.pending_init.size());
    item.input_start = frame.total_inputs;
    frame.total_inputs += item.num_inputs;
    PendingInit init;
    for (const Edge* e : n->in_edges()) {
      if (e->IsControlEdge()) {
        ++init.pending;
      } else {
        ++item.num_data_inputs;
        if (!item.is_merge) ++init.pending;
      }
    }
    frame.pending_init.push_back(init);
    item.has_one_in_edge = n->in_edges().size() == 1;
    if (n->in_edges().empty()) out->root_nodes.push_back(n->id());
    if (item.is_exit) {
      item.exit_index = frame.num_exits++;
      frame.exit_nodes.push_back(n->id());
    }
    if (item.is_enter) {
      std::string child;
      s = GetNodeAttr(n->def(), "frame_name", &child);
      if (!s.ok()) return s;
      s = GetNodeAttr(n->def(), "is_constant", &item.is_constant_enter);
      if (!s.ok()) return s;
      int64_t parallel = 10;
      s = GetNodeAttr(n->def(), "parallel_iterations", &parallel);
      if (!s.ok()) return s;
      if (parallel < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(NodeContext(n->def()), "attr 'parallel_iterations' must be >= 1, got ", parallel));
      }
      // Only a bound on how many iterations run at once, so a larger value
      // changes no result; each frame holds a slot per allowed iteration, and
      // an attr of 2^31 would ask for 16 GiB of them.
      parallel = std::min<int64_t>(parallel, kMaxParallelIterations);
      item.enter_frame = frame_of(child);
      FrameInfo& child_frame = out->frames[item.enter_frame];
      if (child_frame.num_enters == 0) child_frame.parallel_iterations = static_cast<int>(parallel);
      ++child_frame.num_enters;
    }
  }
  for (Node* n : graph->nodes()) {
    NodeItem& item = out->items[n->id()];
    std::vector<const Edge*> edges = n->out_edges();
    std::stable_sort(edges.begin(), edges.end(), [](const Edge* a, const Edge* b) { return a->dst->id() < b->dst->id(); });
    std::vector<int> last_edge_for_output(item.num_outputs, -1);
    for (const Edge* e : edges) {
      OutEdge oe;
      oe.dst_id = e->dst->id();
      oe.src_output = e->src_output;
      oe.dst_input = e->dst_input;
      oe.is_control = e->IsControlEdge();
      if (!oe.is_control) last_edge_for_output[e->src_output] = static_cast<int>(item.out_edges.size());
      item.out_edges.push_back(oe);
    }
    for (int idx : last_edge_for_output) {
      if (idx >= 0) item.out_edges[idx].last_use = true;
    }
  }
  out->lock_free_root = out->frames.size() == 1 &&
                        std::none_of(out->items.begin(), out->items.end(), [](const NodeItem& item) { return item.is_merge; });
  out->graph = std::move(graph);
  return absl::OkStatus();
}

}  // namespace sluice

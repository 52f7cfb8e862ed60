// The immutable, per-executor view of a graph that the step loop reads: one
// NodeItem per node (kernel, edges sorted by destination id, input slot
// offsets within its frame, control-flow flags) and one FrameInfo per loop
// frame name (initial pending counts, input slot count, Enter/Exit counts).
// Built once by NewLocalExecutor; read concurrently by every step.
#ifndef SLUICE_ENGINE_RUNTIME_EXECUTOR_GRAPH_H_
#define SLUICE_ENGINE_RUNTIME_EXECUTOR_GRAPH_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "engine/framework/op_kernel.h"
#include "engine/graph/graph.h"

namespace sluice {

struct OutEdge {
  int dst_id = 0;
  int src_output = 0;  // kControlSlot for control edges
  int dst_input = 0;
  bool is_control = false;
  // The last data edge reading `src_output`: its value may be moved.
  bool last_use = false;
};

struct PendingInit {
  int pending = 0;  // inputs to wait for (merges: control inputs only)
};

// The most iterations of one loop frame that run at once: an Enter's larger
// parallel_iterations attr counts as this (the results are the same).
constexpr int kMaxParallelIterations = 1024;

struct FrameInfo {
  std::string name;
  int num_enters = 0;      // Enter nodes feeding one instance of this frame
  int num_exits = 0;
  std::vector<int> exit_nodes;  // node ids of its Exits, by exit index
  int parallel_iterations = 10;
  int total_inputs = 0;    // input slots of all nodes in the frame
  std::vector<PendingInit> pending_init;  // by frame-local node index
};

struct NodeItem {
  const Node* node = nullptr;
  std::unique_ptr<OpKernel> kernel;
  AsyncOpKernel* async_kernel = nullptr;
  bool is_expensive = true;
  bool is_merge = false;
  bool is_enter = false;
  bool is_constant_enter = false;
  bool is_exit = false;
  bool is_next_iteration = false;
  bool is_switch = false;
  // Unset outputs are dead rather than an error (Switch, _Recv of a dead value).
  bool outputs_may_be_dead = false;
  // _Send runs even when dead, to carry the deadness to its receiver.
  bool runs_when_dead = false;
  // ControlTrigger is never dead: it runs (and its out-edges are live) once
  // all its inputs arrived, dead or not.
  bool is_control_trigger = false;
  bool allows_uninitialized_input = false;
  int num_inputs = 0;
  int num_outputs = 0;
  int num_data_inputs = 0;  // data in-edges (merges)
  // Exactly one in-edge: its arrival makes the node ready (no count to keep).
  bool has_one_in_edge = false;
  absl::InlinedVector<bool, 4> input_is_ref;
  // BaseType of each output's declared type (checked against what the kernel set).
  absl::InlinedVector<DataType, 2> output_base_types;
  std::vector<OutEdge> out_edges;
  int frame = 0;            // index into ExecutorGraph::frames of the frame it runs in
  int frame_local_id = 0;   // its pending-count slot in that frame
  int input_start = 0;      // its first input slot in that frame
  int enter_frame = -1;     // Enter: the child frame it feeds
  int exit_index = -1;      // Exit: its index among its frame's exits
};

struct ExecutorGraph {
  std::unique_ptr<const Graph> graph;
  std::vector<NodeItem> items;        // by node id (gaps for removed ids)
  std::vector<FrameInfo> frames;      // frames[0] is the root frame
  std::vector<int> root_nodes;        // nodes with no in-edges, by id
  // No loop (one frame) and no Merge: the root frame's pending counts are
  // atomics and its nodes make others ready without the frame's lock.
  bool lock_free_root = false;
};

// Builds items, frames and kernels. Errors name the node.
absl::Status BuildExecutorGraph(Device* device, std::unique_ptr<const Graph> graph, ExecutorGraph* out);

}  // namespace sluice

#endif  // SLUICE_ENGINE_RUNTIME_EXECUTOR_GRAPH_H_

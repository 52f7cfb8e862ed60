// Graph builders for `cond` and `while_loop` (whitepaper §4.4), built from
// Switch/Merge/Enter/Exit/NextIteration/LoopCond the way TensorFlow builds
// them, so the executor's frames run them and AddSymbolicGradients
// differentiates them (engine/graph/while_gradient.h).
//
// The branch and body callbacks add ordinary nodes with the GraphBuilder they
// are given and may use any tensor built before the construct: afterwards the
// builder routes such captured tensors in (through Enter(is_constant) for a
// loop, through Switch for a branch) and ties nodes without inputs (constants)
// to the construct's pivot by a control edge, so every new node runs in the
// right frame and branch. Loops nest, and conds nest in loops and vice versa.
//
// Shape of a loop built here (what the gradient relies on):
//   var i:   Enter(init_i) -> Merge(Enter, NextIteration) -> Switch(Merge, LoopCond)
//            Switch:0 -> Exit (final value);  Switch:1 -> Identity (value in the body)
//   counter: one extra int32 var counting iterations from 0; its Enter carries
//            the attr `_loop_counter`, and its Exit is the trip count.
//   per-iteration outputs: written to a TensorArray at the counter's index (its
//            flow a loop var whose Enter carries `_loop_stack_flow`) and
//            gathered after the loop by a TensorArrayGatherV3 with the attr
//            `_loop_stacked` (the values stacked along a new axis 0).
// A cond's outputs are Merge(false value, true value), each value an Identity
// with a control edge from its branch's pivot, Identity(Switch(pred, pred):k).
// Thread safety: mutates the graph; one caller at a time.
#ifndef SLUICE_ENGINE_GRAPH_CONTROL_FLOW_BUILDERS_H_
#define SLUICE_ENGINE_GRAPH_CONTROL_FLOW_BUILDERS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/graph/graph_builder.h"

namespace sluice {

struct WhileLoopOptions {
  // Name scope of the loop's nodes; also (made unique) its frame name.
  std::string name = "while";
  // Iterations that may run at once (the Enter attr).
  int parallel_iterations = 10;
};

// What one iteration computes: the loop variables' next values (one per
// variable, same dtypes) and values to stack across iterations.
struct WhileBody {
  std::vector<Output> next;
  std::vector<Output> per_iteration;
};

using WhileCondFn = std::function<Output(GraphBuilder& b, const std::vector<Output>& vars)>;
using WhileBodyFn = std::function<WhileBody(GraphBuilder& b, const std::vector<Output>& vars)>;

struct WhileLoop {
  std::vector<Output> outputs;  // the variables' final values
  std::vector<Output> stacked;  // per_iteration values stacked: [trip count, ...]
  Output trip_count;            // int32 scalar
};

// while (cond(vars)) vars = body(vars).next. `cond` returns a bool scalar.
// Errors: an empty `init`, a body returning the wrong number or dtypes of
// values, a non-bool condition, or any error the callbacks' builder recorded.
absl::StatusOr<WhileLoop> BuildWhileLoop(GraphBuilder* b, const std::vector<Output>& init, const WhileCondFn& cond,
                                         const WhileBodyFn& body, const WhileLoopOptions& options = {});

using BranchFn = std::function<std::vector<Output>(GraphBuilder& b)>;

// pred ? then_branch() : else_branch(); only the taken branch runs. Both
// branches return the same number of values with the same dtypes.
absl::StatusOr<std::vector<Output>> BuildCond(GraphBuilder* b, Output pred, const BranchFn& then_branch,
                                              const BranchFn& else_branch, const std::string& name = "cond");

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_CONTROL_FLOW_BUILDERS_H_

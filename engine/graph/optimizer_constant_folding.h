// Constant folding (whitepaper §5.1's graph rewrites): a node whose value
// depends on no input of the step (its data inputs are Consts, or a Shape,
// Size or Rank of a tensor whose shape is fully known statically, or nodes
// folded before it) is evaluated once, by its CPU kernel, when the step graph
// is built, and replaced by a Const carrying the value. The Const keeps the
// node's name, requested and assigned device and control inputs; consumers
// (data and control) are moved onto it. A Gradient's shape arithmetic (Mean's
// Shape -> Prod -> Maximum -> FloorDiv, BroadcastGradientArgs, a Reshape's
// shape) then costs nothing per step.
//
// Never folded: stateful ops (variables, random ops, queues, readers),
// control-flow ops and anything in a loop frame or downstream of a Switch,
// Placeholders, internal nodes ("_Recv", "_Send"), nodes with ref or resource
// inputs or outputs, string results, MatchingFiles (it reads the file
// system), non-integer results on a device other than a CPU (a GPU kernel
// may round differently), nodes with a control input from a node that is not
// itself constant, async kernels, nodes `keep` protects, and nodes whose
// output would exceed `max_constant_bytes` (known before evaluating when the
// shape is static; otherwise the evaluation's allocations are capped at that
// size, so a big value is never materialized). A kernel that fails is left to
// fail at run time, where the error belongs.
//
// Thread safety: a free function over the caller's graph; it evaluates on a
// CPU device of its own (no resources are touched).
#ifndef SLUICE_ENGINE_GRAPH_OPTIMIZER_CONSTANT_FOLDING_H_
#define SLUICE_ENGINE_GRAPH_OPTIMIZER_CONSTANT_FOLDING_H_

#include <cstdint>
#include <functional>

#include "engine/graph/graph.h"

namespace sluice {

struct ConstantFoldingOptions {
  // The largest folded value, in bytes, per output; bigger values are
  // computed at run time as before, so a big constant is never materialized.
  int64_t max_constant_bytes = int64_t{10} << 20;
  // Nodes for which this returns true are neither folded nor removed.
  std::function<bool(const Node*)> keep;
  // Rounds of (shape inference, folding): a value folded in one round can
  // make a shape known (a Reshape's shape input) for the next one.
  int max_rounds = 4;
};

struct ConstantFoldingStats {
  int folded = 0;   // nodes replaced by Consts
  int removed = 0;  // constant inputs left without consumers and removed
};

// Folds in place. The graph stays valid whatever happens; nothing is folded
// in a graph whose loop frames are malformed.
ConstantFoldingStats FoldConstants(const ConstantFoldingOptions& options, Graph* graph);

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_OPTIMIZER_CONSTANT_FOLDING_H_

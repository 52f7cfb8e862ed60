// Which fuzzed GraphDefs the graph-running fuzz targets (graphdef_run, worker_request) run:
// not graphs over 32 nodes; not stateful ops outside a short list (queues and readers block or
// touch files); not integers in Const tensors or shape attrs whose product (of those under
// 2^40) exceeds 2^24, because a graph may legitimately ask for gigabytes, which the fuzzer
// would report as out-of-memory. Dims of 2^40 and more stay in: they must be refused, never
// allocated. `extra_stateful` adds ops a target allows (worker_request: _Send, _Recv).
// Graphs with loops are imported but not run (MayLoop).
// Thread safety: pure functions.
#ifndef SLUICE_TESTS_FUZZ_GRAPH_FILTER_H_
#define SLUICE_TESTS_FUZZ_GRAPH_FILTER_H_

#include <cstdint>
#include <set>
#include <string>

#include "engine/framework/graph.pb.h"
#include "engine/framework/op_def.h"

namespace sluice {
namespace fuzz {

inline constexpr int kMaxNodes = 32;
inline constexpr double kMaxProduct = 1 << 24;
inline constexpr uint64_t kRefusedForSure = uint64_t{1} << 40;

// Stateful ops that neither block nor touch files.
inline bool AllowedStateful(const std::string& op) {
  static const auto* ops = new std::set<std::string>{
      "VariableV2", "Variable", "Assign", "AssignAdd", "AssignSub", "RandomUniform", "RandomUniformInt",
      "RandomStandardNormal", "TruncatedNormal", "RandomShuffle", "RandomFlipLeftRight", "RandomCrop", "AugmentImages",
      "VarHandleOp", "ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
      "ResourceGather", "VariableShape", "VarIsInitializedOp", "DestroyResourceOp", "StackV2", "StackPushV2",
      "StackPopV2", "StackCloseV2"};
  return ops->count(op) > 0;
}

inline void MultiplyDim(int64_t v, double* product) {
  const uint64_t a = v < 0 ? -static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  if (a > 1 && a < kRefusedForSure) *product *= static_cast<double>(a);
}

inline bool TooLarge(const NodeDef& node) {
  for (const auto& [name, attr] : node.attr()) {
    double product = 1;
    if (attr.has_tensor()) {
      for (int32_t v : attr.tensor().int_val()) MultiplyDim(v, &product);
      for (int64_t v : attr.tensor().int64_val()) MultiplyDim(v, &product);
      for (const auto& d : attr.tensor().tensor_shape().dim()) MultiplyDim(d.size(), &product);
      if (attr.tensor().tensor_content().size() > 4096) return true;
    }
    if (attr.has_shape()) {
      for (const auto& d : attr.shape().dim()) MultiplyDim(d.size(), &product);
    }
    for (int64_t v : attr.list().i()) MultiplyDim(v, &product);
    for (const auto& s : attr.list().shape()) {
      for (const auto& d : s.dim()) MultiplyDim(d.size(), &product);
    }
    MultiplyDim(attr.i(), &product);
    if (product > kMaxProduct) return true;
  }
  return false;
}

inline bool Runnable(const GraphDef& graph, const std::set<std::string>& extra_stateful = {}) {
  if (graph.node_size() > kMaxNodes) return false;
  for (const NodeDef& node : graph.node()) {
    const OpDef* op = OpRegistry::Global()->LookUp(node.op());
    if (op != nullptr && op->is_stateful && !AllowedStateful(node.op()) && extra_stateful.count(node.op()) == 0) {
      return false;
    }
    if (TooLarge(node)) return false;
  }
  return true;
}

// A graph with a loop (a NextIteration) may never stop, which no filter can
// tell: the targets import it (validation, control flow, shape inference's
// fixpoint over the loop) but do not run it.
inline bool MayLoop(const GraphDef& graph) {
  for (const NodeDef& node : graph.node()) {
    if (node.op() == "NextIteration" || node.op() == "RefNextIteration") return true;
  }
  return false;
}

}  // namespace fuzz
}  // namespace sluice

#endif  // SLUICE_TESTS_FUZZ_GRAPH_FILTER_H_

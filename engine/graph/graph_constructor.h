// Building a Graph from a GraphDef, validating everything a GraphDef can get
// wrong before any kernel exists: unknown ops, bad or duplicate names, missing,
// unknown or mistyped attrs, dangling inputs, bad ports, wrong input counts,
// control inputs before data inputs, dtype mismatches on edges, cycles that do
// not pass through NextIteration, and inconsistent loop frames. Every error is
// InvalidArgument naming the node (and the attr or input).
#ifndef SLUICE_ENGINE_GRAPH_GRAPH_CONSTRUCTOR_H_
#define SLUICE_ENGINE_GRAPH_GRAPH_CONSTRUCTOR_H_

#include "absl/status/status.h"
#include "engine/framework/graph.pb.h"
#include "engine/graph/graph.h"

namespace sluice {

struct GraphConstructorOptions {
  // Also run shape inference and reject shape errors.
  bool infer_shapes = true;
  // Accept names starting with '_', which are reserved for nodes Sluice adds
  // itself (a partition's _Send/_Recv nodes that a worker is sent).
  bool allow_internal_names = false;
};

// Adds the nodes of `graph_def` to `graph` (which may already hold nodes
// that the new ones reference, as Session::Extend needs). On error `graph` may
// hold some of the new nodes: callers construct into a scratch graph.
absl::Status ConvertGraphDefToGraph(const GraphConstructorOptions& options, const GraphDef& graph_def, Graph* graph);

// Convenience: a fresh validated graph.
absl::StatusOr<std::unique_ptr<Graph>> GraphFromGraphDef(const GraphDef& graph_def,
                                                         const GraphConstructorOptions& options = {});

// True when a value of type `src` may flow into an input of type `dst`
// (equal types, or a ref flowing into its value type).
bool TypesCompatible(DataType src, DataType dst);

// InvalidArgument naming a node on a cycle that does not pass through a
// NextIteration node.
absl::Status CheckForIllegalCycles(const Graph& graph);

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_GRAPH_CONSTRUCTOR_H_

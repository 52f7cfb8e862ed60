// CostModel: per-node cost estimates for cost-model placement (whitepaper
// §3.2.1) and for the plan that `train --dry-run` prints. The papers give two
// sources of costs, and this class holds either:
//   - static estimates from shape inference: FLOPs by op (MatMul 2mnk,
//     Conv2D and its backprops 2 * output * window * channels, pooling by
//     window, everything else one FLOP per output element) and the bytes of
//     every output; a node's time is max(FLOPs / flops_per_ns,
//     bytes touched / bytes_per_ns) plus a fixed dispatch overhead;
//   - times measured in a traced step (ApplyMeasured), which replace the
//     estimate of every node they name.
// Unknown dimensions (the batch, when it is fed) count as `unknown_dim`; an
// output of unknown rank counts as one element.
// The session folds constants before a step runs (optimizer_constant_folding.h),
// and a gradient's shapes are often known only then: a Mean's gradient is
// reshaped and tiled by shapes computed from Shape, Prod and FloorDiv nodes.
// Estimate can take that graph as `as_run`: shapes come from it, a node it
// folded into a Const costs no FLOPs, and a node it removed costs nothing.
//
// Ownership: a value type indexed by the node ids of the graph it was built
// from; that graph must not gain or lose nodes while the model is used.
// Thread safety: const methods may be called concurrently.
#ifndef SLUICE_ENGINE_GRAPH_COST_MODEL_H_
#define SLUICE_ENGINE_GRAPH_COST_MODEL_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/graph/graph.h"

namespace sluice {

struct CostModelOptions {
  // The size assumed for a dimension shape inference leaves unknown.
  int64_t unknown_dim = 1;
  // Sustained speed of one device (one core doing blocked GEMM on this
  // machine's AVX2 reaches 30-60 GFLOP/s; element-wise work is memory bound).
  double flops_per_ns = 30.0;
  double bytes_per_ns = 8.0;
  // What the executor spends on any node (dispatch, allocation).
  double node_overhead_ns = 500.0;
  // Moving a tensor between two devices: a fixed latency plus its bytes at
  // this rate (in one process a Send/Recv hands over a reference, but the
  // consumer's core then pulls the data through its caches).
  double transfer_latency_ns = 2000.0;
  double transfer_bytes_per_ns = 8.0;
};

class CostModel {
 public:
  // Static estimates for every node of `graph` from its inferred shapes.
  // `as_run`, when given: a copy of `graph` as the session rewrites it before
  // running it (constants folded; nodes matched by name), whose inferred
  // shapes are used instead; if its shapes cannot be inferred, `graph`'s are.
  // Errors: shape inference on `graph` failing (InvalidArgument naming the node).
  static absl::StatusOr<CostModel> Estimate(const Graph& graph, const CostModelOptions& options = {},
                                            const Graph* as_run = nullptr);

  // REQUIRES: `node` belongs to the graph the model was built from.
  double Flops(const Node* node) const { return flops_[node->id()]; }
  double ComputeNs(const Node* node) const { return compute_ns_[node->id()]; }
  int64_t OutputBytes(const Node* node, int port) const { return output_bytes_[node->id()][port]; }
  // Elements of the variable a VariableV2/Variable node holds (its `shape`
  // attr); 0 for other nodes.
  int64_t VariableElements(const Node* node) const { return variable_elements_[node->id()]; }
  // Whether ComputeNs comes from a measurement.
  bool measured(const Node* node) const { return measured_[node->id()]; }

  // Time to move `bytes` between two devices.
  double TransferNs(int64_t bytes) const {
    return options_.transfer_latency_ns + static_cast<double>(bytes) / options_.transfer_bytes_per_ns;
  }

  // Replaces the estimates of the nodes named in `measured` (node name,
  // nanoseconds per step) by those times. Names not in the graph are ignored.
  // Returns how many nodes took a measured time.
  int ApplyMeasured(const Graph& graph, absl::Span<const std::pair<std::string, double>> measured);

  const CostModelOptions& options() const { return options_; }

 private:
  CostModelOptions options_;
  std::vector<double> flops_;
  std::vector<double> compute_ns_;
  std::vector<std::vector<int64_t>> output_bytes_;
  std::vector<int64_t> variable_elements_;
  std::vector<bool> measured_;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_COST_MODEL_H_

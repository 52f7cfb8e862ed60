// Operator fusion (one of the graph rewrites TensorFlow's grappler "remapper"
// does): MatMul -> BiasAdd [-> Relu] becomes one _FusedMatMul node and
// Conv2D -> BiasAdd [-> Relu] one _FusedConv2D, whose CPU kernels apply the
// bias and the activation as CpuGemm stores each output tile, instead of two
// more passes over the output in memory (the GPU's: one pass instead of two,
// or none when a convolution's transpose back from NCHW applies them).
//
// A chain is fused only when the result cannot be told apart from the
// unfused graph:
//   - every intermediate output (the product, and the BiasAdd's when a Relu
//     follows) has no consumer but the next node of the chain (a fetched
//     intermediate has a _Retval/_Send consumer, so it is never fused away);
//     a BiasAdd with other consumers ends the chain before the Relu;
//   - all nodes are float32, on one assigned device, and that device runs the
//     fused op: a CPU, or another device type for which this process
//     registers the fused op's kernel (a GPU in a --config=cuda build, where
//     the bias and Relu take one pass after cuBLAS's or cuDNN's product, or
//     ride the transpose of a convolution cuDNN ran in NCHW);
//   - MatMul keeps transpose_a / transpose_b; Conv2D must be NHWC with
//     dilations 1 and SAME or VALID padding; BiasAdd must be NHWC;
//   - control edges into or out of any node of the chain move to the fused
//     node (a chain whose later inputs depend on its own product, which would
//     turn into a cycle, is left alone).
// The fused node takes the name of the chain's last node, so its consumers
// (and fetches by name) see the same tensor name. Run it after gradients are
// built (the fused ops have none) and after feed/fetch rewriting.
//
// Thread safety: mutates the caller's graph; no shared state.
#ifndef SLUICE_ENGINE_GRAPH_OPTIMIZER_FUSION_H_
#define SLUICE_ENGINE_GRAPH_OPTIMIZER_FUSION_H_

#include <functional>

#include "engine/graph/graph.h"

namespace sluice {

struct FusionOptions {
  // MatMul + BiasAdd [+ Relu] -> _FusedMatMul.
  bool fuse_matmul = true;
  // Conv2D + BiasAdd [+ Relu] -> _FusedConv2D.
  bool fuse_conv2d = true;
  // A Relu after the BiasAdd joins the fused node (else the chain ends at the
  // BiasAdd).
  bool fuse_relu = true;
  // Nodes for which this returns true are never part of a fused chain.
  std::function<bool(const Node*)> keep;
};

// Fuses every eligible chain; returns the number of fused nodes made.
int FuseBiasActivation(const FusionOptions& options, Graph* graph);

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_OPTIMIZER_FUSION_H_

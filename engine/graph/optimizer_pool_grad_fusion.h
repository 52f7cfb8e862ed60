// Backward fusion for conv -> bias -> relu -> max pool: MaxPoolGrad ->
// ReluGrad [-> BiasAddGrad] becomes one _FusedMaxPoolGrad node
// (engine/ops/fused_ops.cc), whose kernel applies ReluGrad's mask where each
// window's gradient lands and sums the result per channel from the pooled
// gradient, instead of two more passes over a tensor of the pool input's size
// (in fashion_cnn, 1-2 ms each per step).
//
// A chain is fused only when the result cannot be told apart from the
// unfused graph:
//   - ReluGrad's input 0 is MaxPoolGrad's output 0, which has no other
//     consumer, and ReluGrad's input 1 (the features) is MaxPoolGrad's input 0
//     (orig_input): the gradient then lands only on window maxima, where the
//     mask is orig_input > 0, and is zero everywhere else either way;
//   - all nodes are float32, NHWC, on one assigned device that runs
//     _FusedMaxPoolGrad: a CPU, or a device type for which this process
//     registers its kernel (a GPU in a --config=cuda build);
//   - a BiasAddGrad (NHWC) that reads ReluGrad's output joins the chain (its
//     value is output 1); ReluGrad's output may have other consumers (the
//     convolution's gradients), which read the fused node's output 0;
//   - control edges into or out of any member move to the fused node, unless
//     a member's input depends on the chain (a cycle): then nothing is fused.
// The fused node takes ReluGrad's name. Values: output 0 is bit for bit
// ReluGrad's; output 1 is BiasAddGrad's sum taken in another order (float sums
// per image, then a double sum across images; BiasAddGrad sums in float), so
// equal within float32 accumulation error, not bit for bit.
//
// Thread safety: mutates the caller's graph; no shared state.
#ifndef SLUICE_ENGINE_GRAPH_OPTIMIZER_POOL_GRAD_FUSION_H_
#define SLUICE_ENGINE_GRAPH_OPTIMIZER_POOL_GRAD_FUSION_H_

#include <functional>

#include "engine/graph/graph.h"

namespace sluice {

struct PoolGradFusionOptions {
  // A BiasAddGrad of the ReluGrad's output joins the fused node.
  bool fuse_bias_grad = true;
  // Nodes for which this returns true are never part of a fused chain.
  std::function<bool(const Node*)> keep;
};

// Fuses every eligible chain; returns the number of fused nodes made.
int FuseMaxPoolReluGrad(const PoolGradFusionOptions& options, Graph* graph);

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_OPTIMIZER_POOL_GRAD_FUSION_H_

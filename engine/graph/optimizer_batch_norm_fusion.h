// Batch-norm fusion (TensorFlow's grappler remapper makes the same ops): a
// FusedBatchNormV3 whose y only a Relu reads, or only an AddN of two whose
// sum only a Relu reads (a residual connection: relu(bn(x) + side)), becomes
// one _FusedBatchNormEx node that adds the side input and applies the Relu as
// it stores y; and in the backward pass a ReluGrad whose output a
// FusedBatchNormGradV3 reads as y_backprop becomes, with it, one
// _FusedBatchNormGradEx that masks the gradient as it sums it
// (engine/ops/batch_norm_ops.cc). Each saves one or two passes over a tensor
// of the activations' size (fashion_resnet's: 12.8 MB at 28x28x32, batch 128).
//
// A chain is fused only when the result cannot be told apart from the
// unfused graph:
//   - the intermediate tensors (the batch norm's y, the AddN's sum) have no
//     consumer but the next member (a fetched one has a _Retval/_Send
//     consumer, so it is never fused away); the batch norm's other outputs
//     (statistics for the moving averages and the gradient) may have any;
//   - every member is float32 (T and U), on one assigned device that runs
//     the fused op (a CPU; no GPU registers them yet);
//   - backward: the ReluGrad's gradient may also have other consumers (the
//     residual's other branch): they read the fused node's
//     side_input_backprop, which is that gradient; the offset input comes
//     from the batch norm that made reserve_space_1 (no fusion without one);
//   - control edges into or out of any member move to the fused node; a
//     chain whose inputs depend on a member (a cycle) is left alone.
// Values: the forward's are bit for bit the unfused graph's; the backward's
// are too (the mask is ReluGrad's, applied to the same values before the
// same sums). The fused node takes the name of the chain's last node (the
// Relu; the FusedBatchNormGradV3). Run after gradients are built (the fused
// ops have none) and after the max-pool gradient fusion, which takes the
// ReluGrads that follow a MaxPoolGrad.
//
// Thread safety: mutates the caller's graph; no shared state.
#ifndef SLUICE_ENGINE_GRAPH_OPTIMIZER_BATCH_NORM_FUSION_H_
#define SLUICE_ENGINE_GRAPH_OPTIMIZER_BATCH_NORM_FUSION_H_

#include <functional>

#include "engine/graph/graph.h"

namespace sluice {

struct BatchNormFusionOptions {
  // FusedBatchNormV3 [+ AddN] + Relu -> _FusedBatchNormEx.
  bool fuse_forward = true;
  // ReluGrad + FusedBatchNormGradV3 -> _FusedBatchNormGradEx.
  bool fuse_backward = true;
  // Nodes for which this returns true are never part of a fused chain.
  std::function<bool(const Node*)> keep;
};

struct BatchNormFusionResult {
  int forward = 0;        // _FusedBatchNormEx nodes made
  int with_side = 0;      // of which with a side input (an AddN fused)
  int backward = 0;       // _FusedBatchNormGradEx nodes made
};

BatchNormFusionResult FuseBatchNormRelu(const BatchNormFusionOptions& options, Graph* graph);

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_OPTIMIZER_BATCH_NORM_FUSION_H_

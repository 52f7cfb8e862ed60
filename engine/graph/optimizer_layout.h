// The data format pass: puts each convolution and pooling node of a placed
// graph into the data format (NHWC or NCHW) its device's kernels take, the
// way TensorFlow's grappler layout optimizer does.
//
// TensorFlow graphs written for GPUs often use NCHW, which Sluice's kernels
// (CPU and GPU) do not take: sessions run the pass with every device in NHWC
// (engine/runtime/step_graph.cc). The GPU's convolutions pick NHWC or NCHW
// inside the kernel, per shape, by timing cuDNN (conv_ops_gpu.cc); a device
// type listed as NCHW in the options gets its nodes in NCHW, for kernels
// that take it natively (none yet). The pass rewrites, in place:
//   - layout nodes (Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter,
//     MaxPool, MaxPoolGrad, AvgPool, AvgPoolGrad) whose data_format is not
//     their device's: the attr and the strides/ksize/dilations/paddings lists
//     change to the device's format; each 4-D data input gets a Transpose into
//     it (one per tensor, format and device, shared by its readers; a node
//     with control inputs gets its own, which waits for them too), each 4-D
//     output that something reads a Transpose back; a shape input
//     (input_sizes, orig_input_shape) gets a DataFormatVecPermute;
//   - nodes between them (BiasAdd, BiasAddGrad, FusedBatchNormV3 and its
//     gradient, and element-wise ops such as Relu, ReluGrad, Tanh, AddN and
//     a residual block's AddV2) whose every data input leaves a Transpose
//     between the same two formats, the pass's or a user's (below), and
//     whose result reaches a converted layout node or a user's Transpose
//     through such nodes (or, BiasAddGrad's, is 1-D): they move into that
//     Transpose's source format the same way (the format attr of the bias
//     and batch norm ops changes with them);
//   - a Shape (or a ShapeN's input) of one of the pass's Transposes reads
//     the Transpose's input, and a DataFormatVecPermute rearranges the dims
//     (gradients take the shape of a convolution's input);
//   - then a Transpose of the pass's that undoes another of the pass's, or
//     a user's NHWC <-> NCHW Transpose by a Const permutation (a graph that
//     transposes NHWC images to NCHW for its convolutions, or back before a
//     flatten, and the gradients of those), is dropped with it: the later
//     one's consumers read the earlier one's input; likewise a
//     DataFormatVecPermute of the pass's that undoes another; the pass's
//     nodes left without consumers go, and a user's Transpose left so (or
//     read by shapes only) goes too, unless `keep` says otherwise.
// A chain conv -> bias -> relu -> pool -> conv in the "wrong" format ends up
// with one Transpose where it starts and one where it ends; census_parity's
// resnet_bn_nchw (residual block, batch norms, a Transpose to NHWC before
// the flatten) trains with one, for its NCHW images. Values are
// unchanged: a transpose moves elements and each converted node computes the
// same sums in another order of memory.
//
// Each Transpose's permutation is a Const. Inside a loop it has a control
// edge from the transposed tensor's producer, so it runs in that frame and
// iteration; in the root frame it has none (an edge there would only add a
// control transfer when the producer is on another device). After a Switch,
// a dead branch's Transpose is dead through its data input. A node stays as
// it is when its device has no Transpose kernel for its type; its own kernel
// then reports the format it does not take. Run it after the feed/fetch
// rewrite and constant folding (which turns a gradient's computed inverse
// permutations into the Consts this pass recognizes), then fold again (the
// pass's DataFormatVecPermutes of static shapes), then fuse (fusion takes
// NHWC chains only).
//
// Thread safety: mutates the caller's graph; no shared state.
#ifndef SLUICE_ENGINE_GRAPH_OPTIMIZER_LAYOUT_H_
#define SLUICE_ENGINE_GRAPH_OPTIMIZER_LAYOUT_H_

#include <functional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "engine/graph/graph.h"

namespace sluice {

struct LayoutOptions {
  // The format of the layout nodes by device type ("CPU", "GPU"); a type not
  // listed runs NHWC.
  absl::flat_hash_map<std::string, std::string> format_by_device_type;
  // Nodes the pass must neither remove nor bypass (a step's targets, run by
  // name); unset keeps none.
  std::function<bool(const Node*)> keep;
};

struct LayoutResult {
  int converted_nodes = 0;     // layout nodes and the nodes between them
  int transposes = 0;          // Transposes the graph holds afterwards, of the pass's
  int cancelled_transposes = 0;  // Transposes added and then dropped as inverse pairs
  int removed_user_transposes = 0;  // the graph's own Transposes that ours undid
  int cancelled_permutes = 0;  // DataFormatVecPermutes added and then dropped
};

LayoutResult ConvertDataFormats(const LayoutOptions& options, Graph* graph);

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_OPTIMIZER_LAYOUT_H_

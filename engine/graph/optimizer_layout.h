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
//   - nodes between them (BiasAdd, BiasAddGrad, and element-wise ops such as
//     Relu, ReluGrad, Tanh, AddN) whose every data input leaves a Transpose
//     the pass added and whose result reaches a converted layout node through
//     such nodes (or, BiasAddGrad's, is 1-D): they move into that Transpose's
//     source format the same way (BiasAdd's and BiasAddGrad's data_format
//     changes with them);
//   - a Shape of one of the pass's Transposes reads the Transpose's input and
//     a DataFormatVecPermute rearranges its dims (gradients take Shape(x) of
//     a convolution's input);
//   - then a Transpose of the pass's that undoes another of the pass's is
//     dropped, its consumers reading the first one's input, and Transposes
//     left without consumers go.
// A chain conv -> bias -> relu -> pool -> conv in the "wrong" format ends up
// with one Transpose where it starts and one where it ends. Values are
// unchanged: a transpose moves elements and each converted node computes the
// same sums in another order of memory.
//
// Each Transpose's permutation is a Const with a control edge from the
// transposed tensor's producer, so inside a loop it runs in that frame and
// iteration (after a Switch, a dead branch's Transpose is dead through its
// data input). A node stays as it is when its device has no Transpose kernel
// for its type; its own kernel then reports the format it does not take. Run
// it after the feed/fetch rewrite and before constant folding and fusion
// (which fuse NHWC chains only).
//
// Thread safety: mutates the caller's graph; no shared state.
#ifndef SLUICE_ENGINE_GRAPH_OPTIMIZER_LAYOUT_H_
#define SLUICE_ENGINE_GRAPH_OPTIMIZER_LAYOUT_H_

#include <string>

#include "absl/container/flat_hash_map.h"
#include "engine/graph/graph.h"

namespace sluice {

struct LayoutOptions {
  // The format of the layout nodes by device type ("CPU", "GPU"); a type not
  // listed runs NHWC.
  absl::flat_hash_map<std::string, std::string> format_by_device_type;
};

struct LayoutResult {
  int converted_nodes = 0;     // layout nodes and the nodes between them
  int transposes = 0;          // Transposes the graph holds afterwards, of the pass's
  int cancelled_transposes = 0;  // Transposes added and then dropped as inverse pairs
};

LayoutResult ConvertDataFormats(const LayoutOptions& options, Graph* graph);

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_OPTIMIZER_LAYOUT_H_

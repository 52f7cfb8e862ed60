// Kernel selection: which registered kernel runs a node, where an op has more
// than one for a device and dtype (KernelDefBuilder::Label in
// engine/framework/op_kernel.h): our own kernels are unlabeled; the
// oneDNN-backed CPU kernels (engine/kernels/onednn) carry the label "onednn".
// The pass marks a node with its `_kernel` attr, so the choice travels with
// the graph (to partitions and remote workers) and shows in it.
//
// Run it last on a step's graph (after fusion, which makes new nodes), with
// devices assigned. It only marks nodes for which a kernel with the label is
// registered in this process for the node's device type and attrs (dtype),
// so binaries that do not link the labeled kernels are unaffected.
//
// Thread safety: mutates the caller's graph; reads the kernel registry.
#ifndef SLUICE_ENGINE_GRAPH_KERNEL_SELECTION_H_
#define SLUICE_ENGINE_GRAPH_KERNEL_SELECTION_H_

#include <string>

#include "engine/graph/graph.h"

namespace sluice {

struct KernelSelectionOptions {
  // The label to select, e.g. "onednn".
  std::string label;
  // When not empty: marked nodes that also have a kernel with this label get
  // it as their `_kernel_fallback` attr (kKernelFallbackAttr), the kernel
  // that runs the shapes the selected one does not take.
  std::string fallback_label;
  // Only nodes assigned to a device of this type are considered.
  std::string device_type = "CPU";
};

// Sets `_kernel` to options.label on every node that has a kernel with that
// label (and no `_kernel` attr yet); returns the number of nodes marked.
int SelectLabeledKernels(const KernelSelectionOptions& options, Graph* graph);

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_KERNEL_SELECTION_H_

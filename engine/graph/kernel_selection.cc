// See kernel_selection.h.
#include "engine/graph/kernel_selection.h"

#include "engine/framework/device_name.h"
#include "engine/framework/op_kernel.h"

namespace sluice {

int SelectLabeledKernels(const KernelSelectionOptions& options, Graph* graph) {
  int marked = 0;
  for (Node* n : graph->nodes()) {
    if (FindAttr(n->def(), kKernelLabelAttr) != nullptr) continue;
    auto device = ParseDeviceName(n->assigned_device());
    if (!device.ok() || !device->has_type || device->type != options.device_type) continue;
    NodeDef labeled = n->def();
    (*labeled.mutable_attr())[kKernelLabelAttr] = MakeAttr(options.label);
    if (!KernelRegistry::Global()->HasKernel(options.device_type, labeled)) continue;
    if (!options.fallback_label.empty()) {
      NodeDef fallback = n->def();
      (*fallback.mutable_attr())[kKernelLabelAttr] = MakeAttr(options.fallback_label);
      if (KernelRegistry::Global()->HasKernel(options.device_type, fallback)) {
        (*labeled.mutable_attr())[kKernelFallbackAttr] = MakeAttr(options.fallback_label);
      }
    }
    *n->mutable_def() = std::move(labeled);
    ++marked;
  }
  return marked;
}

}  // namespace sluice

// Queue ops, TensorFlow's V1 names and signatures (queues are referred to by
// a Ref(string) handle): FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue,
// QueueEnqueue, QueueEnqueueMany, QueueDequeue, QueueDequeueMany,
// QueueDequeueUpTo, QueueClose, QueueSize. timeout_ms is accepted and
// ignored (as in TensorFlow). Kernels: queue_kernels.cc.
#include <algorithm>
#include <vector>

#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"
#include "inputs/resource_handle.h"

namespace sluice {
namespace {

// A queue's handle, which carries the element shapes its `shapes` attr
// declares (when every entry is a valid shape) to the Dequeue ops.
absl::Status HandleShape(InferenceContext* c) {
  c->set_output(0, PartialShape{2});
  const AttrValue* shapes = FindAttr(c->node_def(), "shapes");
  if (shapes == nullptr || !shapes->has_list()) return absl::OkStatus();
  std::vector<PartialShape> declared;
  for (const TensorShapeProto& p : shapes->list().shape()) {
    auto shape = PartialShape::FromProto(p);
    if (!shape.ok()) return absl::OkStatus();
    declared.push_back(*std::move(shape));
  }
  c->set_output_handle_shapes(0, std::move(declared));
  return absl::OkStatus();
}

// Dequeue outputs: the element shapes the queue declares (its `shapes`
// attr, seen through the handle), else unknown. DequeueMany and DequeueUpTo
// add a leading batch dim: n when it is a constant (DequeueMany) or unknown.
absl::Status DequeueShape(InferenceContext* c, bool batched, bool exact_n) {
  const std::vector<PartialShape>& declared = c->input_handle_shapes(0);
  int64_t n = kUnknownDim;
  if (batched && exact_n && c->num_inputs() > 1 && c->input_tensor(1) != nullptr &&
      c->input_tensor(1)->dtype() == DT_INT32 && c->input_tensor(1)->NumElements() == 1) {
    n = std::max<int64_t>(c->input_tensor(1)->data<int32_t>()[0], kUnknownDim);
  }
  for (int i = 0; i < c->num_outputs(); ++i) {
    if (declared.size() != static_cast<size_t>(c->num_outputs()) || !declared[i].rank_known()) {
      c->set_output(i, PartialShape::Unknown());
      continue;
    }
    if (!batched) {
      c->set_output(i, declared[i]);
      continue;
    }
    std::vector<int64_t> dims = {n};
    for (int d = 0; d < declared[i].rank(); ++d) dims.push_back(declared[i].dim(d));
    c->set_output(i, PartialShape::FromDims(dims));
  }
  return absl::OkStatus();
}
absl::Status DequeueOneShape(InferenceContext* c) { return DequeueShape(c, false, false); }
absl::Status DequeueManyShape(InferenceContext* c) { return DequeueShape(c, true, true); }
absl::Status DequeueUpToShape(InferenceContext* c) { return DequeueShape(c, true, false); }

}  // namespace

REGISTER_OP("FIFOQueue")
    .Output("handle: Ref(string)")
    .Attr("component_types: list(type) >= 1")
    .Attr("shapes: list(shape) >= 0 = []")
    .Attr("capacity: int = -1")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(HandleShape);

REGISTER_OP("PaddingFIFOQueue")
    .Output("handle: Ref(string)")
    .Attr("component_types: list(type) >= 1")
    .Attr("shapes: list(shape) >= 0 = []")
    .Attr("capacity: int = -1")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(HandleShape);

REGISTER_OP("RandomShuffleQueue")
    .Output("handle: Ref(string)")
    .Attr("component_types: list(type) >= 1")
    .Attr("shapes: list(shape) >= 0 = []")
    .Attr("capacity: int = -1")
    .Attr("min_after_dequeue: int = 0")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(HandleShape);

REGISTER_OP("QueueEnqueue")
    .Input("handle: Ref(string)")
    .Input("components: Tcomponents")
    .Attr("Tcomponents: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("QueueEnqueueMany")
    .Input("handle: Ref(string)")
    .Input("components: Tcomponents")
    .Attr("Tcomponents: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("QueueDequeue")
    .Input("handle: Ref(string)")
    .Output("components: component_types")
    .Attr("component_types: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(DequeueOneShape);

REGISTER_OP("QueueDequeueMany")
    .Input("handle: Ref(string)")
    .Input("n: int32")
    .Output("components: component_types")
    .Attr("component_types: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(DequeueManyShape);

REGISTER_OP("QueueDequeueUpTo")
    .Input("handle: Ref(string)")
    .Input("n: int32")
    .Output("components: component_types")
    .Attr("component_types: list(type) >= 1")
    .Attr("timeout_ms: int = -1")
    .SetIsStateful()
    .SetShapeFn(DequeueUpToShape);

REGISTER_OP("QueueClose")
    .Input("handle: Ref(string)")
    .Attr("cancel_pending_enqueues: bool = false")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("QueueSize")
    .Input("handle: Ref(string)")
    .Output("size: int32")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Scalar);

}  // namespace sluice

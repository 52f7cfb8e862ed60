// Stacks (TensorFlow's StackV2/StackPushV2/StackPopV2/StackCloseV2 from
// tensorflow/core/ops/data_flow_ops.cc, same signatures): a per-step stack of
// tensors behind a DT_RESOURCE handle. TensorFlow's v1 while_loop gradients
// push each forward iteration's values and pop them in the backward loop.
// Kernels: engine/kernels/stack_ops.cc. Not differentiable (as in TensorFlow).
// Thread safety: registrations run at static initialization.
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"

namespace sluice {
namespace {

absl::Status NoOutputs(InferenceContext*) { return absl::OkStatus(); }

// StackPushV2 outputs its elem input.
absl::Status PushShape(InferenceContext* c) {
  c->set_output(0, c->input(1));
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("StackV2")
    .Input("max_size: int32")
    .Output("handle: resource")
    .Attr("elem_type: type")
    .Attr("stack_name: string = ''")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(shape_fns::Scalar);

REGISTER_OP("StackPushV2")
    .Input("handle: resource")
    .Input("elem: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("swap_memory: bool = false")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(PushShape);

REGISTER_OP("StackPopV2")
    .Input("handle: resource")
    .Output("elem: elem_type")
    .Attr("elem_type: type")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("StackCloseV2")
    .Input("handle: resource")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

}  // namespace sluice

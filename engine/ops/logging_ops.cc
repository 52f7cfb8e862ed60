// Logging ops: Assert (TensorFlow's tensorflow/core/ops/logging_ops.cc), which
// fails the step with the summaries of its data tensors when its condition is
// false. Stateful, so neither CSE nor pruning of unfetched values drops it;
// it has no outputs and no gradient.
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"

namespace sluice {

REGISTER_OP("Assert")
    .Input("condition: bool")
    .Input("data: T")
    .Attr("T: list(type) >= 1")
    .Attr("summarize: int = 3")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown)
    .SetNotDifferentiable();

}  // namespace sluice

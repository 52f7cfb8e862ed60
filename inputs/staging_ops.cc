// Staging ops (TensorFlow's Stage and Unstage, with a `shapes` attr of ours):
// a small FIFO of tensor tuples in the device's ResourceMgr, so that the next
// training batch can be dequeued (and copied to a GPU) by one Session::Run
// while another runs the step on the batch staged before it
// (models/training/batch_stager.h). Stage adds a tuple; Unstage removes the
// oldest. Neither waits: Stage fails when the area holds `capacity` tuples,
// Unstage when it holds none, so a misuse is an error, never a hang.
// Kernels: staging_kernels.cc (CPU), gpu/staging_ops_gpu.cc (GPU).
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"
#include "inputs/resource_handle.h"

namespace sluice {
namespace {

// Unstage's outputs: its `shapes` attr when it gives one per output, else unknown.
absl::Status UnstageShape(InferenceContext* c) {
  std::vector<PartialShape> shapes;
  absl::Status s = GetShapesAttr(c->node_def(), "shapes", &shapes);
  if (!s.ok()) return s;
  for (int i = 0; i < c->num_outputs(); ++i) {
    c->set_output(i, shapes.size() == static_cast<size_t>(c->num_outputs()) ? shapes[i] : PartialShape::Unknown());
  }
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("Stage")
    .Input("values: dtypes")
    .Attr("dtypes: list(type) >= 1")
    .Attr("capacity: int = 2")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(shape_fns::Unknown);

REGISTER_OP("Unstage")
    .Output("values: dtypes")
    .Attr("dtypes: list(type) >= 1")
    .Attr("shapes: list(shape) >= 0 = []")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(UnstageShape);

}  // namespace sluice

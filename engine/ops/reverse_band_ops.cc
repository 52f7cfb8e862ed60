// ReverseV2 (reverse a tensor along some axes) and MatrixBandPart (keep a
// band of each innermost matrix, zero the rest), with shape functions and
// gradients. Signatures follow TensorFlow's (tensorflow/core/ops/array_ops.cc):
// ReverseV2(tensor: T, axis: Tidx), MatrixBandPart(input: T, num_lower:
// Tindex, num_upper: Tindex). Both gradients apply the same op to the
// incoming gradient (TensorFlow's _ReverseV2Grad, _MatrixBandPartGrad).
#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/gradients.h"

namespace sluice {
namespace {

absl::Status MatrixBandPartShape(InferenceContext* c) {
  const PartialShape& in = c->input(0);
  if (in.rank_known() && in.rank() < 2) {
    return c->Error(absl::StrCat("input must be at least a matrix (rank >= 2), got rank ", in.rank()));
  }
  PartialShape bound;
  absl::Status s = c->WithRank(1, 0, &bound);
  if (!s.ok()) return s;
  s = c->WithRank(2, 0, &bound);
  if (!s.ok()) return s;
  c->set_output(0, in);
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("ReverseV2")
    .Input("tensor: T")
    .Input("axis: Tidx")
    .Output("output: T")
    .Attr("Tidx: {int32, int64} = DT_INT32")
    .Attr("T: {uint8, int8, uint16, int16, int32, int64, bool, bfloat16, half, float, double, complex64, string}")
    .SetShapeFn([](InferenceContext* c) {
      PartialShape axis;
      absl::Status s = c->WithRank(1, 1, &axis);
      if (!s.ok()) return s;
      c->set_output(0, c->input(0));
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, g->b().Op("reverse_grad", "ReverseV2", {g->grad(0), g->input(1)}));
      return absl::OkStatus();
    });

REGISTER_OP("MatrixBandPart")
    .Input("input: T")
    .Input("num_lower: Tindex")
    .Input("num_upper: Tindex")
    .Output("band: T")
    .Attr("T: type")
    .Attr("Tindex: {int32, int64} = DT_INT64")
    .SetShapeFn(MatrixBandPartShape)
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, g->b().Op("band_grad", "MatrixBandPart", {g->grad(0), g->input(1), g->input(2)}));
      return absl::OkStatus();
    });

}  // namespace sluice

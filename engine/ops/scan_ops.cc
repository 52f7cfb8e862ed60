// Cumulative sums and products along an axis: Cumsum and Cumprod, with
// TensorFlow's signatures (tensorflow/core/ops/math_ops.cc): (x: T, axis: Tidx)
// -> out: T, attrs exclusive (start from the identity: out[0] = 0 or 1) and
// reverse (scan from the end). Shape: x's; axis a scalar.
// Gradients as TensorFlow's _CumsumGrad and _CumprodGrad: the gradient of a
// scan is the scan of the gradient in the other direction; Cumprod's divides
// by x (like TensorFlow's, it is not defined where x is zero).
#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/gradients.h"

namespace sluice {
namespace {

absl::Status ScanShape(InferenceContext* c) {
  PartialShape axis;
  absl::Status s = c->WithRank(1, 0, &axis);
  if (!s.ok()) return s;
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

// The same scan op over `x`, with `reverse` flipped.
absl::StatusOr<Output> ReverseScan(GradientBuilder* g, const char* op, Output x) {
  bool exclusive = false, reverse = false;
  absl::Status s = g->GetAttr("exclusive", &exclusive);
  if (!s.ok()) return s;
  s = g->GetAttr("reverse", &reverse);
  if (!s.ok()) return s;
  return g->b().Op(op, op, {x, g->input(1)}, {{"exclusive", MakeAttr(exclusive)}, {"reverse", MakeAttr(!reverse)}});
}

}  // namespace

#define SLUICE_SCAN_OP_(NAME)                                                                          \
  REGISTER_OP(NAME)                                                                                    \
      .Input("x: T")                                                                                   \
      .Input("axis: Tidx")                                                                             \
      .Output("out: T")                                                                                \
      .Attr("exclusive: bool = false")                                                                 \
      .Attr("reverse: bool = false")                                                                   \
      .Attr("T: {bfloat16, half, float, double, uint8, int8, uint16, int16, int32, int64}")            \
      .Attr("Tidx: {int32, int64} = DT_INT32")                                                         \
      .SetShapeFn(ScanShape)

SLUICE_SCAN_OP_("Cumsum").SetGradient([](GradientBuilder* g) {
  auto dx = ReverseScan(g, "Cumsum", g->grad(0));
  if (!dx.ok()) return dx.status();
  g->SetInputGrad(0, *dx);
  return absl::OkStatus();
});

SLUICE_SCAN_OP_("Cumprod").SetGradient([](GradientBuilder* g) {
  GraphBuilder& b = g->b();
  auto summed = ReverseScan(g, "Cumsum", b.Op("weighted", "Mul", {g->output(0), g->grad(0)}));
  if (!summed.ok()) return summed.status();
  g->SetInputGrad(0, b.Op("dx", "RealDiv", {*summed, g->input(0)}));
  return absl::OkStatus();
});

#undef SLUICE_SCAN_OP_

}  // namespace sluice

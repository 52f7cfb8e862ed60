// ReverseV2 (reverse a tensor along some axes), ReverseSequence (reverse the
// first seq_lengths[b] elements of each batch entry b), Roll (rotate along
// axes) and MatrixBandPart (keep a band of each innermost matrix, zero the
// rest), with shape functions and gradients. Signatures follow TensorFlow's
// (tensorflow/core/ops/array_ops.cc, manip_ops.cc): ReverseV2(tensor: T, axis:
// Tidx), ReverseSequence(input: T, seq_lengths: Tlen), Roll(input: T, shift:
// Tshift, axis: Taxis), MatrixBandPart(input: T, num_lower: Tindex,
// num_upper: Tindex). The gradients apply the same op to the incoming
// gradient (TensorFlow's _ReverseV2Grad, _ReverseSequenceGrad,
// _MatrixBandPartGrad), Roll's with the shifts negated (_RollGrad).
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

REGISTER_OP("ReverseSequence")
    .Input("input: T")
    .Input("seq_lengths: Tlen")
    .Output("output: T")
    .Attr("seq_dim: int")
    .Attr("batch_dim: int = 0")
    .Attr("T: type")
    .Attr("Tlen: {int32, int64} = DT_INT64")
    .SetShapeFn([](InferenceContext* c) {
      PartialShape lengths;
      absl::Status s = c->WithRank(1, 1, &lengths);
      if (!s.ok()) return s;
      int64_t seq_dim = 0, batch_dim = 0;
      s = c->GetAttr("seq_dim", &seq_dim);
      if (!s.ok()) return s;
      s = c->GetAttr("batch_dim", &batch_dim);
      if (!s.ok()) return s;
      const PartialShape& in = c->input(0);
      if (in.rank_known()) {
        if (seq_dim < 0 || seq_dim >= in.rank() || batch_dim < 0 || batch_dim >= in.rank() || seq_dim == batch_dim) {
          return c->Error(absl::StrCat("seq_dim (", seq_dim, ") and batch_dim (", batch_dim,
                                       ") must be two different dims of the input, of rank ", in.rank()));
        }
        if (in.dim(batch_dim) != kUnknownDim && lengths.dim(0) != kUnknownDim && in.dim(batch_dim) != lengths.dim(0)) {
          return c->Error(absl::StrCat("seq_lengths has ", lengths.dim(0), " entries but the input's batch dim ",
                                       batch_dim, " is ", in.dim(batch_dim)));
        }
      }
      c->set_output(0, in);
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      int64_t seq_dim = 0, batch_dim = 0;
      absl::Status s = g->GetAttr("seq_dim", &seq_dim);
      if (!s.ok()) return s;
      s = g->GetAttr("batch_dim", &batch_dim);
      if (!s.ok()) return s;
      g->SetInputGrad(0, g->b().Op("reverse_grad", "ReverseSequence", {g->grad(0), g->input(1)},
                                   {{"seq_dim", MakeAttr(seq_dim)}, {"batch_dim", MakeAttr(batch_dim)}}));
      return absl::OkStatus();
    });

REGISTER_OP("Roll")
    .Input("input: T")
    .Input("shift: Tshift")
    .Input("axis: Taxis")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tshift: {int32, int64}")
    .Attr("Taxis: {int32, int64}")
    .SetShapeFn([](InferenceContext* c) {
      const PartialShape &shift = c->input(1), &axis = c->input(2);
      if (shift.rank_known() && shift.rank() > 1) return c->Error("shift must be a scalar or a vector");
      if (axis.rank_known() && axis.rank() > 1) return c->Error("axis must be a scalar or a vector");
      c->set_output(0, c->input(0));
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      GraphBuilder& b = g->b();
      g->SetInputGrad(0, b.Op("roll_grad", "Roll", {g->grad(0), b.Op("neg_shift", "Neg", {g->input(1)}), g->input(2)}));
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

// FusedBatchNormV3 and FusedBatchNormGradV3: batch normalization over every
// dimension but the channel one (NHWC/NDHWC: channels last; NCHW/NCDHW:
// channels in dimension 1), in training mode (batch statistics, optional
// running averages through exponential_avg_factor) or inference mode (the
// given mean and variance). Signatures follow TensorFlow's
// (tensorflow/core/ops/nn_ops.cc), except that T and U also admit double so
// the gradient can be checked by finite differences. The gradient of
// FusedBatchNormV3 is FusedBatchNormGradV3 (TensorFlow's
// _FusedBatchNormV3Grad); the grad op itself has none here.
//
// _FusedBatchNormEx and _FusedBatchNormGradEx (TensorFlow's grappler ops of
// those names and signatures) are what the batch-norm fusion pass
// (engine/graph/optimizer_batch_norm_fusion.h) makes after gradients are
// built, so they have no gradients:
//   _FusedBatchNormEx: y = act(FusedBatchNormV3(x, ...).y + side_input),
//     side_input present when num_side_inputs is 1 (x's shape), act Relu or
//     Identity (activation_mode); the other outputs are FusedBatchNormV3's.
//   _FusedBatchNormGradEx: FusedBatchNormGradV3 of g = act'(y) * y_backprop,
//     y the forward's output (with Relu: g = y_backprop where y > 0, else 0);
//     offset is taken (as TensorFlow's) and unused on the CPU; with
//     num_side_inputs 1 the extra output side_input_backprop is g itself.
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/gradients.h"

namespace sluice {
namespace {

bool ChannelsFirst(InferenceContext* c) {
  std::string format = "NHWC";
  c->GetAttr("data_format", &format).IgnoreError();
  return format == "NCHW" || format == "NCDHW";
}

// The channel dim of `x` (known rank), or kUnknownDim.
int64_t Channels(InferenceContext* c, const PartialShape& x) {
  return ChannelsFirst(c) ? x.dims()[1] : x.dims()[x.rank() - 1];
}

absl::Status CheckVector(InferenceContext* c, int input, int64_t channels) {
  PartialShape v;
  absl::Status s = c->WithRank(input, 1, &v);
  if (!s.ok()) return s;
  if (v.rank_known() && channels != kUnknownDim && v.dims()[0] != kUnknownDim && v.dims()[0] != channels) {
    return c->Error(absl::StrCat("input ", input, " must have the ", channels, " channels of x, got ",
                                 v.dims()[0]));
  }
  return absl::OkStatus();
}

absl::Status BatchNormShape(InferenceContext* c, int x_input, int first_vector, int num_vectors, int num_outputs) {
  const PartialShape& x = c->input(x_input);
  if (x.rank_known() && x.rank() != 4 && x.rank() != 5) {
    return c->Error(absl::StrCat("x must have rank 4 or 5, got rank ", x.rank()));
  }
  const int64_t channels = x.rank_known() ? Channels(c, x) : kUnknownDim;
  for (int i = first_vector; i < first_vector + num_vectors; ++i) {
    absl::Status s = CheckVector(c, i, channels);
    if (!s.ok()) return s;
  }
  c->set_output(0, x);
  for (int i = 1; i < num_outputs; ++i) c->set_output(i, PartialShape::FromDims({channels}));
  return absl::OkStatus();
}

// FusedBatchNormV3's outputs (also _FusedBatchNormEx's). Training with
// exponential_avg_factor 1 ignores mean and variance (tf.nn.fused_batch_norm
// passes empty ones), as in TensorFlow.
absl::Status ForwardShape(InferenceContext* c) {
  bool is_training = true;
  float factor = 1.0f;
  c->GetAttr("is_training", &is_training).IgnoreError();
  c->GetAttr("exponential_avg_factor", &factor).IgnoreError();
  absl::Status s = BatchNormShape(c, 0, 1, is_training && factor == 1.0f ? 2 : 4, 5);
  if (!s.ok()) return s;
  c->set_output(5, PartialShape::FromDims({0}));
  return absl::OkStatus();
}

// FusedBatchNormGradV3's outputs (also _FusedBatchNormGradEx's first five).
absl::Status GradShape(InferenceContext* c) {
  absl::Status s = BatchNormShape(c, 1, 3, 2, 3);
  if (!s.ok()) return s;
  c->set_output(3, PartialShape::FromDims({0}));
  c->set_output(4, PartialShape::FromDims({0}));
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("FusedBatchNormV3")
    .Input("x: T")
    .Input("scale: U")
    .Input("offset: U")
    .Input("mean: U")
    .Input("variance: U")
    .Output("y: T")
    .Output("batch_mean: U")
    .Output("batch_variance: U")
    .Output("reserve_space_1: U")
    .Output("reserve_space_2: U")
    .Output("reserve_space_3: U")
    .Attr("T: {half, bfloat16, float, double}")
    .Attr("U: {float, double}")
    .Attr("epsilon: float = 0.0001")
    .Attr("exponential_avg_factor: float = 1.0")
    .Attr("data_format: string = 'NHWC'")  // NHWC, NCHW, NDHWC or NCDHW
    .Attr("is_training: bool = true")
    .SetShapeFn(ForwardShape)
    .SetGradient([](GradientBuilder* g) {
      AttrList attrs = g->ForwardAttrs({"epsilon", "data_format", "is_training"});
      Node* grad = g->b().AddNode("batch_norm_grad", "FusedBatchNormGradV3",
                                  {g->grad(0), g->input(0), g->input(1), g->output(3), g->output(4), g->output(5)},
                                  attrs);
      if (grad == nullptr) return g->b().status();
      for (int i = 0; i < 3; ++i) g->SetInputGrad(i, Output{grad, i});
      return absl::OkStatus();
    });

REGISTER_OP("FusedBatchNormGradV3")
    .Input("y_backprop: T")
    .Input("x: T")
    .Input("scale: U")  // TensorFlow: float, which U always is there
    .Input("reserve_space_1: U")
    .Input("reserve_space_2: U")
    .Input("reserve_space_3: U")
    .Output("x_backprop: T")
    .Output("scale_backprop: U")
    .Output("offset_backprop: U")
    .Output("reserve_space_4: U")
    .Output("reserve_space_5: U")
    .Attr("T: {half, bfloat16, float, double}")
    .Attr("U: {float, double}")
    .Attr("epsilon: float = 0.0001")
    .Attr("data_format: string = 'NHWC'")  // NHWC, NCHW, NDHWC or NCDHW
    .Attr("is_training: bool = true")
    .SetShapeFn(GradShape)
    .SetNotDifferentiable();

namespace {

absl::Status CheckExAttrs(InferenceContext* c, int64_t* side_inputs) {
  std::string mode = "Identity";
  c->GetAttr("activation_mode", &mode).IgnoreError();
  if (mode != "Identity" && mode != "Relu") {
    return c->Error(absl::StrCat("activation_mode must be Identity or Relu, got '", mode, "'"));
  }
  *side_inputs = 0;
  c->GetAttr("num_side_inputs", side_inputs).IgnoreError();
  if (*side_inputs > 1) return c->Error(absl::StrCat("num_side_inputs must be 0 or 1, got ", *side_inputs));
  return absl::OkStatus();
}

// Input `a` and input `b` (known ranks) have compatible shapes.
absl::Status CheckSameShape(InferenceContext* c, int a, int b, const char* what) {
  const PartialShape& x = c->input(a);
  const PartialShape& y = c->input(b);
  if (!x.rank_known() || !y.rank_known()) return absl::OkStatus();
  bool same = x.rank() == y.rank();
  for (int i = 0; same && i < x.rank(); ++i) {
    same = x.dims()[i] == kUnknownDim || y.dims()[i] == kUnknownDim || x.dims()[i] == y.dims()[i];
  }
  if (!same) return c->Error(absl::StrCat(what, " must have x's shape ", x.DebugString(), ", got ", y.DebugString()));
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("_FusedBatchNormEx")
    .Input("x: T")
    .Input("scale: U")
    .Input("offset: U")
    .Input("mean: U")
    .Input("variance: U")
    .Input("side_input: num_side_inputs * T")
    .Output("y: T")
    .Output("batch_mean: U")
    .Output("batch_variance: U")
    .Output("reserve_space_1: U")
    .Output("reserve_space_2: U")
    .Output("reserve_space_3: U")
    .Attr("T: {half, bfloat16, float}")
    .Attr("U: {float}")
    .Attr("epsilon: float = 0.0001")
    .Attr("exponential_avg_factor: float = 1.0")
    .Attr("num_side_inputs: int >= 0 = 0")
    .Attr("activation_mode: string = 'Identity'")
    .Attr("data_format: string = 'NHWC'")
    .Attr("is_training: bool = true")
    .SetShapeFn([](InferenceContext* c) {
      int64_t side_inputs = 0;
      absl::Status s = CheckExAttrs(c, &side_inputs);
      if (s.ok()) s = ForwardShape(c);
      if (s.ok() && side_inputs == 1) s = CheckSameShape(c, 0, 5, "side_input");
      return s;
    })
    .SetNotDifferentiable();

REGISTER_OP("_FusedBatchNormGradEx")
    .Input("y_backprop: T")
    .Input("x: T")
    .Input("scale: float")
    .Input("reserve_space_1: U")
    .Input("reserve_space_2: U")
    .Input("reserve_space_3: U")
    .Input("offset: float")
    .Input("y: T")
    .Output("x_backprop: T")
    .Output("scale_backprop: U")
    .Output("offset_backprop: U")
    .Output("reserve_space_4: U")
    .Output("reserve_space_5: U")
    .Output("side_input_backprop: num_side_inputs * T")
    .Attr("T: {half, float}")
    .Attr("U: {float}")
    .Attr("epsilon: float = 0.0001")
    .Attr("num_side_inputs: int >= 0 = 0")
    .Attr("activation_mode: string = 'Identity'")
    .Attr("data_format: string = 'NHWC'")
    .Attr("is_training: bool = true")
    .SetShapeFn([](InferenceContext* c) {
      int64_t side_inputs = 0;
      absl::Status s = CheckExAttrs(c, &side_inputs);
      if (s.ok()) s = GradShape(c);
      if (s.ok()) s = CheckSameShape(c, 1, 7, "y");
      if (s.ok() && side_inputs == 1) c->set_output(5, c->input(1));
      return s;
    })
    .SetNotDifferentiable();

}  // namespace sluice

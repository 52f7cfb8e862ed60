// FusedBatchNormV3 and FusedBatchNormGradV3: batch normalization over every
// dimension but the channel one (NHWC/NDHWC: channels last; NCHW/NCDHW:
// channels in dimension 1), in training mode (batch statistics, optional
// running averages through exponential_avg_factor) or inference mode (the
// given mean and variance). Signatures follow TensorFlow's
// (tensorflow/core/ops/nn_ops.cc), except that T and U also admit double so
// the gradient can be checked by finite differences. The gradient of
// FusedBatchNormV3 is FusedBatchNormGradV3 (TensorFlow's
// _FusedBatchNormV3Grad); the grad op itself has none here.
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
    .SetShapeFn([](InferenceContext* c) {
      // Training with exponential_avg_factor 1 ignores mean and variance
      // (tf.nn.fused_batch_norm passes empty ones), as in TensorFlow.
      bool is_training = true;
      float factor = 1.0f;
      c->GetAttr("is_training", &is_training).IgnoreError();
      c->GetAttr("exponential_avg_factor", &factor).IgnoreError();
      absl::Status s = BatchNormShape(c, 0, 1, is_training && factor == 1.0f ? 2 : 4, 5);
      if (!s.ok()) return s;
      c->set_output(5, PartialShape::FromDims({0}));
      return absl::OkStatus();
    })
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
    .SetShapeFn([](InferenceContext* c) {
      absl::Status s = BatchNormShape(c, 1, 3, 2, 3);
      if (!s.ok()) return s;
      c->set_output(3, PartialShape::FromDims({0}));
      c->set_output(4, PartialShape::FromDims({0}));
      return absl::OkStatus();
    })
    .SetNotDifferentiable();

}  // namespace sluice

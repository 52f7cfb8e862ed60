// Candidate sampling for sampled softmax (tf.nn.sampled_softmax_loss):
// LogUniformCandidateSampler draws num_sampled classes from Zipf's
// log-uniform distribution over [0, range_max) and returns the expected
// counts of the true and the sampled classes; ComputeAccidentalHits finds the
// sampled candidates that equal a row's true class. Signatures follow
// TensorFlow's (tensorflow/core/ops/candidate_sampling_ops.cc); neither has a
// gradient (TensorFlow registers them NotDifferentiable).
// LogUniformCandidateSamplerAtStep (Sluice's own) draws as the first does, but
// from the Philox stream at counter `step` (an input) instead of the kernel's
// run count: the training graph feeds the global step, so a resumed run
// samples the classes an uninterrupted one would (as Dropout's masks).
#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"

namespace sluice {
namespace {

// true_classes: [batch, num_true].
absl::Status CheckTrueClasses(InferenceContext* c) {
  PartialShape t;
  absl::Status s = c->WithRank(0, 2, &t);
  if (!s.ok()) return s;
  int64_t num_true = 0;
  s = c->GetAttr("num_true", &num_true);
  if (!s.ok()) return s;
  if (t.rank_known() && t.dims()[1] != kUnknownDim && t.dims()[1] != num_true) {
    return c->Error(absl::StrCat("true_classes must have num_true = ", num_true, " columns, got ", t.dims()[1]));
  }
  return absl::OkStatus();
}

// The samplers' outputs: [num_sampled] candidates, the true classes' shape, [num_sampled].
absl::Status SamplerShapes(InferenceContext* c) {
  absl::Status s = CheckTrueClasses(c);
  if (!s.ok()) return s;
  int64_t num_sampled = 0;
  s = c->GetAttr("num_sampled", &num_sampled);
  if (!s.ok()) return s;
  c->set_output(0, PartialShape::FromDims({num_sampled}));
  c->set_output(1, c->input(0));
  c->set_output(2, PartialShape::FromDims({num_sampled}));
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("LogUniformCandidateSampler")
    .Input("true_classes: int64")
    .Output("sampled_candidates: int64")
    .Output("true_expected_count: float")
    .Output("sampled_expected_count: float")
    .Attr("num_true: int >= 1")
    .Attr("num_sampled: int >= 1")
    .Attr("unique: bool")
    .Attr("range_max: int >= 1")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(SamplerShapes);

// Marked stateful, as Dropout is, so that CSE never merges two samplers.
REGISTER_OP("LogUniformCandidateSamplerAtStep")
    .SetSluiceOnly()
    .Input("true_classes: int64")
    .Input("step: int64")
    .Output("sampled_candidates: int64")
    .Output("true_expected_count: float")
    .Output("sampled_expected_count: float")
    .Attr("num_true: int >= 1")
    .Attr("num_sampled: int >= 1")
    .Attr("unique: bool")
    .Attr("range_max: int >= 1")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) {
      if (c->input(1).rank_known() && c->input(1).rank() != 0) {
        return c->Error(absl::StrCat("step must be a scalar, got ", c->input(1).DebugString()));
      }
      return SamplerShapes(c);
    });

REGISTER_OP("ComputeAccidentalHits")
    .Input("true_classes: int64")
    .Input("sampled_candidates: int64")
    .Output("indices: int32")
    .Output("ids: int64")
    .Output("weights: float")
    .Attr("num_true: int")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) {
      absl::Status s = CheckTrueClasses(c);
      if (!s.ok()) return s;
      PartialShape sampled;
      s = c->WithRank(1, 1, &sampled);
      if (!s.ok()) return s;
      for (int i = 0; i < 3; ++i) c->set_output(i, PartialShape::FromDims({kUnknownDim}));
      return absl::OkStatus();
    });

}  // namespace sluice

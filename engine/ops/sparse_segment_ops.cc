// SparseSegmentSum and SparseSegmentMean (rows of data picked by `indices`,
// summed or averaged into the segments `segment_ids` names; ids sorted, the
// output has last id + 1 rows) and their gradient ops SparseSegmentSumGrad /
// SparseSegmentMeanGrad, which scatter each segment's gradient back to the
// rows it read. tf.nn.embedding_lookup_sparse builds them. Signatures follow
// TensorFlow's (tensorflow/core/ops/math_ops.cc); TensorFlow's uint32/uint64
// data types are not among ours.
#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/gradients.h"

namespace sluice {
namespace {

// [unknown number of segments] + data's dims after the first.
absl::Status SegmentReductionShape(InferenceContext* c) {
  const PartialShape& data = c->input(0);
  PartialShape indices, ids;
  absl::Status s = c->WithRank(1, 1, &indices);
  if (!s.ok()) return s;
  s = c->WithRank(2, 1, &ids);
  if (!s.ok()) return s;
  if (!data.rank_known()) {
    c->set_output(0, PartialShape::Unknown());
    return absl::OkStatus();
  }
  if (data.rank() < 1) return c->Error("data must have at least one dimension");
  std::vector<int64_t> dims{kUnknownDim};
  dims.insert(dims.end(), data.dims().begin() + 1, data.dims().end());
  c->set_output(0, PartialShape::FromDims(dims));
  return absl::OkStatus();
}

// [output_dim0] + grad's dims after the first.
absl::Status SegmentGradShape(InferenceContext* c) {
  const PartialShape& grad = c->input(0);
  if (!grad.rank_known()) {
    c->set_output(0, PartialShape::Unknown());
    return absl::OkStatus();
  }
  if (grad.rank() < 1) return c->Error("grad must have at least one dimension");
  const Tensor* dim0 = c->input_tensor(3);
  std::vector<int64_t> dims{dim0 != nullptr && dim0->NumElements() == 1 ? int64_t{dim0->data<int32_t>()[0]}
                                                                       : kUnknownDim};
  dims.insert(dims.end(), grad.dims().begin() + 1, grad.dims().end());
  c->set_output(0, PartialShape::FromDims(dims));
  return absl::OkStatus();
}

// TensorFlow's _SparseSegmentSumGrad / _SparseSegmentMeanGrad (dense form).
GradientFn SegmentGrad(const char* grad_op) {
  return [grad_op](GradientBuilder* g) {
    bool sparse_gradient = false;
    absl::Status s = g->GetAttr("sparse_gradient", &sparse_gradient);
    if (!s.ok()) return s;
    if (sparse_gradient) {
      return absl::UnimplementedError(absl::StrCat("node '", g->node().name(),
                                                   "': sparse_gradient = true is not supported (its gradient op, ",
                                                   grad_op, "V2, is not registered)"));
    }
    GraphBuilder& b = g->b();
    Output rows = b.Op("rows", "StridedSlice",
                       {b.Op("shape", "Shape", {g->input(0)}), b.Const("begin", Tensor::FromVector<int32_t>({0})),
                        b.Const("end", Tensor::FromVector<int32_t>({1})),
                        b.Const("strides", Tensor::FromVector<int32_t>({1}))},
                       {{"shrink_axis_mask", MakeAttr(int64_t{1})}});
    g->SetInputGrad(0, b.Op("segment_grad", grad_op, {g->grad(0), g->input(1), g->input(2), rows}));
    return absl::OkStatus();
  };
}

}  // namespace

#define SLUICE_SPARSE_SEGMENT_OP_(NAME, TYPES, GRAD)             \
  REGISTER_OP(NAME)                                              \
      .Input("data: T")                                          \
      .Input("indices: Tidx")                                    \
      .Input("segment_ids: Tsegmentids")                         \
      .Output("output: T")                                       \
      .Attr("T: " TYPES)                                         \
      .Attr("Tidx: {int32, int64} = DT_INT32")                   \
      .Attr("Tsegmentids: {int32, int64} = DT_INT32")            \
      .Attr("sparse_gradient: bool = false")                     \
      .SetShapeFn(SegmentReductionShape)                         \
      .SetGradient(SegmentGrad(GRAD))
SLUICE_SPARSE_SEGMENT_OP_("SparseSegmentSum",
                          "{bfloat16, half, float, double, uint8, int8, uint16, int16, int32, int64}",
                          "SparseSegmentSumGrad");
SLUICE_SPARSE_SEGMENT_OP_("SparseSegmentMean", "{bfloat16, half, float, double}", "SparseSegmentMeanGrad");
#undef SLUICE_SPARSE_SEGMENT_OP_

#define SLUICE_SPARSE_SEGMENT_GRAD_OP_(NAME)                     \
  REGISTER_OP(NAME)                                              \
      .Input("grad: T")                                          \
      .Input("indices: Tidx")                                    \
      .Input("segment_ids: Tsegmentids")                         \
      .Input("output_dim0: int32")                               \
      .Output("output: T")                                       \
      .Attr("T: {bfloat16, half, float, double}")                \
      .Attr("Tidx: {int32, int64} = DT_INT32")                   \
      .Attr("Tsegmentids: {int32, int64} = DT_INT32")            \
      .SetShapeFn(SegmentGradShape)                              \
      .SetNotDifferentiable()
SLUICE_SPARSE_SEGMENT_GRAD_OP_("SparseSegmentSumGrad");
SLUICE_SPARSE_SEGMENT_GRAD_OP_("SparseSegmentMeanGrad");
#undef SLUICE_SPARSE_SEGMENT_GRAD_OP_

}  // namespace sluice

// Segment reductions with TensorFlow's signatures (tensorflow/core/ops/
// math_ops.cc): rows of `data` reduced by segment id.
//   Sorted (SegmentSum, SegmentMean, SegmentMax, SegmentMin): ids a vector,
//   one per row, ascending; the output has last id + 1 rows, and a segment
//   with no row is 0.
//   Unsorted (UnsortedSegmentSum, UnsortedSegmentMax, UnsortedSegmentMin):
//   ids any prefix of data's shape, num_segments output rows; negative ids
//   are dropped; an empty segment is 0 (Sum) or the type's lowest (Max) or
//   highest (Min) value.
// Gradients as TensorFlow's _SegmentSumGrad, _SegmentMeanGrad and
// _SegmentMinOrMaxGrad: the gradient of a row's segment goes back to it
// (divided by the segment's size for Mean); for Max and Min only to the rows
// equal to their segment's result, shared equally among ties. Rows with a
// negative id, which the unsorted ops drop, get zeros (TensorFlow's
// _GatherDropNegatives).
#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/gradients.h"

namespace sluice {
namespace {

// [?] + data.shape[1:] for sorted segment ids (a vector of data's rows).
absl::Status SortedSegmentShape(InferenceContext* c) {
  const PartialShape &data = c->input(0), &ids = c->input(1);
  if (data.rank_known() && data.rank() < 1) return c->Error("data must be at least a vector");
  if (ids.rank_known() && ids.rank() != 1) return c->Error("segment_ids must be a vector");
  if (data.rank_known() && ids.rank_known() && data.dim(0) != kUnknownDim && ids.dim(0) != kUnknownDim &&
      data.dim(0) != ids.dim(0)) {
    return c->Error(absl::StrCat("segment_ids has ", ids.dim(0), " entries but data has ", data.dim(0), " rows"));
  }
  if (!data.rank_known()) {
    c->set_output(0, PartialShape::Unknown());
    return absl::OkStatus();
  }
  std::vector<int64_t> dims{kUnknownDim};
  dims.insert(dims.end(), data.dims().begin() + 1, data.dims().end());
  c->set_output(0, PartialShape::FromDims(dims));
  return absl::OkStatus();
}

// [num_segments] + data.shape[ids.rank:].
absl::Status UnsortedSegmentShape(InferenceContext* c) {
  const PartialShape& data = c->input(0);
  const PartialShape& ids = c->input(1);
  if (!data.rank_known() || !ids.rank_known()) {
    c->set_output(0, PartialShape::Unknown());
    return absl::OkStatus();
  }
  if (ids.rank() > data.rank()) return c->Error("segment_ids must not have more dims than data");
  const Tensor* num = c->input_tensor(2);
  std::vector<int64_t> dims{num != nullptr && num->NumElements() == 1
                                ? (num->dtype() == DT_INT64 ? num->data<int64_t>()[0] : num->data<int32_t>()[0])
                                : kUnknownDim};
  if (dims[0] < kUnknownDim) return c->Error("num_segments must be non-negative");
  dims.insert(dims.end(), data.dims().begin() + ids.rank(), data.dims().end());
  c->set_output(0, PartialShape::FromDims(dims));
  return absl::OkStatus();
}

// Gather(params, ids) with the rows of negative ids zero instead of an
// error: the ids clamped at 0 gathered, then a select by (id >= 0) shaped
// ids.shape + [1] * (rank(params) - 1), so it broadcasts over each row.
Output GatherDropNegatives(GraphBuilder& b, Output params, Output ids) {
  Output zero = b.Op("zero", "ZerosLike", {ids});
  Output gathered = b.Op("gathered", "Gather", {params, b.Op("clamped", "Maximum", {ids, zero})});
  Output kept = b.Op("kept", "GreaterEqual", {ids, zero});
  Output extra = b.Op("extra_rank", "Sub", {b.Op("rank", "Rank", {gathered}), b.Op("ids_rank", "Rank", {ids})});
  Output ones = b.Op("ones", "Fill", {b.Op("extra", "ExpandDims", {extra, b.Scalar<int32_t>("axis0", 0)}),
                                      b.Scalar<int32_t>("one", 1)});
  Output mask_shape = b.Op("mask_shape", "ConcatV2", {b.Op("ids_shape", "Shape", {ids}), ones,
                                                      b.Scalar<int32_t>("axis", 0)});
  Output mask = b.Op("mask", "Reshape", {kept, mask_shape});
  return b.Op("dropped", "SelectV2", {mask, gathered, b.Op("zeros", "ZerosLike", {gathered})});
}

// Each row gets the gradient of its segment: Gather(grad, ids).
absl::Status GatherBackGrad(GradientBuilder* g) {
  g->SetInputGrad(0, g->b().Op("gather", "Gather", {g->grad(0), g->input(1)}));
  return absl::OkStatus();
}

// The same for the unsorted ops, whose negative ids drop rows.
absl::Status GatherBackDropNegativesGrad(GradientBuilder* g) {
  g->SetInputGrad(0, GatherDropNegatives(g->b(), g->grad(0), g->input(1)));
  return absl::OkStatus();
}

// The rows equal to their segment's result share its gradient equally.
// `sum_op` counts them per segment (SegmentSum, or UnsortedSegmentSum with
// the forward op's num_segments).
absl::Status MinOrMaxGrad(GradientBuilder* g, bool unsorted) {
  GraphBuilder& b = g->b();
  Output data = g->input(0), ids = g->input(1), grad = g->grad(0);
  auto gather = [&](const char* name, Output params) -> Output {
    if (!unsorted) return b.Op(name, "Gather", {params, ids});
    GraphBuilder sub = b.WithSubPrefix(name);
    return GatherDropNegatives(sub, params, ids);
  };
  // A dropped row (negative id) gathers zeros: it is selected only if it
  // equals 0, and then its share is 0 too.
  Output selected = b.Op("is_selected", "Equal", {data, gather("gathered", g->output(0))});
  Output ones = b.Op("selected_as_t", "Cast", {selected}, {{"DstT", MakeAttr(data.dtype())}});
  Output count = unsorted ? b.Op("count", "UnsortedSegmentSum", {ones, ids, g->input(2)})
                          : b.Op("count", "SegmentSum", {ones, ids});
  Output shared = gather("shared", b.Op("weighted", "RealDiv", {grad, count}));
  g->SetInputGrad(0, b.Op("grad", "SelectV2", {selected, shared, b.Op("zeros", "ZerosLike", {data})}));
  return absl::OkStatus();
}

}  // namespace

#define SLUICE_SORTED_SEGMENT_OP_(NAME)                                             \
  REGISTER_OP(NAME)                                                                 \
      .Input("data: T")                                                             \
      .Input("segment_ids: Tindices")                                               \
      .Output("output: T")                                                          \
      .Attr("T: {float, double, half, bfloat16, int32, int64}")                     \
      .Attr("Tindices: {int32, int64}")                                             \
      .SetShapeFn(SortedSegmentShape)

SLUICE_SORTED_SEGMENT_OP_("SegmentSum").SetGradient(GatherBackGrad);
SLUICE_SORTED_SEGMENT_OP_("SegmentMean").SetGradient([](GradientBuilder* g) {
  // grad / (rows per segment), gathered back: the counts are SegmentSum of
  // ones shaped [rows, 1, ..., 1], so they broadcast over each row.
  GraphBuilder& b = g->b();
  Output data = g->input(0), ids = g->input(1);
  Output rank_minus_1 = b.Op("rank_minus_1", "Sub", {b.Op("rank", "Rank", {data}), b.Scalar<int32_t>("one", 1)});
  Output trailing = b.Op("trailing_ones", "Fill", {b.Op("expand", "ExpandDims", {rank_minus_1, b.Scalar<int32_t>("zero", 0)}),
                                                   b.Scalar<int32_t>("one_i", 1)});
  Output ones_shape = b.Op("ones_shape", "ConcatV2", {b.Op("ids_shape", "Shape", {ids}), trailing, b.Scalar<int32_t>("axis", 0)});
  Output ones = b.Op("ones", "Fill", {ones_shape, b.ScalarOfType("one_t", data.dtype(), 1)});
  Output counts = b.Op("counts", "SegmentSum", {ones, ids});
  g->SetInputGrad(0, b.Op("gather", "Gather", {b.Op("scaled", "RealDiv", {g->grad(0), counts}), ids}));
  return absl::OkStatus();
});
SLUICE_SORTED_SEGMENT_OP_("SegmentMax").SetGradient([](GradientBuilder* g) { return MinOrMaxGrad(g, false); });
SLUICE_SORTED_SEGMENT_OP_("SegmentMin").SetGradient([](GradientBuilder* g) { return MinOrMaxGrad(g, false); });
#undef SLUICE_SORTED_SEGMENT_OP_

#define SLUICE_UNSORTED_SEGMENT_OP_(NAME, TYPES)                   \
  REGISTER_OP(NAME)                                                \
      .Input("data: T")                                            \
      .Input("segment_ids: Tindices")                              \
      .Input("num_segments: Tnumsegments")                         \
      .Output("output: T")                                         \
      .Attr("T: " TYPES)                                           \
      .Attr("Tindices: {int32, int64}")                            \
      .Attr("Tnumsegments: {int32, int64} = DT_INT32")             \
      .SetShapeFn(UnsortedSegmentShape)

SLUICE_UNSORTED_SEGMENT_OP_("UnsortedSegmentSum", "{float, double, half, bfloat16, int32, int64, complex64}")
    .SetGradient(GatherBackDropNegativesGrad);
SLUICE_UNSORTED_SEGMENT_OP_("UnsortedSegmentMax", "{float, double, half, bfloat16, int32, int64}")
    .SetGradient([](GradientBuilder* g) { return MinOrMaxGrad(g, true); });
SLUICE_UNSORTED_SEGMENT_OP_("UnsortedSegmentMin", "{float, double, half, bfloat16, int32, int64}")
    .SetGradient([](GradientBuilder* g) { return MinOrMaxGrad(g, true); });
#undef SLUICE_UNSORTED_SEGMENT_OP_

}  // namespace sluice

// Summary ops (whitepaper §9.1), with TensorFlow's names and signatures: ScalarSummary,
// HistogramSummary, ImageSummary, MergeSummary. Each outputs a scalar string holding a
// serialized sluice.Summary (monitoring/summary.proto) for EventWriter::WriteSerializedSummary.
// Kernels: monitoring/summary_kernels.cc. Linking //monitoring:summary_ops registers both.
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "engine/platform/logging.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"

namespace sluice {
namespace {

#define SLUICE_REAL_TYPES_ "{float, double, int32, int64, uint8, int16, int8, uint16, half, bfloat16}"

absl::Status ScalarSummaryShape(InferenceContext* c) {
  const PartialShape& tags = c->input(0);
  const PartialShape& values = c->input(1);
  if (tags.IsFullyDefined() && values.IsFullyDefined() && !(tags == values)) {
    return c->Error(absl::StrCat("tags and values are not the same shape: ", tags.DebugString(),
                                 " != ", values.DebugString()));
  }
  c->set_output(0, PartialShape::Scalar());
  return absl::OkStatus();
}

absl::Status HistogramSummaryShape(InferenceContext* c) {
  PartialShape tag;
  absl::Status s = c->WithRank(0, 0, &tag);
  if (!s.ok()) return s;
  c->set_output(0, PartialShape::Scalar());
  return absl::OkStatus();
}

absl::Status ImageSummaryShape(InferenceContext* c) {
  PartialShape tag, tensor;
  absl::Status s = c->WithRank(0, 0, &tag);
  if (!s.ok()) return s;
  s = c->WithRank(1, 4, &tensor);
  if (!s.ok()) return s;
  if (tensor.rank_known()) {
    const int64_t depth = tensor.dim(3);
    if (depth != kUnknownDim && depth != 1 && depth != 3 && depth != 4) {
      return c->Error(absl::StrCat("tensor must be 4-D with last dim 1, 3, or 4, not ", tensor.DebugString()));
    }
  }
  c->set_output(0, PartialShape::Scalar());
  return absl::OkStatus();
}

// ImageSummary's bad_color default is a tensor (opaque red), which the spec syntax cannot
// express, so its OpDef gets the default here before registration.
bool RegisterImageSummary() {
  auto def = OpDefBuilder("ImageSummary")
                 .Input("tag: string")
                 .Input("tensor: T")
                 .Output("summary: string")
                 .Attr("max_images: int >= 1 = 3")
                 .Attr("T: {uint8, float, half, double} = DT_FLOAT")
                 .Attr("bad_color: tensor")
                 .SetShapeFn(ImageSummaryShape)
                 .Finalize();
  CHECK(def.ok()) << def.status().ToString();
  for (AttrDef& attr : def->attrs) {
    if (attr.name != "bad_color") continue;
    AttrValue value;
    TensorProto* t = value.mutable_tensor();
    t->set_dtype(DT_UINT8);
    t->mutable_tensor_shape()->add_dim()->set_size(4);
    for (int v : {255, 0, 0, 255}) t->add_int_val(v);
    attr.default_value = value;
  }
  absl::Status s = OpRegistry::Global()->Register(std::move(def).value());
  CHECK(s.ok()) << s.ToString();
  return true;
}

}  // namespace

REGISTER_OP("ScalarSummary")
    .Input("tags: string")
    .Input("values: T")
    .Output("summary: string")
    .Attr("T: " SLUICE_REAL_TYPES_)
    .SetShapeFn(ScalarSummaryShape);

REGISTER_OP("HistogramSummary")
    .Input("tag: string")
    .Input("values: T")
    .Output("summary: string")
    .Attr("T: " SLUICE_REAL_TYPES_ " = DT_FLOAT")
    .SetShapeFn(HistogramSummaryShape);

REGISTER_OP("MergeSummary")
    .Input("inputs: N * string")
    .Output("summary: string")
    .Attr("N: int >= 1")
    .SetShapeFn(shape_fns::Scalar);

static const bool image_summary_registered __attribute__((unused)) = RegisterImageSummary();

#undef SLUICE_REAL_TYPES_

}  // namespace sluice

// Reduction ops: Sum, Mean, Prod, Max, Min (input, reduction_indices: Tidx,
// keep_dims) and ArgMax / ArgMin (input, dimension: Tidx, output_type), with
// TensorFlow's signatures, shape functions and gradients. Gradients rebuild
// the kept-dims shape in the graph (like TF's reduced_shape) and broadcast the
// incoming gradient back with Reshape + Tile; Max/Min split the gradient
// evenly between tied maxima, Prod handles zeros exactly.
#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/gradients.h"

namespace sluice {
namespace {

absl::StatusOr<std::vector<int64_t>> ConstAxes(const Tensor& t) {
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    axes.push_back(t.dtype() == DT_INT32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i]);
  }
  return axes;
}

absl::Status ReductionShape(InferenceContext* c) {
  bool keep_dims = false;
  absl::Status s = c->GetAttr("keep_dims", &keep_dims);
  if (!s.ok()) return s;
  const PartialShape& in = c->input(0);
  const Tensor* axes_t = c->input_tensor(1);
  if (!in.rank_known() || axes_t == nullptr) {
    c->set_output(0, keep_dims && in.rank_known() ? PartialShape::UnknownOfRank(in.rank()) : PartialShape::Unknown());
    return absl::OkStatus();
  }
  if (axes_t->dims() > 1) {
    return c->Error(absl::StrCat("reduction axes must be a scalar or vector, got shape ",
                                 axes_t->shape().DebugString()));
  }
  auto axes = ConstAxes(*axes_t);
  if (!axes.ok()) return axes.status();
  const int rank = in.rank();
  std::vector<bool> reduce(rank, false);
  for (int64_t a : *axes) {
    if (a < -rank || a >= rank) {
      return c->Error(absl::StrCat("Invalid reduction dimension (", a, " for input with ", rank, " dimension(s)"));
    }
    reduce[a < 0 ? a + rank : a] = true;
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i) {
    if (!reduce[i]) {
      dims.push_back(in.dim(i));
    } else if (keep_dims) {
      dims.push_back(1);
    }
  }
  c->set_output(0, PartialShape::FromDims(dims));
  return absl::OkStatus();
}

absl::Status ArgShape(InferenceContext* c) {
  const PartialShape& in = c->input(0);
  const Tensor* axis_t = c->input_tensor(1);
  if (!in.rank_known()) {
    c->set_output(0, PartialShape::Unknown());
    return absl::OkStatus();
  }
  if (axis_t == nullptr || axis_t->NumElements() != 1) {
    c->set_output(0, PartialShape::UnknownOfRank(std::max(in.rank() - 1, 0)));
    return absl::OkStatus();
  }
  const int64_t a = axis_t->dtype() == DT_INT32 ? axis_t->data<int32_t>()[0] : axis_t->data<int64_t>()[0];
  const int rank = in.rank();
  if (a < -rank || a >= rank) {
    return c->Error(absl::StrCat("Expected dimension in the range [", -rank, ", ", rank, "), but got ", a));
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i) {
    if (i != (a < 0 ? a + rank : a)) dims.push_back(in.dim(i));
  }
  c->set_output(0, PartialShape::FromDims(dims));
  return absl::OkStatus();
}

// The input's shape with every reduced axis set to 1 (int32), built in the
// graph: shape * (1 - m) + m where m[i] = 1 iff i is among the (normalized) axes.
Output KeptDimsShape(GradientBuilder* g, Output input_shape) {
  GraphBuilder& b = g->b();
  Output axes = g->input(1);
  if (axes.dtype() != DT_INT32) axes = b.Op("axes32", "Cast", {axes}, {{"DstT", MakeAttr(DT_INT32)}});
  Output rank = b.Op("rank", "Size", {input_shape});
  Output negative = b.Op("negative", "Cast", {b.Op("is_neg", "Less", {axes, b.Scalar<int32_t>("zero", 0)})},
                         {{"DstT", MakeAttr(DT_INT32)}});
  Output normalized = b.Op("normalized", "AddV2", {axes, b.Op("shift", "Mul", {negative, rank})});
  Output column = b.Op("axes_row", "Reshape", {normalized, b.Const("row", Tensor::FromVector<int32_t>({1, -1}))});
  Output range = b.Op("range", "Range", {b.Scalar<int32_t>("start", 0), rank, b.Scalar<int32_t>("delta", 1)});
  Output index = b.Op("index_col", "Reshape", {range, b.Const("col", Tensor::FromVector<int32_t>({-1, 1}))});
  Output hits = b.Op("hits", "Cast", {b.Op("eq", "Equal", {index, column})}, {{"DstT", MakeAttr(DT_INT32)}});
  Output mask = b.Op("mask", "Minimum", {b.Op("count", "Sum", {hits, b.Scalar<int32_t>("one_axis", 1)}),
                                         b.Scalar<int32_t>("one", 1)});
  Output keep = b.Op("keep", "Sub", {b.Scalar<int32_t>("one_", 1), mask});
  return b.Op("kept_shape", "AddV2", {b.Op("kept", "Mul", {input_shape, keep}), mask});
}

// dz reshaped to the kept-dims shape and tiled back to the input's shape.
Output BroadcastBack(GradientBuilder* g, Output dz, Output input_shape, Output kept) {
  GraphBuilder& b = g->b();
  Output reshaped = b.Op("grad_kept", "Reshape", {dz, kept});
  Output multiples =
      b.Op("multiples", "FloorDiv", {input_shape, b.Op("safe_kept", "Maximum", {kept, b.Scalar<int32_t>("one", 1)})});
  return b.Op("tiled", "Tile", {reshaped, multiples});
}

absl::Status SumGrad(GradientBuilder* g) {
  Output shape = g->b().Op("shape", "Shape", {g->input(0)});
  g->SetInputGrad(0, BroadcastBack(g, g->grad(0), shape, KeptDimsShape(g, shape)));
  return absl::OkStatus();
}

absl::Status MeanGrad(GradientBuilder* g) {
  GraphBuilder& b = g->b();
  Output x = g->input(0);
  Output shape = b.Op("shape", "Shape", {x});
  Output sum_grad = BroadcastBack(g, g->grad(0), shape, KeptDimsShape(g, shape));
  Output axis0 = b.Scalar<int32_t>("axis0", 0);
  Output in_size = b.Op("in_size", "Prod", {shape, axis0});
  Output out_size = b.Op("out_size", "Prod", {b.Op("out_shape", "Shape", {g->output(0)}), axis0});
  Output factor = b.Op("factor", "FloorDiv", {in_size, b.Op("safe", "Maximum", {out_size, b.Scalar<int32_t>("one", 1)})});
  Output factor_t = b.Op("factor_t", "Cast", {factor}, {{"DstT", MakeAttr(x.dtype())}});
  g->SetInputGrad(0, b.Op("mean_grad", "RealDiv", {sum_grad, factor_t}));
  return absl::OkStatus();
}

absl::Status MaxMinGrad(GradientBuilder* g) {
  GraphBuilder& b = g->b();
  Output x = g->input(0);
  Output shape = b.Op("shape", "Shape", {x});
  Output kept = KeptDimsShape(g, shape);
  Output y = b.Op("y_kept", "Reshape", {g->output(0), kept});
  Output dz = b.Op("grad_kept", "Reshape", {g->grad(0), kept});
  Output indicators = b.Op("indicators", "Cast", {b.Op("is_extreme", "Equal", {y, x})}, {{"DstT", MakeAttr(x.dtype())}});
  Output count = b.Op("count", "Sum", {indicators, g->input(1)}, {{"keep_dims", MakeAttr(true)}});
  g->SetInputGrad(0, b.Op("dx", "Mul", {b.Op("share", "RealDiv", {indicators, count}), dz}));
  return absl::OkStatus();
}

// dx_i = prod_{j != i} x_j, exactly also when x has zeros: with p the product
// of the non-zero entries and nz the number of zeros in the group,
// dx_i = p / x_i if nz == 0; p if nz == 1 and x_i == 0; else 0.
absl::Status ProdGrad(GradientBuilder* g) {
  GraphBuilder& b = g->b();
  Output x = g->input(0), axes = g->input(1);
  const DataType t = x.dtype();
  AttrList keep = {{"keep_dims", MakeAttr(true)}};
  Output shape = b.Op("shape", "Shape", {x});
  Output dz = b.Op("grad_kept", "Reshape", {g->grad(0), KeptDimsShape(g, shape)});
  auto cast = [&](const char* name, Output v) { return b.Op(name, "Cast", {v}, {{"DstT", MakeAttr(t)}}); };
  Output zero = b.ScalarOfType("zero", t, 0);
  Output is_zero = cast("is_zero", b.Op("eq0", "Equal", {x, zero}));
  Output zeros = b.Op("zeros", "Sum", {is_zero, axes}, keep);
  Output safe = b.Op("safe", "AddV2", {x, is_zero});
  Output p = b.Op("p", "Prod", {safe, axes}, keep);
  Output none = cast("none", b.Op("no_zero", "Equal", {zeros, zero}));
  Output single = cast("single", b.Op("one_zero", "Equal", {zeros, b.ScalarOfType("one", t, 1)}));
  Output case0 = b.Op("case0", "Mul", {b.Op("p_over_x", "RealDiv", {p, safe}), none});
  Output case1 = b.Op("case1", "Mul", {b.Op("p_at_zero", "Mul", {p, is_zero}), single});
  g->SetInputGrad(0, b.Op("dx", "Mul", {b.Op("sum", "AddV2", {case0, case1}), dz}));
  return absl::OkStatus();
}

}  // namespace

#define SLUICE_REDUCTION_OP_(NAME)                                                                \
  REGISTER_OP(NAME)                                                                               \
      .Input("input: T")                                                                          \
      .Input("reduction_indices: Tidx")                                                           \
      .Output("output: T")                                                                        \
      .Attr("keep_dims: bool = false")                                                            \
      .Attr("T: {bfloat16, half, float, double, uint8, int8, uint16, int16, int32, int64, complex64}") \
      .Attr("Tidx: {int32, int64} = DT_INT32")                                                    \
      .SetShapeFn(ReductionShape)

SLUICE_REDUCTION_OP_("Sum").SetGradient(SumGrad);
SLUICE_REDUCTION_OP_("Mean").SetGradient(MeanGrad);
SLUICE_REDUCTION_OP_("Prod").SetGradient(ProdGrad);
SLUICE_REDUCTION_OP_("Max").SetGradient(MaxMinGrad);
SLUICE_REDUCTION_OP_("Min").SetGradient(MaxMinGrad);
#undef SLUICE_REDUCTION_OP_

// Logical AND / OR over the axes (tf.reduce_all, tf.reduce_any).
#define SLUICE_LOGICAL_REDUCTION_OP_(NAME)              \
  REGISTER_OP(NAME)                                     \
      .Input("input: bool")                             \
      .Input("reduction_indices: Tidx")                 \
      .Output("output: bool")                           \
      .Attr("keep_dims: bool = false")                  \
      .Attr("Tidx: {int32, int64} = DT_INT32")          \
      .SetShapeFn(ReductionShape)                       \
      .SetNotDifferentiable()
SLUICE_LOGICAL_REDUCTION_OP_("All");
SLUICE_LOGICAL_REDUCTION_OP_("Any");
#undef SLUICE_LOGICAL_REDUCTION_OP_

#define SLUICE_ARG_OP_(NAME)                                                                      \
  REGISTER_OP(NAME)                                                                               \
      .Input("input: T")                                                                          \
      .Input("dimension: Tidx")                                                                   \
      .Output("output: output_type")                                                              \
      .Attr("T: {bfloat16, half, float, double, uint8, int8, uint16, int16, int32, int64, complex64, bool}") \
      .Attr("Tidx: {int32, int64} = DT_INT32")                                                    \
      .Attr("output_type: {int32, int64} = DT_INT64")                                             \
      .SetShapeFn(ArgShape)                                                                       \
      .SetNotDifferentiable()
SLUICE_ARG_OP_("ArgMax");
SLUICE_ARG_OP_("ArgMin");
#undef SLUICE_ARG_OP_

}  // namespace sluice

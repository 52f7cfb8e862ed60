// Array ops, part 3: Gather, GatherV2, GatherNd, ScatterNd, DynamicPartition,
// DynamicStitch, Unique, ListDiff, Where and the internal
// _IndexedSlicesToDense (which
// engine/graph/gradients.cc DenseGradient uses to densify sparse gradients),
// with shape functions and gradients mirroring TensorFlow's. Gather's gradient
// is sparse (IndexedSlices), as in TensorFlow.
#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/gradients.h"
#include "engine/ops/array_grad_util.h"

namespace sluice {
namespace {

using array_grad::ConstValue;
using array_grad::IndexConst;
using array_grad::ShapeOf;

// StridedSlice of a vector: v[begin:end] with optional masks, or v[begin]
// with shrink.
Output SliceVector(GraphBuilder& b, const std::string& name, Output v, Output begin, Output end, int64_t begin_mask,
                   int64_t end_mask, bool shrink) {
  const DataType t = begin.dtype();
  AttrList attrs{{"begin_mask", MakeAttr(begin_mask)}, {"end_mask", MakeAttr(end_mask)}};
  if (shrink) attrs["shrink_axis_mask"] = MakeAttr(int64_t{1});
  return b.Op(name, "StridedSlice", {v, begin, end, IndexConst(b, name + "_stride", t, {1})}, attrs);
}

// The sparse gradient of gathering rows `indices` of `params` (axis 0).
absl::Status GatherAxis0Grad(GradientBuilder* g) {
  // The table's shape is taken where the table lives (TensorFlow colocates
  // it too): a Shape on another task would pull a parameter server's whole
  // table across for its dims.
  Output params = g->input(0);
  AttrValue where;
  where.mutable_list()->add_s(absl::StrCat("loc:@", params.node->name()));
  Output shape = g->b().Op("shape", "Shape", {params},
                           {{"out_type", MakeAttr(g->input(1).dtype())}, {"_class", where}});
  return array_grad::GatherRowsGrad(g, shape);
}

}  // namespace

namespace array_grad {

absl::Status GatherRowsGrad(GradientBuilder* g, Output params_shape) {
  GraphBuilder& b = g->b();
  Output indices = g->input(1);
  const DataType t = indices.dtype();
  Output size = b.Op("size", "Size", {indices}, {{"out_type", MakeAttr(t)}});
  Output size_vec = b.Op("size_vec", "Reshape", {size, IndexConst(b, "one", DT_INT32, {1})});
  Output one = IndexConst(b, "begin1", t, {1});
  Output tail = SliceVector(b, "tail", params_shape, one, one, 0, 1, false);
  Output values_shape = b.Op("values_shape", "ConcatV2", {size_vec, tail, b.Scalar<int32_t>("axis", 0)});
  IndexedSlices slices;
  slices.values = b.Op("values", "Reshape", {g->grad(0), values_shape});
  slices.indices = b.Op("indices", "Reshape", {indices, size_vec});
  slices.dense_shape = params_shape;
  g->SetInputGradSparse(0, slices);
  return absl::OkStatus();
}

}  // namespace array_grad

namespace {

// The dense gradient of GatherV2 along any axis (TensorFlow's _GatherV2Grad):
// move the gathered axis to the front, segment-sum, move it back.
absl::Status GatherAnyAxisGrad(GradientBuilder* g) {
  GraphBuilder& b = g->b();
  Output params = g->input(0), indices = g->input(1), axis = g->input(2);
  const DataType t = axis.dtype();
  Output params_shape = ShapeOf(b, params, t);
  Output size = b.Op("size", "Size", {indices}, {{"out_type", MakeAttr(t)}});
  Output size_vec = b.Op("size_vec", "Reshape", {size, IndexConst(b, "one", DT_INT32, {1})});
  Output axis_vec = b.Op("axis_vec", "Reshape", {axis, IndexConst(b, "one_", DT_INT32, {1})});
  Output zero = IndexConst(b, "zero", t, {0});
  Output outer_shape = SliceVector(b, "outer_shape", params_shape, zero, axis_vec, 1, 0, false);
  Output from_axis = SliceVector(b, "from_axis", params_shape, axis_vec, axis_vec, 0, 1, false);
  Output one = IndexConst(b, "begin1", t, {1});
  Output inner_shape = SliceVector(b, "inner_shape", from_axis, one, one, 0, 1, false);
  Output num_segments = SliceVector(b, "num_segments", from_axis, zero, zero, 0, 0, true);
  Output outer_dims = b.Op("outer_dims", "Size", {outer_shape}, {{"out_type", MakeAttr(t)}});
  Output inner_dims = b.Op("inner_dims", "Size", {inner_shape}, {{"out_type", MakeAttr(t)}});
  Output t0 = b.ScalarOfType("t0", t, 0), t1 = b.ScalarOfType("t1", t, 1);
  Output outer_axes = b.Op("outer_axes", "Range", {t0, outer_dims, t1});
  Output outer_p1 = b.Op("outer_p1", "Add", {outer_dims, t1});
  Output inner_axes = b.Op("inner_axes", "Range", {outer_p1, b.Op("inner_end", "Add", {outer_p1, inner_dims}), t1});
  Output concat_axis = b.Scalar<int32_t>("concat_axis", 0);
  Output values_shape = b.Op("values_shape", "ConcatV2", {outer_shape, size_vec, inner_shape, concat_axis});
  Output values = b.Op("values", "Reshape", {g->grad(0), values_shape});
  Output flat_indices = b.Op("flat_indices", "Reshape", {indices, size_vec});
  Output outer_dims_vec = b.Op("outer_dims_vec", "Reshape", {outer_dims, IndexConst(b, "one__", DT_INT32, {1})});
  Output perm = b.Op("perm", "ConcatV2", {outer_dims_vec, outer_axes, inner_axes, concat_axis});
  Output moved = b.Op("moved", "Transpose", {values, perm});
  Output summed = b.Op("summed", "UnsortedSegmentSum", {moved, flat_indices, num_segments});
  Output inverse = b.Op("inverse", "ConcatV2",
                        {b.Op("outer_axes_p1", "Add", {outer_axes, t1}), zero, inner_axes, concat_axis});
  g->SetInputGrad(0, b.Op("grad", "Transpose", {summed, inverse}));
  return absl::OkStatus();
}

// Values of a constant scalar integer, when known.
std::optional<int64_t> ConstScalar(Output o) {
  auto t = ConstValue(o);
  if (!t || t->NumElements() != 1) return std::nullopt;
  if (t->dtype() == DT_INT32) return t->data<int32_t>()[0];
  if (t->dtype() == DT_INT64) return t->data<int64_t>()[0];
  return std::nullopt;
}

// Output shape of gathering `indices` from `params` along `axis`.
absl::Status GatherShape(InferenceContext* c, std::optional<int64_t> axis) {
  const PartialShape& params = c->input(0);
  const PartialShape& indices = c->input(1);
  if (!params.rank_known() || !indices.rank_known() || !axis) {
    c->set_output(0, PartialShape::Unknown());
    return absl::OkStatus();
  }
  const int rank = params.rank();
  if (rank < 1) return c->Error("params must be at least 1 dimensional");
  int64_t a = *axis;
  if (a < -rank || a >= rank) return c->Error(absl::StrCat("axis ", a, " is out of range [", -rank, ", ", rank, ")"));
  if (a < 0) a += rank;
  std::vector<int64_t> dims(params.dims().begin(), params.dims().begin() + a);
  dims.insert(dims.end(), indices.dims().begin(), indices.dims().end());
  dims.insert(dims.end(), params.dims().begin() + a + 1, params.dims().end());
  c->set_output(0, PartialShape::FromDims(dims));
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("Gather")
    .Input("params: Tparams")
    .Input("indices: Tindices")
    .Output("output: Tparams")
    .Attr("validate_indices: bool = true")
    .Attr("Tparams: type")
    .Attr("Tindices: {int32, int64}")
    .SetShapeFn([](InferenceContext* c) { return GatherShape(c, 0); })
    .SetGradient(GatherAxis0Grad);

REGISTER_OP("GatherV2")
    .Input("params: Tparams")
    .Input("indices: Tindices")
    .Input("axis: Taxis")
    .Output("output: Tparams")
    .Attr("batch_dims: int = 0")
    .Attr("Tparams: type")
    .Attr("Tindices: {int32, int64}")
    .Attr("Taxis: {int32, int64}")
    .SetShapeFn([](InferenceContext* c) {
      const Tensor* a = c->input_tensor(2);
      std::optional<int64_t> axis;
      if (a != nullptr && a->NumElements() == 1) {
        axis = a->dtype() == DT_INT64 ? a->data<int64_t>()[0] : a->data<int32_t>()[0];
      }
      return GatherShape(c, axis);
    })
    .SetGradient([](GradientBuilder* g) {
      if (ConstScalar(g->input(2)) == std::optional<int64_t>(0)) return GatherAxis0Grad(g);
      return GatherAnyAxisGrad(g);
    });

// output[i...] = params[indices[i...]] for index vectors of K = the last dim
// of indices: output shape indices.shape[:-1] + params.shape[K:]. An index
// out of range is an error, or with bad_indices_policy "IGNORE" selects
// zeros (ScatterNd: its update is dropped).
// Gradient: the scatter of the gradient back (TensorFlow's _GatherNdGrad).
REGISTER_OP("GatherNd")
    .Input("params: Tparams")
    .Input("indices: Tindices")
    .Output("output: Tparams")
    .Attr("Tparams: type")
    .Attr("Tindices: {int32, int64}")
    .Attr("bad_indices_policy: string = ''")
    .SetShapeFn([](InferenceContext* c) {
      const PartialShape &params = c->input(0), &indices = c->input(1);
      if (indices.rank_known() && indices.rank() < 1) return c->Error("indices must be at least a vector");
      if (!params.rank_known() || !indices.rank_known() || indices.dim(indices.rank() - 1) == kUnknownDim) {
        c->set_output(0, PartialShape::Unknown());
        return absl::OkStatus();
      }
      const int64_t k = indices.dim(indices.rank() - 1);
      if (k > params.rank()) {
        return c->Error(absl::StrCat("index vectors of ", k, " entries cannot index params of rank ", params.rank()));
      }
      std::vector<int64_t> dims(indices.dims().begin(), indices.dims().end() - 1);
      dims.insert(dims.end(), params.dims().begin() + k, params.dims().end());
      c->set_output(0, PartialShape::FromDims(dims));
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      GraphBuilder& b = g->b();
      Output indices = g->input(1);
      // Under bad_indices_policy IGNORE, an ignored index read zeros: its
      // gradient is dropped by the same policy.
      g->SetInputGrad(0, b.Op("scatter", "ScatterNd", {indices, g->grad(0), ShapeOf(b, g->input(0), indices.dtype())},
                              g->ForwardAttrs({"bad_indices_policy"})));
      return absl::OkStatus();
    });

// A tensor of `shape`, zeros plus updates[i...] added at indices[i...] (index
// vectors of K = the last dim of indices; repeated indices add up).
// Gradient: the gather of the gradient (TensorFlow's _ScatterNdGrad).
REGISTER_OP("ScatterNd")
    .Input("indices: Tindices")
    .Input("updates: T")
    .Input("shape: Tindices")
    .Output("output: T")
    .Attr("T: {float, double, half, bfloat16, int32, int64}")
    .Attr("Tindices: {int32, int64}")
    .Attr("bad_indices_policy: string = ''")
    .SetShapeFn([](InferenceContext* c) {
      const PartialShape& indices = c->input(0);
      if (indices.rank_known() && indices.rank() < 1) return c->Error("indices must be at least a vector");
      return shape_fns::ShapeFromInput(c, 2);
    })
    .SetGradient([](GradientBuilder* g) {
      // IGNORE: a dropped update's gradient gathers zeros.
      g->SetInputGrad(1, g->b().Op("gather", "GatherNd", {g->grad(0), g->input(0)}, g->ForwardAttrs({"bad_indices_policy"})));
      return absl::OkStatus();
    });

REGISTER_OP("DynamicPartition")
    .Input("data: T")
    .Input("partitions: int32")
    .Output("outputs: num_partitions * T")
    .Attr("num_partitions: int")
    .Attr("T: type")
    .SetShapeFn([](InferenceContext* c) {  // each: [?] + data's dims past partitions' rank
      const PartialShape& data = c->input(0);
      const PartialShape& partitions = c->input(1);
      PartialShape out;
      if (data.rank_known() && partitions.rank_known() && partitions.rank() <= data.rank()) {
        std::vector<int64_t> dims = {kUnknownDim};
        dims.insert(dims.end(), data.dims().begin() + partitions.rank(), data.dims().end());
        out = PartialShape::FromDims(dims);
      }
      for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, out);
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      // Partition the element positions the same way, then stitch the
      // output gradients back into place.
      GraphBuilder& b = g->b();
      Output data = g->input(0), partitions = g->input(1);
      const int n = g->num_outputs();
      Output positions = b.Op("positions", "Range", {b.Scalar<int32_t>("zero", 0),
                                                     b.Op("count", "Size", {partitions}), b.Scalar<int32_t>("one", 1)});
      positions = b.Op("positions_shaped", "Reshape", {positions, ShapeOf(b, partitions)});
      Node* parted = b.AddNode("partitioned_positions", "DynamicPartition", {positions, partitions},
                               {{"num_partitions", MakeAttr(int64_t{n})}});
      if (parted == nullptr) return b.status();
      std::vector<Output> inputs;
      for (int i = 0; i < n; ++i) inputs.push_back(Output{parted, i});
      for (int i = 0; i < n; ++i) inputs.push_back(g->grad(i));
      Output stitched = b.Op("stitched", "DynamicStitch", inputs, {{"N", MakeAttr(int64_t{n})}});
      g->SetInputGrad(0, b.Op("grad", "Reshape", {stitched, ShapeOf(b, data)}));
      return absl::OkStatus();
    });

// ParallelDynamicStitch is DynamicStitch whose order among repeated indices
// TensorFlow leaves open (tf.nn.embedding_lookup builds it); ours is the same:
// the later one wins.
#define SLUICE_DYNAMIC_STITCH_OP_(NAME)                                                     \
  REGISTER_OP(NAME)                                                                         \
      .Input("indices: N * int32")                                                          \
      .Input("data: N * T")                                                                 \
      .Output("merged: T")                                                                  \
      .Attr("N : int >= 1")                                                                 \
      .Attr("T : type")                                                                     \
      .SetGradient([](GradientBuilder* g) {                                                 \
        const int n = g->num_inputs() / 2;                                                  \
        for (int i = 0; i < n; ++i) {                                                       \
          g->SetInputGrad(n + i, g->b().Op("gather", "Gather", {g->grad(0), g->input(i)})); \
        }                                                                                   \
        return absl::OkStatus();                                                            \
      })
SLUICE_DYNAMIC_STITCH_OP_("DynamicStitch");
SLUICE_DYNAMIC_STITCH_OP_("ParallelDynamicStitch");
#undef SLUICE_DYNAMIC_STITCH_OP_

// The distinct values of a vector in order of first appearance, and for each
// element the index of its value among them. TensorFlow registers no
// gradient for Unique; here no gradient flows through it (its idx output is
// an index, its y a selection).
REGISTER_OP("Unique")
    .Input("x: T")
    .Output("y: T")
    .Output("idx: out_idx")
    .Attr("T: type")
    .Attr("out_idx: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      PartialShape x;
      absl::Status s = c->WithRank(0, 1, &x);
      if (!s.ok()) return s;
      c->set_output(0, PartialShape::UnknownOfRank(1));
      c->set_output(1, x);
      return absl::OkStatus();
    })
    .SetNotDifferentiable();

// The elements of vector x not in vector y, in x's order, and their
// positions in x (tf.compat.v1.setdiff1d). No gradient, as in TensorFlow.
REGISTER_OP("ListDiff")
    .Input("x: T")
    .Input("y: T")
    .Output("out: T")
    .Output("idx: out_idx")
    .Attr("T: type")
    .Attr("out_idx: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      PartialShape v;
      absl::Status s = c->WithRank(0, 1, &v);
      if (!s.ok()) return s;
      s = c->WithRank(1, 1, &v);
      if (!s.ok()) return s;
      c->set_output(0, PartialShape::UnknownOfRank(1));
      c->set_output(1, PartialShape::UnknownOfRank(1));
      return absl::OkStatus();
    })
    .SetNotDifferentiable();

// The coordinates of the true (nonzero) elements of `input`, in row-major
// order: [count, rank] int64 (tf.where with one argument).
REGISTER_OP("Where")
    .Input("input: T")
    .Output("index: int64")
    .Attr("T: {bool, float, double, half, bfloat16, int8, int16, int32, int64, uint8, uint16} = DT_BOOL")
    .SetShapeFn([](InferenceContext* c) {
      const PartialShape& in = c->input(0);
      c->set_output(0, PartialShape::FromDims({kUnknownDim, in.rank_known() ? in.rank() : kUnknownDim}));
      return absl::OkStatus();
    })
    .SetNotDifferentiable();

REGISTER_OP("_IndexedSlicesToDense")
    .SetSluiceOnly()
    .Input("values: T")
    .Input("indices: Tindices")
    .Input("dense_shape: Tindices")
    .Output("dense: T")
    .Attr("T: {float, double, half, bfloat16, int32, int64, complex64}")
    .Attr("Tindices: {int32, int64}")
    .SetShapeFn([](InferenceContext* c) {
      const Tensor* t = c->input_tensor(2);
      if (t == nullptr || t->dims() != 1) {
        c->set_output(0, PartialShape::Unknown());
        return absl::OkStatus();
      }
      std::vector<int64_t> dims(t->NumElements());
      for (int64_t i = 0; i < t->NumElements(); ++i) {
        dims[i] = t->dtype() == DT_INT64 ? t->data<int64_t>()[i] : t->data<int32_t>()[i];
        if (dims[i] < 0) return c->Error(absl::StrCat("dense_shape: dimension ", i, " is negative (", dims[i], ")"));
      }
      c->set_output(0, PartialShape::FromDims(dims));
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, g->b().Op("gather", "Gather", {g->grad(0), g->input(1)}));
      return absl::OkStatus();
    });

}  // namespace sluice

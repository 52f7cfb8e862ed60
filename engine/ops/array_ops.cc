// Array ops, part 1: Const, Placeholder(WithDefault), Identity, NoOp and the
// shape ops (Fill, BroadcastTo, SparseToDense, ZerosLike, OnesLike, Shape,
// Rank, Size, Reshape, Squeeze, ExpandDims, Transpose, InvertPermutation,
// StopGradient, Range, OneHot), each with its shape function and gradient.
// Concat/split/slicing ops are in array_ops_slicing.cc, gather and scatter ops
// in array_ops_indexing.cc. Signatures follow TensorFlow's op definitions
// (tensorflow/core/ops/array_ops.cc, math_ops.cc for Range, sparse_ops.cc for
// SparseToDense).
#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/range_count.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/gradients.h"
#include "engine/ops/array_grad_util.h"

namespace sluice {
namespace {

using array_grad::IndexConst;

absl::Status ConstShape(InferenceContext* c) {
  TensorProto proto;
  absl::Status s = c->GetAttr("value", &proto);
  if (!s.ok()) return s;
  DataType dtype;
  s = c->GetAttr("dtype", &dtype);
  if (!s.ok()) return s;
  if (proto.dtype() != dtype) {
    return c->Error(absl::StrCat("attr 'value' holds a ", DataTypeString(proto.dtype()), " tensor but attr 'dtype' is ",
                                 DataTypeString(dtype)));
  }
  // Validate without allocating: a huge Const fails when its kernel is built.
  auto shape = Tensor::ValidateProto(proto);
  if (!shape.ok()) return c->Error(absl::StrCat("attr 'value': ", shape.status().message()));
  c->set_output(0, PartialShape::FromShape(*shape));
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("Const")
    .Output("output: dtype")
    .Attr("value: tensor")
    .Attr("dtype: type")
    .SetShapeFn(ConstShape)
    .SetNotDifferentiable();

REGISTER_OP("Placeholder")
    .Output("output: dtype")
    .Attr("dtype: type")
    .Attr("shape: shape = { unknown_rank: true }")
    .SetShapeFn(shape_fns::FromShapeAttr)
    .SetNotDifferentiable();

// Passes `input` through unless the tensor is fed (a Placeholder with a
// default). The default must be compatible with `shape`, which is the output's
// declared shape (it may be less specific than the default's).
REGISTER_OP("PlaceholderWithDefault")
    .Input("input: dtype")
    .Output("output: dtype")
    .Attr("dtype: type")
    .Attr("shape: shape")
    .SetShapeFn([](InferenceContext* c) {
      absl::Status s = shape_fns::FromShapeAttr(c);
      if (!s.ok()) return s;
      if (!c->input(0).IsCompatibleWith(c->output(0))) {
        return c->Error(absl::StrCat("the default value has shape ", c->input(0).DebugString(),
                                     ", incompatible with attr 'shape' ", c->output(0).DebugString()));
      }
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, g->grad(0));
      return absl::OkStatus();
    });

REGISTER_OP("Identity")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::Unchanged)
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, g->grad(0));
      return absl::OkStatus();
    });

REGISTER_OP("NoOp").SetShapeFn(shape_fns::Unknown);

namespace {

// Reshapes the incoming gradient to the shape of input 0 (Reshape, Squeeze,
// ExpandDims).
absl::Status ReshapeToInputGrad(GradientBuilder* g) {
  GraphBuilder& b = g->b();
  g->SetInputGrad(0, b.Op("reshape", "Reshape", {g->grad(0), array_grad::ShapeOf(b, g->input(0))}));
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("Fill")
    .Input("dims: index_type")
    .Input("value: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("index_type: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) { return shape_fns::ShapeFromInput(c, 0); })
    .SetNotDifferentiable();

// Broadcasts `input` to `shape` by numpy's rules: trailing dims line up, and
// each input dim equals the target dim or is 1.
REGISTER_OP("BroadcastTo")
    .Input("input: T")
    .Input("shape: Tidx")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tidx: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      const PartialShape& shape_vec = c->input(1);
      if (shape_vec.rank_known() && shape_vec.rank() != 1) {
        return c->Error(absl::StrCat("'shape' must be a vector, got shape ", shape_vec.DebugString()));
      }
      absl::Status s = shape_fns::ShapeFromInput(c, 1);
      if (!s.ok()) return s;
      const PartialShape out = c->output(0);
      const PartialShape& in = c->input(0);
      if (!out.rank_known() || !in.rank_known()) return absl::OkStatus();
      auto mismatch = [&] {
        return c->Error(absl::StrCat("unable to broadcast a tensor of shape ", in.DebugString(), " to shape ",
                                     out.DebugString()));
      };
      if (in.rank() > out.rank()) return mismatch();
      std::vector<int64_t> dims(out.dims().begin(), out.dims().end());
      for (int i = 1; i <= in.rank(); ++i) {
        const int64_t d = in.dim(in.rank() - i);
        int64_t& o = dims[dims.size() - i];
        if (d == kUnknownDim || d == 1) continue;
        if (o == kUnknownDim) {
          o = d;  // a dim other than 1 is never broadcast: the target's must equal it
        } else if (o != d) {
          return mismatch();
        }
      }
      c->set_output(0, PartialShape::FromDims(dims));
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      // TensorFlow's _BroadcastToGrad: sum dy over the axes along which the
      // input was broadcast, then give it the input's shape.
      GraphBuilder& b = g->b();
      Output shape = g->input(1);
      Output input_shape = array_grad::ShapeOf(b, g->input(0), shape.dtype());
      Node* args = b.AddNode("broadcast_args", "BroadcastGradientArgs", {shape, input_shape});
      if (args == nullptr) return b.status();
      Output sum = b.Op("sum", "Sum", {g->grad(0), Output{args, 1}}, {{"keep_dims", MakeAttr(true)}});
      g->SetInputGrad(0, b.Op("reshape", "Reshape", {sum, input_shape}));
      return absl::OkStatus();
    });

// dense[sparse_indices[i]] = sparse_values[i] (or the scalar sparse_values),
// default_value elsewhere; dense has shape output_shape. sparse_indices is a
// scalar, a vector (one dim) or an [N, ndims] matrix; validate_indices also
// requires them in lexicographic order without repeats.
REGISTER_OP("SparseToDense")
    .Input("sparse_indices: Tindices")
    .Input("output_shape: Tindices")
    .Input("sparse_values: T")
    .Input("default_value: T")
    .Output("dense: T")
    .Attr("validate_indices: bool = true")
    .Attr("T: type")
    .Attr("Tindices: {int32, int64}")
    .SetShapeFn([](InferenceContext* c) { return shape_fns::ShapeFromInput(c, 1); })
    .SetGradient([](GradientBuilder* g) {
      // TensorFlow's _SparseToDenseGrad: each value gets the gradient at its
      // index (gather_nd), the default what is left of the total. The index
      // rows become flat positions sum_d index[d] * stride[d], with
      // stride[d] = prod(output_shape[d+1:]) built as the row products of
      // a [D, D] matrix holding output_shape above the diagonal and 1 elsewhere.
      GraphBuilder& b = g->b();
      Output indices = g->input(0), shape = g->input(1), values = g->input(2), grad = g->grad(0);
      const DataType it = indices.dtype();
      Output d = b.Op("d", "Size", {shape}, {{"out_type", MakeAttr(it)}});
      Output zero = b.ScalarOfType("zero", it, 0), one = b.ScalarOfType("one", it, 1);
      Output rows = b.Op("rows", "Reshape", {indices, b.Op("rows_shape", "Pack", {b.ScalarOfType("minus_one", it, -1), d})});
      Output iota = b.Op("iota", "Range", {zero, d, one});
      Output later = b.Op("later", "Greater", {b.Op("iota_row", "ExpandDims", {iota, b.Scalar<int32_t>("dim0", 0)}),
                                               b.Op("iota_col", "ExpandDims", {iota, b.Scalar<int32_t>("dim1", 1)})});
      Output factors = b.Op("factors", "SelectV2",
                            {later, b.Op("shape_row", "ExpandDims", {shape, b.Scalar<int32_t>("dim0b", 0)}), one});
      Output strides = b.Op("strides", "Prod", {factors, b.Scalar<int32_t>("axis1", 1)});
      Output linear = b.Op("linear", "Sum", {b.Op("scaled", "Mul", {rows, strides}), b.Scalar<int32_t>("axis1b", 1)});
      Output picked = b.Op("picked", "GatherV2", {b.Op("grad_flat", "Reshape", {grad, IndexConst(b, "flat", DT_INT32, {-1})}),
                                                  linear, b.Scalar<int32_t>("axis0", 0)});
      // A scalar sparse_values was broadcast to every index: sum its share.
      Output sv = array_grad::ShapeOf(b, values);
      Node* args = b.AddNode("broadcast_args", "BroadcastGradientArgs", {sv, array_grad::ShapeOf(b, picked)});
      if (args == nullptr) return b.status();
      g->SetInputGrad(2, b.Op("dvalues", "Reshape", {b.Op("sum_values", "Sum", {picked, Output{args, 0}}), sv}));
      auto total = [&](const std::string& name, Output x) {
        Output axes = b.Op(name + "_axes", "Range", {b.Scalar<int32_t>(name + "_start", 0), b.Op(name + "_rank", "Rank", {x}),
                                                     b.Scalar<int32_t>(name + "_delta", 1)});
        return b.Op(name, "Sum", {x, axes});
      };
      g->SetInputGrad(3, b.Op("ddefault", "Sub", {total("total_grad", grad), total("total_picked", picked)}));
      return absl::OkStatus();
    });

REGISTER_OP("ZerosLike")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::Unchanged)
    .SetNotDifferentiable();

REGISTER_OP("OnesLike")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: {bfloat16, half, float, double, int8, uint8, int16, uint16, int32, int64, complex64, bool}")
    .SetShapeFn(shape_fns::Unchanged)
    .SetNotDifferentiable();

REGISTER_OP("Shape")
    .Input("input: T")
    .Output("output: out_type")
    .Attr("T: type")
    .Attr("out_type: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      const PartialShape& in = c->input(0);
      c->set_output(0, PartialShape({in.rank_known() ? in.rank() : kUnknownDim}));
      return absl::OkStatus();
    })
    .SetNotDifferentiable();

// The shapes of N tensors at once (TensorFlow's gradient functions of Conv2D
// and Concat emit it).
REGISTER_OP("ShapeN")
    .Input("input: N * T")
    .Output("output: N * out_type")
    .Attr("N: int >= 1")
    .Attr("T: type")
    .Attr("out_type: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      for (int i = 0; i < c->num_outputs(); ++i) {
        const PartialShape& in = c->input(i);
        c->set_output(i, PartialShape({in.rank_known() ? in.rank() : kUnknownDim}));
      }
      return absl::OkStatus();
    })
    .SetNotDifferentiable();

REGISTER_OP("Rank")
    .Input("input: T")
    .Output("output: int32")
    .Attr("T: type")
    .SetShapeFn(shape_fns::Scalar)
    .SetNotDifferentiable();

REGISTER_OP("Size")
    .Input("input: T")
    .Output("output: out_type")
    .Attr("T: type")
    .Attr("out_type: {int32, int64} = DT_INT32")
    .SetShapeFn(shape_fns::Scalar)
    .SetNotDifferentiable();

REGISTER_OP("Reshape")
    .Input("tensor: T")
    .Input("shape: Tshape")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tshape: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      absl::Status s = shape_fns::ShapeFromInput(c, 1);
      if (!s.ok()) return s;
      // Resolve a single -1 or unknown dim when the input's element count is
      // known: whatever the shape's value there, the output must hold the
      // input's elements.
      const PartialShape& in = c->input(0);
      const PartialShape& out = c->output(0);
      if (!in.IsFullyDefined() || !out.rank_known()) return absl::OkStatus();
      int64_t known = 1, unknown = -1;
      for (int i = 0; i < out.rank(); ++i) {
        if (out.dim(i) == kUnknownDim) {
          if (unknown >= 0) return absl::OkStatus();
          unknown = i;
        } else {
          if (out.dim(i) != 0 && known > kMaxTensorElements / out.dim(i)) return absl::OkStatus();  // the kernel reports it
          known *= out.dim(i);
        }
      }
      if (unknown < 0) return absl::OkStatus();
      int64_t count = 1;
      for (int64_t d : in.dims()) {
        if (d != 0 && count > kMaxTensorElements / d) return absl::OkStatus();
        count *= d;
      }
      if (known == 0 || count % known != 0) return absl::OkStatus();  // the kernel reports it
      std::vector<int64_t> dims(out.dims().begin(), out.dims().end());
      dims[unknown] = count / known;
      c->set_output(0, PartialShape::FromDims(dims));
      return absl::OkStatus();
    })
    .SetGradient(ReshapeToInputGrad);

REGISTER_OP("Squeeze")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("squeeze_dims: list(int) >= 0 = []")
    .SetShapeFn([](InferenceContext* c) {
      const PartialShape& in = c->input(0);
      std::vector<int64_t> axes;
      absl::Status s = c->GetAttr("squeeze_dims", &axes);
      if (!s.ok()) return s;
      if (!in.rank_known()) {
        c->set_output(0, PartialShape::Unknown());
        return absl::OkStatus();
      }
      const int rank = in.rank();
      std::vector<bool> drop(rank, false);
      for (int64_t a : axes) {
        if (a < -rank || a >= rank) {
          return c->Error(absl::StrCat("squeeze dimension ", a, " is out of range [", -rank, ", ", rank, ")"));
        }
        const int axis = static_cast<int>(a < 0 ? a + rank : a);
        if (in.dim(axis) != kUnknownDim && in.dim(axis) != 1) {
          return c->Error(absl::StrCat("can not squeeze dim[", axis, "], expected a dimension of 1, got ", in.dim(axis)));
        }
        drop[axis] = true;
      }
      std::vector<int64_t> dims;
      for (int i = 0; i < rank; ++i) {
        if (axes.empty()) {
          if (in.dim(i) == kUnknownDim) {
            c->set_output(0, PartialShape::Unknown());
            return absl::OkStatus();
          }
          if (in.dim(i) == 1) continue;
        } else if (drop[i]) {
          continue;
        }
        dims.push_back(in.dim(i));
      }
      c->set_output(0, PartialShape::FromDims(dims));
      return absl::OkStatus();
    })
    .SetGradient(ReshapeToInputGrad);

REGISTER_OP("ExpandDims")
    .Input("input: T")
    .Input("dim: Tdim")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tdim: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      const PartialShape& in = c->input(0);
      auto dim = c->input_index_values(1);
      if (!in.rank_known()) {
        c->set_output(0, PartialShape::Unknown());
        return absl::OkStatus();
      }
      if (!dim || dim->size() != 1) {
        c->set_output(0, PartialShape::UnknownOfRank(in.rank() + 1));
        return absl::OkStatus();
      }
      const int64_t d = (*dim)[0];
      const int rank = in.rank() + 1;
      if (d < -rank || d >= rank) return c->Error(absl::StrCat("dim ", d, " is out of range [", -rank, ", ", rank, ")"));
      std::vector<int64_t> dims(in.dims().begin(), in.dims().end());
      dims.insert(dims.begin() + (d < 0 ? d + rank : d), 1);
      c->set_output(0, PartialShape::FromDims(dims));
      return absl::OkStatus();
    })
    .SetGradient(ReshapeToInputGrad);

REGISTER_OP("Transpose")
    .Input("x: T")
    .Input("perm: Tperm")
    .Output("y: T")
    .Attr("T: type")
    .Attr("Tperm: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      const PartialShape& in = c->input(0);
      auto perm = c->input_index_values(1);
      if (!in.rank_known() || !perm) {
        c->set_output(0, in.rank_known() ? PartialShape::UnknownOfRank(in.rank()) : PartialShape::Unknown());
        return absl::OkStatus();
      }
      if (static_cast<int>(perm->size()) != in.rank()) {
        return c->Error(absl::StrCat("transpose expects a vector of size ", in.rank(), "; but input(1) is a vector of size ",
                                     perm->size()));
      }
      std::vector<int64_t> dims;
      for (int64_t p : *perm) {
        if (p < 0 || p >= in.rank()) return c->Error(absl::StrCat(p, " is out of range [0 .. ", in.rank(), ")"));
        dims.push_back(in.dim(static_cast<int>(p)));
      }
      c->set_output(0, PartialShape::FromDims(dims));
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      // dx = transpose(dy, inverse(perm)), inverse(perm)[perm[i]] = i: a
      // segment sum of the positions 0..n-1 by perm (works for int32 and int64).
      GraphBuilder& b = g->b();
      Output perm = g->input(1);
      const DataType t = perm.dtype();
      Output n = b.Op("n", "Size", {perm}, {{"out_type", MakeAttr(t)}});
      Output iota = b.Op("iota", "Range", {b.ScalarOfType("zero", t, 0), n, b.ScalarOfType("one", t, 1)});
      Output inverse = b.Op("inverse_perm", "UnsortedSegmentSum", {iota, perm, n});
      g->SetInputGrad(0, b.Op("transpose", "Transpose", {g->grad(0), inverse}));
      return absl::OkStatus();
    });

// y[x[i]] = i for a permutation x of 0..n-1.
REGISTER_OP("InvertPermutation")
    .Input("x: T")
    .Output("y: T")
    .Attr("T: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      PartialShape x;
      absl::Status s = c->WithRank(0, 1, &x);
      if (!s.ok()) return s;
      c->set_output(0, x);
      return absl::OkStatus();
    })
    .SetNotDifferentiable();

REGISTER_OP("StopGradient")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: type")
    .SetShapeFn(shape_fns::Unchanged)
    .SetNotDifferentiable();

REGISTER_OP("Range")
    .Input("start: Tidx")
    .Input("limit: Tidx")
    .Input("delta: Tidx")
    .Output("output: Tidx")
    .Attr("Tidx: {float, double, int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, PartialShape::UnknownOfRank(1));
      auto start = c->input_index_values(0), limit = c->input_index_values(1), delta = c->input_index_values(2);
      if (!start || !limit || !delta || start->size() != 1 || limit->size() != 1 || delta->size() != 1) {
        return absl::OkStatus();  // unknown, or not integers
      }
      // The kernel's count (engine/kernels/shape_ops.cc); none where the
      // kernel reports an error.
      std::optional<uint64_t> count = IntegerRangeCount((*start)[0], (*limit)[0], (*delta)[0]);
      if (count && *count <= static_cast<uint64_t>(kMaxTensorElements)) {
        c->set_output(0, PartialShape::FromDims({static_cast<int64_t>(*count)}));
      }
      return absl::OkStatus();
    })
    .SetNotDifferentiable();

REGISTER_OP("OneHot")
    .Input("indices: TI")
    .Input("depth: int32")
    .Input("on_value: T")
    .Input("off_value: T")
    .Output("output: T")
    .Attr("axis: int = -1")
    .Attr("T: type")
    .Attr("TI: {uint8, int32, int64} = DT_INT64")
    .SetShapeFn([](InferenceContext* c) {
      const PartialShape& in = c->input(0);
      int64_t axis;
      absl::Status s = c->GetAttr("axis", &axis);
      if (!s.ok()) return s;
      if (!in.rank_known()) {
        c->set_output(0, PartialShape::Unknown());
        return absl::OkStatus();
      }
      if (axis < -1 || axis > in.rank()) {
        return c->Error(absl::StrCat("expected axis to be -1 or between [0, ", in.rank(), "], but got ", axis));
      }
      auto depth = c->input_index_values(1);
      std::vector<int64_t> dims(in.dims().begin(), in.dims().end());
      dims.insert(dims.begin() + (axis == -1 ? in.rank() : axis),
                  depth && depth->size() == 1 && (*depth)[0] >= 0 ? (*depth)[0] : kUnknownDim);
      c->set_output(0, PartialShape::FromDims(dims));
      return absl::OkStatus();
    })
    .SetNotDifferentiable();

}  // namespace sluice

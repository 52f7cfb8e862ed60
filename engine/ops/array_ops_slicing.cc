// Array ops, part 2: Concat, ConcatV2, ConcatOffset, Split, SplitV, Pack,
// Unpack, Slice, StridedSlice, StridedSliceGrad, Tile and Pad, with shape
// functions and gradients mirroring TensorFlow's (tensorflow/python/ops/array_grad.py).
// Signatures follow tensorflow/core/ops/array_ops.cc.
#include <functional>
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"
#include "engine/framework/strided_slice.h"
#include "engine/graph/gradients.h"
#include "engine/ops/array_grad_util.h"

namespace sluice {
namespace {

using array_grad::IndexConst;
using array_grad::ShapeOf;

// Gradient of a concatenation of inputs [first, first + n) along `axis`:
// split dy into pieces as long as each input along the axis.
absl::Status ConcatGrad(GradientBuilder* g, int first, int n, Output axis) {
  GraphBuilder& b = g->b();
  const DataType t = axis.dtype();
  std::vector<Output> shapes;
  for (int i = 0; i < n; ++i) shapes.push_back(ShapeOf(b, g->input(first + i), t));
  // sizes = stack(shapes, axis=1)[axis, :]
  Output stacked = b.Op("shapes", "Pack", shapes, {{"axis", MakeAttr(int64_t{1})}});
  Output axis_vec = b.Op("axis_vec", "Reshape", {axis, IndexConst(b, "one", DT_INT32, {1})});
  Output begin = b.Op("begin", "ConcatV2", {axis_vec, IndexConst(b, "zero", t, {0}), b.Scalar<int32_t>("concat_axis", 0)});
  Output sizes = b.Op("sizes", "StridedSlice", {stacked, begin, begin, IndexConst(b, "strides", t, {1, 1})},
                      {{"begin_mask", MakeAttr(int64_t{2})},
                       {"end_mask", MakeAttr(int64_t{2})},
                       {"shrink_axis_mask", MakeAttr(int64_t{1})}});
  Output split_dim = axis;
  if (t != DT_INT32) split_dim = b.Op("split_dim", "Cast", {axis}, {{"DstT", MakeAttr(DT_INT32)}});
  Node* split = b.AddNode("split", "SplitV", {g->grad(0), sizes, split_dim}, {{"num_split", MakeAttr(int64_t{n})}});
  if (split == nullptr) return b.status();
  for (int i = 0; i < n; ++i) g->SetInputGrad(first + i, Output{split, i});
  return absl::OkStatus();
}

// Gradient of a split: concatenate the output gradients along `axis`.
absl::Status SplitGrad(GradientBuilder* g, int value_input, Output axis) {
  GraphBuilder& b = g->b();
  std::vector<Output> parts;
  for (int i = 0; i < g->num_outputs(); ++i) parts.push_back(g->grad(i));
  if (parts.size() == 1) {
    g->SetInputGrad(value_input, parts[0]);
    return absl::OkStatus();
  }
  parts.push_back(axis);
  g->SetInputGrad(value_input, b.Op("concat", "ConcatV2", parts));
  return absl::OkStatus();
}

// Shape function of concatenations: inputs [first, first + n), axis input.
absl::Status ConcatShape(InferenceContext* c, int first, int n, int axis_input) {
  const Tensor* axis_t = c->input_tensor(axis_input);
  int rank = kUnknownRank;
  for (int i = 0; i < n; ++i) {
    const PartialShape& s = c->input(first + i);
    if (!s.rank_known()) continue;
    if (rank != kUnknownRank && s.rank() != rank) {
      return c->Error(absl::StrCat("ranks of all input tensors should match: ", rank, " vs. ", s.rank()));
    }
    rank = s.rank();
  }
  if (rank == kUnknownRank) {
    c->set_output(0, PartialShape::Unknown());
    return absl::OkStatus();
  }
  if (rank == 0) return c->Error("can't concatenate scalars (use Pack instead)");
  if (axis_t == nullptr || axis_t->NumElements() != 1) {
    c->set_output(0, PartialShape::UnknownOfRank(rank));
    return absl::OkStatus();
  }
  int64_t axis = axis_t->dtype() == DT_INT64 ? axis_t->data<int64_t>()[0] : axis_t->data<int32_t>()[0];
  if (axis < -rank || axis >= rank) {
    return c->Error(absl::StrCat("concat axis ", axis, " is out of range [", -rank, ", ", rank, ")"));
  }
  if (axis < 0) axis += rank;
  std::vector<int64_t> dims(rank, kUnknownDim);
  int64_t total = 0;
  for (int i = 0; i < n; ++i) {
    const PartialShape& s = c->input(first + i);
    if (!s.rank_known()) {
      total = kUnknownDim;
      continue;
    }
    for (int d = 0; d < rank; ++d) {
      if (d == axis) continue;
      if (s.dim(d) == kUnknownDim) continue;
      if (dims[d] != kUnknownDim && dims[d] != s.dim(d)) {
        return c->Error(absl::StrCat("dimensions of inputs should match: dimension ", d, " is ", dims[d], " vs. ",
                                     s.dim(d), " for input ", i));
      }
      dims[d] = s.dim(d);
    }
    if (total != kUnknownDim) {
      const int64_t d = s.dim(static_cast<int>(axis));
      if (d == kUnknownDim) {
        total = kUnknownDim;
      } else if (d > kMaxTensorElements - total) {  // known dims are <= 2^62: no overflow here
        return c->Error(absl::StrCat("concatenated dimension ", axis, " exceeds 2^62 at input ", i));
      } else {
        total += d;
      }
    }
  }
  dims[axis] = total;
  c->set_output(0, PartialShape::FromDims(dims));
  return absl::OkStatus();
}

// Shape functions of the slicing ops. Where the kernel would fail (an index
// out of range, sizes that do not add up), the dims stay unknown and the
// kernel reports it.

// The known value of scalar input `i`, if any.
std::optional<int64_t> ScalarValue(InferenceContext* c, int i) {
  auto v = c->input_index_values(i);
  if (!v || v->size() != 1 || c->input(i).rank() != 0) return std::nullopt;
  return (*v)[0];
}

// Split(split_dim, value) and SplitV(value, size_splits, split_dim): the
// value's shape with the split dim's size `size_of_output(i, dim)` for output
// i (-1: unknown). An unknown or out-of-range split_dim leaves only the rank.
absl::Status SplitOutputs(InferenceContext* c, const PartialShape& in, std::optional<int64_t> split_dim,
                          const std::function<int64_t(int, int64_t)>& size_of_output) {
  for (int i = 0; i < c->num_outputs(); ++i) {
    if (!in.rank_known()) {
      c->set_output(i, PartialShape::Unknown());
      continue;
    }
    int64_t d = split_dim.value_or(in.rank());
    if (d < 0) d += in.rank();
    if (d < 0 || d >= in.rank()) {
      c->set_output(i, PartialShape::UnknownOfRank(in.rank()));
      continue;
    }
    std::vector<int64_t> dims(in.dims().begin(), in.dims().end());
    dims[d] = size_of_output(i, in.dim(d));
    c->set_output(i, PartialShape::FromDims(dims));
  }
  return absl::OkStatus();
}

absl::Status SplitShape(InferenceContext* c) {
  const int64_t n = c->num_outputs();
  return SplitOutputs(c, c->input(1), ScalarValue(c, 0),
                      [n](int, int64_t dim) { return dim >= 0 && dim % n == 0 ? dim / n : kUnknownDim; });
}

absl::Status SplitVShape(InferenceContext* c) {
  auto sizes = c->input_index_values(1);
  if (sizes && static_cast<int>(sizes->size()) != c->num_outputs()) sizes.reset();
  // The one -1 takes what the others leave.
  int64_t others = 0;
  int unknown = 0;
  for (int64_t s : sizes ? *sizes : std::vector<int64_t>()) {
    if (s < 0) {
      ++unknown;
    } else {
      others = s > kMaxTensorElements - others ? kMaxTensorElements + 1 : others + s;  // saturates
    }
  }
  return SplitOutputs(c, c->input(0), ScalarValue(c, 2), [&](int i, int64_t dim) -> int64_t {
    if (!sizes) return kUnknownDim;
    if ((*sizes)[i] >= 0) return (*sizes)[i];
    if ((*sizes)[i] != -1 || unknown != 1 || dim < 0 || others > dim) return kUnknownDim;
    return dim - others;
  });
}

// Slice(input, begin, size): size[i], or input dim - begin[i] where it is -1.
absl::Status SliceShape(InferenceContext* c) {
  const PartialShape& in = c->input(0);
  int64_t rank = in.rank_known() ? in.rank() : -1;
  for (int i : {1, 2}) {
    const PartialShape& v = c->input(i);
    if (rank < 0 && v.rank_known() && v.rank() == 1) rank = v.dim(0);
  }
  if (rank < 0 || rank > kMaxTensorRank) {
    c->set_output(0, PartialShape::Unknown());
    return absl::OkStatus();
  }
  auto begin = c->input_index_values(1), size = c->input_index_values(2);
  if (begin && static_cast<int64_t>(begin->size()) != rank) begin.reset();
  if (size && static_cast<int64_t>(size->size()) != rank) size.reset();
  const PartialShape& size_as_shape = c->input_as_shape(2);  // a size computed at run time
  std::vector<int64_t> dims(rank, kUnknownDim);
  for (int64_t i = 0; i < rank; ++i) {
    if (!size) {
      // -1 there: unknown, or the rest of the dim.
      if (size_as_shape.rank() == rank) dims[i] = size_as_shape.dim(i);
    } else if ((*size)[i] >= 0) {
      dims[i] = (*size)[i];
    } else if ((*size)[i] == -1 && begin && in.rank_known() && in.dim(i) >= 0 && (*begin)[i] >= 0 &&
               (*begin)[i] <= in.dim(i)) {
      dims[i] = in.dim(i) - (*begin)[i];
    }
  }
  c->set_output(0, PartialShape::FromDims(dims));
  return absl::OkStatus();
}

// StridedSlice(input, begin, end, strides): the resolved spec's final shape.
// With begin or end unknown, the dims they slice are unknown; the rank, new
// axes and dims taken whole (an ellipsis, both masks) are still known.
absl::Status StridedSliceShape(InferenceContext* c) {
  const PartialShape& in = c->input(0);
  auto begin = c->input_index_values(1), end = c->input_index_values(2), strides = c->input_index_values(3);
  StridedSliceMasks masks;
  absl::Status s = masks.Read(c->node_def());
  if (!s.ok()) return s;
  c->set_output(0, PartialShape::Unknown());
  if (!in.rank_known() || !strides) return absl::OkStatus();
  const bool indices_known = begin && end;
  if (!indices_known) begin = end = std::vector<int64_t>(strides->size(), 0);
  StridedSliceSpec spec;
  if (ResolveStridedSlice(in.dims(), *begin, *end, *strides, masks, &spec, indices_known).ok()) {
    c->set_output(0, PartialShape::FromDims(spec.final_shape));
  }
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("Concat")
    .Input("concat_dim: int32")
    .Input("values: N * T")
    .Output("output: T")
    .Attr("N: int >= 2")
    .Attr("T: type")
    .SetShapeFn([](InferenceContext* c) { return ConcatShape(c, 1, c->num_inputs() - 1, 0); })
    .SetGradient([](GradientBuilder* g) { return ConcatGrad(g, 1, g->num_inputs() - 1, g->input(0)); });

REGISTER_OP("ConcatV2")
    .Input("values: N * T")
    .Input("axis: Tidx")
    .Output("output: T")
    .Attr("N: int >= 2")
    .Attr("T: type")
    .Attr("Tidx: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) { return ConcatShape(c, 0, c->num_inputs() - 1, c->num_inputs() - 1); })
    .SetGradient([](GradientBuilder* g) { return ConcatGrad(g, 0, g->num_inputs() - 1, g->input(g->num_inputs() - 1)); });

// The offset of each of N concatenated shapes along concat_dim (0 along the
// other dims): what Concat's gradient slices dy with in TensorFlow's graphs.
REGISTER_OP("ConcatOffset")
    .Input("concat_dim: int32")
    .Input("shape: N * shape_type")
    .Output("offset: N * shape_type")
    .Attr("N: int >= 2")
    .Attr("shape_type: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      for (int i = 1; i < c->num_inputs(); ++i) c->set_output(i - 1, c->input(i));
      return absl::OkStatus();
    })
    .SetNotDifferentiable();

REGISTER_OP("Split")
    .Input("split_dim: int32")
    .Input("value: T")
    .Output("output: num_split * T")
    .Attr("num_split: int >= 1")
    .Attr("T: type")
    .SetShapeFn(SplitShape)
    .SetGradient([](GradientBuilder* g) { return SplitGrad(g, 1, g->input(0)); });

REGISTER_OP("SplitV")
    .Input("value: T")
    .Input("size_splits: Tlen")
    .Input("split_dim: int32")
    .Output("output: num_split * T")
    .Attr("num_split: int >= 1")
    .Attr("T: type")
    .Attr("Tlen: {int32, int64} = DT_INT64")
    .SetShapeFn(SplitVShape)
    .SetGradient([](GradientBuilder* g) { return SplitGrad(g, 0, g->input(2)); });

REGISTER_OP("Pack")
    .Input("values: N * T")
    .Output("output: T")
    .Attr("N: int >= 1")
    .Attr("T: type")
    .Attr("axis: int = 0")
    .SetShapeFn([](InferenceContext* c) {
      int64_t axis;
      absl::Status s = c->GetAttr("axis", &axis);
      if (!s.ok()) return s;
      PartialShape merged;
      for (int i = 0; i < c->num_inputs(); ++i) {
        auto m = merged.Merge(c->input(i));
        if (!m.ok()) return c->Error(absl::StrCat("shapes of all inputs must match: ", m.status().message()));
        merged = *m;
      }
      if (!merged.rank_known()) {
        c->set_output(0, PartialShape::Unknown());
        return absl::OkStatus();
      }
      const int rank = merged.rank() + 1;
      if (axis < -rank || axis >= rank) return c->Error(absl::StrCat("axis ", axis, " is out of range [", -rank, ", ", rank, ")"));
      std::vector<int64_t> dims(merged.dims().begin(), merged.dims().end());
      dims.insert(dims.begin() + (axis < 0 ? axis + rank : axis), c->num_inputs());
      c->set_output(0, PartialShape::FromDims(dims));
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      int64_t axis;
      absl::Status s = g->GetAttr("axis", &axis);
      if (!s.ok()) return s;
      Node* unpack = g->b().AddNode("unpack", "Unpack", {g->grad(0)},
                                    {{"num", MakeAttr(int64_t{g->num_inputs()})}, {"axis", MakeAttr(axis)}});
      if (unpack == nullptr) return g->b().status();
      for (int i = 0; i < g->num_inputs(); ++i) g->SetInputGrad(i, Output{unpack, i});
      return absl::OkStatus();
    });

REGISTER_OP("Unpack")
    .Input("value: T")
    .Output("output: num * T")
    .Attr("num: int >= 0")
    .Attr("T: type")
    .Attr("axis: int = 0")
    .SetShapeFn([](InferenceContext* c) {
      int64_t axis;
      absl::Status s = c->GetAttr("axis", &axis);
      if (!s.ok()) return s;
      const PartialShape& in = c->input(0);
      PartialShape out;
      if (in.rank_known()) {
        if (axis < -in.rank() || axis >= in.rank()) {
          return c->Error(absl::StrCat("axis ", axis, " is out of range [", -in.rank(), ", ", in.rank(), ")"));
        }
        std::vector<int64_t> dims(in.dims().begin(), in.dims().end());
        dims.erase(dims.begin() + (axis < 0 ? axis + in.rank() : axis));
        out = PartialShape::FromDims(dims);
      }
      for (int i = 0; i < c->num_outputs(); ++i) c->set_output(i, out);
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      int64_t axis;
      absl::Status s = g->GetAttr("axis", &axis);
      if (!s.ok()) return s;
      std::vector<Output> parts;
      for (int i = 0; i < g->num_outputs(); ++i) parts.push_back(g->grad(i));
      if (parts.empty()) return absl::OkStatus();
      g->SetInputGrad(0, g->b().Op("pack", "Pack", parts, {{"axis", MakeAttr(axis)}}));
      return absl::OkStatus();
    });

REGISTER_OP("Slice")
    .Input("input: T")
    .Input("begin: Index")
    .Input("size: Index")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Index: {int32, int64}")
    .SetShapeFn(SliceShape)
    .SetGradient([](GradientBuilder* g) {
      // Pad dy back to the input's shape: before = begin, after = shape - begin - size.
      GraphBuilder& b = g->b();
      Output begin = g->input(1);
      const DataType t = begin.dtype();
      Output dy = g->grad(0);
      Output after = b.Op("after", "Sub", {b.Op("rest", "Sub", {ShapeOf(b, g->input(0), t), begin}), ShapeOf(b, dy, t)});
      Output paddings = b.Op("paddings", "Pack", {begin, after}, {{"axis", MakeAttr(int64_t{1})}});
      g->SetInputGrad(0, b.Op("pad", "Pad", {dy, paddings}));
      return absl::OkStatus();
    });

namespace {
absl::Status CopyMasks(GradientBuilder* g, AttrList* attrs) {
  for (const char* name : kStridedSliceMaskNames) {
    int64_t v;
    absl::Status s = g->GetAttr(name, &v);
    if (!s.ok()) return s;
    (*attrs)[name] = MakeAttr(v);
  }
  return absl::OkStatus();
}
}  // namespace

REGISTER_OP("StridedSlice")
    .Input("input: T")
    .Input("begin: Index")
    .Input("end: Index")
    .Input("strides: Index")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Index: {int32, int64}")
    .Attr("begin_mask: int = 0")
    .Attr("end_mask: int = 0")
    .Attr("ellipsis_mask: int = 0")
    .Attr("new_axis_mask: int = 0")
    .Attr("shrink_axis_mask: int = 0")
    .SetShapeFn(StridedSliceShape)
    .SetGradient([](GradientBuilder* g) {
      AttrList attrs;
      absl::Status s = CopyMasks(g, &attrs);
      if (!s.ok()) return s;
      GraphBuilder& b = g->b();
      Output shape = ShapeOf(b, g->input(0), g->input(1).dtype());
      g->SetInputGrad(0, b.Op("strided_slice_grad", "StridedSliceGrad",
                              {shape, g->input(1), g->input(2), g->input(3), g->grad(0)}, attrs));
      return absl::OkStatus();
    });

REGISTER_OP("StridedSliceGrad")
    .Input("shape: Index")
    .Input("begin: Index")
    .Input("end: Index")
    .Input("strides: Index")
    .Input("dy: T")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Index: {int32, int64}")
    .Attr("begin_mask: int = 0")
    .Attr("end_mask: int = 0")
    .Attr("ellipsis_mask: int = 0")
    .Attr("new_axis_mask: int = 0")
    .Attr("shrink_axis_mask: int = 0")
    .SetShapeFn([](InferenceContext* c) {
      const Tensor* t = c->input_tensor(0);
      if (t == nullptr || t->dims() != 1) {
        c->set_output(0, PartialShape::Unknown());
        return absl::OkStatus();
      }
      std::vector<int64_t> dims(t->NumElements());
      for (int64_t i = 0; i < t->NumElements(); ++i) {
        dims[i] = t->dtype() == DT_INT64 ? t->data<int64_t>()[i] : t->data<int32_t>()[i];
        if (dims[i] < 0) return c->Error(absl::StrCat("shape: dimension ", i, " is negative (", dims[i], ")"));
      }
      c->set_output(0, PartialShape::FromDims(dims));
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      AttrList attrs;
      absl::Status s = CopyMasks(g, &attrs);
      if (!s.ok()) return s;
      g->SetInputGrad(4, g->b().Op("strided_slice", "StridedSlice", {g->grad(0), g->input(1), g->input(2), g->input(3)},
                                   attrs));
      return absl::OkStatus();
    });

REGISTER_OP("Tile")
    .Input("input: T")
    .Input("multiples: Tmultiples")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tmultiples: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      // The input's rank; each dim times its multiple where both are known
      // (the kernel checks the rest at run time). A Mean's gradient tiles by
      // multiples that constant folding makes known: its shape, and the
      // gradients' shapes after it, become known with them.
      const PartialShape& in = c->input(0);
      const Tensor* m = c->input_tensor(1);
      if (m == nullptr || m->dims() != 1 || (in.rank_known() && m->dim_size(0) != in.rank())) {
        c->set_output(0, in.rank_known() ? PartialShape::UnknownOfRank(in.rank()) : PartialShape::Unknown());
        return absl::OkStatus();
      }
      const int rank = static_cast<int>(m->dim_size(0));
      std::vector<int64_t> dims(rank, kUnknownDim);
      for (int i = 0; i < rank; ++i) {
        const int64_t multiple = m->dtype() == DT_INT64 ? m->data<int64_t>()[i] : m->data<int32_t>()[i];
        if (multiple < 0) return c->Error(absl::StrCat("expected multiples[", i, "] >= 0, but got ", multiple));
        const int64_t d = in.rank_known() ? in.dim(i) : kUnknownDim;
        if (multiple == 0) {
          dims[i] = 0;
        } else if (d != kUnknownDim && d <= kMaxTensorElements / multiple) {
          dims[i] = d * multiple;
        }
      }
      c->set_output(0, PartialShape::FromDims(dims));
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      // dy viewed as [m0, d0, m1, d1, ...], summed over the m axes.
      GraphBuilder& b = g->b();
      Output multiples = g->input(1);
      const DataType t = multiples.dtype();
      Output pairs = b.Op("pairs", "Pack", {multiples, ShapeOf(b, g->input(0), t)}, {{"axis", MakeAttr(int64_t{1})}});
      Output split_shape = b.Op("split_shape", "Reshape", {pairs, IndexConst(b, "flat", DT_INT32, {-1})});
      Output axes = b.Op("axes", "Range", {b.Scalar<int32_t>("zero", 0),
                                           b.Op("n", "Size", {split_shape}), b.Scalar<int32_t>("two", 2)});
      Output reshaped = b.Op("reshaped", "Reshape", {g->grad(0), split_shape});
      g->SetInputGrad(0, b.Op("sum", "Sum", {reshaped, axes}));
      return absl::OkStatus();
    });

REGISTER_OP("Pad")
    .Input("input: T")
    .Input("paddings: Tpaddings")
    .Output("output: T")
    .Attr("T: type")
    .Attr("Tpaddings: {int32, int64} = DT_INT32")
    .SetShapeFn([](InferenceContext* c) {
      const Tensor* p = c->input_tensor(1);
      const PartialShape& in = c->input(0);
      if (p == nullptr || !in.rank_known() || p->dims() != 2 || p->dim_size(0) != in.rank() || p->dim_size(1) != 2) {
        c->set_output(0, in.rank_known() ? PartialShape::UnknownOfRank(in.rank()) : PartialShape::Unknown());
        return absl::OkStatus();
      }
      std::vector<int64_t> dims(in.rank());
      for (int i = 0; i < in.rank(); ++i) {
        const int64_t a = p->dtype() == DT_INT64 ? p->data<int64_t>()[2 * i] : p->data<int32_t>()[2 * i];
        const int64_t z = p->dtype() == DT_INT64 ? p->data<int64_t>()[2 * i + 1] : p->data<int32_t>()[2 * i + 1];
        if (a < 0 || z < 0) return c->Error(absl::StrCat("paddings must be non-negative: ", a, " ", z));
        const bool fits = a <= kMaxTensorElements && z <= kMaxTensorElements - a &&
                          (in.dim(i) == kUnknownDim || in.dim(i) <= kMaxTensorElements - a - z);
        dims[i] = in.dim(i) == kUnknownDim || !fits ? kUnknownDim : in.dim(i) + a + z;
      }
      c->set_output(0, PartialShape::FromDims(dims));
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      // dx = slice(dy, paddings[:, 0], shape(x)).
      GraphBuilder& b = g->b();
      Output paddings = g->input(1);
      const DataType t = paddings.dtype();
      Output before = b.Op("before", "StridedSlice",
                           {paddings, IndexConst(b, "begin", t, {0, 0}), IndexConst(b, "end", t, {0, 1}),
                            IndexConst(b, "strides", t, {1, 1})},
                           {{"begin_mask", MakeAttr(int64_t{1})},
                            {"end_mask", MakeAttr(int64_t{1})},
                            {"shrink_axis_mask", MakeAttr(int64_t{2})}});
      g->SetInputGrad(0, b.Op("slice", "Slice", {g->grad(0), before, ShapeOf(b, g->input(0), t)}));
      return absl::OkStatus();
    });

}  // namespace sluice

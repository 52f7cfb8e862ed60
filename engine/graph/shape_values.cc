// See shape_values.h.
#include "engine/graph/shape_values.h"

#include <algorithm>
#include <string>
#include <utility>

#include "engine/framework/node_def_util.h"
#include "engine/framework/range_count.h"
#include "engine/framework/strided_slice.h"

namespace sluice {
namespace {

constexpr int64_t kUnknown = KnownValue::kUnknown;

bool IsIndexType(DataType t) { return t == DT_INT32 || t == DT_INT64; }

KnownValue Vector(std::vector<int64_t> elements) { return KnownValue{false, std::move(elements)}; }
KnownValue Scalar(int64_t value) { return KnownValue{true, {value}}; }

// The elements of a vector value whose every element is known (begin, end,
// strides, sizes).
std::optional<std::vector<int64_t>> FullyKnown(const std::optional<KnownValue>& v) {
  if (!v || v->scalar || v->is_matrix()) return std::nullopt;
  for (int64_t e : v->elements) {
    if (e == kUnknown) return std::nullopt;
  }
  return v->elements;
}

std::optional<KnownValue> StridedSliceOfVector(const Node& n, absl::Span<const std::optional<KnownValue>> in) {
  if (!in[0] || in[0]->scalar) return std::nullopt;
  auto begin = FullyKnown(in[1]), end = FullyKnown(in[2]), strides = FullyKnown(in[3]);
  StridedSliceMasks masks;
  if (!begin || !end || !strides || !masks.Read(n.def()).ok()) return std::nullopt;
  const std::vector<int64_t>& x = in[0]->elements;
  const int64_t dims[] = {static_cast<int64_t>(x.size())};
  StridedSliceSpec spec;
  if (!ResolveStridedSlice(dims, *begin, *end, *strides, masks, &spec).ok()) return std::nullopt;
  if (spec.final_shape.size() > 1) return std::nullopt;  // a new axis: no longer a vector
  std::vector<int64_t> out;
  for (int64_t k = 0; k < spec.size[0]; ++k) out.push_back(x[spec.begin[0] + k * spec.stride[0]]);
  if (spec.final_shape.empty()) return Scalar(out[0]);
  return Vector(std::move(out));
}

std::optional<KnownValue> SliceOfVector(absl::Span<const std::optional<KnownValue>> in) {
  if (!in[0] || in[0]->scalar) return std::nullopt;
  auto begin = FullyKnown(in[1]), size = FullyKnown(in[2]);
  if (!begin || !size || begin->size() != 1 || size->size() != 1) return std::nullopt;
  const std::vector<int64_t>& x = in[0]->elements;
  const int64_t n = static_cast<int64_t>(x.size()), b = (*begin)[0];
  if (b < 0 || b > n) return std::nullopt;
  const int64_t s = (*size)[0] == -1 ? n - b : (*size)[0];
  if (s < 0 || s > n - b) return std::nullopt;
  return Vector(std::vector<int64_t>(x.begin() + b, x.begin() + b + s));
}

std::optional<KnownValue> PackOfScalars(const Node& n, absl::Span<const std::optional<KnownValue>> in,
                                        absl::Span<const PartialShape> shapes) {
  int64_t axis = 0;
  if (!GetNodeAttr(n.def(), "axis", &axis).ok() || (axis != 0 && axis != -1)) return std::nullopt;
  if (static_cast<int>(in.size()) > kMaxTensorRank) return std::nullopt;
  std::vector<int64_t> out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] && in[i]->scalar) {
      out.push_back(in[i]->elements[0]);
    } else if (shapes[i].rank_known() && shapes[i].rank() == 0) {
      out.push_back(kUnknown);
    } else {
      return std::nullopt;
    }
  }
  return Vector(std::move(out));
}

// ConcatV2 of matrices (rank 2: values, or unknown elements of a known
// small shape) along axis 0 or 1 (-2, -1).
std::optional<KnownValue> ConcatOfMatrices(absl::Span<const std::optional<KnownValue>> in,
                                           absl::Span<const PartialShape> shapes) {
  const size_t n = in.size() - 1;  // the last input is the axis
  if (!in[n] || !in[n]->scalar || in[n]->elements[0] < -2 || in[n]->elements[0] > 1) return std::nullopt;
  const int64_t axis = in[n]->elements[0] < 0 ? in[n]->elements[0] + 2 : in[n]->elements[0];
  struct Piece {
    int64_t rows, columns;
    std::vector<int64_t> elements;
  };
  std::vector<Piece> pieces;
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    Piece p;
    if (in[i] && in[i]->is_matrix()) {
      p = {static_cast<int64_t>(in[i]->elements.size()) / in[i]->columns, in[i]->columns, in[i]->elements};
    } else if (shapes[i].rank_known() && shapes[i].rank() == 2 && shapes[i].dim(0) >= 0 && shapes[i].dim(1) > 0 &&
               shapes[i].dim(0) <= static_cast<int64_t>(KnownValue::kMaxMatrixElements) &&
               shapes[i].dim(1) <= static_cast<int64_t>(KnownValue::kMaxMatrixElements) &&
               shapes[i].dim(0) * shapes[i].dim(1) <= static_cast<int64_t>(KnownValue::kMaxMatrixElements)) {
      p = {shapes[i].dim(0), shapes[i].dim(1),
           std::vector<int64_t>(static_cast<size_t>(shapes[i].dim(0) * shapes[i].dim(1)), kUnknown)};
    } else {
      return std::nullopt;
    }
    if (!pieces.empty() && (axis == 0 ? p.columns != pieces[0].columns : p.rows != pieces[0].rows)) {
      return std::nullopt;  // the kernel's error
    }
    total += p.elements.size();
    if (total > KnownValue::kMaxMatrixElements) return std::nullopt;
    pieces.push_back(std::move(p));
  }
  if (pieces.empty()) return std::nullopt;
  KnownValue out{false, {}, 0};
  if (axis == 0) {
    out.columns = pieces[0].columns;
    for (const Piece& p : pieces) out.elements.insert(out.elements.end(), p.elements.begin(), p.elements.end());
  } else {
    for (const Piece& p : pieces) out.columns += p.columns;
    for (int64_t r = 0; r < pieces[0].rows; ++r) {
      for (const Piece& p : pieces) {
        out.elements.insert(out.elements.end(), p.elements.begin() + r * p.columns,
                            p.elements.begin() + (r + 1) * p.columns);
      }
    }
  }
  return out;
}

// Reshape of a known value to a shape given in full (one -1 allowed) of rank
// 0, 1 or 2 with as many elements.
std::optional<KnownValue> ReshapeOfValue(absl::Span<const std::optional<KnownValue>> in) {
  if (!in[0]) return std::nullopt;
  std::optional<std::vector<int64_t>> target = FullyKnown(in[1]);
  if (!target || target->size() > 2) return std::nullopt;
  const std::vector<int64_t>& x = in[0]->elements;
  const int64_t count = static_cast<int64_t>(x.size());
  int64_t known = 1;
  int wildcard = -1;
  for (size_t i = 0; i < target->size(); ++i) {
    const int64_t d = (*target)[i];
    if (d == -1 && wildcard < 0) {
      wildcard = static_cast<int>(i);
    } else if (d < 0 || d > static_cast<int64_t>(KnownValue::kMaxMatrixElements)) {
      return std::nullopt;  // a second -1, a bad dim, or more elements than any value here
    } else {
      known *= d;
    }
  }
  if (wildcard >= 0) {
    if (known == 0 || count % known != 0) return std::nullopt;
    (*target)[wildcard] = count / known;
  } else if (known != count) {
    return std::nullopt;
  }
  if (target->empty()) return Scalar(x[0]);
  if (target->size() == 1) return Vector(x);
  if ((*target)[1] == 0) return std::nullopt;
  return KnownValue{false, x, (*target)[1]};
}

// ExpandDims of a scalar (to a vector of one) or of a vector (to a matrix
// of one row, axis 0 or -2, or of one column, axis 1 or -1).
std::optional<KnownValue> ExpandDimsOfValue(absl::Span<const std::optional<KnownValue>> in) {
  if (!in[0] || in[0]->is_matrix() || !in[1] || in[1]->is_matrix() || in[1]->elements.size() != 1) {
    return std::nullopt;
  }
  const int64_t axis = in[1]->elements[0];
  if (in[0]->scalar) {
    if (axis != 0 && axis != -1) return std::nullopt;
    return Vector(in[0]->elements);
  }
  const int64_t count = static_cast<int64_t>(in[0]->elements.size());
  if (count == 0 || count > static_cast<int64_t>(KnownValue::kMaxMatrixElements)) return std::nullopt;
  if (axis == 0 || axis == -2) return KnownValue{false, in[0]->elements, count};
  if (axis == 1 || axis == -1) return KnownValue{false, in[0]->elements, 1};
  return std::nullopt;
}

std::optional<KnownValue> ConcatOfVectors(absl::Span<const std::optional<KnownValue>> in,
                                          absl::Span<const PartialShape> shapes) {
  const size_t n = in.size() - 1;  // the last input is the axis
  if (!in[n] || !in[n]->scalar || (in[n]->elements[0] != 0 && in[n]->elements[0] != -1)) return std::nullopt;
  std::vector<int64_t> out;
  for (size_t i = 0; i < n; ++i) {
    if (in[i] && !in[i]->scalar) {
      out.insert(out.end(), in[i]->elements.begin(), in[i]->elements.end());
    } else if (shapes[i].rank_known() && shapes[i].rank() == 1 && shapes[i].dim(0) >= 0 &&
               shapes[i].dim(0) <= kMaxTensorRank) {
      out.insert(out.end(), shapes[i].dim(0), kUnknown);
    } else {
      return std::nullopt;
    }
    if (out.size() > static_cast<size_t>(kMaxTensorRank)) return std::nullopt;
  }
  return Vector(std::move(out));
}

// Elementwise integer arithmetic of two values (a scalar broadcasts over a
// vector): Add, AddV2, Sub, Mul, Maximum, Minimum, FloorDiv. An unknown
// element, an overflow or a division by zero gives an unknown element.
std::optional<KnownValue> Arithmetic(const std::string& op, absl::Span<const std::optional<KnownValue>> in) {
  if (!in[0] || !in[1]) return std::nullopt;
  const KnownValue &x = *in[0], &y = *in[1];
  if (!x.scalar && !y.scalar && x.elements.size() != y.elements.size()) return std::nullopt;
  // A scalar broadcasts over the other's elements, none included (Shape of a
  // scalar times 2 is an empty vector).
  const size_t n = x.scalar ? y.elements.size() : x.elements.size();
  KnownValue out{x.scalar && y.scalar, std::vector<int64_t>(n, kUnknown)};
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = x.elements[x.scalar ? 0 : i], b = y.elements[y.scalar ? 0 : i];
    if (a == kUnknown || b == kUnknown) continue;
    int64_t r = kUnknown;
    bool overflow = false;
    if (op == "Add" || op == "AddV2") {
      overflow = __builtin_add_overflow(a, b, &r);
    } else if (op == "Sub") {
      overflow = __builtin_sub_overflow(a, b, &r);
    } else if (op == "Mul") {
      overflow = __builtin_mul_overflow(a, b, &r);
    } else if (op == "Maximum") {
      r = std::max(a, b);
    } else if (op == "Minimum") {
      r = std::min(a, b);
    } else if (op == "FloorDiv") {
      if (b == 0 || (a == INT64_MIN && b == -1)) continue;
      r = a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0);
    } else {
      return std::nullopt;
    }
    if (!overflow && r != kUnknown) out.elements[i] = r;
  }
  return out;
}

// The inverse of a permutation of [0, n): a gradient's Transpose back.
std::optional<KnownValue> InversePermutation(const std::optional<KnownValue>& in) {
  auto perm = FullyKnown(in);
  if (!perm) return std::nullopt;
  const int64_t n = static_cast<int64_t>(perm->size());
  std::vector<int64_t> out(n, -1);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t p = (*perm)[i];
    if (p < 0 || p >= n || out[p] != -1) return std::nullopt;  // not a permutation: the kernel's error
    out[p] = i;
  }
  return Vector(std::move(out));
}

// Range(start, limit, delta) of known scalars, when short enough to be a
// shape or a list of axes (a reduction's Range(0, Rank(x))): the kernel's
// elements (range_count.h).
std::optional<KnownValue> RangeOfScalars(absl::Span<const std::optional<KnownValue>> in) {
  for (const auto& v : in) {
    if (!v || !v->scalar || v->elements[0] == kUnknown) return std::nullopt;
  }
  const int64_t start = in[0]->elements[0], delta = in[2]->elements[0];
  std::optional<uint64_t> count = IntegerRangeCount(start, in[1]->elements[0], delta);
  if (!count || *count > static_cast<uint64_t>(kMaxTensorRank)) return std::nullopt;  // the kernel's error, or long
  std::vector<int64_t> out;
  for (uint64_t i = 0; i < *count; ++i) out.push_back(IntegerRangeElement(start, delta, i));
  return Vector(std::move(out));
}

std::optional<KnownValue> DimsOf(const PartialShape& shape) {
  if (!shape.rank_known()) return std::nullopt;
  std::vector<int64_t> out;
  for (int64_t d : shape.dims()) out.push_back(d < 0 ? kUnknown : d);
  return Vector(std::move(out));
}

}  // namespace

PartialShape KnownValue::AsShape() const {
  if (scalar || is_matrix() || elements.size() > static_cast<size_t>(kMaxTensorRank)) return PartialShape::Unknown();
  std::vector<int64_t> dims;
  for (int64_t e : elements) dims.push_back(e < 0 ? kUnknownDim : e);
  return PartialShape::FromDims(dims);
}

std::optional<KnownValue> KnownValueOfTensor(const Tensor& t) {
  const bool matrix = t.dims() == 2 && t.dim_size(1) > 0 &&
                      t.NumElements() <= static_cast<int64_t>(KnownValue::kMaxMatrixElements);
  if (!matrix && (t.dims() > 1 || t.NumElements() > kMaxTensorRank)) return std::nullopt;
  std::optional<std::vector<int64_t>> v = IndexValues(t);
  if (!v) return std::nullopt;
  return KnownValue{t.dims() == 0, *std::move(v), matrix ? t.dim_size(1) : 0};
}

std::optional<Tensor> TensorOfKnownValue(const KnownValue& value, DataType dtype) {
  if (!IsIndexType(dtype)) return std::nullopt;
  for (int64_t e : value.elements) {
    if (e == kUnknown) return std::nullopt;
  }
  const int64_t count = static_cast<int64_t>(value.elements.size());
  const TensorShape shape = value.scalar       ? TensorShape({})
                            : value.is_matrix() ? TensorShape({count / value.columns, value.columns})
                                                : TensorShape({count});
  if (dtype == DT_INT64) return Tensor::FromVector<int64_t>(value.elements, shape);
  std::vector<int32_t> narrow(value.elements.begin(), value.elements.end());  // KnownValueOfNode checked the range
  return Tensor::FromVector<int32_t>(narrow, shape);
}

namespace {

std::optional<KnownValue> Evaluate(const Node& n, int output, absl::Span<const std::optional<KnownValue>> inputs,
                                   absl::Span<const PartialShape> input_shapes,
                                   absl::Span<const std::vector<PartialShape>> handle_shapes) {
  const std::string& op = n.type_string();
  if (op == "ShapeN" && output < n.num_inputs()) return DimsOf(input_shapes[output]);
  if (output != 0) return std::nullopt;
  if (op == "Shape" && n.num_inputs() == 1) return DimsOf(input_shapes[0]);
  if (op == "VariableShape" && n.num_inputs() == 1 && !handle_shapes[0].empty()) return DimsOf(handle_shapes[0][0]);
  if (op == "Rank" && n.num_inputs() == 1 && input_shapes[0].rank_known()) return Scalar(input_shapes[0].rank());
  if (op == "Size" && n.num_inputs() == 1 && input_shapes[0].IsFullyDefined()) {
    int64_t size = 1;
    for (int64_t d : input_shapes[0].dims()) size *= d;  // CheckBounds caps the product
    return Scalar(size);
  }
  if ((op == "Identity" || op == "Cast") && n.num_inputs() == 1 && IsIndexType(n.input_type(0))) return inputs[0];
  if (op == "StridedSlice" && n.num_inputs() == 4) return StridedSliceOfVector(n, inputs);
  if (op == "Slice" && n.num_inputs() == 3) return SliceOfVector(inputs);
  if (op == "Pack") return PackOfScalars(n, inputs, input_shapes);
  if (op == "ConcatV2" && n.num_inputs() >= 2) {
    bool matrices = false;
    for (int i = 0; i + 1 < n.num_inputs(); ++i) {
      matrices |= (inputs[i] && inputs[i]->is_matrix()) || (input_shapes[i].rank_known() && input_shapes[i].rank() == 2);
    }
    return matrices ? ConcatOfMatrices(inputs, input_shapes) : ConcatOfVectors(inputs, input_shapes);
  }
  if (op == "Reshape" && n.num_inputs() == 2) return ReshapeOfValue(inputs);
  if (op == "ExpandDims" && n.num_inputs() == 2) return ExpandDimsOfValue(inputs);
  if (n.num_inputs() == 2 && (op == "Add" || op == "AddV2" || op == "Sub" || op == "Mul" || op == "Maximum" ||
                              op == "Minimum" || op == "FloorDiv")) {
    return Arithmetic(op, inputs);
  }
  if (op == "InvertPermutation" && n.num_inputs() == 1) return InversePermutation(inputs[0]);
  if (op == "Range" && n.num_inputs() == 3) return RangeOfScalars(inputs);
  return std::nullopt;
}

}  // namespace

std::optional<KnownValue> KnownValueOfNode(const Node& n, int output,
                                           absl::Span<const std::optional<KnownValue>> inputs,
                                           absl::Span<const PartialShape> input_shapes,
                                           absl::Span<const std::vector<PartialShape>> handle_shapes) {
  if (!IsIndexType(n.output_type(output))) return std::nullopt;
  // Only these ops take matrix values; to every other op a matrix input is
  // unknown (their rules read vectors and scalars).
  const std::string& op = n.type_string();
  if (op != "Reshape" && op != "ConcatV2" && op != "Identity" && op != "Cast" &&
      std::any_of(inputs.begin(), inputs.end(), [](const auto& v) { return v && v->is_matrix(); })) {
    std::vector<std::optional<KnownValue>> vectors(inputs.begin(), inputs.end());
    for (auto& v : vectors) {
      if (v && v->is_matrix()) v.reset();
    }
    return KnownValueOfNode(n, output, vectors, input_shapes, handle_shapes);
  }
  std::optional<KnownValue> v = Evaluate(n, output, inputs, input_shapes, handle_shapes);
  if (v && n.output_type(output) == DT_INT32) {
    for (int64_t& e : v->elements) {
      if (e != kUnknown && (e < INT32_MIN || e > INT32_MAX)) e = kUnknown;  // wrapped by a Cast, say
    }
  }
  return v;
}

}  // namespace sluice

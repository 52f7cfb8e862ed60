// Shape values: what static shape inference (ShapeRefiner) knows of a small
// integer tensor's value before the graph runs. TensorFlow graphs compute
// shapes at run time (Reshape(x, Pack([StridedSlice(Shape(x), 0, 1), 784])),
// a gradient's Shape(x)); following such values through Shape, Pack,
// ConcatV2, slices, casts, integer arithmetic (Sub(Rank(x), 1)), Range and
// InvertPermutation lets a shape function (Reshape's, Fill's,
// Conv2DBackpropInput's, a gradient's Transpose) know its output as well as
// TensorFlow does.
// Pure functions; safe to call from any thread.
#ifndef SLUICE_ENGINE_GRAPH_SHAPE_VALUES_H_
#define SLUICE_ENGINE_GRAPH_SHAPE_VALUES_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "engine/framework/shape_inference.h"
#include "engine/framework/tensor.h"
#include "engine/graph/graph.h"

namespace sluice {

// The value of an int32 or int64 scalar, vector or small matrix, element by
// element; an element not known statically is kUnknown.
struct KnownValue {
  static constexpr int64_t kUnknown = std::numeric_limits<int64_t>::min();
  // The most elements a matrix value has: a Pad's paddings, [rank, 2].
  static constexpr size_t kMaxMatrixElements = 2 * kMaxTensorRank;
  bool scalar = false;
  std::vector<int64_t> elements;  // a scalar: one; a matrix: row-major
  // 0 for a scalar or a vector; else a matrix of elements.size() / columns
  // rows (a slice's gradient pads by Concat([Reshape(begin, [r, 1]),
  // Reshape(after, [r, 1])], 1)). Only Reshape, ConcatV2, Identity and Cast
  // take matrices; every other op sees a matrix input as unknown.
  int64_t columns = 0;

  bool is_matrix() const { return columns > 0; }
  // The vector as a partial shape: a dim per element, -1 where the element
  // is unknown or negative. Unknown for a scalar, a matrix or a vector too
  // long to be a shape.
  PartialShape AsShape() const;
};

// The value of `t`, when it is an int32 or int64 scalar or vector of at most
// kMaxTensorRank elements (longer ones are never shapes) or a matrix of at
// most kMaxMatrixElements with at least one column.
std::optional<KnownValue> KnownValueOfTensor(const Tensor& t);

// The value as a tensor of `dtype` (int32 or int64), when every element is
// known; shape functions then read it as they read a Const's.
std::optional<Tensor> TensorOfKnownValue(const KnownValue& value, DataType dtype);

// What output `output` of node `n` holds, from what is known of its inputs:
// their values (`inputs`, nullopt where nothing is known), their shapes and,
// for resource inputs, the shapes their handles declare (`handle_shapes`).
// Follows Shape, ShapeN, VariableShape, Size, Rank, Identity, integer Casts,
// StridedSlice and Slice of a vector by known indices, Pack of scalars,
// ConcatV2 of vectors and of matrices (either axis), Reshape to a known shape
// of rank 0-2, ExpandDims of a scalar or a vector, Add, AddV2, Sub, Mul, Maximum, Minimum and FloorDiv
// (elementwise, a scalar broadcasting; overflow and division by zero give
// unknown elements), Range of known scalars (range_count.h) and
// InvertPermutation of a permutation. nullopt for anything else.
// REQUIRES: 0 <= output < n.num_outputs().
std::optional<KnownValue> KnownValueOfNode(const Node& n, int output,
                                           absl::Span<const std::optional<KnownValue>> inputs,
                                           absl::Span<const PartialShape> input_shapes,
                                           absl::Span<const std::vector<PartialShape>> handle_shapes);

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_SHAPE_VALUES_H_

// TensorSlice: which part of a partitioned variable a stored entry holds, in
// TensorFlow's `shape_and_slice` spelling: "10 20 0,5:-" is rows 0..4 (all
// columns) of a [10, 20] variable; "" is the whole tensor. Plus the N-d copy
// that assembles a requested slice from stored slices (RestoreSlice).
// Thread safety: pure functions on values.
#ifndef SLUICE_CHECKPOINT_TENSOR_SLICE_H_
#define SLUICE_CHECKPOINT_TENSOR_SLICE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/framework/tensor.h"
#include "engine/framework/tensor_shape.h"

namespace sluice {
namespace checkpoint {

struct TensorSlice {
  // One entry per dimension of the full shape; length -1 means "all of it".
  std::vector<int64_t> start;
  std::vector<int64_t> length;

  static TensorSlice Full(int dims);
  bool IsFull() const;
  // "0,5:-" (empty for a scalar).
  std::string ToString() const;
  // The start/length with "-" resolved against `full`.
  int64_t Start(int d) const { return start[d]; }
  int64_t Length(int d, const TensorShape& full) const { return length[d] < 0 ? full.dim_size(d) : length[d]; }
  TensorShape SliceShape(const TensorShape& full) const;
};

// Parses "0,5:-" for a tensor of `full` shape; InvalidArgument when malformed
// or out of bounds.
absl::StatusOr<TensorSlice> ParseSliceSpec(absl::string_view spec, const TensorShape& full);

struct ShapeAndSlice {
  TensorShape full_shape;
  TensorSlice slice;
  bool whole = true;  // spec was "" (whole tensor, shape unknown until read)
};
// Parses "10 20 0,5:-" (full dims, then the slice) or "".
absl::StatusOr<ShapeAndSlice> ParseShapeAndSlice(absl::string_view spec);

// Copies the elements in the intersection of `src_slice` and `dst_slice` (both
// of a tensor of shape `full`) from `src` (the values of src_slice) into
// `*dst` (the values of dst_slice). Returns the number of elements copied.
// InvalidArgument, copying nothing, unless both slices have full's rank and
// lie inside it, src and dst have their slices' shapes, and both have the
// same fixed-size dtype: no slice geometry can make it touch bytes outside
// the two buffers.
absl::StatusOr<int64_t> CopySliceIntersection(const TensorShape& full, const TensorSlice& src_slice,
                                              const Tensor& src, const TensorSlice& dst_slice, Tensor* dst);

}  // namespace checkpoint
}  // namespace sluice

#endif  // SLUICE_CHECKPOINT_TENSOR_SLICE_H_

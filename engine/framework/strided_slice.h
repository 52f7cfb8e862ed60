// StridedSlice's index arithmetic, shared by its shape function
// (engine/ops/array_ops_slicing.cc), the kernels of StridedSlice and
// StridedSliceGrad (engine/kernels/slice_ops.cc) and static shape values
// (engine/graph/shape_values.cc): TensorFlow's mask semantics
// (begin/end/ellipsis/new_axis/shrink_axis) resolved against an input's dims.
// Pure functions; safe to call from any thread.
#ifndef SLUICE_ENGINE_FRAMEWORK_STRIDED_SLICE_H_
#define SLUICE_ENGINE_FRAMEWORK_STRIDED_SLICE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "engine/framework/graph.pb.h"

namespace sluice {

// The attrs of StridedSlice and StridedSliceGrad that hold the masks, in
// StridedSliceMasks' field order.
inline constexpr const char* kStridedSliceMaskNames[] = {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                                          "shrink_axis_mask"};

// The masks as bit patterns (unsigned: a negative attr is just a pattern with
// high bits set, and no mask arithmetic can overflow).
struct StridedSliceMasks {
  uint64_t begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0, shrink_axis_mask = 0;
  // Reads the five int attrs of a StridedSlice or StridedSliceGrad node.
  absl::Status Read(const NodeDef& def);
};

// The resolved form of a strided slice: one entry per input dim (the
// processing space), and the output's dims with new axes added and shrunk
// axes removed. Where an input dim is unknown (-1), that dim's begin and size
// are -1 too, unless it is shrunk (size 1).
struct StridedSliceSpec {
  std::vector<int64_t> begin, stride, size;
  std::vector<int64_t> final_shape;
};

// TensorFlow's ValidateStridedSliceOp: expands the sparse spec (begin, end
// and strides, one entry each per spec dim) with its ellipsis and new axes to
// one entry per dim of `input_dims` (-1: unknown) and canonicalizes it.
// With `indices_known` false, begin's and end's values are unknown (only
// their length counts): a dim they slice without both masks set gets an
// unknown size. InvalidArgument says what is wrong (an index out of range is
// reported only where the dim and index are known).
absl::Status ResolveStridedSlice(absl::Span<const int64_t> input_dims, absl::Span<const int64_t> begin,
                                 absl::Span<const int64_t> end, absl::Span<const int64_t> strides,
                                 const StridedSliceMasks& masks, StridedSliceSpec* spec,
                                 bool indices_known = true);

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_STRIDED_SLICE_H_

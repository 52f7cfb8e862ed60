// See strided_slice.h.
#include "engine/framework/strided_slice.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/framework/node_def_util.h"

namespace sluice {
namespace {

bool Bit(uint64_t mask, int i) { return (mask >> i) & 1; }

}  // namespace

absl::Status StridedSliceMasks::Read(const NodeDef& def) {
  uint64_t* fields[] = {&begin_mask, &end_mask, &ellipsis_mask, &new_axis_mask, &shrink_axis_mask};
  for (int i = 0; i < 5; ++i) {
    int64_t v = 0;
    absl::Status s = GetNodeAttr(def, kStridedSliceMaskNames[i], &v);
    if (!s.ok()) return s;
    *fields[i] = static_cast<uint64_t>(v);
  }
  return absl::OkStatus();
}

absl::Status ResolveStridedSlice(absl::Span<const int64_t> input_dims, absl::Span<const int64_t> begin,
                                 absl::Span<const int64_t> end, absl::Span<const int64_t> strides,
                                 const StridedSliceMasks& m, StridedSliceSpec* spec, bool indices_known) {
  if (end.size() != begin.size() || strides.size() != begin.size()) {
    return absl::InvalidArgumentError(absl::StrCat("expected begin, end, and strides to be 1D equal size tensors, but got "
                                                   "sizes ", begin.size(), ", ", end.size(), ", and ", strides.size()));
  }
  int sparse_dims = static_cast<int>(begin.size());
  if (sparse_dims > 62) return absl::InvalidArgumentError("too many slice dimensions (at most 62)");
  uint64_t ellipsis_mask = m.ellipsis_mask;
  if ((ellipsis_mask & (ellipsis_mask - 1)) != 0) {
    return absl::InvalidArgumentError("multiple ellipses in slice spec not allowed");
  }
  // As TensorFlow's BuildDenseSpec: an ellipsis bit counts only inside the
  // spec (bits 0 .. sparse_dims-1). When none falls there, whatever the mask
  // says beyond, an implicit ellipsis follows the last entry, so the dims the
  // spec does not name are taken whole. (Keying this on ellipsis_mask == 0
  // left those dims out of the processing space, and the output unwritten.)
  if ((ellipsis_mask & ((uint64_t{1} << sparse_dims) - 1)) == 0) {
    ellipsis_mask = uint64_t{1} << sparse_dims;
    ++sparse_dims;
  }
  int ellipsis_pos = 0;
  while (!Bit(ellipsis_mask, ellipsis_pos)) ++ellipsis_pos;
  int num_add_axis_after_ellipsis = 0;
  for (int i = ellipsis_pos + 1; i < sparse_dims; ++i) {
    if (Bit(m.new_axis_mask, i)) ++num_add_axis_after_ellipsis;
  }
  const int dense_dims = static_cast<int>(input_dims.size());
  std::vector<int64_t> dbegin(dense_dims, 0), dend(dense_dims, 0), dstride(dense_dims, 1);
  std::vector<bool> dbegin_masked(dense_dims, false), dend_masked(dense_dims, false), dshrink(dense_dims, false);
  constexpr int kNewAxis = -1, kShrinkAxis = -2;
  std::vector<int> gather;  // final dims: input dim, kNewAxis or kShrinkAxis
  int full_index = 0;
  for (int i = 0; i < sparse_dims; ++i) {
    if (Bit(ellipsis_mask, i)) {
      const int next_index = std::min(dense_dims - (sparse_dims - i) + 1 + num_add_axis_after_ellipsis, dense_dims);
      for (; full_index < next_index; ++full_index) {
        dbegin_masked[full_index] = dend_masked[full_index] = true;
        gather.push_back(full_index);
      }
    } else if (Bit(m.new_axis_mask, i)) {
      gather.push_back(kNewAxis);
    } else {
      if (full_index == dense_dims) {
        return absl::InvalidArgumentError(absl::StrCat("index out of range using input dim ", full_index,
                                                       "; input has only ", dense_dims, " dims"));
      }
      dbegin[full_index] = begin[i];
      dend[full_index] = end[i];
      dstride[full_index] = strides[i];
      dbegin_masked[full_index] = Bit(m.begin_mask, i);
      dend_masked[full_index] = Bit(m.end_mask, i);
      dshrink[full_index] = Bit(m.shrink_axis_mask, i);
      gather.push_back(dshrink[full_index] ? kShrinkAxis : full_index);
      ++full_index;
    }
  }
  spec->begin.assign(dense_dims, 0);
  spec->stride.assign(dense_dims, 1);
  spec->size.assign(dense_dims, 0);
  for (int i = 0; i < dense_dims; ++i) {
    const int64_t dim = input_dims[i];
    const int64_t stride = dstride[i];
    if (stride == 0) return absl::InvalidArgumentError(absl::StrCat("strides[", i, "] must be non-zero"));
    if (dshrink[i]) {
      const int64_t x = dbegin[i];
      if (stride <= 0) return absl::InvalidArgumentError("only stride 1 allowed on non-range indexing");
      spec->size[i] = 1;
      if (!indices_known) {
        spec->begin[i] = -1;
        continue;
      }
      if (dim < 0) {  // unknown: so is where the index lands
        spec->begin[i] = x >= 0 ? x : -1;
        continue;
      }
      const int64_t x_fwd = x < 0 ? dim + x : x;
      if (x_fwd < 0 || x_fwd >= dim) {
        return absl::InvalidArgumentError(absl::StrCat("slice index ", x, " of dimension ", i, " out of bounds"));
      }
      spec->begin[i] = x_fwd;
      continue;
    }
    if (dim < 0 || (!indices_known && !(dbegin_masked[i] && dend_masked[i]))) {
      spec->begin[i] = spec->size[i] = -1;
      spec->stride[i] = stride;
      continue;
    }
    const int64_t lo = stride > 0 ? 0 : -1, hi = stride > 0 ? dim : dim - 1;
    auto canonical = [&](int64_t x, bool masked, bool is_end) {
      if (masked) return stride > 0 ? (is_end ? hi : lo) : (is_end ? lo : hi);
      const int64_t x_fwd = x < 0 ? dim + x : x;
      return x_fwd < lo ? lo : (x_fwd > hi ? hi : x_fwd);
    };
    const int64_t b = canonical(dbegin[i], dbegin_masked[i], false);
    const int64_t e = canonical(dend[i], dend_masked[i], true);
    const int64_t interval = e - b;
    int64_t size = 0;
    if (interval != 0 && (interval < 0) == (stride < 0)) {
      size = interval / stride + (interval % stride != 0 ? 1 : 0);
    }
    spec->begin[i] = b;
    // With fewer than two steps the stride is never applied; 1 keeps
    // stride * row-major stride (the kernel's) from overflowing on a huge one.
    // With two or more, |stride| < dim, and that product stays in bounds.
    spec->stride[i] = size > 1 ? stride : 1;
    spec->size[i] = size;
  }
  spec->final_shape.clear();
  for (int g : gather) {
    if (g == kShrinkAxis) continue;
    spec->final_shape.push_back(g == kNewAxis ? 1 : spec->size[g]);
  }
  return absl::OkStatus();
}

}  // namespace sluice

// TensorSlice parsing and intersection copies: see tensor_slice.h.
#include "checkpoint/tensor_slice.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace sluice {
namespace checkpoint {

TensorSlice TensorSlice::Full(int dims) {
  TensorSlice s;
  s.start.assign(dims, 0);
  s.length.assign(dims, -1);
  return s;
}

bool TensorSlice::IsFull() const {
  for (int64_t l : length) {
    if (l >= 0) return false;
  }
  return true;
}

std::string TensorSlice::ToString() const {
  std::vector<std::string> parts;
  for (size_t d = 0; d < start.size(); ++d) {
    parts.push_back(length[d] < 0 ? std::string("-") : absl::StrCat(start[d], ",", length[d]));
  }
  return absl::StrJoin(parts, ":");
}

TensorShape TensorSlice::SliceShape(const TensorShape& full) const {
  TensorShape shape;
  for (int d = 0; d < full.dims(); ++d) shape.AddDim(Length(d, full));
  return shape;
}

absl::StatusOr<TensorSlice> ParseSliceSpec(absl::string_view spec, const TensorShape& full) {
  TensorSlice s;
  if (spec.empty() && full.dims() == 0) return s;
  std::vector<absl::string_view> parts = absl::StrSplit(spec, ':');
  if (static_cast<int>(parts.size()) != full.dims()) {
    return absl::InvalidArgumentError(absl::StrCat("slice spec '", spec, "' has ", parts.size(),
                                                   " dimensions, the shape ", full.DebugString(), " has ",
                                                   full.dims()));
  }
  for (int d = 0; d < full.dims(); ++d) {
    if (parts[d] == "-") {
      s.start.push_back(0);
      s.length.push_back(-1);
      continue;
    }
    std::vector<absl::string_view> sl = absl::StrSplit(parts[d], ',');
    int64_t start = 0, length = 0;
    if (sl.size() != 2 || !absl::SimpleAtoi(sl[0], &start) || !absl::SimpleAtoi(sl[1], &length) || start < 0 ||
        length < 0 || start > full.dim_size(d) || length > full.dim_size(d) - start) {
      return absl::InvalidArgumentError(absl::StrCat("bad slice '", parts[d], "' for dimension ", d, " of size ",
                                                     full.dim_size(d), " in slice spec '", spec, "'"));
    }
    s.start.push_back(start);
    s.length.push_back(length);
  }
  return s;
}

absl::StatusOr<ShapeAndSlice> ParseShapeAndSlice(absl::string_view spec) {
  ShapeAndSlice out;
  if (spec.empty()) return out;
  std::vector<absl::string_view> tokens = absl::StrSplit(spec, ' ', absl::SkipEmpty());
  if (tokens.empty()) return out;
  std::vector<int64_t> dims;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    int64_t d = 0;
    if (!absl::SimpleAtoi(tokens[i], &d) || d < 0) {
      return absl::InvalidArgumentError(absl::StrCat("bad dimension '", tokens[i], "' in shape_and_slice '", spec, "'"));
    }
    dims.push_back(d);
  }
  auto shape = TensorShape::Build(dims);
  if (!shape.ok()) return shape.status();
  out.full_shape = *shape;
  auto slice = ParseSliceSpec(tokens.back(), out.full_shape);
  if (!slice.ok()) return slice.status();
  out.slice = *slice;
  out.whole = false;
  return out;
}

namespace {

// Whether `slice` has full's rank and lies inside it.
bool Inside(const TensorSlice& slice, const TensorShape& full) {
  if (static_cast<int>(slice.start.size()) != full.dims() || slice.length.size() != slice.start.size()) return false;
  for (int d = 0; d < full.dims(); ++d) {
    const int64_t start = slice.Start(d), length = slice.Length(d, full);
    if (start < 0 || length < 0 || start > full.dim_size(d) || length > full.dim_size(d) - start) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<int64_t> CopySliceIntersection(const TensorShape& full, const TensorSlice& src_slice,
                                              const Tensor& src, const TensorSlice& dst_slice, Tensor* dst) {
  if (!Inside(src_slice, full) || !Inside(dst_slice, full)) {
    return absl::InvalidArgumentError(absl::StrCat("slice '", src_slice.ToString(), "' or '", dst_slice.ToString(),
                                                   "' does not fit the shape ", full.DebugString()));
  }
  if (src.shape() != src_slice.SliceShape(full) || dst->shape() != dst_slice.SliceShape(full)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "values of shape ", src.shape().DebugString(), " and ", dst->shape().DebugString(), " for slices '",
        src_slice.ToString(), "' and '", dst_slice.ToString(), "' of ", full.DebugString()));
  }
  if (src.dtype() != dst->dtype() || src.dtype() == DT_STRING || !src.IsInitialized() || !dst->IsInitialized()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot copy slices of ", DataTypeString(src.dtype()), " into ",
                                                   DataTypeString(dst->dtype())));
  }
  const size_t elem_size = DataTypeSize(src.dtype());
  const char* from = static_cast<const char*>(src.raw_data());
  char* to = static_cast<char*>(dst->raw_data());
  const int n = full.dims();
  std::vector<int64_t> lo(n), hi(n), src_dims(n), dst_dims(n);
  int64_t count = 1;
  for (int d = 0; d < n; ++d) {
    int64_t s0 = src_slice.Start(d), s1 = s0 + src_slice.Length(d, full);
    int64_t d0 = dst_slice.Start(d), d1 = d0 + dst_slice.Length(d, full);
    lo[d] = std::max(s0, d0);
    hi[d] = std::min(s1, d1);
    if (hi[d] <= lo[d]) return 0;
    src_dims[d] = s1 - s0;
    dst_dims[d] = d1 - d0;
    count *= hi[d] - lo[d];
  }
  if (n == 0) {
    std::memcpy(to, from, elem_size);
    return 1;
  }
  // Iterate over all index tuples of the intersection except the last
  // dimension, copying one contiguous run per tuple.
  std::vector<int64_t> idx(lo.begin(), lo.end());
  const int64_t run = hi[n - 1] - lo[n - 1];
  while (true) {
    int64_t so = 0, doff = 0;
    for (int d = 0; d < n; ++d) {
      so = so * src_dims[d] + (idx[d] - src_slice.Start(d));
      doff = doff * dst_dims[d] + (idx[d] - dst_slice.Start(d));
    }
    std::memcpy(to + doff * elem_size, from + so * elem_size, run * elem_size);
    int d = n - 2;
    for (; d >= 0; --d) {
      if (++idx[d] < hi[d]) break;
      idx[d] = lo[d];
    }
    if (d < 0) break;
  }
  return count;
}

}  // namespace checkpoint
}  // namespace sluice

// Helpers shared by the array-op kernels (shape, concat/split, slicing,
// gather/scatter): dtype-generic element copies (memcpy for fixed-size types,
// assignment for strings), reading int32/int64 index tensors, and index
// validation, and the gather shared by Gather and ResourceGather. Everything
// here is a pure function of its arguments (GatherToOutput also allocates the
// kernel's output); callers own the tensors and synchronize as usual for
// kernels.
#ifndef SLUICE_ENGINE_KERNELS_ARRAY_KERNEL_UTIL_H_
#define SLUICE_ENGINE_KERNELS_ARRAY_KERNEL_UTIL_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/tensor.h"

namespace sluice {
namespace array_util {

// Bytes per element for memcpy-able dtypes; 0 for DT_STRING.
inline int ElementBytes(DataType dtype) { return DataTypeSize(dtype); }

// Copies `n` elements from element offset `src_off` of `src` to element
// offset `dst_off` of `dst`. REQUIRES: same dtype, offsets in range.
inline void CopyElements(const Tensor& src, int64_t src_off, const Tensor& dst, int64_t dst_off, int64_t n) {
  if (n <= 0) return;
  if (src.dtype() == DT_STRING) {
    const tstring* s = src.data<tstring>() + src_off;
    tstring* d = dst.data<tstring>() + dst_off;
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
    return;
  }
  const int64_t bytes = ElementBytes(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw_data()) + dst_off * bytes,
              static_cast<const char*>(src.raw_data()) + src_off * bytes, static_cast<size_t>(n * bytes));
}

// Sets every element of `t` to zero bits (numbers 0, bool false, "" strings).
inline void SetZero(const Tensor& t) {
  if (t.NumElements() == 0) return;
  if (t.dtype() == DT_STRING) {
    tstring* d = t.data<tstring>();
    for (int64_t i = 0; i < t.NumElements(); ++i) d[i].clear();
    return;
  }
  std::memset(t.raw_data(), 0, static_cast<size_t>(t.NumElements()) * ElementBytes(t.dtype()));
}

// Fills elements [off, off + n) of `dst` with copies of element `src_off` of `src`.
inline void FillWithElement(const Tensor& src, int64_t src_off, const Tensor& dst, int64_t off, int64_t n) {
  if (n <= 0) return;
  if (src.dtype() == DT_STRING) {
    const tstring& v = src.data<tstring>()[src_off];
    tstring* d = dst.data<tstring>() + off;
    for (int64_t i = 0; i < n; ++i) d[i] = v;
    return;
  }
  const int bytes = ElementBytes(src.dtype());
  const char* s = static_cast<const char*>(src.raw_data()) + src_off * bytes;
  char* d = static_cast<char*>(dst.raw_data()) + off * bytes;
  switch (bytes) {
    case 1: std::memset(d, *s, static_cast<size_t>(n)); return;
    case 2: { uint16_t v; std::memcpy(&v, s, 2); std::fill_n(reinterpret_cast<uint16_t*>(d), n, v); return; }
    case 4: { uint32_t v; std::memcpy(&v, s, 4); std::fill_n(reinterpret_cast<uint32_t*>(d), n, v); return; }
    case 8: { uint64_t v; std::memcpy(&v, s, 8); std::fill_n(reinterpret_cast<uint64_t*>(d), n, v); return; }
    default:
      for (int64_t i = 0; i < n; ++i) std::memcpy(d + i * bytes, s, bytes);
  }
}

inline bool IsIndexType(DataType dtype) { return dtype == DT_INT32 || dtype == DT_INT64; }

// Element i of an int32/int64 (also uint8/int16/int8) tensor, as int64.
inline int64_t IndexAt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DT_INT32: return t.data<int32_t>()[i];
    case DT_INT64: return t.data<int64_t>()[i];
    case DT_UINT8: return t.data<uint8_t>()[i];
    case DT_INT16: return t.data<int16_t>()[i];
    case DT_INT8: return t.data<int8_t>()[i];
    default: return 0;
  }
}

// The values of a rank-1 integer tensor named `what`.
inline absl::StatusOr<std::vector<int64_t>> IndexVector(const Tensor& t, const std::string& what) {
  if (t.dims() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be a vector, got shape ", t.shape().DebugString()));
  }
  std::vector<int64_t> out(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i) out[i] = IndexAt(t, i);
  return out;
}

// A Transpose's `perm` for a tensor of `rank` dims (CPU and GPU kernels):
// a vector of that size holding each of 0 .. rank-1 once.
inline absl::StatusOr<std::vector<int64_t>> CheckedPermutation(const Tensor& perm_t, int rank) {
  auto perm = IndexVector(perm_t, "perm");
  if (!perm.ok()) return perm.status();
  if (static_cast<int>(perm->size()) != rank) {
    return absl::InvalidArgumentError(absl::StrCat("transpose expects a vector of size ", rank,
                                                   "; but input(1) is a vector of size ", perm->size()));
  }
  std::vector<bool> seen(rank, false);
  for (int64_t p : *perm) {
    if (p < 0 || p >= rank) return absl::InvalidArgumentError(absl::StrCat(p, " is out of range [0 .. ", rank, ")"));
    if (seen[p]) return absl::InvalidArgumentError(absl::StrCat(p, " is duplicated in perm"));
    seen[p] = true;
  }
  return perm;
}

// The value of a scalar (or one-element) integer tensor named `what`.
inline absl::StatusOr<int64_t> IndexScalar(const Tensor& t, const std::string& what) {
  if (t.NumElements() != 1 || t.dims() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be a scalar, got shape ", t.shape().DebugString()));
  }
  return IndexAt(t, 0);
}

// Normalizes `axis` in [-rank, rank) to [0, rank).
inline absl::StatusOr<int> CanonicalAxis(int64_t axis, int rank, const std::string& what) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", axis, " is out of range [", -rank, ", ", rank, ") for a rank-", rank, " input"));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// InvalidArgument unless `prefix` (the shape of input `what`) is a prefix of
// `shape` (the data's): segment ids and partitions cover leading dims.
inline absl::Status CheckPrefix(const TensorShape& shape, const TensorShape& prefix, const std::string& what) {
  bool ok = prefix.dims() <= shape.dims();
  for (int i = 0; ok && i < prefix.dims(); ++i) ok = prefix.dim_size(i) == shape.dim_size(i);
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(what, " shape ", prefix.DebugString(), " must be a prefix of data shape ",
                                                   shape.DebugString()));
  }
  return absl::OkStatus();
}

// Product of dims [begin, end) of `shape`.
inline int64_t DimProduct(const TensorShape& shape, int begin, int end) {
  int64_t p = 1;
  for (int i = begin; i < end; ++i) p *= shape.dim_size(i);
  return p;
}

// Writes a vector of int64 values into a new int32 or int64 tensor.
inline absl::StatusOr<Tensor> MakeIndexTensor(DataType dtype, const std::vector<int64_t>& values,
                                              const TensorShape& shape) {
  Tensor t(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DT_INT32) {
      if (values[i] > INT32_MAX || values[i] < INT32_MIN) {
        return absl::InvalidArgumentError(absl::StrCat("value ", values[i], " does not fit in int32"));
      }
      t.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    } else {
      t.data<int64_t>()[i] = values[i];
    }
  }
  return t;
}

// Gathers slices `indices` of `params` along `axis` (negative counts from
// the end) into a new output 0 of ctx: Gather's, GatherV2's and
// ResourceGather's kernel. InvalidArgument for a scalar params, a bad axis or
// an index out of range (checked before anything is written). Defined in
// gather_scatter_ops.cc.
absl::Status GatherToOutput(OpKernelContext* ctx, const Tensor& params, const Tensor& indices, int64_t axis);

}  // namespace array_util
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_ARRAY_KERNEL_UTIL_H_

// CPU kernels for GatherNd (every dtype: slices copied as bytes, strings by
// assignment) and ScatterNd (numbers: updates added into zeros). Index
// vectors are the last dim of `indices` (K entries); each selects a slice of
// params.shape[K:] elements. Every index is checked before anything is
// copied: one out of range is InvalidArgument naming it, unless the attr
// bad_indices_policy is "IGNORE" (then GatherNd gives zeros for it and
// ScatterNd drops its update).
// Thread safety: kernels are stateless.
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/accumulate.h"
#include "engine/kernels/array_kernel_util.h"

namespace sluice {
namespace {

using array_util::IndexAt;

// bad_indices_policy: true for "IGNORE"; "", "DEFAULT" and "ERROR" fail.
absl::StatusOr<bool> IgnoresBadIndices(OpKernelConstruction* ctx) {
  std::string policy;
  if (!ctx->GetAttr("bad_indices_policy", &policy).ok()) return false;  // a graph without the attr
  if (policy.empty() || policy == "DEFAULT" || policy == "ERROR") return false;
  if (policy == "IGNORE") return true;
  return absl::InvalidArgumentError(
      absl::StrCat("bad_indices_policy must be '', DEFAULT, ERROR or IGNORE, got '", policy, "'"));
}

// Where each index vector's slice starts (in slices) within a tensor whose
// first K dims are `dims`, after checking every index; with `ignore_bad`, -1
// for a vector out of range instead of an error. A tensor (int64, one per
// vector), so that a huge count fails as a status: with K = 0 an empty
// indices tensor of shape [2^33, 0] names 2^33 vectors.
absl::StatusOr<Tensor> SliceOffsets(OpKernelContext* ctx, const Tensor& indices, const std::vector<int64_t>& dims,
                                    bool ignore_bad) {
  const int64_t k = static_cast<int64_t>(dims.size());
  // One index vector per element of indices.shape[:-1] (with K = 0, each
  // selects the whole tensor).
  const int64_t n = array_util::DimProduct(indices.shape(), 0, indices.dims() - 1);
  Tensor offsets_t;
  absl::Status s = ctx->allocate_temp(DT_INT64, TensorShape({n}), &offsets_t);
  if (!s.ok()) return s;
  int64_t* offsets = offsets_t.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    int64_t offset = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t v = IndexAt(indices, i * k + j);
      if ((v < 0 || v >= dims[j]) && ignore_bad) {
        offset = -1;
        break;
      }
      if (v < 0 || v >= dims[j]) {
        std::vector<int64_t> vec;
        for (int64_t m = 0; m < k; ++m) vec.push_back(IndexAt(indices, i * k + m));
        return absl::InvalidArgumentError(absl::StrCat("index vector ", i, " [", absl::StrJoin(vec, ", "),
                                                       "] is out of range of dims [", absl::StrJoin(dims, ", "), "]"));
      }
      offset = offset * dims[j] + v;
    }
    offsets[i] = offset;
  }
  return offsets_t;
}

// GatherNd's and ScatterNd's common attr.
class NdIndexKernel : public OpKernel {
 public:
  explicit NdIndexKernel(OpKernelConstruction* ctx) : OpKernel(ctx) {
    auto ignore = IgnoresBadIndices(ctx);
    OP_REQUIRES_OK(ctx, ignore.status());
    ignore_bad_ = *ignore;
  }

 protected:
  bool ignore_bad_ = false;
};

class GatherNdOp : public NdIndexKernel {
 public:
  using NdIndexKernel::NdIndexKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& params = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    OP_REQUIRES(ctx, indices.dims() >= 1,
                absl::InvalidArgumentError(absl::StrCat("indices must be at least a vector, got shape ",
                                                        indices.shape().DebugString())));
    const int64_t k = indices.dim_size(indices.dims() - 1);
    OP_REQUIRES(ctx, k <= params.dims(),
                absl::InvalidArgumentError(absl::StrCat("index vectors of ", k, " entries cannot index params of shape ",
                                                        params.shape().DebugString())));
    std::vector<int64_t> out_dims(indices.shape().dim_sizes().begin(), indices.shape().dim_sizes().end() - 1);
    std::vector<int64_t> first(params.shape().dim_sizes().begin(), params.shape().dim_sizes().begin() + k);
    for (int d = static_cast<int>(k); d < params.dims(); ++d) out_dims.push_back(params.dim_size(d));
    auto out_shape = TensorShape::Build(out_dims);
    OP_REQUIRES(ctx, out_shape.ok(), absl::InvalidArgumentError(absl::StrCat("output shape: ", out_shape.status().message())));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *out_shape, &out));
    if (out->NumElements() == 0) return;
    auto offsets_t = SliceOffsets(ctx, indices, first, ignore_bad_);
    OP_REQUIRES_OK(ctx, offsets_t.status());
    const int64_t* offsets = offsets_t->template data<int64_t>();
    if (ignore_bad_) array_util::SetZero(*out);
    const int64_t slice = array_util::DimProduct(params.shape(), static_cast<int>(k), params.dims());
    for (int64_t i = 0; i < offsets_t->NumElements(); ++i) {
      if (offsets[i] < 0) continue;  // ignored: zeros
      array_util::CopyElements(params, offsets[i] * slice, *out, i * slice, slice);
    }
  }
};

template <typename T>
class ScatterNdOp : public NdIndexKernel {
 public:
  using NdIndexKernel::NdIndexKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& indices = ctx->input(0);
    const Tensor& updates = ctx->input(1);
    auto dims = array_util::IndexVector(ctx->input(2), "shape");
    OP_REQUIRES_OK(ctx, dims.status());
    auto shape = TensorShape::Build(*dims);
    OP_REQUIRES(ctx, shape.ok(), absl::InvalidArgumentError(absl::StrCat("shape: ", shape.status().message())));
    OP_REQUIRES(ctx, indices.dims() >= 1,
                absl::InvalidArgumentError(absl::StrCat("indices must be at least a vector, got shape ",
                                                        indices.shape().DebugString())));
    const int64_t k = indices.dim_size(indices.dims() - 1);
    OP_REQUIRES(ctx, k <= shape->dims(),
                absl::InvalidArgumentError(absl::StrCat("index vectors of ", k, " entries cannot index shape ",
                                                        shape->DebugString())));
    std::vector<int64_t> want(indices.shape().dim_sizes().begin(), indices.shape().dim_sizes().end() - 1);
    for (int d = static_cast<int>(k); d < shape->dims(); ++d) want.push_back(shape->dim_size(d));
    OP_REQUIRES(ctx, updates.shape().dim_sizes() == want,
                absl::InvalidArgumentError(absl::StrCat("updates must have shape indices.shape[:-1] + shape[", k,
                                                        ":] = [", absl::StrJoin(want, ","), "], got ",
                                                        updates.shape().DebugString())));
    std::vector<int64_t> first(shape->dim_sizes().begin(), shape->dim_sizes().begin() + k);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    array_util::SetZero(*out);
    if (updates.NumElements() == 0) return;
    auto offsets_t = SliceOffsets(ctx, indices, first, ignore_bad_);
    OP_REQUIRES_OK(ctx, offsets_t.status());
    const int64_t* offsets = offsets_t->template data<int64_t>();
    const int64_t slice = array_util::DimProduct(*shape, static_cast<int>(k), shape->dims());
    const T* u = updates.data<T>();
    T* o = out->data<T>();
    for (int64_t i = 0; i < offsets_t->NumElements(); ++i) {
      if (offsets[i] < 0) continue;  // ignored
      T* dst = o + offsets[i] * slice;
      const T* src = u + i * slice;
      for (int64_t j = 0; j < slice; ++j) dst[j] = WrappingAdd(dst[j], src[j]);
    }
  }
};

REGISTER_KERNEL_BUILDER(Name("GatherNd").Device(kDeviceCpu), GatherNdOp);
#define SLUICE_REG_(T) \
  REGISTER_KERNEL_BUILDER(Name("ScatterNd").Device(kDeviceCpu).TypeConstraint<T>("T"), ScatterNdOp<T>)
SLUICE_REG_(float);
SLUICE_REG_(double);
SLUICE_REG_(half);
SLUICE_REG_(bfloat16);
SLUICE_REG_(int32_t);
SLUICE_REG_(int64_t);
#undef SLUICE_REG_

}  // namespace
}  // namespace sluice

// CPU kernels for the indexing array ops: Gather, GatherV2, OneHot,
// DynamicPartition, DynamicStitch (dtype-generic row copies) and the summing
// scatter _IndexedSlicesToDense (numeric types; UnsortedSegmentSum's kernel
// is in segment_reduction_ops.cc).
// Gather's body, array_util::GatherToOutput, also serves ResourceGather
// (resource_variable_ops.cc).
// Every index is range-checked before anything is written. Stateless; Compute
// is safe to run concurrently.
#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/array_kernel_util.h"

namespace sluice {

namespace array_util {

absl::Status GatherToOutput(OpKernelContext* ctx, const Tensor& params, const Tensor& indices, int64_t axis_value) {
  if (params.dims() < 1) return absl::InvalidArgumentError("params must be at least 1 dimensional");
  auto axis = CanonicalAxis(axis_value, params.dims(), "axis");
  if (!axis.ok()) return axis.status();
  const int64_t limit = params.dim_size(*axis);
  const int64_t n = indices.NumElements();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = IndexAt(indices, i);
    if (v < 0 || v >= limit) {
      return absl::InvalidArgumentError(absl::StrCat("indices[", i, "] = ", v, " is not in [0, ", limit, ")"));
    }
  }
  std::vector<int64_t> dims;
  for (int d = 0; d < *axis; ++d) dims.push_back(params.dim_size(d));
  for (int d = 0; d < indices.dims(); ++d) dims.push_back(indices.dim_size(d));
  for (int d = *axis + 1; d < params.dims(); ++d) dims.push_back(params.dim_size(d));
  auto shape = TensorShape::Build(dims);
  if (!shape.ok()) return shape.status();
  Tensor* out = nullptr;
  absl::Status s = ctx->allocate_output(0, *shape, &out);
  if (!s.ok()) return s;
  if (out->NumElements() == 0) return absl::OkStatus();
  const int64_t outer = DimProduct(params.shape(), 0, *axis);
  const int64_t inner = DimProduct(params.shape(), *axis + 1, params.dims());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < n; ++i) {
      CopyElements(params, (o * limit + IndexAt(indices, i)) * inner, *out, (o * n + i) * inner, inner);
    }
  }
  return absl::OkStatus();
}

}  // namespace array_util

namespace {

using array_util::CopyElements;
using array_util::DimProduct;
using array_util::IndexAt;

// Gather(params, indices) and GatherV2(params, indices, axis).
class GatherOp : public OpKernel {
 public:
  explicit GatherOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    if (ctx->def().op() == "GatherV2") {
      int64_t batch_dims = 0;
      OP_REQUIRES_OK(ctx, ctx->GetAttr("batch_dims", &batch_dims));
      OP_REQUIRES(ctx, batch_dims == 0, absl::InvalidArgumentError("GatherV2 supports only batch_dims = 0"));
    }
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& params = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    int64_t axis_value = 0;
    if (ctx->num_inputs() > 2) {
      auto a = array_util::IndexScalar(ctx->input(2), "axis");
      OP_REQUIRES_OK(ctx, a.status());
      axis_value = *a;
    }
    OP_REQUIRES_OK(ctx, array_util::GatherToOutput(ctx, params, indices, axis_value));
  }
};
REGISTER_KERNEL_BUILDER(Name("Gather").Device(kDeviceCpu), GatherOp);
REGISTER_KERNEL_BUILDER(Name("GatherV2").Device(kDeviceCpu), GatherOp);

class OneHotOp : public OpKernel {
 public:
  explicit OneHotOp(OpKernelConstruction* ctx) : OpKernel(ctx) { OP_REQUIRES_OK(ctx, ctx->GetAttr("axis", &axis_)); }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& indices = ctx->input(0);
    auto depth = array_util::IndexScalar(ctx->input(1), "depth");
    OP_REQUIRES_OK(ctx, depth.status());
    const Tensor& on = ctx->input(2);
    const Tensor& off = ctx->input(3);
    OP_REQUIRES(ctx, on.dims() == 0 && off.dims() == 0,
                absl::InvalidArgumentError("on_value and off_value must be scalars"));
    OP_REQUIRES(ctx, *depth >= 0, absl::InvalidArgumentError(absl::StrCat("depth must be non-negative, got ", *depth)));
    const int rank = indices.dims();
    OP_REQUIRES(ctx, axis_ >= -1 && axis_ <= rank,
                absl::InvalidArgumentError(absl::StrCat("expected axis to be -1 or between [0, ", rank, "], but got ", axis_)));
    const int axis = axis_ == -1 ? rank : static_cast<int>(axis_);
    std::vector<int64_t> dims(indices.shape().dim_sizes().begin(), indices.shape().dim_sizes().end());
    dims.insert(dims.begin() + axis, *depth);
    auto shape = TensorShape::Build(dims);
    OP_REQUIRES(ctx, shape.ok(), absl::InvalidArgumentError(absl::StrCat("output shape: ", shape.status().message())));
    const int64_t n = indices.NumElements();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = IndexAt(indices, i);
      OP_REQUIRES(ctx, v >= 0 && v < *depth,
                  absl::InvalidArgumentError(absl::StrCat("indices[", i, "] = ", v, " is not in [0, ", *depth, ")")));
    }
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    array_util::FillWithElement(off, 0, *out, 0, out->NumElements());
    // Output viewed as [prefix, depth, suffix]; indices as [prefix, suffix].
    const int64_t suffix = DimProduct(indices.shape(), axis, rank);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t p = i / std::max<int64_t>(suffix, 1), s = i % std::max<int64_t>(suffix, 1);
      CopyElements(on, 0, *out, (p * *depth + IndexAt(indices, i)) * suffix + s, 1);
    }
  }

 private:
  int64_t axis_ = -1;
};
REGISTER_KERNEL_BUILDER(Name("OneHot").Device(kDeviceCpu), OneHotOp);

// Checks that `prefix` is a prefix of `shape`.

class DynamicPartitionOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& partitions = ctx->input(1);
    OP_REQUIRES_OK(ctx, array_util::CheckPrefix(data.shape(), partitions.shape(), "partitions"));
    const int np = num_outputs();
    const int64_t n = partitions.NumElements();
    std::vector<int64_t> counts(np, 0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t p = IndexAt(partitions, i);
      OP_REQUIRES(ctx, p >= 0 && p < np,
                  absl::InvalidArgumentError(absl::StrCat("partitions[", i, "] = ", p, " is not in [0, ", np, ")")));
      ++counts[p];
    }
    const int64_t inner = DimProduct(data.shape(), partitions.dims(), data.dims());
    std::vector<Tensor*> outs(np);
    for (int p = 0; p < np; ++p) {
      std::vector<int64_t> dims{counts[p]};
      for (int d = partitions.dims(); d < data.dims(); ++d) dims.push_back(data.dim_size(d));
      auto shape = TensorShape::Build(dims);
      OP_REQUIRES_OK(ctx, shape.status());
      OP_REQUIRES_OK(ctx, ctx->allocate_output(p, *shape, &outs[p]));
    }
    std::vector<int64_t> next(np, 0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t p = IndexAt(partitions, i);
      CopyElements(data, i * inner, *outs[p], next[p]++ * inner, inner);
    }
  }
};
REGISTER_KERNEL_BUILDER(Name("DynamicPartition").Device(kDeviceCpu), DynamicPartitionOp);

class DynamicStitchOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs() / 2;
    int64_t max_index = -1;
    for (int i = 0; i < n; ++i) {
      const Tensor& idx = ctx->input(i);
      for (int64_t j = 0; j < idx.NumElements(); ++j) {
        const int64_t v = IndexAt(idx, j);
        OP_REQUIRES(ctx, v >= 0, absl::InvalidArgumentError(absl::StrCat("indices[", i, "][", j, "] = ", v,
                                                                         " is negative")));
        max_index = std::max(max_index, v);
      }
    }
    const Tensor& data0 = ctx->input(n);
    const TensorShape& idx0 = ctx->input(0).shape();
    OP_REQUIRES_OK(ctx, array_util::CheckPrefix(data0.shape(), idx0, "indices[0]"));
    std::vector<int64_t> row_dims(data0.shape().dim_sizes().begin() + idx0.dims(), data0.shape().dim_sizes().end());
    for (int i = 0; i < n; ++i) {
      const TensorShape& is = ctx->input(i).shape();
      const TensorShape& ds = ctx->input(n + i).shape();
      OP_REQUIRES_OK(ctx, array_util::CheckPrefix(ds, is, absl::StrCat("indices[", i, "]")));
      std::vector<int64_t> rd(ds.dim_sizes().begin() + is.dims(), ds.dim_sizes().end());
      OP_REQUIRES(ctx, rd == row_dims,
                  absl::InvalidArgumentError(absl::StrCat("data[", i, "].shape = ", ds.DebugString(),
                                                          " does not match data[0].shape = ", data0.shape().DebugString(),
                                                          " beyond the indices' dims")));
    }
    std::vector<int64_t> dims{max_index + 1};
    dims.insert(dims.end(), row_dims.begin(), row_dims.end());
    auto shape = TensorShape::Build(dims);
    OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    array_util::SetZero(*out);
    const int64_t inner = DimProduct(*shape, 1, shape->dims());
    for (int i = 0; i < n; ++i) {
      const Tensor& idx = ctx->input(i);
      for (int64_t j = 0; j < idx.NumElements(); ++j) {
        CopyElements(ctx->input(n + i), j * inner, *out, IndexAt(idx, j) * inner, inner);
      }
    }
  }
};
REGISTER_KERNEL_BUILDER(Name("DynamicStitch").Device(kDeviceCpu), DynamicStitchOp);
REGISTER_KERNEL_BUILDER(Name("ParallelDynamicStitch").Device(kDeviceCpu), DynamicStitchOp);

// Sums rows of `data` ([n, inner]) into rows `ids[i]` of `out` ([rows, inner]).
template <typename T>
void SumRows(const Tensor& data, const Tensor& ids, int64_t n, int64_t inner, const Tensor& out) {
  const T* d = data.data<T>();
  T* o = out.data<T>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = IndexAt(ids, i);
    if (r < 0) continue;
    T* dst = o + r * inner;
    const T* src = d + i * inner;
    for (int64_t j = 0; j < inner; ++j) dst[j] += src[j];
  }
}

template <typename T>
class IndexedSlicesToDenseOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& values = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    auto dims = array_util::IndexVector(ctx->input(2), "dense_shape");
    OP_REQUIRES_OK(ctx, dims.status());
    auto shape = TensorShape::Build(*dims);
    OP_REQUIRES(ctx, shape.ok(), absl::InvalidArgumentError(absl::StrCat("dense_shape: ", shape.status().message())));
    OP_REQUIRES(ctx, shape->dims() >= 1, absl::InvalidArgumentError("dense_shape must have rank >= 1"));
    const int64_t n = indices.NumElements();
    std::vector<int64_t> vdims{n};
    for (int d = 1; d < shape->dims(); ++d) vdims.push_back(shape->dim_size(d));
    auto values_shape = TensorShape::Build(vdims);
    OP_REQUIRES(ctx, indices.dims() == 1 && values_shape.ok() && values.shape() == *values_shape,
                absl::InvalidArgumentError(absl::StrCat("values shape ", values.shape().DebugString(), " and indices shape ",
                                                        indices.shape().DebugString(), " do not match dense_shape ",
                                                        shape->DebugString())));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = IndexAt(indices, i);
      OP_REQUIRES(ctx, v >= 0 && v < shape->dim_size(0),
                  absl::InvalidArgumentError(absl::StrCat("indices[", i, "] = ", v, " is not in [0, ", shape->dim_size(0), ")")));
    }
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    array_util::SetZero(*out);
    SumRows<T>(values, indices, n, DimProduct(*shape, 1, shape->dims()), *out);
  }
};

#define SLUICE_REGISTER_SUMS_(T)                                                                         \
  REGISTER_KERNEL_BUILDER(Name("_IndexedSlicesToDense").Device(kDeviceCpu).TypeConstraint<T>("T"),      \
                          IndexedSlicesToDenseOp<T>)
SLUICE_REGISTER_SUMS_(float);
SLUICE_REGISTER_SUMS_(double);
SLUICE_REGISTER_SUMS_(half);
SLUICE_REGISTER_SUMS_(bfloat16);
SLUICE_REGISTER_SUMS_(int32_t);
SLUICE_REGISTER_SUMS_(int64_t);
SLUICE_REGISTER_SUMS_(complex64);
#undef SLUICE_REGISTER_SUMS_

}  // namespace
}  // namespace sluice

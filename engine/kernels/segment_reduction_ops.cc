// CPU kernels for SegmentSum, SegmentMean, SegmentMax, SegmentMin,
// UnsortedSegmentSum, UnsortedSegmentMax and UnsortedSegmentMin. One pass over the rows of data in order, each
// combined into its segment's output row in the accumulation type (float
// for half and bfloat16); every id is checked first (sorted ids ascending
// and non-negative; unsorted ids below num_segments, negative ones dropped).
// Thread safety: kernels are stateless.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/accumulate.h"
#include "engine/kernels/array_kernel_util.h"

namespace sluice {
namespace {

using array_util::IndexAt;

enum class Reduce { kSum, kMean, kMax, kMin };

// The value an empty unsorted segment keeps: 0 for sums, the type's lowest
// for Max and highest for Min (TensorFlow's rule).
template <typename T, Reduce R>
T EmptyUnsorted() {
  if constexpr (R == Reduce::kMax) return Eigen::NumTraits<T>::lowest();
  if constexpr (R == Reduce::kMin) return Eigen::NumTraits<T>::highest();
  return T(0);
}

template <typename A, Reduce R>
A Combine(A a, A b) {
  if constexpr (R == Reduce::kMax) {
    return std::max(a, b);
  } else if constexpr (R == Reduce::kMin) {
    return std::min(a, b);
  } else {
    return WrappingAdd(a, b);
  }
}

// Reduces rows i of `data` ([n, inner]) into rows ids[i] of `out` ([rows,
// inner]); rows with a negative id are skipped. Segments no row reaches keep
// `empty`. The buffers are tensors: an output too large to sum into fails
// as a status. REQUIRES: every id < rows.
template <typename T, Reduce R>
absl::Status ReduceRows(OpKernelContext* ctx, const Tensor& data, const Tensor& ids, int64_t n, int64_t inner, T empty,
                        Tensor* out) {
  using A = RunningType<T>;
  const int64_t rows = out->dim_size(0);
  Tensor acc_t, count_t;
  absl::Status st = ctx->allocate_temp(DataTypeToEnum<A>::value, out->shape(), &acc_t);
  if (!st.ok()) return st;
  st = ctx->allocate_temp(DT_INT64, TensorShape({rows}), &count_t);
  if (!st.ok()) return st;
  A* acc = acc_t.data<A>();
  int64_t* count = count_t.data<int64_t>();
  std::fill(count, count + rows, int64_t{0});
  const T* d = data.data<T>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t s = IndexAt(ids, i);
    if (s < 0) continue;
    A* dst = acc + s * inner;
    const T* src = d + i * inner;
    if (count[s]++ == 0) {
      for (int64_t j = 0; j < inner; ++j) dst[j] = static_cast<A>(src[j]);
    } else {
      for (int64_t j = 0; j < inner; ++j) dst[j] = Combine<A, R>(dst[j], static_cast<A>(src[j]));
    }
  }
  T* o = out->data<T>();
  for (int64_t s = 0; s < rows; ++s) {
    for (int64_t j = 0; j < inner; ++j) {
      T& v = o[s * inner + j];
      if (count[s] == 0) {
        v = empty;
        continue;
      }
      if constexpr (R == Reduce::kMean) {
        v = static_cast<T>(acc[s * inner + j] / static_cast<A>(count[s]));
      } else {
        v = static_cast<T>(acc[s * inner + j]);
      }
    }
  }
  return absl::OkStatus();
}

template <typename T, Reduce R>
class SortedSegmentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& ids = ctx->input(1);
    OP_REQUIRES(ctx, data.dims() >= 1,
                absl::InvalidArgumentError(absl::StrCat("data must be at least a vector, got shape ",
                                                        data.shape().DebugString())));
    OP_REQUIRES(ctx, ids.dims() == 1 && ids.dim_size(0) == data.dim_size(0),
                absl::InvalidArgumentError(absl::StrCat("segment_ids must be a vector with one id per row of data (",
                                                        data.dim_size(0), "), got shape ", ids.shape().DebugString())));
    const int64_t n = ids.NumElements();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = IndexAt(ids, i);
      OP_REQUIRES(ctx, v >= 0, absl::InvalidArgumentError(absl::StrCat("segment_ids[", i, "] = ", v, " is negative")));
      OP_REQUIRES(ctx, i == 0 || v >= IndexAt(ids, i - 1),
                  absl::InvalidArgumentError(absl::StrCat("segment_ids must be sorted ascending: segment_ids[", i,
                                                          "] = ", v, " follows ", IndexAt(ids, i - 1))));
    }
    const int64_t last = n == 0 ? -1 : IndexAt(ids, n - 1);
    OP_REQUIRES(ctx, last < kMaxTensorElements,
                absl::InvalidArgumentError(absl::StrCat("segment_ids[", n - 1, "] = ", last,
                                                        " makes more output rows than a tensor can hold")));
    std::vector<int64_t> dims{last + 1};
    for (int d = 1; d < data.dims(); ++d) dims.push_back(data.dim_size(d));
    auto shape = TensorShape::Build(dims);
    OP_REQUIRES(ctx, shape.ok(), absl::InvalidArgumentError(absl::StrCat("output shape: ", shape.status().message())));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    const int64_t inner = array_util::DimProduct(data.shape(), 1, data.dims());
    const absl::Status s = ReduceRows<T, R>(ctx, data, ids, n, inner, T(0), out);
    OP_REQUIRES_OK(ctx, s);
  }
};

template <typename T, Reduce R>
class UnsortedSegmentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& ids = ctx->input(1);
    auto num = array_util::IndexScalar(ctx->input(2), "num_segments");
    OP_REQUIRES_OK(ctx, num.status());
    OP_REQUIRES(ctx, *num >= 0, absl::InvalidArgumentError(absl::StrCat("num_segments must be non-negative, got ", *num)));
    OP_REQUIRES_OK(ctx, array_util::CheckPrefix(data.shape(), ids.shape(), "segment_ids"));
    const int64_t n = ids.NumElements();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = IndexAt(ids, i);
      OP_REQUIRES(ctx, v < *num,
                  absl::InvalidArgumentError(absl::StrCat("segment_ids[", i, "] = ", v, " is out of range [0, ", *num, ")")));
    }
    std::vector<int64_t> dims{*num};
    for (int d = ids.dims(); d < data.dims(); ++d) dims.push_back(data.dim_size(d));
    auto shape = TensorShape::Build(dims);
    OP_REQUIRES(ctx, shape.ok(), absl::InvalidArgumentError(absl::StrCat("output shape: ", shape.status().message())));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    const int64_t inner = array_util::DimProduct(data.shape(), ids.dims(), data.dims());
    const absl::Status s = ReduceRows<T, R>(ctx, data, ids, n, inner, EmptyUnsorted<T, R>(), out);
    OP_REQUIRES_OK(ctx, s);
  }
};

#define SLUICE_REG_(T)                                                                                           \
  REGISTER_KERNEL_BUILDER(Name("SegmentSum").Device(kDeviceCpu).TypeConstraint<T>("T"),                          \
                          (SortedSegmentOp<T, Reduce::kSum>));                                                   \
  REGISTER_KERNEL_BUILDER(Name("SegmentMean").Device(kDeviceCpu).TypeConstraint<T>("T"),                         \
                          (SortedSegmentOp<T, Reduce::kMean>));                                                  \
  REGISTER_KERNEL_BUILDER(Name("SegmentMax").Device(kDeviceCpu).TypeConstraint<T>("T"),                          \
                          (SortedSegmentOp<T, Reduce::kMax>));                                                   \
  REGISTER_KERNEL_BUILDER(Name("SegmentMin").Device(kDeviceCpu).TypeConstraint<T>("T"),                          \
                          (SortedSegmentOp<T, Reduce::kMin>));                                                   \
  REGISTER_KERNEL_BUILDER(Name("UnsortedSegmentMax").Device(kDeviceCpu).TypeConstraint<T>("T"),                  \
                          (UnsortedSegmentOp<T, Reduce::kMax>));                                                 \
  REGISTER_KERNEL_BUILDER(Name("UnsortedSegmentMin").Device(kDeviceCpu).TypeConstraint<T>("T"),                  \
                          (UnsortedSegmentOp<T, Reduce::kMin>))
SLUICE_REG_(float);
SLUICE_REG_(double);
SLUICE_REG_(half);
SLUICE_REG_(bfloat16);
SLUICE_REG_(int32_t);
SLUICE_REG_(int64_t);
#undef SLUICE_REG_
#define SLUICE_REG_(T)                                                                        \
  REGISTER_KERNEL_BUILDER(Name("UnsortedSegmentSum").Device(kDeviceCpu).TypeConstraint<T>("T"), \
                          (UnsortedSegmentOp<T, Reduce::kSum>))
SLUICE_REG_(float);
SLUICE_REG_(double);
SLUICE_REG_(half);
SLUICE_REG_(bfloat16);
SLUICE_REG_(int32_t);
SLUICE_REG_(int64_t);
SLUICE_REG_(complex64);
#undef SLUICE_REG_

}  // namespace
}  // namespace sluice

// CPU kernels for SparseSegmentSum / SparseSegmentMean and their gradient ops
// SparseSegmentSumGrad / SparseSegmentMeanGrad. Every index and segment id is
// checked (ids sorted and non-negative, indices inside data) before anything
// is written. half and bfloat16 accumulate in float; integer sums wrap. Thread safety: kernels
// are stateless.
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/array_kernel_util.h"

namespace sluice {
namespace {

using array_util::DimProduct;
using array_util::IndexAt;

template <typename T>
struct Accum {
  using type = T;
};
template <>
struct Accum<half> {
  using type = float;
};
template <>
struct Accum<bfloat16> {
  using type = float;
};
// Integer sums wrap (as TensorFlow's) without signed-overflow UB.
template <>
struct Accum<int32_t> {
  using type = uint32_t;
};
template <>
struct Accum<int64_t> {
  using type = uint64_t;
};

// Checks indices and segment_ids (vectors of one length; ids sorted, >= 0,
// below `max_id` when it is >= 0; indices in [0, rows)).
absl::Status CheckSegments(const Tensor& indices, const Tensor& ids, int64_t rows, int64_t max_id) {
  if (indices.dims() != 1 || ids.dims() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("indices and segment_ids must be vectors, got shapes ",
                                                   indices.shape().DebugString(), " and ", ids.shape().DebugString()));
  }
  if (indices.NumElements() != ids.NumElements()) {
    return absl::InvalidArgumentError(absl::StrCat("indices and segment_ids must have one length, got ",
                                                   indices.NumElements(), " and ", ids.NumElements()));
  }
  int64_t previous = 0;
  for (int64_t i = 0; i < ids.NumElements(); ++i) {
    const int64_t id = IndexAt(ids, i), index = IndexAt(indices, i);
    if (id < previous) {
      return absl::InvalidArgumentError(absl::StrCat("segment_ids must be sorted and non-negative: segment_ids[", i,
                                                     "] = ", id, " after ", previous));
    }
    if (max_id >= 0 && id >= max_id) {
      return absl::InvalidArgumentError(
          absl::StrCat("segment_ids[", i, "] = ", id, " is not below the gradient's ", max_id, " rows"));
    }
    if (index < 0 || index >= rows) {
      return absl::InvalidArgumentError(absl::StrCat("indices[", i, "] = ", index, " is not in [0, ", rows, ")"));
    }
    previous = id;
  }
  return absl::OkStatus();
}

template <typename T, bool kMean>
class SparseSegmentReductionOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    using A = typename Accum<T>::type;
    const Tensor& data = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    const Tensor& ids = ctx->input(2);
    OP_REQUIRES(ctx, data.dims() >= 1, absl::InvalidArgumentError("data must have at least one dimension"));
    OP_REQUIRES_OK(ctx, CheckSegments(indices, ids, data.dim_size(0), -1));
    const int64_t n = ids.NumElements();
    const int64_t last = n == 0 ? -1 : IndexAt(ids, n - 1);
    OP_REQUIRES(ctx, last < INT64_MAX, absl::InvalidArgumentError("segment_ids reach the largest int64"));
    const int64_t segments = last + 1;
    std::vector<int64_t> dims(data.shape().dim_sizes().begin(), data.shape().dim_sizes().end());
    dims[0] = segments;
    auto shape = TensorShape::Build(dims);
    OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    // Rows of no elements: nothing to add (and no per-segment storage for
    // ids that may be huge).
    if (out->NumElements() == 0) return;
    const int64_t inner = DimProduct(data.shape(), 1, data.dims());
    std::vector<A> acc(static_cast<size_t>(segments * inner), A(0));
    std::vector<int64_t> count(kMean ? segments : 0, 0);
    const T* in = data.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t id = IndexAt(ids, i);
      const T* row = in + IndexAt(indices, i) * inner;
      A* dst = acc.data() + id * inner;
      for (int64_t e = 0; e < inner; ++e) dst[e] += static_cast<A>(row[e]);
      if (kMean) ++count[id];
    }
    T* o = out->data<T>();
    for (int64_t s = 0; s < segments; ++s) {
      const A scale = kMean && count[s] > 1 ? A(1) / static_cast<A>(count[s]) : A(1);
      for (int64_t e = 0; e < inner; ++e) o[s * inner + e] = static_cast<T>(acc[s * inner + e] * scale);
    }
  }
};

template <typename T, bool kMean>
class SparseSegmentGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    using A = typename Accum<T>::type;
    const Tensor& grad = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    const Tensor& ids = ctx->input(2);
    auto dim0 = array_util::IndexScalar(ctx->input(3), "output_dim0");
    OP_REQUIRES_OK(ctx, dim0.status());
    OP_REQUIRES(ctx, *dim0 >= 0, absl::InvalidArgumentError(absl::StrCat("output_dim0 = ", *dim0, " is negative")));
    OP_REQUIRES(ctx, grad.dims() >= 1, absl::InvalidArgumentError("grad must have at least one dimension"));
    OP_REQUIRES_OK(ctx, CheckSegments(indices, ids, *dim0, grad.dim_size(0)));
    std::vector<int64_t> dims(grad.shape().dim_sizes().begin(), grad.shape().dim_sizes().end());
    dims[0] = *dim0;
    auto shape = TensorShape::Build(dims);
    OP_REQUIRES_OK(ctx, shape.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    const int64_t inner = DimProduct(grad.shape(), 1, grad.dims());
    const int64_t n = ids.NumElements();
    std::vector<int64_t> count(grad.dim_size(0), 0);
    for (int64_t i = 0; i < n; ++i) ++count[IndexAt(ids, i)];
    std::vector<A> acc(static_cast<size_t>(*dim0 * inner), A(0));
    const T* g = grad.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t id = IndexAt(ids, i);
      const A scale = kMean ? A(1) / static_cast<A>(count[id]) : A(1);
      const T* src = g + id * inner;
      A* dst = acc.data() + IndexAt(indices, i) * inner;
      for (int64_t e = 0; e < inner; ++e) dst[e] += static_cast<A>(src[e]) * scale;
    }
    T* o = out->data<T>();
    for (int64_t k = 0; k < *dim0 * inner; ++k) o[k] = static_cast<T>(acc[k]);
  }
};

#define SLUICE_REG_(OP, T, ...) \
  REGISTER_KERNEL_BUILDER(Name(OP).Device(kDeviceCpu).TypeConstraint<T>("T"), __VA_ARGS__)
#define SLUICE_REG_FLOAT_(T)                                                    \
  SLUICE_REG_("SparseSegmentSum", T, (SparseSegmentReductionOp<T, false>));    \
  SLUICE_REG_("SparseSegmentMean", T, (SparseSegmentReductionOp<T, true>));    \
  SLUICE_REG_("SparseSegmentSumGrad", T, (SparseSegmentGradOp<T, false>));     \
  SLUICE_REG_("SparseSegmentMeanGrad", T, (SparseSegmentGradOp<T, true>))
SLUICE_REG_FLOAT_(float);
SLUICE_REG_FLOAT_(double);
SLUICE_REG_FLOAT_(half);
SLUICE_REG_FLOAT_(bfloat16);
#undef SLUICE_REG_FLOAT_
SLUICE_REG_("SparseSegmentSum", uint8_t, (SparseSegmentReductionOp<uint8_t, false>));
SLUICE_REG_("SparseSegmentSum", int8_t, (SparseSegmentReductionOp<int8_t, false>));
SLUICE_REG_("SparseSegmentSum", uint16_t, (SparseSegmentReductionOp<uint16_t, false>));
SLUICE_REG_("SparseSegmentSum", int16_t, (SparseSegmentReductionOp<int16_t, false>));
SLUICE_REG_("SparseSegmentSum", int32_t, (SparseSegmentReductionOp<int32_t, false>));
SLUICE_REG_("SparseSegmentSum", int64_t, (SparseSegmentReductionOp<int64_t, false>));
#undef SLUICE_REG_

}  // namespace
}  // namespace sluice

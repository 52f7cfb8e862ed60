// CPU kernel for TopKV2: per row of the last dimension, the k largest values
// and their indices, largest first, equal values by lower index first (a
// deterministic order; `sorted: false` allows any), NaN above everything. Rows run in parallel on
// the intra-op pool; each selects with a partial sort of row indices.
// Stateless; Compute is safe to run concurrently.
#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/kernels/array_kernel_util.h"
#include "engine/kernels/cwise_ops_common.h"

namespace sluice {
namespace {

template <typename T>
class TopKOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    auto k_or = array_util::IndexScalar(ctx->input(1), "k");
    OP_REQUIRES_OK(ctx, k_or.status());
    const int64_t k = *k_or;
    OP_REQUIRES(ctx, in.dims() >= 1,
                absl::InvalidArgumentError(absl::StrCat("input must have rank >= 1, got shape ", in.shape().DebugString())));
    OP_REQUIRES(ctx, k >= 0, absl::InvalidArgumentError(absl::StrCat("k must be non-negative, got ", k)));
    const int64_t n = in.dim_size(in.dims() - 1);
    OP_REQUIRES(ctx, k <= n,
                absl::InvalidArgumentError(absl::StrCat("input must have at least k = ", k,
                                                        " entries in its last dimension, but has shape ",
                                                        in.shape().DebugString())));
    const DataType index_type = output_type(1);
    const int64_t max_index = index_type == DT_INT16 ? std::numeric_limits<int16_t>::max()
                              : index_type == DT_INT32 ? std::numeric_limits<int32_t>::max()
                                                       : std::numeric_limits<int64_t>::max();
    OP_REQUIRES(ctx, n == 0 || n - 1 <= max_index,
                absl::InvalidArgumentError(absl::StrCat("indices up to ", n - 1, " do not fit in ",
                                                        DataTypeString(index_type))));
    std::vector<int64_t> dims(in.shape().dim_sizes().begin(), in.shape().dim_sizes().end());
    dims.back() = k;
    const TensorShape out_shape(dims);
    Tensor* values;
    Tensor* indices;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &values));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, out_shape, &indices));
    if (k == 0 || out_shape.num_elements() == 0) return;
    const int64_t rows = in.NumElements() / n;
    const T* x = in.data<T>();
    T* v = values->data<T>();
    cwise::ParallelFor(ctx, rows, n, [&](int64_t lo, int64_t hi) {
      std::vector<int64_t> order(n);
      for (int64_t r = lo; r < hi; ++r) {
        const T* row = x + r * n;
        std::iota(order.begin(), order.end(), 0);
        // A strict weak order even with NaNs (they count as the largest).
        auto before = [row](int64_t a, int64_t b) {
          const bool na = Eigen::numext::isnan(row[a]), nb = Eigen::numext::isnan(row[b]);
          if (na != nb) return na;
          if (!na && row[a] != row[b]) return row[b] < row[a];
          return a < b;
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          v[r * k + j] = row[order[j]];
          SetIndex(indices, r * k + j, order[j]);
        }
      }
    });
  }

 private:
  static void SetIndex(Tensor* t, int64_t i, int64_t value) {
    switch (t->dtype()) {
      case DT_INT16: t->data<int16_t>()[i] = static_cast<int16_t>(value); break;
      case DT_INT32: t->data<int32_t>()[i] = static_cast<int32_t>(value); break;
      default: t->data<int64_t>()[i] = value; break;
    }
  }
};

#define SLUICE_REG_TOPK_(T) \
  REGISTER_KERNEL_BUILDER(Name("TopKV2").Device(kDeviceCpu).TypeConstraint<T>("T"), TopKOp<T>)
SLUICE_REG_TOPK_(float);
SLUICE_REG_TOPK_(double);
SLUICE_REG_TOPK_(half);
SLUICE_REG_TOPK_(bfloat16);
SLUICE_REG_TOPK_(int8_t);
SLUICE_REG_TOPK_(int16_t);
SLUICE_REG_TOPK_(int32_t);
SLUICE_REG_TOPK_(int64_t);
SLUICE_REG_TOPK_(uint8_t);
SLUICE_REG_TOPK_(uint16_t);
#undef SLUICE_REG_TOPK_

}  // namespace
}  // namespace sluice

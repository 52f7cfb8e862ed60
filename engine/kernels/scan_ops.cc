// CPU kernels for Cumsum and Cumprod: x seen as [outer, n, inner] around the
// axis; each of the outer * inner lines is scanned in order (from the end
// when `reverse`), the running value kept in float for half and bfloat16 and
// in T otherwise, and lines of whole outer rows run in parallel chunks.
// Thread safety: kernels are stateless.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/accumulate.h"
#include "engine/kernels/array_kernel_util.h"
#include "engine/kernels/cwise_ops_common.h"

namespace sluice {
namespace {

// Integers wrap around (accumulate.h).
struct SumOp {
  template <typename A>
  static A Identity() { return A(0); }
  template <typename A>
  static A Apply(A a, A b) { return WrappingAdd(a, b); }
};
struct ProdOp {
  template <typename A>
  static A Identity() { return A(1); }
  template <typename A>
  static A Apply(A a, A b) { return WrappingMul(a, b); }
};

template <typename T, typename Op>
class ScanOp : public OpKernel {
 public:
  explicit ScanOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("exclusive", &exclusive_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("reverse", &reverse_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    OP_REQUIRES(ctx, ctx->input(1).dims() == 0,
                absl::InvalidArgumentError(
                    absl::StrCat("axis must be a scalar, got shape ", ctx->input(1).shape().DebugString())));
    auto axis_value = array_util::IndexScalar(ctx->input(1), "axis");
    OP_REQUIRES_OK(ctx, axis_value.status());
    OP_REQUIRES(ctx, x.dims() > 0,
                absl::InvalidArgumentError("x must be at least a vector to scan along an axis, got a scalar"));
    auto axis = array_util::CanonicalAxis(*axis_value, x.dims(), "axis");
    OP_REQUIRES_OK(ctx, axis.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    if (x.NumElements() == 0) return;
    const int64_t outer = array_util::DimProduct(x.shape(), 0, *axis);
    const int64_t n = x.dim_size(*axis);
    const int64_t inner = array_util::DimProduct(x.shape(), *axis + 1, x.dims());
    const T* in = x.data<T>();
    T* o = out->data<T>();
    const bool exclusive = exclusive_, reverse = reverse_;
    using A = RunningType<T>;
    // One outer row (n * inner elements) per unit of work; its inner lines
    // are scanned together, a row of `inner` running values at a time.
    cwise::ParallelFor(ctx, outer, n * inner, [&](int64_t first, int64_t last) {
      std::vector<A> running(static_cast<size_t>(inner));
      for (int64_t r = first; r < last; ++r) {
        const T* src = in + r * n * inner;
        T* dst = o + r * n * inner;
        std::fill(running.begin(), running.end(), Op::template Identity<A>());
        for (int64_t step = 0; step < n; ++step) {
          const int64_t k = reverse ? n - 1 - step : step;
          const T* row_in = src + k * inner;
          T* row_out = dst + k * inner;
          for (int64_t i = 0; i < inner; ++i) {
            const A v = static_cast<A>(row_in[i]);
            if (exclusive) {
              row_out[i] = static_cast<T>(running[i]);
              running[i] = Op::Apply(running[i], v);
            } else {
              running[i] = Op::Apply(running[i], v);
              row_out[i] = static_cast<T>(running[i]);
            }
          }
        }
      }
    });
  }

 private:
  bool exclusive_ = false;
  bool reverse_ = false;
};

#define SLUICE_REG_(T)                                                                                   \
  REGISTER_KERNEL_BUILDER(Name("Cumsum").Device(kDeviceCpu).TypeConstraint<T>("T"), (ScanOp<T, SumOp>)); \
  REGISTER_KERNEL_BUILDER(Name("Cumprod").Device(kDeviceCpu).TypeConstraint<T>("T"), (ScanOp<T, ProdOp>))
SLUICE_REG_(float);
SLUICE_REG_(double);
SLUICE_REG_(half);
SLUICE_REG_(bfloat16);
SLUICE_REG_(int8_t);
SLUICE_REG_(int16_t);
SLUICE_REG_(int32_t);
SLUICE_REG_(int64_t);
SLUICE_REG_(uint8_t);
SLUICE_REG_(uint16_t);
#undef SLUICE_REG_

}  // namespace
}  // namespace sluice

// CPU kernel for Where (one input): the coordinates of the nonzero elements
// in row-major order, as an int64 [count, rank] matrix. Two passes: count,
// then write each coordinate while a multi-index walks the input. Floating
// -0 is zero and NaN is nonzero (it is not equal to zero), as in TensorFlow.
// Thread safety: the kernel is stateless.
#include <cstdint>
#include <vector>

#include "engine/framework/op_kernel.h"

namespace sluice {
namespace {

template <typename T>
bool NonZero(const T& v) {
  if constexpr (std::is_same<T, bool>::value) {
    return v;
  } else {
    return !(v == T(0));
  }
}

template <typename T>
class WhereOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const T* v = in.data<T>();
    const int64_t n = in.NumElements();
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) count += NonZero(v[i]) ? 1 : 0;
    const int rank = in.dims();
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({count, rank}), &out));
    int64_t* o = out->data<int64_t>();
    std::vector<int64_t> index(rank, 0);
    for (int64_t i = 0; i < n; ++i) {
      if (NonZero(v[i])) {
        for (int d = 0; d < rank; ++d) *o++ = index[d];
      }
      for (int d = rank - 1; d >= 0; --d) {
        if (++index[d] < in.dim_size(d)) break;
        index[d] = 0;
      }
    }
  }
};

#define SLUICE_REG_(T) REGISTER_KERNEL_BUILDER(Name("Where").Device(kDeviceCpu).TypeConstraint<T>("T"), WhereOp<T>)
SLUICE_REG_(bool);
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

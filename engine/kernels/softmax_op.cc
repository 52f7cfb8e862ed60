// CPU kernels for Softmax and LogSoftmax over the last dimension of a tensor
// of rank >= 1. Rows run in parallel on the intra-op pool; each row is
// max-shifted and accumulated in float (double for double) for stability.
// Checks and allocation: softmax_shape.h (shared with the GPU kernels).
// Thread safety: kernels are stateless.
#include <cmath>

#include "engine/framework/op_kernel.h"
#include "engine/kernels/nn_util.h"
#include "engine/kernels/softmax_shape.h"
#include "engine/kernels/run_tasks.h"

namespace sluice {
namespace {

template <typename T, bool kLog>
class SoftmaxOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor* out;
    int64_t rows, depth;
    OP_REQUIRES_OK(ctx, PrepareSoftmax(ctx, &out, &rows, &depth));
    if (rows == 0) return;
    const T* in = ctx->input(0).data<T>();
    T* o = out->data<T>();
    ParallelForRanges(
        ctx->eigen_cpu_device().getPool(), ctx->eigen_cpu_device().numThreads(), rows,
        static_cast<int64_t>(depth * 20), 1,
        [&](Eigen::Index first, Eigen::Index last) {
          for (Eigen::Index r = first; r < last; ++r) SoftmaxRow<T>(in + r * depth, depth, kLog, o + r * depth);
        });
  }
};

#define SLUICE_REGISTER_SOFTMAX_(T)                                                                     \
  REGISTER_KERNEL_BUILDER(Name("Softmax").Device(kDeviceCpu).TypeConstraint<T>("T"), SoftmaxOp<T, false>); \
  REGISTER_KERNEL_BUILDER(Name("LogSoftmax").Device(kDeviceCpu).TypeConstraint<T>("T"), SoftmaxOp<T, true>)
SLUICE_REGISTER_SOFTMAX_(float);
SLUICE_REGISTER_SOFTMAX_(double);
SLUICE_REGISTER_SOFTMAX_(half);
SLUICE_REGISTER_SOFTMAX_(bfloat16);
#undef SLUICE_REGISTER_SOFTMAX_

}  // namespace
}  // namespace sluice

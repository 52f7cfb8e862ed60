// GPU kernel for L2Loss (float32, float64): sum(t^2) / 2 as a scalar in device
// memory, the square as one element-wise pass into a temp, then the reduction
// kernels' sum over all elements (dividing by 2 in its last pass). With it the
// optimizer's gradient global norm (L2Loss per gradient, AddN, Mul, Sqrt;
// models/optimizer.cc) stays on the GPU; without it every gradient crossed to
// the CPU for the norm (on summary steps, and every step with
// clip_global_norm). Sums run in T, in the reduction kernels' order; results
// differ from the CPU's by rounding (all terms are >= 0: no cancellation).
// Thread safety: the kernel is stateless.
#include "engine/framework/op_kernel.h"
#include "engine/kernels/gpu/gpu_kernel_util.h"
#include "engine/kernels/gpu/reduction_kernels.h"
#include "engine/runtime/gpu/gpu_device.h"

namespace sluice {
namespace gpu {
namespace {

template <typename T>
class L2LossGpuOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& t = ctx->input(0);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    cudaStream_t stream = ComputeStream(ctx);
    const int64_t n = t.NumElements();
    if (n == 0) {
      OP_REQUIRES_CUDA(ctx, LaunchFill<T>(stream, out->data<T>(), 1, T(0)));
      return;
    }
    Tensor squares;
    OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeToEnum<T>::value, TensorShape({n}), &squares));
    OP_REQUIRES_CUDA(ctx, LaunchUnary(stream, UnaryOp::kSquare, ElemTypeOf<T>(), t.raw_data(), squares.raw_data(), n));
    Tensor scratch;
    const int64_t scratch_n = ReduceScratchElements(1, n, 1);
    if (scratch_n > 0) {
      OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeToEnum<T>::value, TensorShape({scratch_n}), &scratch));
    }
    OP_REQUIRES_CUDA(ctx, LaunchReduce3<T>(stream, ReduceKind::kSum, squares.data<T>(), out->data<T>(), 1, n, 1, T(2),
                                           scratch_n > 0 ? scratch.data<T>() : nullptr));
  }
};

REGISTER_KERNEL_BUILDER(Name("L2Loss").Device(kDeviceGpu).TypeConstraint<float>("T"), L2LossGpuOp<float>);
REGISTER_KERNEL_BUILDER(Name("L2Loss").Device(kDeviceGpu).TypeConstraint<double>("T"), L2LossGpuOp<double>);

}  // namespace
}  // namespace gpu
}  // namespace sluice

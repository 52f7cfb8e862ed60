// GPU kernels (OpKernel glue) for BiasAdd and BiasAddGrad, NHWC (channels
// last, any rank >= 2) and NCHW (channels in dimension 1), with the CPU
// kernels' shape checks and messages (engine/kernels/bias_shape.h).
// Thread safety: kernels are stateless.
#include "engine/kernels/bias_shape.h"
#include "engine/kernels/gpu/bias_gpu.h"
#include "engine/kernels/gpu/gpu_kernel_util.h"

namespace sluice {
namespace gpu {
namespace {

template <typename T>
class BiasAddGpuOp : public OpKernel {
 public:
  explicit BiasAddGpuOp(OpKernelConstruction* ctx) : OpKernel(ctx), nchw_(BiasIsNchw(ctx)) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    BiasLayout l;
    Tensor* out;
    OP_REQUIRES_OK(ctx, PrepareBiasAdd(ctx, nchw_, &l, &out));
    if (x.NumElements() == 0) return;
    OP_REQUIRES_CUDA(ctx, LaunchBiasAdd(ComputeStream(ctx), ElemTypeOf<T>(), x.raw_data(), bias.raw_data(),
                                        out->raw_data(), l.outer, l.channels, l.inner));
  }

 private:
  const bool nchw_;
};

template <typename T>
class BiasAddGradGpuOp : public OpKernel {
 public:
  explicit BiasAddGradGpuOp(OpKernelConstruction* ctx) : OpKernel(ctx), nchw_(BiasIsNchw(ctx)) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    BiasLayout l;
    Tensor* out;
    OP_REQUIRES_OK(ctx, PrepareBiasAddGrad(ctx, nchw_, &l, &out));
    if (l.channels == 0) return;
    GpuDevice* gpu = GetGpuDevice(ctx);
    const BiasGradPlan plan = PlanBiasGrad(l.outer, l.channels, l.inner, gpu->properties().multiProcessorCount);
    Tensor temp;
    if (plan.splits > 1) {
      OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeToEnum<T>::value, TensorShape({plan.splits, l.channels}), &temp));
    }
    OP_REQUIRES_CUDA(ctx, LaunchBiasAddGrad(gpu->compute_stream(), ElemTypeOf<T>(), plan, dy.raw_data(),
                                            out->raw_data(), plan.splits > 1 ? temp.raw_data() : nullptr, l.outer,
                                            l.channels, l.inner));
  }

 private:
  const bool nchw_;
};

#define SLUICE_REG_(T)                                                                              \
  REGISTER_KERNEL_BUILDER(Name("BiasAdd").Device(kDeviceGpu).TypeConstraint<T>("T"), BiasAddGpuOp<T>); \
  REGISTER_KERNEL_BUILDER(Name("BiasAddGrad").Device(kDeviceGpu).TypeConstraint<T>("T"), BiasAddGradGpuOp<T>)
SLUICE_REG_(float);
SLUICE_REG_(double);
#undef SLUICE_REG_

}  // namespace
}  // namespace gpu
}  // namespace sluice

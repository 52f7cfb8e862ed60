// GPU kernels (OpKernel glue) for BiasAdd and BiasAddGrad, NHWC (channels
// last, any rank >= 2) and NCHW (channels in dimension 1), with the CPU
// kernels' shape checks and messages (engine/kernels/bias_op.cc).
// Thread safety: kernels are stateless.
#include "absl/strings/str_cat.h"
#include "engine/kernels/gpu/bias_gpu.h"
#include "engine/kernels/gpu/gpu_kernel_util.h"

namespace sluice {
namespace gpu {
namespace {

// The tensor viewed as [outer, channels, inner] for the node's data_format.
struct BiasLayout {
  int64_t outer = 1, channels = 1, inner = 1;
};

absl::Status Layout(const TensorShape& shape, bool nchw, BiasLayout* layout) {
  if (shape.dims() < 2) {
    return absl::InvalidArgumentError(absl::StrCat("input must be at least 2-D, got ", shape.DebugString()));
  }
  const int cdim = nchw ? 1 : shape.dims() - 1;
  layout->channels = shape.dim_size(cdim);
  layout->outer = 1;
  layout->inner = 1;
  for (int i = 0; i < cdim; ++i) layout->outer *= shape.dim_size(i);
  for (int i = cdim + 1; i < shape.dims(); ++i) layout->inner *= shape.dim_size(i);
  return absl::OkStatus();
}

bool IsNchw(OpKernelConstruction* ctx) {
  std::string format = "NHWC";
  ctx->GetAttr("data_format", &format).IgnoreError();
  return format == "NCHW";
}

template <typename T>
class BiasAddGpuOp : public OpKernel {
 public:
  explicit BiasAddGpuOp(OpKernelConstruction* ctx) : OpKernel(ctx), nchw_(IsNchw(ctx)) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    BiasLayout l;
    OP_REQUIRES_OK(ctx, Layout(x.shape(), nchw_, &l));
    OP_REQUIRES(ctx, bias.dims() == 1 && bias.dim_size(0) == l.channels,
                absl::InvalidArgumentError(absl::StrCat(
                    "must provide as many biases as the channel dimension of the input: bias ",
                    bias.shape().DebugString(), " vs input ", x.shape().DebugString())));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
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
  explicit BiasAddGradGpuOp(OpKernelConstruction* ctx) : OpKernel(ctx), nchw_(IsNchw(ctx)) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    BiasLayout l;
    OP_REQUIRES_OK(ctx, Layout(dy.shape(), nchw_, &l));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({l.channels}), &out));
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

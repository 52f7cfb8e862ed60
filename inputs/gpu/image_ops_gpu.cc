// The GPU kernel of ImageToFloat (inputs/image_ops.cc), so that a training
// batch crosses to the GPU as uint8 pixels, a quarter of the float32 bytes,
// and is converted there; the CPU kernel is inputs/image_kernels.cc.
// Thread safety: stateless after construction.
#include "engine/framework/op_kernel.h"
#include "engine/runtime/gpu/gpu_device.h"
#include "inputs/gpu/image_gpu.h"

namespace sluice {
namespace gpu {
namespace {

class ImageToFloatGpuOp : public OpKernel {
 public:
  explicit ImageToFloatGpuOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("scale", &scale_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    const int64_t n = in.NumElements();
    if (n == 0) return;
    OP_REQUIRES_CUDA(ctx, LaunchImageToFloat(GetGpuDevice(ctx)->compute_stream(), in.data<uint8_t>(), scale_,
                                             out->data<float>(), n));
  }
  bool IsExpensive() const override { return false; }

 private:
  float scale_ = 1.0f / 255;
};

REGISTER_KERNEL_BUILDER(Name("ImageToFloat").Device(kDeviceGpu), ImageToFloatGpuOp);

}  // namespace
}  // namespace gpu
}  // namespace sluice

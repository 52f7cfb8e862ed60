// GPU kernel (OpKernel glue) for Sluice's Dropout op: shapes checked on the
// host as on the CPU (engine/kernels/dropout_op.cc), the key made from
// (seed, seed2) the same way, then one launch (dropout_kernels.h) that reads
// rate and step on the device and draws the CPU's masks. Difference from the
// CPU: a rate outside [0, 1) gives NaN outputs instead of InvalidArgument
// (rate lives in device memory).
// Thread safety: Compute keeps no state and may run concurrently.
#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/gpu/dropout_kernels.h"
#include "engine/kernels/philox_random.h"
#include "engine/runtime/gpu/gpu_device.h"

namespace sluice {
namespace gpu {
namespace {

template <typename T>
class GpuDropoutOp : public OpKernel {
 public:
  explicit GpuDropoutOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    int64_t seed = 0, seed2 = 0;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("seed", &seed));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("seed2", &seed2));
    key_ = philox::KeyFromSeeds(seed, seed2);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& rate_t = ctx->input(1);
    OP_REQUIRES(ctx, rate_t.NumElements() == 1 && rate_t.dims() == 0,
                absl::InvalidArgumentError(absl::StrCat("rate must be a scalar, got ", rate_t.shape().DebugString())));
    Tensor *out, *mask;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, x.shape(), &mask));
    const Tensor& step_t = ctx->input(2);
    OP_REQUIRES(ctx, step_t.NumElements() == 1 && step_t.dims() == 0,
                absl::InvalidArgumentError(absl::StrCat("step must be a scalar, got ", step_t.shape().DebugString())));
    const int64_t n = x.NumElements();
    if (n == 0) return;
    OP_REQUIRES_CUDA(ctx, LaunchDropout<T>(GetGpuDevice(ctx)->compute_stream(), key_.k0, key_.k1, x.data<T>(),
                                           rate_t.data<T>(), step_t.data<int64_t>(), out->data<T>(),
                                           mask->data<T>(), n));
  }

 private:
  philox::Key key_;
};

REGISTER_KERNEL_BUILDER(Name("Dropout").Device(kDeviceGpu).TypeConstraint<float>("T"), GpuDropoutOp<float>);
REGISTER_KERNEL_BUILDER(Name("Dropout").Device(kDeviceGpu).TypeConstraint<double>("T"), GpuDropoutOp<double>);

}  // namespace
}  // namespace gpu
}  // namespace sluice

// GPU kernels (OpKernel glue) for ApplyGradientDescent, ApplyMomentum,
// ApplyAdam, ApplyAdagrad and ApplyRMSProp (float, double). As on the CPU
// (engine/kernels/training_ops.cc): lock the distinct ref mutexes in address
// order, check initialization and shapes (both with training_ops_util.h),
// update in place, forward the variable's ref to output 0. Here the update is
// ONE kernel launch on the compute stream, and the locks are held only while
// it is enqueued: later readers of the variable are ordered after it by the
// stream. Scalars stay on the device and are read by the kernel.
// Thread safety: mutation is enqueued under the variables' mutexes.
#include <cstdint>

#include "engine/framework/op_kernel.h"
#include "engine/kernels/gpu/training_kernels.h"
#include "engine/kernels/training_ops_util.h"
#include "engine/runtime/gpu/gpu_device.h"

namespace sluice {
namespace gpu {
namespace {

template <typename T>
T* Ref(OpKernelContext* ctx, int i) {
  return ctx->mutable_input(i)->data<T>();
}
template <typename T>
const T* In(OpKernelContext* ctx, int i) {
  return ctx->input(i).data<T>();
}
int64_t Size(OpKernelContext* ctx) { return ctx->mutable_input(0)->NumElements(); }
cudaStream_t Stream(OpKernelContext* ctx) { return GetGpuDevice(ctx)->compute_stream(); }

template <typename T>
class GpuApplyGradientDescentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    {
      RefInputLocks locks(ctx, 1);
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, 1, {2}, {1}));
      OP_REQUIRES_CUDA(ctx, LaunchApplyGradientDescent<T>(Stream(ctx), Ref<T>(ctx, 0), In<T>(ctx, 1), In<T>(ctx, 2),
                                                          Size(ctx)));
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
};

template <typename T>
class GpuApplyMomentumOp : public OpKernel {
 public:
  explicit GpuApplyMomentumOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("use_nesterov", &nesterov_));
  }
  void Compute(OpKernelContext* ctx) override {
    {
      RefInputLocks locks(ctx, 2);
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, 2, {3}, {2, 4}));
      OP_REQUIRES_CUDA(ctx, LaunchApplyMomentum<T>(Stream(ctx), Ref<T>(ctx, 0), Ref<T>(ctx, 1), In<T>(ctx, 2),
                                                   In<T>(ctx, 3), In<T>(ctx, 4), Size(ctx), nesterov_));
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool nesterov_ = false;
};

template <typename T>
class GpuApplyAdamOp : public OpKernel {
 public:
  explicit GpuApplyAdamOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("use_nesterov", &nesterov_));
  }
  void Compute(OpKernelContext* ctx) override {
    {
      RefInputLocks locks(ctx, 3);
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, 3, {9}, {3, 4, 5, 6, 7, 8}));
      OP_REQUIRES_CUDA(ctx, LaunchApplyAdam<T>(Stream(ctx), Ref<T>(ctx, 0), Ref<T>(ctx, 1), Ref<T>(ctx, 2),
                                               In<T>(ctx, 3), In<T>(ctx, 4), In<T>(ctx, 5), In<T>(ctx, 6),
                                               In<T>(ctx, 7), In<T>(ctx, 8), In<T>(ctx, 9), Size(ctx), nesterov_));
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool nesterov_ = false;
};

template <typename T>
class GpuApplyAdagradOp : public OpKernel {
 public:
  explicit GpuApplyAdagradOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("update_slots", &update_slots_));
  }
  void Compute(OpKernelContext* ctx) override {
    {
      RefInputLocks locks(ctx, 2);
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, 2, {3}, {2}));
      OP_REQUIRES_CUDA(ctx, LaunchApplyAdagrad<T>(Stream(ctx), Ref<T>(ctx, 0), Ref<T>(ctx, 1), In<T>(ctx, 2),
                                                  In<T>(ctx, 3), Size(ctx), update_slots_));
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool update_slots_ = true;
};

template <typename T>
class GpuApplyRMSPropOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    {
      RefInputLocks locks(ctx, 3);
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, 3, {7}, {3, 4, 5, 6}));
      OP_REQUIRES_CUDA(ctx, LaunchApplyRMSProp<T>(Stream(ctx), Ref<T>(ctx, 0), Ref<T>(ctx, 1), Ref<T>(ctx, 2),
                                                  In<T>(ctx, 3), In<T>(ctx, 4), In<T>(ctx, 5), In<T>(ctx, 6),
                                                  In<T>(ctx, 7), Size(ctx)));
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
};

#define SLUICE_REGISTER_GPU_TRAINING_(T)                                                                          \
  REGISTER_KERNEL_BUILDER(Name("ApplyGradientDescent").Device(kDeviceGpu).TypeConstraint<T>("T"),                \
                          GpuApplyGradientDescentOp<T>);                                                          \
  REGISTER_KERNEL_BUILDER(Name("ApplyMomentum").Device(kDeviceGpu).TypeConstraint<T>("T"), GpuApplyMomentumOp<T>); \
  REGISTER_KERNEL_BUILDER(Name("ApplyAdam").Device(kDeviceGpu).TypeConstraint<T>("T"), GpuApplyAdamOp<T>);         \
  REGISTER_KERNEL_BUILDER(Name("ApplyAdagrad").Device(kDeviceGpu).TypeConstraint<T>("T"), GpuApplyAdagradOp<T>);   \
  REGISTER_KERNEL_BUILDER(Name("ApplyRMSProp").Device(kDeviceGpu).TypeConstraint<T>("T"), GpuApplyRMSPropOp<T>)
SLUICE_REGISTER_GPU_TRAINING_(float);
SLUICE_REGISTER_GPU_TRAINING_(double);
#undef SLUICE_REGISTER_GPU_TRAINING_

}  // namespace
}  // namespace gpu
}  // namespace sluice

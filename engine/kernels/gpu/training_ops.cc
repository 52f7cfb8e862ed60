// GPU kernels (OpKernel glue) for ApplyGradientDescent, ApplyMomentum,
// ApplyAdam, ApplyAdagrad and ApplyRMSProp (float, double). As on the CPU
// (engine/kernels/training_ops.cc): lock the distinct ref mutexes in address
// order, check initialization and shapes with the CPU kernel's errors, update
// in place, forward the variable's ref to output 0. Here the update is ONE
// kernel launch on the compute stream, and the locks are held only while it
// is enqueued: later readers of the variable are ordered after it by the
// stream. Scalars stay on the device and are read by the kernel.
// Thread safety: mutation is enqueued under the variables' mutexes.
#include <algorithm>
#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/gpu/training_kernels.h"
#include "engine/runtime/gpu/gpu_device.h"

namespace sluice {
namespace gpu {
namespace {

// Locks the distinct mutexes of ref inputs [0, count) in address order.
class RefInputLocks {
 public:
  RefInputLocks(OpKernelContext* ctx, int count) {
    for (int i = 0; i < count; ++i) {
      absl::Mutex* mu = ctx->input_ref_mutex(i);
      if (mu != nullptr && std::find(mus_.begin(), mus_.end(), mu) == mus_.end()) mus_.push_back(mu);
    }
    std::sort(mus_.begin(), mus_.end());
    for (absl::Mutex* mu : mus_) mu->Lock();
  }
  ~RefInputLocks() {
    for (auto it = mus_.rbegin(); it != mus_.rend(); ++it) (*it)->Unlock();
  }
  RefInputLocks(const RefInputLocks&) = delete;
  RefInputLocks& operator=(const RefInputLocks&) = delete;

 private:
  absl::InlinedVector<absl::Mutex*, 3> mus_;
};

// The CPU kernel's checks (refs initialized and of one shape, dense inputs of
// the variable's shape, scalars). Call with the locks held.
absl::Status CheckInputs(OpKernelContext* ctx, int num_refs, std::initializer_list<int> dense,
                         std::initializer_list<int> scalars) {
  for (int i = 0; i < num_refs; ++i) {
    if (!ctx->input_is_ref(i)) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " must be a variable reference"));
    }
    if (!ctx->mutable_input(i)->IsInitialized()) {
      return absl::FailedPreconditionError(absl::StrCat("Attempting to use uninitialized value in input ", i));
    }
    if (ctx->mutable_input(i)->shape() != ctx->mutable_input(0)->shape()) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " has shape ",
                                                     ctx->mutable_input(i)->shape().DebugString(),
                                                     " but the variable has shape ",
                                                     ctx->mutable_input(0)->shape().DebugString()));
    }
  }
  for (int i : dense) {
    if (ctx->input(i).shape() != ctx->mutable_input(0)->shape()) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " has shape ", ctx->input(i).shape().DebugString(),
                                                     " but the variable has shape ",
                                                     ctx->mutable_input(0)->shape().DebugString()));
    }
  }
  for (int i : scalars) {
    if (ctx->input(i).dims() != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", i, " must be a scalar, got shape ", ctx->input(i).shape().DebugString()));
    }
  }
  return absl::OkStatus();
}

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
      OP_REQUIRES_OK(ctx, CheckInputs(ctx, 1, {2}, {1}));
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
      OP_REQUIRES_OK(ctx, CheckInputs(ctx, 2, {3}, {2, 4}));
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
      OP_REQUIRES_OK(ctx, CheckInputs(ctx, 3, {9}, {3, 4, 5, 6, 7, 8}));
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
      OP_REQUIRES_OK(ctx, CheckInputs(ctx, 2, {3}, {2}));
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
      OP_REQUIRES_OK(ctx, CheckInputs(ctx, 3, {7}, {3, 4, 5, 6}));
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

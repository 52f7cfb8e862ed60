// CPU kernels for the control-flow primitives. Switch forwards its input to
// one port and leaves the other dead; Merge forwards whichever input is live;
// Enter, Exit, NextIteration and LoopCond forward their input (the executor
// moves the value between frames and iterations); ControlTrigger does nothing
// (the executor runs it live even after dead inputs). All are cheap.
#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"

namespace sluice {
namespace {

class SwitchOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& pred = ctx->input(1);
    OP_REQUIRES(ctx, pred.NumElements() == 1 && pred.dims() == 0,
                absl::InvalidArgumentError(absl::StrCat("'pred' must be a scalar, got shape ", pred.shape().DebugString())));
    const int port = pred.scalar<bool>() ? 1 : 0;
    if (ctx->input_is_ref(0)) {
      ctx->forward_ref_input_to_ref_output(0, port);
    } else {
      ctx->set_output(port, ctx->input(0));
    }
  }
  bool IsExpensive() const override { return false; }
};

class MergeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      if (!ctx->has_input(i)) continue;
      if (ctx->input_is_ref(i)) {
        ctx->forward_ref_input_to_ref_output(i, 0);
      } else {
        ctx->set_output(0, ctx->input(i));
      }
      ctx->set_output(1, Tensor::Scalar<int32_t>(i));
      return;
    }
    ctx->CtxFailure(absl::InternalError("Merge ran with no live input"));
  }
  bool IsExpensive() const override { return false; }
};

class ForwardOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    if (ctx->input_is_ref(0)) {
      ctx->forward_ref_input_to_ref_output(0, 0);
    } else {
      ctx->set_output(0, ctx->input(0));
    }
  }
  bool IsExpensive() const override { return false; }
};

class LoopCondOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES(ctx, in.NumElements() == 1 && in.dims() == 0,
                absl::InvalidArgumentError(absl::StrCat("LoopCond input must be a scalar, got shape ",
                                                        in.shape().DebugString())));
    ctx->set_output(0, in);
  }
  bool IsExpensive() const override { return false; }
};

// The executor gives ControlTrigger its meaning (it is never dead).
class ControlTriggerOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
  bool IsExpensive() const override { return false; }
};

REGISTER_KERNEL_BUILDER(Name("Switch").Device(kDeviceCpu), SwitchOp);
REGISTER_KERNEL_BUILDER(Name("Merge").Device(kDeviceCpu), MergeOp);
REGISTER_KERNEL_BUILDER(Name("Enter").Device(kDeviceCpu), ForwardOp);
REGISTER_KERNEL_BUILDER(Name("Exit").Device(kDeviceCpu), ForwardOp);
REGISTER_KERNEL_BUILDER(Name("NextIteration").Device(kDeviceCpu), ForwardOp);
REGISTER_KERNEL_BUILDER(Name("LoopCond").Device(kDeviceCpu), LoopCondOp);
REGISTER_KERNEL_BUILDER(Name("ControlTrigger").Device(kDeviceCpu), ControlTriggerOp);

}  // namespace
}  // namespace sluice

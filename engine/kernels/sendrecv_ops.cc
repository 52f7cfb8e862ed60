// CPU kernels for _Send and _Recv over the step's rendezvous. _Recv is an
// async kernel: it registers with the step's cancellation manager and returns
// at once; the value (or the abort) resumes it. Attrs, keys and the receive:
// sendrecv_util.h (shared with the GPU kernels).
#include <utility>

#include "engine/framework/op_kernel.h"
#include "engine/kernels/sendrecv_util.h"

namespace sluice {
namespace {

class SendOp : public OpKernel {
 public:
  explicit SendOp(OpKernelConstruction* ctx) : OpKernel(ctx) { OP_REQUIRES_OK(ctx, attrs_.Read(ctx)); }
  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES(ctx, ctx->rendezvous() != nullptr, absl::InternalError("_Send ran without a rendezvous"));
    std::string loop_key;
    const std::string& key = attrs_.Key(ctx, &loop_key);
    if (ctx->is_input_dead()) {
      OP_REQUIRES_OK(ctx, ctx->rendezvous()->Send(key, Tensor(), true));
    } else {
      OP_REQUIRES_OK(ctx, ctx->rendezvous()->Send(key, ctx->input(0), false));
    }
  }
  bool IsExpensive() const override { return false; }

 private:
  RendezvousAttrs attrs_;
};

class RecvOp : public AsyncOpKernel {
 public:
  explicit RecvOp(OpKernelConstruction* ctx) : AsyncOpKernel(ctx) { OP_REQUIRES_OK(ctx, attrs_.Read(ctx)); }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    RecvFromRendezvous(
        ctx, attrs_, output_type(0),
        [ctx](const Tensor& value) {
          ctx->set_output(0, value);
          return absl::OkStatus();
        },
        std::move(done));
  }
  bool IsExpensive() const override { return false; }

 private:
  RendezvousAttrs attrs_;
};

REGISTER_KERNEL_BUILDER(Name("_Send").Device(kDeviceCpu), SendOp);
REGISTER_KERNEL_BUILDER(Name("_Recv").Device(kDeviceCpu), RecvOp);

}  // namespace
}  // namespace sluice

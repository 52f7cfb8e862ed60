// CPU kernel for Assert: a true condition does nothing; a false one fails the
// step with InvalidArgument "assertion failed: [d0] [d1] ...", each data
// tensor summarized to its first `summarize` values (TensorFlow's message).
// Stateless; Compute is safe to run concurrently.
#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"

namespace sluice {
namespace {

class AssertOp : public OpKernel {
 public:
  explicit AssertOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("summarize", &summarize_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& cond = ctx->input(0);
    // TensorFlow also takes a one-element vector (a "legacy scalar").
    OP_REQUIRES(ctx, cond.dims() == 0 || (cond.dims() == 1 && cond.dim_size(0) == 1),
                absl::InvalidArgumentError(
                    absl::StrCat("condition must be a scalar, got shape ", cond.shape().DebugString())));
    if (cond.data<bool>()[0]) return;
    std::string msg = "assertion failed:";
    const int max_entries = summarize_ < 0 ? INT32_MAX : static_cast<int>(std::min<int64_t>(summarize_, INT32_MAX));
    for (int i = 1; i < ctx->num_inputs(); ++i) {
      absl::StrAppend(&msg, " [", ctx->input(i).SummarizeValue(max_entries), "]");
    }
    ctx->CtxFailure(absl::InvalidArgumentError(msg));
  }
  bool IsExpensive() const override { return false; }

 private:
  int64_t summarize_ = 3;
};
REGISTER_KERNEL_BUILDER(Name("Assert").Device(kDeviceCpu), AssertOp);

}  // namespace
}  // namespace sluice

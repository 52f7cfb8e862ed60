// CPU kernels for MatchingFiles and CountUpTo.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/platform/env.h"

namespace sluice {
namespace {

class MatchingFilesOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& patterns = ctx->input(0);
    std::vector<std::string> all;
    for (int64_t i = 0; i < patterns.NumElements(); ++i) {
      auto m = Env::Default()->GetMatchingPaths(patterns.data<tstring>()[i]);
      OP_REQUIRES_OK(ctx, m.status());
      all.insert(all.end(), m->begin(), m->end());
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({static_cast<int64_t>(all.size())}), &out));
    for (size_t i = 0; i < all.size(); ++i) out->data<tstring>()[i] = all[i];
  }
};

template <typename T>
class CountUpToOp : public OpKernel {
 public:
  explicit CountUpToOp(OpKernelConstruction* ctx) : OpKernel(ctx) { OP_REQUIRES_OK(ctx, ctx->GetAttr("limit", &limit_)); }
  void Compute(OpKernelContext* ctx) override {
    T before;
    {
      absl::MutexLock lock(ctx->input_ref_mutex(0));
      Tensor* v = ctx->mutable_input(0);
      OP_REQUIRES(ctx, v->NumElements() == 1,
                  absl::InvalidArgumentError("CountUpTo needs a scalar variable"));
      before = v->data<T>()[0];
      OP_REQUIRES(ctx, before < limit_, absl::OutOfRangeError(absl::StrCat("reached the limit of ", limit_)));
      v->data<T>()[0] = before + 1;
    }
    ctx->set_output(0, Tensor::Scalar<T>(before));
  }

 private:
  int64_t limit_ = 0;
};

REGISTER_KERNEL_BUILDER(Name("MatchingFiles").Device(kDeviceCpu), MatchingFilesOp);
REGISTER_KERNEL_BUILDER(Name("CountUpTo").Device(kDeviceCpu).TypeConstraint<int32_t>("T"), CountUpToOp<int32_t>);
REGISTER_KERNEL_BUILDER(Name("CountUpTo").Device(kDeviceCpu).TypeConstraint<int64_t>("T"), CountUpToOp<int64_t>);

}  // namespace
}  // namespace sluice

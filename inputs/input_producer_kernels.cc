// CPU kernels for MatchingFiles, CountUpTo and ShuffleForEpoch.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/platform/env.h"
#include "inputs/file_order.h"

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

// Copies element order[i] of a vector to element i; any dtype (strings by
// value).
class ShuffleForEpochOp : public OpKernel {
 public:
  explicit ShuffleForEpochOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("seed", &seed_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(0);
    const Tensor& epoch = ctx->input(1);
    OP_REQUIRES(ctx, value.dims() == 1,
                absl::InvalidArgumentError(absl::StrCat("value must be a vector, got shape ",
                                                        value.shape().DebugString())));
    OP_REQUIRES(ctx, epoch.NumElements() == 1 && epoch.dims() == 0,
                absl::InvalidArgumentError("epoch must be a scalar"));
    const int64_t n = value.NumElements();
    const std::vector<int64_t> order = SeededPermutation(static_cast<uint64_t>(seed_), epoch.data<int64_t>()[0], n);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, value.shape(), &out));
    if (value.dtype() == DT_STRING) {
      for (int64_t i = 0; i < n; ++i) out->data<tstring>()[i] = value.data<tstring>()[order[i]];
      return;
    }
    const size_t bytes = DataTypeSize(value.dtype());
    OP_REQUIRES(ctx, bytes > 0,
                absl::InvalidArgumentError(absl::StrCat("unsupported dtype ",
                                                        DataTypeString(value.dtype()))));
    const char* from = static_cast<const char*>(value.raw_data());
    char* to = static_cast<char*>(out->raw_data());
    for (int64_t i = 0; i < n; ++i) std::memcpy(to + i * bytes, from + order[i] * bytes, bytes);
  }

 private:
  int64_t seed_ = 1;
};

REGISTER_KERNEL_BUILDER(Name("MatchingFiles").Device(kDeviceCpu), MatchingFilesOp);
REGISTER_KERNEL_BUILDER(Name("CountUpTo").Device(kDeviceCpu).TypeConstraint<int32_t>("T"), CountUpToOp<int32_t>);
REGISTER_KERNEL_BUILDER(Name("CountUpTo").Device(kDeviceCpu).TypeConstraint<int64_t>("T"), CountUpToOp<int64_t>);
REGISTER_KERNEL_BUILDER(Name("ShuffleForEpoch").Device(kDeviceCpu), ShuffleForEpochOp);

}  // namespace
}  // namespace sluice

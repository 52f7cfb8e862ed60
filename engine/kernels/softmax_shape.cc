// See softmax_shape.h.
#include "engine/kernels/softmax_shape.h"

namespace sluice {

absl::Status PrepareSoftmax(OpKernelContext* ctx, Tensor** out, int64_t* rows, int64_t* depth) {
  const Tensor& x = ctx->input(0);
  if (x.dims() < 1) {
    return absl::InvalidArgumentError(absl::StrCat("logits must have rank >= 1, got ", x.shape().DebugString()));
  }
  absl::Status s = ctx->allocate_output(0, x.shape(), out);
  if (!s.ok()) return s;
  *depth = x.dim_size(x.dims() - 1);
  *rows = x.NumElements() == 0 ? 0 : x.NumElements() / *depth;
  return absl::OkStatus();
}

absl::Status PrepareXent(OpKernelContext* ctx, bool sparse, Tensor** loss, Tensor** backprop) {
  const Tensor& logits = ctx->input(0);
  const Tensor& labels = ctx->input(1);
  if (logits.dims() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("logits must be 2-D [batch, classes], got ", logits.shape().DebugString()));
  }
  if (sparse) {
    if (labels.dims() != 1 || labels.dim_size(0) != logits.dim_size(0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("logits and labels must have the same first dimension, got logits shape ",
                       logits.shape().DebugString(), " and labels shape ", labels.shape().DebugString()));
    }
  } else if (labels.shape() != logits.shape()) {
    return absl::InvalidArgumentError(absl::StrCat("logits and labels must be the same size: logits ",
                                                   logits.shape().DebugString(), " vs labels ",
                                                   labels.shape().DebugString()));
  }
  if (logits.dim_size(0) > 0 && logits.dim_size(1) == 0) {
    return absl::InvalidArgumentError("logits must have at least one class");
  }
  absl::Status s = ctx->allocate_output(0, TensorShape({logits.dim_size(0)}), loss);
  if (s.ok()) s = ctx->allocate_output(1, logits.shape(), backprop);
  return s;
}

}  // namespace sluice

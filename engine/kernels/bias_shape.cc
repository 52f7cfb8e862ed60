// See bias_shape.h.
#include "engine/kernels/bias_shape.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

// InvalidArgument for a shape of rank < 2.
absl::Status MakeBiasLayout(const TensorShape& shape, bool nchw, BiasLayout* layout) {
  if (shape.dims() < 2) {
    return absl::InvalidArgumentError(absl::StrCat("input must be at least 2-D, got ", shape.DebugString()));
  }
  const int cdim = nchw ? 1 : shape.dims() - 1;
  layout->channels = shape.dim_size(cdim);
  layout->outer = 1;
  layout->inner = 1;
  for (int i = 0; i < cdim; ++i) layout->outer *= shape.dim_size(i);
  for (int i = cdim + 1; i < shape.dims(); ++i) layout->inner *= shape.dim_size(i);
  return absl::OkStatus();
}

}  // namespace

bool BiasIsNchw(OpKernelConstruction* ctx) {
  std::string format = "NHWC";
  ctx->GetAttr("data_format", &format).IgnoreError();
  return format == "NCHW";
}

absl::Status PrepareBiasAdd(OpKernelContext* ctx, bool nchw, BiasLayout* layout, Tensor** out) {
  const Tensor& x = ctx->input(0);
  const Tensor& bias = ctx->input(1);
  absl::Status s = MakeBiasLayout(x.shape(), nchw, layout);
  if (!s.ok()) return s;
  if (bias.dims() != 1 || bias.dim_size(0) != layout->channels) {
    return absl::InvalidArgumentError(
        absl::StrCat("must provide as many biases as the channel dimension of the input: bias ",
                     bias.shape().DebugString(), " vs input ", x.shape().DebugString()));
  }
  return ctx->allocate_output(0, x.shape(), out);
}

absl::Status PrepareBiasAddGrad(OpKernelContext* ctx, bool nchw, BiasLayout* layout, Tensor** out) {
  absl::Status s = MakeBiasLayout(ctx->input(0).shape(), nchw, layout);
  if (!s.ok()) return s;
  return ctx->allocate_output(0, TensorShape({layout->channels}), out);
}

}  // namespace sluice

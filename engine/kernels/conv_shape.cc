// See conv_shape.h.
#include "engine/kernels/conv_shape.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

// out_backprop (input 2) must have the convolution's output shape.
absl::Status CheckOutBackprop(OpKernelContext* ctx, const ConvGeometry& g) {
  const Tensor& dy = ctx->input(2);
  if (dy.shape() != g.out_shape) {
    return absl::InvalidArgumentError(absl::StrCat("out_backprop has shape ", dy.shape().DebugString(),
                                                   " but the convolution's output shape is ",
                                                   g.out_shape.DebugString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MakeConvGeometry(const TensorShape& input, const TensorShape& filter, const std::vector<int64_t>& strides,
                              const std::string& padding, ConvGeometry* g) {
  if (input.dims() != 4) {
    return absl::InvalidArgumentError(absl::StrCat("input must be 4-D (NHWC), got ", input.DebugString()));
  }
  if (filter.dims() != 4) {
    return absl::InvalidArgumentError(absl::StrCat("filter must be 4-D (HWIO), got ", filter.DebugString()));
  }
  if (input.dim_size(3) != filter.dim_size(2)) {
    return absl::InvalidArgumentError(absl::StrCat("input depth ", input.dim_size(3),
                                                   " does not match the filter's input depth ", filter.dim_size(2)));
  }
  g->batch = input.dim_size(0);
  g->in_rows = input.dim_size(1);
  g->in_cols = input.dim_size(2);
  g->in_depth = input.dim_size(3);
  g->filter_rows = filter.dim_size(0);
  g->filter_cols = filter.dim_size(1);
  g->out_depth = filter.dim_size(3);
  absl::Status s = ComputeWindow(g->in_rows, g->filter_rows, strides[1], padding, &g->rows);
  if (s.ok()) s = ComputeWindow(g->in_cols, g->filter_cols, strides[2], padding, &g->cols);
  if (!s.ok()) return s;
  auto out = TensorShape::Build({g->batch, g->rows.out, g->cols.out, g->out_depth});
  if (!out.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("output shape of input ", input.DebugString(), " and filter ",
                                                   filter.DebugString(), ": ", out.status().message()));
  }
  g->out_shape = *std::move(out);
  return absl::OkStatus();
}

absl::Status ConvBackpropInputGeometry(OpKernelContext* ctx, const std::vector<int64_t>& strides,
                                       const std::string& padding, TensorShape* input_shape, ConvGeometry* g) {
  absl::Status s = ShapeFromTensor(ctx->input(0), 4, input_shape);
  if (s.ok()) s = MakeConvGeometry(*input_shape, ctx->input(1).shape(), strides, padding, g);
  if (s.ok()) s = CheckOutBackprop(ctx, *g);
  return s;
}

absl::Status ConvBackpropFilterGeometry(OpKernelContext* ctx, const std::vector<int64_t>& strides,
                                        const std::string& padding, TensorShape* filter_shape, ConvGeometry* g) {
  absl::Status s = ShapeFromTensor(ctx->input(1), 4, filter_shape);
  if (s.ok()) s = MakeConvGeometry(ctx->input(0).shape(), *filter_shape, strides, padding, g);
  if (s.ok()) s = CheckOutBackprop(ctx, *g);
  return s;
}

}  // namespace sluice

// Winograd kernels of Conv2D, _FusedConv2D, Conv2DBackpropInput and
// Conv2DBackpropFilter (float32, CPU, Label("winograd")): a node gets them
// when its `_kernel` attr says so (engine/graph/kernel_selection.h; the
// session's winograd_kernels option). They take 5x5 and 3x3 filters at stride 1 with
// at least 16 channels in and out (winograd::Worthwhile) and compute them
// with winograd_conv.h; every other shape, and every bad input (so that error
// messages are the usual ones), goes to the node's fallback kernel: the one
// labeled by its `_kernel_fallback` attr (oneDNN's when that is on), else
// our own.
// Thread safety: Compute may run concurrently (no mutable state).
#include <memory>
#include <string>
#include <vector>

#include "engine/framework/op_kernel.h"
#include "engine/kernels/conv_shape.h"
#include "engine/kernels/fused_epilogue.h"
#include "engine/kernels/nn_util.h"
#include "engine/kernels/winograd_conv.h"

namespace sluice {
namespace {

// The Winograd dims of a convolution, when it has the shape they take.
bool ToWinogradDims(const ConvGeometry& g, winograd::ConvDims* d) {
  if ((g.filter_rows != 5 && g.filter_rows != 3) || g.filter_cols != g.filter_rows || g.rows.stride != 1 ||
      g.cols.stride != 1) {
    return false;
  }
  d->filter = static_cast<int>(g.filter_rows);
  d->batch = g.batch;
  d->in_rows = g.in_rows;
  d->in_cols = g.in_cols;
  d->in_channels = g.in_depth;
  d->out_rows = g.rows.out;
  d->out_cols = g.cols.out;
  d->out_channels = g.out_depth;
  d->pad_top = g.rows.pad;
  d->pad_left = g.cols.pad;
  return winograd::Worthwhile(*d);
}

winograd::Threads ThreadsOf(OpKernelContext* ctx) {
  const auto& device = ctx->eigen_cpu_device();
  return {device.getPool(), device.numThreads()};
}

class WinogradConvBase : public OpKernel {
 public:
  explicit WinogradConvBase(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadWindowAttrs(ctx, &strides_, nullptr, &padding_));
    NodeDef def = ctx->def();
    const AttrValue* fallback = FindAttr(def, kKernelFallbackAttr);
    const std::string label = fallback != nullptr ? fallback->s() : "";
    def.mutable_attr()->erase(kKernelFallbackAttr);
    if (label.empty()) {
      def.mutable_attr()->erase(kKernelLabelAttr);
    } else {
      (*def.mutable_attr())[kKernelLabelAttr] = MakeAttr(label);
    }
    auto kernel = KernelRegistry::Global()->CreateKernel(ctx->device(), def, ctx->op_def());
    OP_REQUIRES_OK(ctx, kernel.status());
    fallback_ = std::move(kernel).value();
  }

 protected:
  std::unique_ptr<OpKernel> fallback_;
  std::vector<int64_t> strides_;
  std::string padding_;
};

// Conv2D and _FusedConv2D (input 2 the bias).
class WinogradConvForwardOp : public WinogradConvBase {
 public:
  explicit WinogradConvForwardOp(OpKernelConstruction* ctx) : WinogradConvBase(ctx) {
    if (!ctx->status().ok()) return;
    if (ctx->def().op() == "_FusedConv2D") {
      OP_REQUIRES_OK(ctx, ReadBiasEpilogueAttrs(ctx, &relu_));
      fused_ = true;
    }
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    ConvGeometry g;
    winograd::ConvDims d;
    if (!MakeConvGeometry(input.shape(), filter.shape(), strides_, padding_, &g).ok() || !ToWinogradDims(g, &d) ||
        (fused_ && !CheckBias(ctx->input(2), g.out_depth).ok())) {
      fallback_->Compute(ctx);
      return;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.out_shape, &out));
    const float* bias = fused_ ? ctx->input(2).data<float>() : nullptr;
    winograd::Forward(d, input.data<float>(), filter.data<float>(), bias, relu_, out->data<float>(), ThreadsOf(ctx));
  }

 private:
  bool fused_ = false, relu_ = false;
};

class WinogradConvBackpropInputOp : public WinogradConvBase {
 public:
  using WinogradConvBase::WinogradConvBase;

  void Compute(OpKernelContext* ctx) override {
    TensorShape input_shape;
    ConvGeometry g;
    winograd::ConvDims d;
    if (!ConvBackpropInputGeometry(ctx, strides_, padding_, &input_shape, &g).ok() || !ToWinogradDims(g, &d) ||
        !winograd::Worthwhile(winograd::BackpropDims(d))) {
      fallback_->Compute(ctx);
      return;
    }
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input_shape, &dx));
    winograd::BackpropInput(d, ctx->input(1).data<float>(), ctx->input(2).data<float>(), dx->data<float>(),
                            ThreadsOf(ctx));
  }
};

class WinogradConvBackpropFilterOp : public WinogradConvBase {
 public:
  using WinogradConvBase::WinogradConvBase;

  void Compute(OpKernelContext* ctx) override {
    TensorShape filter_shape;
    ConvGeometry g;
    winograd::ConvDims d;
    if (!ConvBackpropFilterGeometry(ctx, strides_, padding_, &filter_shape, &g).ok() || !ToWinogradDims(g, &d)) {
      fallback_->Compute(ctx);
      return;
    }
    Tensor* dw;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, filter_shape, &dw));
    winograd::BackpropFilter(d, ctx->input(0).data<float>(), ctx->input(2).data<float>(), dw->data<float>(),
                             ThreadsOf(ctx));
  }
};

using winograd::kLabel;

REGISTER_KERNEL_BUILDER(Name("Conv2D").Device(kDeviceCpu).TypeConstraint<float>("T").Label(kLabel),
                        WinogradConvForwardOp);
REGISTER_KERNEL_BUILDER(Name("_FusedConv2D").Device(kDeviceCpu).TypeConstraint<float>("T").Label(kLabel),
                        WinogradConvForwardOp);
REGISTER_KERNEL_BUILDER(Name("Conv2DBackpropInput").Device(kDeviceCpu).TypeConstraint<float>("T").Label(kLabel),
                        WinogradConvBackpropInputOp);
REGISTER_KERNEL_BUILDER(Name("Conv2DBackpropFilter").Device(kDeviceCpu).TypeConstraint<float>("T").Label(kLabel),
                        WinogradConvBackpropFilterOp);

}  // namespace
}  // namespace sluice

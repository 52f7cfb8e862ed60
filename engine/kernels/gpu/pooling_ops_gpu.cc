// GPU kernels for MaxPool, MaxPoolGrad, AvgPool and AvgPoolGrad (float32 and
// float64, NHWC, SAME/VALID), with the attrs, shape checks and errors of the
// CPU kernels (engine/kernels/pooling_ops.cc) and their exact semantics:
// windows are clipped to the input (MaxPool ignores padding, AvgPool divides
// by the positions covered), and MaxPoolGrad routes each window's gradient to
// its FIRST maximal position in row-major order, as the CPU kernel does.
//
// These are our own CUDA kernels (cudnn_util_kernels.cu), not
// cudnnPoolingForward/Backward: cuDNN pads symmetrically (TensorFlow's SAME
// pads the odd row at the bottom), and its max-pool backward may pick a
// different position among tied maxima, so it would not match the CPU kernel.
// Pooling is memory-bound; one thread per output (forward) or per input
// element (gradients: a gather over the few windows covering the element, so
// dx is written once, with no atomics and no zeroing pass); MaxPoolGrad over
// disjoint windows (2x2 stride 2) is a scatter, one thread per window, which
// reads each input once. _FusedMaxPoolGrad (float32) is MaxPoolGrad with
// ReluGrad's mask and BiasAddGrad's sum (see MaxPoolGradOp).
// Thread safety: kernels are stateless.
#include <limits>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/gpu/bias_gpu.h"
#include "engine/kernels/gpu/cudnn_util_kernels.h"
#include "engine/kernels/gpu/gpu_kernel_util.h"
#include "engine/kernels/nn_util.h"
#include "engine/runtime/gpu/gpu_device.h"

namespace sluice {
namespace gpu {
namespace {

class PoolOpBase : public OpKernel {
 public:
  explicit PoolOpBase(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadWindowAttrs(ctx, &strides_, &ksize_, &padding_));
  }

 protected:
  // The CPU kernel's geometry and checks.
  absl::Status Geometry(const TensorShape& input, PoolDims* d, TensorShape* out_shape) const {
    if (input.dims() != 4) {
      return absl::InvalidArgumentError(absl::StrCat("input must be 4-D (NHWC), got ", input.DebugString()));
    }
    WindowDim rows, cols;
    absl::Status s = ComputeWindow(input.dim_size(1), ksize_[1], strides_[1], padding_, &rows);
    if (s.ok()) s = ComputeWindow(input.dim_size(2), ksize_[2], strides_[2], padding_, &cols);
    if (!s.ok()) return s;
    auto out = TensorShape::Build({input.dim_size(0), rows.out, cols.out, input.dim_size(3)});
    if (!out.ok()) return out.status();
    *out_shape = *std::move(out);
    d->batch = input.dim_size(0);
    d->in_rows = input.dim_size(1);
    d->in_cols = input.dim_size(2);
    d->depth = input.dim_size(3);
    d->out_rows = rows.out;
    d->out_cols = cols.out;
    d->k_rows = rows.k;
    d->k_cols = cols.k;
    d->stride_rows = rows.stride;
    d->stride_cols = cols.stride;
    d->pad_rows = rows.pad;
    d->pad_cols = cols.pad;
    return absl::OkStatus();
  }

  std::vector<int64_t> strides_, ksize_;
  std::string padding_;
};

template <typename T, bool kMax>
class PoolOp : public PoolOpBase {
 public:
  using PoolOpBase::PoolOpBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    PoolDims d;
    TensorShape out_shape;
    OP_REQUIRES_OK(ctx, Geometry(input.shape(), &d, &out_shape));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (out->NumElements() == 0) return;
    cudaStream_t stream = GetGpuDevice(ctx)->compute_stream();
    if (kMax) {
      OP_REQUIRES_CUDA(ctx, LaunchMaxPool(stream, d, input.data<T>(), out->data<T>()));
    } else {
      OP_REQUIRES_CUDA(ctx, LaunchAvgPool(stream, d, input.data<T>(), out->data<T>()));
    }
  }
};

// MaxPoolGrad, and _FusedMaxPoolGrad (float32; the fusion pass's MaxPoolGrad
// + ReluGrad [+ BiasAddGrad], engine/graph/optimizer_pool_grad_fusion.h):
// the gradient with ReluGrad's mask applied where it lands (one kernel), and
// output 1 its sum per channel. With disjoint windows that sum is taken over
// the windows' masked gradients (a quarter of dx's size for 2x2 pooling),
// else over dx.
template <typename T>
class MaxPoolGradOp : public PoolOpBase {
 public:
  explicit MaxPoolGradOp(OpKernelConstruction* ctx)
      : PoolOpBase(ctx), fused_(ctx->def().op() == "_FusedMaxPoolGrad") {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& output = ctx->input(1);
    const Tensor& grad = ctx->input(2);
    PoolDims d;
    TensorShape out_shape;
    OP_REQUIRES_OK(ctx, Geometry(input.shape(), &d, &out_shape));
    OP_REQUIRES(ctx, output.shape() == out_shape && grad.shape() == out_shape,
                absl::InvalidArgumentError(absl::StrCat(
                    "orig_output ", output.shape().DebugString(), " and grad ", grad.shape().DebugString(),
                    " must have the pooled shape ", out_shape.DebugString())));
    const int64_t window_positions = std::min(d.k_rows, d.in_rows) * std::min(d.k_cols, d.in_cols);
    OP_REQUIRES(ctx, window_positions <= std::numeric_limits<int32_t>::max(),
                absl::InvalidArgumentError(absl::StrCat("a pooling window covers ", window_positions,
                                                        " input positions; at most 2^31 - 1 are supported")));
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &dx));
    GpuDevice* gpu = GetGpuDevice(ctx);
    cudaStream_t stream = gpu->compute_stream();
    Tensor* bias_grad = nullptr;
    if (fused_) OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({d.depth}), &bias_grad));
    if (dx->NumElements() == 0) {
      if (bias_grad != nullptr && d.depth > 0) {
        OP_REQUIRES_CUDA(ctx, cudaMemsetAsync(bias_grad->raw_data(), 0, bias_grad->TotalBytes(), stream));
      }
      return;
    }
    if (!fused_) {
      OP_REQUIRES_CUDA(ctx, LaunchMaxPoolGrad(stream, d, input.data<T>(), grad.data<T>(), dx->data<T>()));
      return;
    }
    // The rows whose per-channel sum is the bias gradient: the windows'
    // masked gradients (disjoint windows), or dx.
    Tensor window_grad;
    T* window_grad_data = nullptr;
    const T* rows = dx->data<T>();
    int64_t row_count = dx->NumElements() / d.depth;
    if (PoolWindowsDisjoint(d)) {
      OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeToEnum<T>::value, out_shape, &window_grad));
      window_grad_data = window_grad.data<T>();
      rows = window_grad_data;
      row_count = out_shape.num_elements() / d.depth;
    }
    OP_REQUIRES_CUDA(ctx, LaunchMaxPoolGrad(stream, d, input.data<T>(), grad.data<T>(), dx->data<T>(),
                                            /*relu=*/true, window_grad_data));
    const BiasGradPlan plan = PlanBiasGrad(row_count, d.depth, 1, gpu->properties().multiProcessorCount);
    Tensor partials;
    if (plan.splits > 1) {
      OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeToEnum<T>::value, TensorShape({plan.splits, d.depth}),
                                             &partials));
    }
    OP_REQUIRES_CUDA(ctx, LaunchBiasAddGrad(stream, ElemTypeOf<T>(), plan, rows, bias_grad->raw_data(),
                                            plan.splits > 1 ? partials.raw_data() : nullptr, row_count, d.depth, 1));
  }

 private:
  const bool fused_;
};

template <typename T>
class AvgPoolGradOp : public PoolOpBase {
 public:
  using PoolOpBase::PoolOpBase;
  void Compute(OpKernelContext* ctx) override {
    TensorShape input_shape;
    OP_REQUIRES_OK(ctx, ShapeFromTensor(ctx->input(0), 4, &input_shape));  // int32: host memory
    const Tensor& grad = ctx->input(1);
    PoolDims d;
    TensorShape out_shape;
    OP_REQUIRES_OK(ctx, Geometry(input_shape, &d, &out_shape));
    OP_REQUIRES(ctx, grad.shape() == out_shape,
                absl::InvalidArgumentError(absl::StrCat("grad ", grad.shape().DebugString(),
                                                        " must have the pooled shape ", out_shape.DebugString())));
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input_shape, &dx));
    if (dx->NumElements() == 0) return;
    OP_REQUIRES_CUDA(ctx,
                     LaunchAvgPoolGrad(GetGpuDevice(ctx)->compute_stream(), d, grad.data<T>(), dx->data<T>()));
  }
};

#define SLUICE_REGISTER_GPU_POOL_(T)                                                                          \
  REGISTER_KERNEL_BUILDER(Name("MaxPool").Device(kDeviceGpu).TypeConstraint<T>("T"), PoolOp<T, true>);        \
  REGISTER_KERNEL_BUILDER(Name("MaxPoolGrad").Device(kDeviceGpu).TypeConstraint<T>("T"), MaxPoolGradOp<T>);   \
  REGISTER_KERNEL_BUILDER(Name("AvgPool").Device(kDeviceGpu).TypeConstraint<T>("T"), PoolOp<T, false>);       \
  REGISTER_KERNEL_BUILDER(Name("AvgPoolGrad").Device(kDeviceGpu).TypeConstraint<T>("T"), AvgPoolGradOp<T>)
SLUICE_REGISTER_GPU_POOL_(float);
SLUICE_REGISTER_GPU_POOL_(double);
#undef SLUICE_REGISTER_GPU_POOL_
REGISTER_KERNEL_BUILDER(Name("_FusedMaxPoolGrad").Device(kDeviceGpu).TypeConstraint<float>("T"),
                        MaxPoolGradOp<float>);

}  // namespace
}  // namespace gpu
}  // namespace sluice

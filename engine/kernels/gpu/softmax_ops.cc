// GPU kernels (OpKernel glue) for Softmax, LogSoftmax,
// SoftmaxCrossEntropyWithLogits and SparseSoftmaxCrossEntropyWithLogits: the
// host checks shapes exactly as the CPU kernels (engine/kernels/softmax_op.cc,
// xent_op.cc) do, then one kernel launch per op on the compute stream
// (softmax_kernels.h).
//
// Labels: int64 labels are in device memory; a label outside [0, classes)
// gives that row a NaN loss and NaN backprop (TensorFlow's GPU behaviour),
// where the CPU kernel fails the step with InvalidArgument: the GPU cannot
// look at device values without waiting for the device. int32 labels live in
// pinned host memory on a GPU, so they are checked on the host with the CPU
// kernel's error, then copied to a device temp on the compute stream.
// Thread safety: kernels are stateless.
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/gpu/softmax_kernels.h"
#include "engine/runtime/gpu/gpu_device.h"

namespace sluice {
namespace gpu {
namespace {

template <typename T, bool kLog>
class GpuSoftmaxOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    OP_REQUIRES(ctx, x.dims() >= 1,
                absl::InvalidArgumentError(absl::StrCat("logits must have rank >= 1, got ", x.shape().DebugString())));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    const int64_t depth = x.dim_size(x.dims() - 1);
    if (x.NumElements() == 0) return;
    const int64_t rows = x.NumElements() / depth;
    OP_REQUIRES_CUDA(ctx, LaunchSoftmax<T>(GetGpuDevice(ctx)->compute_stream(), x.data<T>(), out->data<T>(), rows,
                                           depth, kLog));
  }
};

// The CPU kernel's validation and allocation; false after setting an error.
bool PrepareXent(OpKernelContext* ctx, bool sparse, Tensor** loss, Tensor** backprop) {
  const Tensor& logits = ctx->input(0);
  const Tensor& labels = ctx->input(1);
  if (logits.dims() != 2) {
    ctx->CtxFailure(absl::InvalidArgumentError(
        absl::StrCat("logits must be 2-D [batch, classes], got ", logits.shape().DebugString())));
    return false;
  }
  if (sparse) {
    if (labels.dims() != 1 || labels.dim_size(0) != logits.dim_size(0)) {
      ctx->CtxFailure(absl::InvalidArgumentError(
          absl::StrCat("logits and labels must have the same first dimension, got logits shape ",
                       logits.shape().DebugString(), " and labels shape ", labels.shape().DebugString())));
      return false;
    }
  } else if (labels.shape() != logits.shape()) {
    ctx->CtxFailure(absl::InvalidArgumentError(absl::StrCat("logits and labels must be the same size: logits ",
                                                            logits.shape().DebugString(), " vs labels ",
                                                            labels.shape().DebugString())));
    return false;
  }
  if (logits.dim_size(0) > 0 && logits.dim_size(1) == 0) {
    ctx->CtxFailure(absl::InvalidArgumentError("logits must have at least one class"));
    return false;
  }
  absl::Status s = ctx->allocate_output(0, TensorShape({logits.dim_size(0)}), loss);
  if (s.ok()) s = ctx->allocate_output(1, logits.shape(), backprop);
  if (!s.ok()) {
    ctx->CtxFailure(s);
    return false;
  }
  return true;
}

template <typename T>
class GpuSoftmaxXentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor *loss, *backprop;
    if (!PrepareXent(ctx, false, &loss, &backprop)) return;
    const Tensor& x = ctx->input(0);
    if (x.NumElements() == 0) return;
    OP_REQUIRES_CUDA(ctx, LaunchSoftmaxXent<T>(GetGpuDevice(ctx)->compute_stream(), x.data<T>(),
                                               ctx->input(1).data<T>(), loss->data<T>(), backprop->data<T>(),
                                               x.dim_size(0), x.dim_size(1)));
  }
};

template <typename T, typename Index>
class GpuSparseSoftmaxXentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor *loss, *backprop;
    if (!PrepareXent(ctx, true, &loss, &backprop)) return;
    const Tensor& x = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    const int64_t batch = x.dim_size(0), depth = x.dim_size(1);
    if (batch == 0) return;
    GpuDevice* device = GetGpuDevice(ctx);
    cudaStream_t stream = device->compute_stream();
    const Index* device_labels = labels.data<Index>();
    Tensor staged;  // int32 labels copied to device memory
    if (device->HostMemory(labels.dtype())) {
      const Index* host = labels.data<Index>();
      for (int64_t r = 0; r < batch; ++r) {
        OP_REQUIRES(ctx, host[r] >= 0 && static_cast<int64_t>(host[r]) < depth,
                    absl::InvalidArgumentError(absl::StrCat("Received a label value of ", host[r],
                                                            " which is outside the valid range of [0, ", depth,
                                                            ") (row ", r, ")")));
      }
      // A float temp of the labels' byte size is device memory (int32 temps
      // would be host memory on a GPU).
      static_assert(sizeof(Index) == sizeof(float) || sizeof(Index) == sizeof(double), "label size");
      const DataType carrier = sizeof(Index) == sizeof(float) ? DT_FLOAT : DT_DOUBLE;
      OP_REQUIRES_OK(ctx, ctx->allocate_temp(carrier, TensorShape({batch}), &staged));
      OP_REQUIRES_CUDA(ctx, cudaMemcpyAsync(staged.raw_data(), host, batch * sizeof(Index), cudaMemcpyHostToDevice,
                                            stream));
      // The host buffer must outlive the copy: hold a reference until the
      // stream passes it.
      device->ThenRun(stream, [keep = labels](absl::Status) {});
      device_labels = static_cast<const Index*>(staged.raw_data());
    }
    if (depth == 0) return;
    OP_REQUIRES_CUDA(ctx, (LaunchSparseSoftmaxXent<T, Index>(stream, x.data<T>(), device_labels, loss->data<T>(),
                                                             backprop->data<T>(), batch, depth)));
  }
};

#define SLUICE_REGISTER_GPU_SOFTMAX_(T)                                                                          \
  REGISTER_KERNEL_BUILDER(Name("Softmax").Device(kDeviceGpu).TypeConstraint<T>("T"), GpuSoftmaxOp<T, false>);  \
  REGISTER_KERNEL_BUILDER(Name("LogSoftmax").Device(kDeviceGpu).TypeConstraint<T>("T"), GpuSoftmaxOp<T, true>); \
  REGISTER_KERNEL_BUILDER(Name("SoftmaxCrossEntropyWithLogits").Device(kDeviceGpu).TypeConstraint<T>("T"),     \
                          GpuSoftmaxXentOp<T>);                                                                  \
  REGISTER_KERNEL_BUILDER(Name("SparseSoftmaxCrossEntropyWithLogits")                                           \
                              .Device(kDeviceGpu)                                                               \
                              .TypeConstraint<T>("T")                                                           \
                              .TypeConstraint<int32_t>("Tlabels"),                                              \
                          GpuSparseSoftmaxXentOp<T, int32_t>);                                                  \
  REGISTER_KERNEL_BUILDER(Name("SparseSoftmaxCrossEntropyWithLogits")                                           \
                              .Device(kDeviceGpu)                                                               \
                              .TypeConstraint<T>("T")                                                           \
                              .TypeConstraint<int64_t>("Tlabels"),                                              \
                          GpuSparseSoftmaxXentOp<T, int64_t>)
SLUICE_REGISTER_GPU_SOFTMAX_(float);
SLUICE_REGISTER_GPU_SOFTMAX_(double);
#undef SLUICE_REGISTER_GPU_SOFTMAX_

}  // namespace
}  // namespace gpu
}  // namespace sluice

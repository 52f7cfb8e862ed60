// GPU kernels (OpKernel glue) for Softmax, LogSoftmax,
// SoftmaxCrossEntropyWithLogits and SparseSoftmaxCrossEntropyWithLogits: the
// host checks shapes with the CPU kernels' code (../softmax_shape.h), then
// one kernel launch per op on the compute stream (softmax_kernels.h).
//
// Labels: int64 labels are in device memory; a label outside [0, classes)
// gives that row a NaN loss and NaN backprop (TensorFlow's GPU behaviour),
// where the CPU kernel fails the step with InvalidArgument: the GPU cannot
// look at device values without waiting for the device. int32 labels live in
// pinned host memory on a GPU, so they are checked on the host with the CPU
// kernel's error, then copied to a device temp on the compute stream.
// Thread safety: kernels are stateless.
#include <cstdint>

#include "engine/framework/op_kernel.h"
#include "engine/kernels/gpu/softmax_kernels.h"
#include "engine/kernels/softmax_shape.h"
#include "engine/runtime/gpu/gpu_device.h"

namespace sluice {
namespace gpu {
namespace {

template <typename T, bool kLog>
class GpuSoftmaxOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor* out;
    int64_t rows, depth;
    OP_REQUIRES_OK(ctx, PrepareSoftmax(ctx, &out, &rows, &depth));
    if (rows == 0) return;
    OP_REQUIRES_CUDA(ctx, LaunchSoftmax<T>(GetGpuDevice(ctx)->compute_stream(), ctx->input(0).data<T>(),
                                           out->data<T>(), rows, depth, kLog));
  }
};

template <typename T>
class GpuSoftmaxXentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor *loss, *backprop;
    OP_REQUIRES_OK(ctx, PrepareXent(ctx, false, &loss, &backprop));
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
    OP_REQUIRES_OK(ctx, PrepareXent(ctx, true, &loss, &backprop));
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
      OP_REQUIRES_OK(ctx, CheckXentLabels(host, batch, depth));
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

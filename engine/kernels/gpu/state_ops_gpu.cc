// GPU kernels for the state ops a GPU partition needs: Const (its value copied
// to the device once, at construction), Variable/VariableV2 (the variable's
// tensor is allocated by Assign from the device's allocator), Assign (a fresh
// device buffer, device-to-device copy), AssignAdd (float, double),
// _CheckpointSnapshot, Identity and NoOp. Attrs, checks and messages are the
// CPU kernels' (variable_util.h). Reshape and Shape never touch the data: the
// CPU kernels are registered for the GPU too (shape_ops.cc).
#include <cuda_runtime.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/gpu/state_kernels.h"
#include "engine/kernels/variable_util.h"
#include "engine/runtime/gpu/gpu_device.h"

namespace sluice {
namespace gpu {
namespace {

GpuDevice* ConstructionGpu(OpKernelConstruction* ctx) {
  CHECK(ctx->device() != nullptr && ctx->device()->device_type() == kDeviceGpu);
  return static_cast<GpuDevice*>(ctx->device());
}

class GpuConstOp : public OpKernel {
 public:
  explicit GpuConstOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    TensorProto proto;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("value", &proto));
    GpuDevice* dev = ConstructionGpu(ctx);
    const DataType dtype = ctx->output_types()[0];
    // Host-memory dtypes decode straight into pinned memory; the others
    // decode on the host and are copied to the device once.
    const bool host = dev->HostMemory(dtype);
    auto t = Tensor::FromProto(proto, host ? dev->GetAllocator(dtype) : CpuAllocator());
    OP_REQUIRES_OK(ctx, t.status());
    OP_REQUIRES(ctx, t->dtype() == dtype,
                absl::InvalidArgumentError(absl::StrCat("attr 'value' holds ", DataTypeString(t->dtype()),
                                                        " but attr 'dtype' is ", DataTypeString(dtype))));
    if (host) {
      value_ = std::move(t).value();
      return;
    }
    auto d = Tensor::Allocate(dev->GetAllocator(dtype), dtype, t->shape());
    OP_REQUIRES_OK(ctx, d.status());
    if (t->TotalBytes() > 0) {
      // On the compute stream (its earlier work may still use this memory),
      // then wait: the host tensor dies at the end of this constructor.
      cudaStream_t s = dev->compute_stream();
      OP_REQUIRES_OK(ctx, CudaStatus(cudaMemcpyAsync(d->raw_data(), t->raw_data(), t->TotalBytes(),
                                                     cudaMemcpyHostToDevice, s),
                                     "cudaMemcpyAsync(Const value)"));
      OP_REQUIRES_OK(ctx, CudaStatus(cudaStreamSynchronize(s), "cudaStreamSynchronize(Const value)"));
    }
    value_ = std::move(d).value();
  }
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, value_); }
  bool IsExpensive() const override { return false; }

 private:
  Tensor value_;
};

class GpuVariableOp : public OpKernel {
 public:
  explicit GpuVariableOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ReadVariableAttrs(ctx, &attrs_));
  }

  void Compute(OpKernelContext* ctx) override { OP_REQUIRES_OK(ctx, OutputVariableRef(ctx, attrs_)); }
  bool IsExpensive() const override { return false; }

 private:
  VariableAttrs attrs_;
};

// A fresh copy of `value` in the device's memory for its dtype: enqueued on
// the compute stream for device memory, a host memcpy for host memory.
absl::Status CopyOnDevice(GpuDevice* dev, const Tensor& value, Tensor* out) {
  auto t = Tensor::Allocate(dev->GetAllocator(value.dtype()), value.dtype(), value.shape());
  if (!t.ok()) return t.status();
  if (value.TotalBytes() > 0) {
    if (dev->HostMemory(value.dtype())) {
      std::memcpy(t->raw_data(), value.raw_data(), value.TotalBytes());
    } else {
      absl::Status s = CudaStatus(cudaMemcpyAsync(t->raw_data(), value.raw_data(), value.TotalBytes(),
                                                  cudaMemcpyDeviceToDevice, dev->compute_stream()),
                                  "cudaMemcpyAsync(Assign)");
      if (!s.ok()) return s;
    }
  }
  *out = std::move(t).value();
  return absl::OkStatus();
}

class GpuAssignOp : public OpKernel {
 public:
  explicit GpuAssignOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("validate_shape", &validate_shape_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(1);
    GpuDevice* dev = GetGpuDevice(ctx);
    {
      absl::MutexLock lock(ctx->input_ref_mutex(0));
      Tensor* var = ctx->mutable_input(0);
      OP_REQUIRES_OK(ctx, CheckAssignShape(*var, value, validate_shape_));
      // A fresh buffer: readers holding the old value keep it unchanged.
      Tensor fresh;
      OP_REQUIRES_OK(ctx, CopyOnDevice(dev, value, &fresh));
      *var = std::move(fresh);
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool validate_shape_ = true;
};

template <typename T>
class GpuAssignAddOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(1);
    GpuDevice* dev = GetGpuDevice(ctx);
    {
      absl::MutexLock lock(ctx->input_ref_mutex(0));
      Tensor* var = ctx->mutable_input(0);
      OP_REQUIRES_OK(ctx, CheckAssignAddShape(*var, value));
      OP_REQUIRES_CUDA(ctx, LaunchAddInPlace(dev->compute_stream(), var->data<T>(), value.data<T>(),
                                             var->NumElements()));
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
};

class GpuIdentityOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ctx->set_output(0, ctx->input(0)); }
  bool IsExpensive() const override { return false; }
};

class GpuNoOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext*) override {}
  bool IsExpensive() const override { return false; }
};

// The Saver's _CheckpointSnapshot (checkpoint/save_restore_ops.cc) of a
// variable on this GPU: a copy taken under the variable's lock, enqueued on
// the compute stream, so it holds the value between the updates before and
// after it; the session's fetch then moves it to the host. Without this
// kernel a variable read by the Saver could not live on the GPU (the ref edge
// ties the snapshot to the variable's device).
class GpuCheckpointSnapshotOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor copy;
    {
      absl::MutexLock lock(ctx->input_ref_mutex(0));
      const Tensor& v = ctx->input(0);
      OP_REQUIRES(ctx, v.IsInitialized(),
                  absl::FailedPreconditionError(absl::StrCat("variable read by ", name(), " is uninitialized")));
      OP_REQUIRES_OK(ctx, CopyOnDevice(GetGpuDevice(ctx), v, &copy));
    }
    ctx->set_output(0, std::move(copy));
  }
};

REGISTER_KERNEL_BUILDER(Name("Const").Device(kDeviceGpu), GpuConstOp);
REGISTER_KERNEL_BUILDER(Name("_CheckpointSnapshot").Device(kDeviceGpu), GpuCheckpointSnapshotOp);
REGISTER_KERNEL_BUILDER(Name("Identity").Device(kDeviceGpu), GpuIdentityOp);
REGISTER_KERNEL_BUILDER(Name("NoOp").Device(kDeviceGpu), GpuNoOp);
REGISTER_KERNEL_BUILDER(Name("VariableV2").Device(kDeviceGpu), GpuVariableOp);
REGISTER_KERNEL_BUILDER(Name("Variable").Device(kDeviceGpu), GpuVariableOp);
REGISTER_KERNEL_BUILDER(Name("Assign").Device(kDeviceGpu).TypeConstraint("T", {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16,
                                                                               DT_INT32, DT_INT64}),
                        GpuAssignOp);
REGISTER_KERNEL_BUILDER(Name("AssignAdd").Device(kDeviceGpu).TypeConstraint<float>("T"), GpuAssignAddOp<float>);
REGISTER_KERNEL_BUILDER(Name("AssignAdd").Device(kDeviceGpu).TypeConstraint<double>("T"), GpuAssignAddOp<double>);

}  // namespace
}  // namespace gpu
}  // namespace sluice

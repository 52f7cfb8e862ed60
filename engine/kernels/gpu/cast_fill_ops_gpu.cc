// GPU kernels (OpKernel glue) for Cast, Fill, ZerosLike and OnesLike.
//
// Cast between float, double, int64, bool and int32. int32 tensors of a GPU
// live in pinned host memory (gpu_device.h), so:
//   * from int32: the input is copied to a device temp on the compute stream
//     (the input Tensor is kept alive until the stream passes the copy), then
//     cast on the device;
//   * to int32: cast on the device into a temp, copied into the host output
//     on the compute stream; the kernel is async and finishes (calls `done`)
//     once the copy has landed, so consumers may read the output on the host.
// Fill reads its int32 dims on the host and broadcasts its device scalar with
// a kernel (no host sync). ZerosLike is a memset, OnesLike a fill kernel.
// Thread safety: kernels are stateless.
#include "absl/strings/str_cat.h"
#include "engine/kernels/array_kernel_util.h"
#include "engine/kernels/gpu/gpu_kernel_util.h"

namespace sluice {
namespace gpu {
namespace {

class CastAttrs {
 public:
  explicit CastAttrs(OpKernelConstruction* ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("SrcT", &src_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("DstT", &dst_));
    OP_REQUIRES(ctx, ToElemType(src_, &src_elem_),
                absl::UnimplementedError(absl::StrCat("GPU Cast from ", DataTypeString(src_), " is not supported")));
    OP_REQUIRES(ctx, ToElemType(dst_, &dst_elem_),
                absl::UnimplementedError(absl::StrCat("GPU Cast to ", DataTypeString(dst_), " is not supported")));
  }

 protected:
  // Casts `in` into `out_device` (a device buffer of in's element count and
  // dst's element size). `in` is on the host when src is int32.
  absl::Status CastToDevice(OpKernelContext* ctx, const Tensor& in, void* out_device) {
    const int64_t n = in.NumElements();
    if (n == 0) return absl::OkStatus();
    GpuDevice* gpu = GetGpuDevice(ctx);
    cudaStream_t stream = gpu->compute_stream();
    const void* src = in.raw_data();
    Tensor staged;
    if (src_ == DT_INT32) {
      // Four-byte elements in device memory (allocate_temp of int32 would be host memory).
      absl::Status s = ctx->allocate_temp(DT_FLOAT, in.shape(), &staged);
      if (!s.ok()) return s;
      s = CudaStatus(cudaMemcpyAsync(staged.raw_data(), in.raw_data(), n * sizeof(int32_t),
                                     cudaMemcpyHostToDevice, stream),
                     "cudaMemcpyAsync(int32 input to device)");
      if (!s.ok()) return s;
      gpu->ThenRun(stream, [keep = in](absl::Status) {});
      src = staged.raw_data();
    }
    return CudaStatus(LaunchCast(stream, src_elem_, dst_elem_, src, out_device, n), "LaunchCast");
  }

  DataType src_ = DT_INVALID, dst_ = DT_INVALID;
  ElemType src_elem_ = ElemType::kFloat, dst_elem_ = ElemType::kFloat;
};

// Cast to a device dtype (float, double, int64, bool).
class CastGpuOp : public OpKernel, private CastAttrs {
 public:
  explicit CastGpuOp(OpKernelConstruction* ctx) : OpKernel(ctx), CastAttrs(ctx) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    if (src_ == dst_) {
      ctx->set_output(0, in);
      return;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    OP_REQUIRES_OK(ctx, CastToDevice(ctx, in, out->raw_data()));
  }
};

// Cast to int32: the output is in pinned host memory.
class CastToInt32GpuOp : public AsyncOpKernel, private CastAttrs {
 public:
  explicit CastToInt32GpuOp(OpKernelConstruction* ctx) : AsyncOpKernel(ctx), CastAttrs(ctx) {}
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const Tensor& in = ctx->input(0);
    if (src_ == dst_) {
      ctx->set_output(0, in);
      done();
      return;
    }
    Tensor* out;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, in.shape(), &out), done);
    const int64_t n = in.NumElements();
    if (n == 0) {
      done();
      return;
    }
    Tensor device_out;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_temp(DT_FLOAT, in.shape(), &device_out), done);
    OP_REQUIRES_OK_ASYNC(ctx, CastToDevice(ctx, in, device_out.raw_data()), done);
    GpuDevice* gpu = GetGpuDevice(ctx);
    cudaStream_t stream = gpu->compute_stream();
    OP_REQUIRES_OK_ASYNC(ctx,
                         CudaStatus(cudaMemcpyAsync(out->raw_data(), device_out.raw_data(), n * sizeof(int32_t),
                                                    cudaMemcpyDeviceToHost, stream),
                                    "cudaMemcpyAsync(int32 output to host)"),
                         done);
    gpu->ThenRun(stream, [ctx, done = std::move(done)](absl::Status s) {
      if (!s.ok()) ctx->SetStatus(s);
      done();
    });
  }
};

const std::vector<DataType>& CastTypes() {
  static const auto* types = new std::vector<DataType>{DT_FLOAT, DT_DOUBLE, DT_INT64, DT_INT32, DT_BOOL};
  return *types;
}

REGISTER_KERNEL_BUILDER(Name("Cast")
                            .Device(kDeviceGpu)
                            .TypeConstraint("SrcT", CastTypes())
                            .TypeConstraint("DstT", {DT_FLOAT, DT_DOUBLE, DT_INT64, DT_BOOL}),
                        CastGpuOp);
REGISTER_KERNEL_BUILDER(Name("Cast").Device(kDeviceGpu).TypeConstraint("SrcT", CastTypes()).TypeConstraint("DstT", {DT_INT32}),
                        CastToInt32GpuOp);

// Fill(dims: int32 on the host, value: a device scalar).
template <typename T>
class FillGpuOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& dims_t = ctx->input(0);
    const Tensor& value = ctx->input(1);
    OP_REQUIRES(ctx, array_util::IsIndexType(dims_t.dtype()),
                absl::InvalidArgumentError("dims must be int32 or int64"));
    auto dims = array_util::IndexVector(dims_t, "dims");
    OP_REQUIRES_OK(ctx, dims.status());
    OP_REQUIRES(ctx, value.dims() == 0,
                absl::InvalidArgumentError(absl::StrCat("value must be a scalar, got shape ", value.shape().DebugString())));
    auto shape = TensorShape::Build(*dims);
    OP_REQUIRES(ctx, shape.ok(), absl::InvalidArgumentError(absl::StrCat("dims: ", shape.status().message())));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    OP_REQUIRES_CUDA(ctx, LaunchFillFromDevice(ComputeStream(ctx), ElemTypeOf<T>(), value.raw_data(),
                                               out->raw_data(), out->NumElements()));
  }
  bool IsExpensive() const override { return false; }
};

#define SLUICE_REG_FILL_(T)                                                                                    \
  REGISTER_KERNEL_BUILDER(                                                                                     \
      Name("Fill").Device(kDeviceGpu).TypeConstraint<T>("T").TypeConstraint<int32_t>("index_type"),             \
      FillGpuOp<T>)
SLUICE_REG_FILL_(float);
SLUICE_REG_FILL_(double);
SLUICE_REG_FILL_(int64_t);
SLUICE_REG_FILL_(bool);
#undef SLUICE_REG_FILL_

class ZerosLikeGpuOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, ctx->input(0).shape(), &out));
    if (out->NumElements() == 0) return;
    OP_REQUIRES_CUDA(ctx, cudaMemsetAsync(out->raw_data(), 0, out->TotalBytes(), ComputeStream(ctx)));
  }
  bool IsExpensive() const override { return false; }
};

class OnesLikeGpuOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    ElemType type;
    OP_REQUIRES(ctx, ToElemType(in.dtype(), &type) && in.dtype() != DT_INT32,
                absl::InvalidArgumentError(absl::StrCat("OnesLike does not support ", DataTypeString(in.dtype()))));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    OP_REQUIRES_CUDA(ctx, LaunchFillOnes(ComputeStream(ctx), type, out->raw_data(), out->NumElements()));
  }
  bool IsExpensive() const override { return false; }
};

REGISTER_KERNEL_BUILDER(Name("ZerosLike").Device(kDeviceGpu).TypeConstraint("T", {DT_FLOAT, DT_DOUBLE, DT_INT64, DT_BOOL}),
                        ZerosLikeGpuOp);
REGISTER_KERNEL_BUILDER(Name("OnesLike").Device(kDeviceGpu).TypeConstraint("T", {DT_FLOAT, DT_DOUBLE, DT_INT64, DT_BOOL}),
                        OnesLikeGpuOp);

}  // namespace
}  // namespace gpu
}  // namespace sluice

// GPU kernels (OpKernel glue) for Sum, Mean, Prod, Max, Min, ArgMax and
// ArgMin (float and double; reduction axes int32, which a GPU keeps in host
// memory, so they are read here). Shapes, axes and errors are checked with
// the CPU kernels' code (../reduction_shape.h). The input's dims are
// collapsed into alternating kept/reduced groups; a reduction over one
// contiguous group is one [A, R, B] launch (reduce all, innermost or
// outermost dims are its special cases), several reduced groups are folded
// one at a time through device temps (no transpose). Mean divides in the last
// pass. Reducing only size-1 dims forwards the input's buffer, as on the CPU.
// ArgMax/ArgMin with int32 output (host memory on a GPU) compute into a
// device temp and copy to the host output; that kernel is async and finishes
// when the copy does.
// Thread safety: kernels are stateless.
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/gpu/reduction_kernels.h"
#include "engine/kernels/reduction_shape.h"
#include "engine/runtime/gpu/gpu_device.h"

namespace sluice {
namespace gpu {
namespace {

template <typename T>
T EmptyValue(ReduceKind kind, bool mean) {
  if (mean) return std::numeric_limits<T>::quiet_NaN();  // 0/0
  switch (kind) {
    case ReduceKind::kSum: return T(0);
    case ReduceKind::kProd: return T(1);
    case ReduceKind::kMax: return -std::numeric_limits<T>::infinity();
    case ReduceKind::kMin: return std::numeric_limits<T>::infinity();
  }
  return T(0);
}

template <typename T, ReduceKind kKind, bool kMean>
class GpuReductionOp : public OpKernel {
 public:
  explicit GpuReductionOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("keep_dims", &keep_dims_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    ReductionShape r;
    OP_REQUIRES_OK(ctx, ComputeReductionShape(in.shape(), ctx->input(1), keep_dims_, &r));
    const std::vector<bool>& reduce = r.reduce;
    const int64_t count = r.count;
    if (count == 1) {
      auto same = in.Reshaped(r.out);
      OP_REQUIRES_OK(ctx, same.status());
      ctx->set_output(0, *same);
      return;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, r.out, &out));
    const int64_t n = out->NumElements();
    if (n == 0) return;
    cudaStream_t stream = GetGpuDevice(ctx)->compute_stream();
    if (count == 0) {
      OP_REQUIRES_CUDA(ctx, LaunchFill<T>(stream, out->data<T>(), n, EmptyValue<T>(kKind, kMean)));
      return;
    }
    // Alternating kept/reduced groups (size-1 dims dropped).
    absl::InlinedVector<int64_t, 8> g;
    absl::InlinedVector<bool, 8> gr;
    for (int i = 0; i < in.dims(); ++i) {
      if (in.dim_size(i) == 1) continue;
      if (!g.empty() && gr.back() == reduce[i]) {
        g.back() *= in.dim_size(i);
      } else {
        g.push_back(in.dim_size(i));
        gr.push_back(reduce[i]);
      }
    }
    int num_reduced = 0;
    for (bool r : gr) num_reduced += r;
    Tensor tmp[2];
    const T* src = in.data<T>();
    int which = 0;
    while (num_reduced > 0) {
      int k = static_cast<int>(g.size()) - 1;
      while (!gr[k]) --k;
      int64_t A = 1, B = 1;
      for (int i = 0; i < k; ++i) A *= g[i];
      for (size_t i = k + 1; i < g.size(); ++i) B *= g[i];
      const bool last = num_reduced == 1;
      T* dst;
      if (last) {
        dst = out->data<T>();
      } else {
        OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeToEnum<T>::value, TensorShape({A * B}), &tmp[which]));
        dst = tmp[which].data<T>();
      }
      Tensor scratch;
      const int64_t scratch_n = ReduceScratchElements(A, g[k], B);
      if (scratch_n > 0) {
        OP_REQUIRES_OK(ctx, ctx->allocate_temp(DataTypeToEnum<T>::value, TensorShape({scratch_n}), &scratch));
      }
      const T divisor = (last && kMean) ? static_cast<T>(count) : T(1);
      OP_REQUIRES_CUDA(ctx, LaunchReduce3<T>(stream, kKind, src, dst, A, g[k], B, divisor,
                                             scratch_n > 0 ? scratch.data<T>() : nullptr));
      src = dst;
      which ^= 1;
      g.erase(g.begin() + k);
      gr.erase(gr.begin() + k);
      if (k > 0 && k < static_cast<int>(g.size()) && !gr[k - 1] && !gr[k]) {
        g[k - 1] *= g[k];
        g.erase(g.begin() + k);
        gr.erase(gr.begin() + k);
      }
      --num_reduced;
    }
  }

 private:
  bool keep_dims_ = false;
};

// ArgMax / ArgMin. Async so that an int32 output (host memory) is complete
// when the kernel is done; an int64 output is device memory and done at once.
template <typename T, bool kMax>
class GpuArgOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const Tensor& in = ctx->input(0);
    ArgReductionShape r;
    OP_REQUIRES_OK_ASYNC(ctx, ComputeArgReductionShape(in.shape(), ctx->input(1), &r), done);
    const int64_t A = r.A, R = r.R, B = r.B;
    Tensor* out;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, r.out, &out), done);
    const DataType out_type = out->dtype();
    OP_REQUIRES_ASYNC(ctx, out_type == DT_INT32 || out_type == DT_INT64,
                      absl::InvalidArgumentError(absl::StrCat("unsupported output_type ", DataTypeString(out_type))),
                      done);
    const int64_t n = out->NumElements();
    if (n == 0) {
      done();
      return;
    }
    GpuDevice* device = GetGpuDevice(ctx);
    cudaStream_t stream = device->compute_stream();
    if (!device->HostMemory(out_type)) {
      if (out_type == DT_INT64) {
        OP_REQUIRES_OK_ASYNC(ctx,
                             CudaStatus(LaunchArgReduce<T, int64_t>(stream, kMax, in.data<T>(), out->data<int64_t>(),
                                                                    A, R, B),
                                        "LaunchArgReduce"),
                             done);
      } else {
        OP_REQUIRES_OK_ASYNC(ctx,
                             CudaStatus(LaunchArgReduce<T, int32_t>(stream, kMax, in.data<T>(), out->data<int32_t>(),
                                                                    A, R, B),
                                        "LaunchArgReduce"),
                             done);
      }
      done();
      return;
    }
    // Host output (int32): compute into device memory (a float temp of the
    // same byte size), copy back on the compute stream, finish when it lands.
    Tensor staged;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_temp(DT_FLOAT, r.out, &staged), done);
    int32_t* dev = static_cast<int32_t*>(staged.raw_data());
    OP_REQUIRES_OK_ASYNC(
        ctx, CudaStatus(LaunchArgReduce<T, int32_t>(stream, kMax, in.data<T>(), dev, A, R, B), "LaunchArgReduce"),
        done);
    OP_REQUIRES_OK_ASYNC(ctx,
                         CudaStatus(cudaMemcpyAsync(out->data<int32_t>(), dev, n * sizeof(int32_t),
                                                    cudaMemcpyDeviceToHost, stream),
                                    "cudaMemcpyAsync(argmax to host)"),
                         done);
    device->ThenRun(stream, [ctx, done](absl::Status s) {
      if (!s.ok()) ctx->SetStatus(s);
      done();
    });
  }
};

#define SLUICE_REG_GPU_RED_(OP, T, ...) \
  REGISTER_KERNEL_BUILDER(Name(OP).Device(kDeviceGpu).TypeConstraint<T>("T").TypeConstraint<int32_t>("Tidx"), __VA_ARGS__)
#define SLUICE_REG_GPU_ARG_(OP, T, OUT, ...)                                                                        \
  REGISTER_KERNEL_BUILDER(                                                                                         \
      Name(OP).Device(kDeviceGpu).TypeConstraint<T>("T").TypeConstraint<int32_t>("Tidx").TypeConstraint<OUT>(    \
          "output_type"),                                                                                          \
      __VA_ARGS__)
#define SLUICE_REG_GPU_ALL_(T)                                                      \
  SLUICE_REG_GPU_RED_("Sum", T, GpuReductionOp<T, ReduceKind::kSum, false>);        \
  SLUICE_REG_GPU_RED_("Mean", T, GpuReductionOp<T, ReduceKind::kSum, true>);        \
  SLUICE_REG_GPU_RED_("Prod", T, GpuReductionOp<T, ReduceKind::kProd, false>);      \
  SLUICE_REG_GPU_RED_("Max", T, GpuReductionOp<T, ReduceKind::kMax, false>);        \
  SLUICE_REG_GPU_RED_("Min", T, GpuReductionOp<T, ReduceKind::kMin, false>);        \
  SLUICE_REG_GPU_ARG_("ArgMax", T, int64_t, GpuArgOp<T, true>);                     \
  SLUICE_REG_GPU_ARG_("ArgMax", T, int32_t, GpuArgOp<T, true>);                     \
  SLUICE_REG_GPU_ARG_("ArgMin", T, int64_t, GpuArgOp<T, false>);                    \
  SLUICE_REG_GPU_ARG_("ArgMin", T, int32_t, GpuArgOp<T, false>)
SLUICE_REG_GPU_ALL_(float);
SLUICE_REG_GPU_ALL_(double);
#undef SLUICE_REG_GPU_ALL_
#undef SLUICE_REG_GPU_ARG_
#undef SLUICE_REG_GPU_RED_

}  // namespace
}  // namespace gpu
}  // namespace sluice

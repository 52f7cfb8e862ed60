// Transpose on the GPU for the dtypes that live in device memory there
// (everything but int32 and string). The checks and errors are the CPU
// kernel's (array_util::CheckedPermutation). The permutation is first reduced:
// dims of size 1 drop out and input dims that stay neighbours merge. What is
// left is a copy (the input's buffer in the output's shape), a 2-D or batched 2-D
// transpose (NHWC <-> NCHW: the tiled kernel of cudnn_util_kernels.cu, for 4-
// and 8-byte elements), or any other permutation (transpose_gpu.cu). The
// layout pass (engine/graph/optimizer_layout.h) places its Transposes beside
// the GPU nodes it converts with this kernel.
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/array_kernel_util.h"
#include "engine/kernels/gpu/cudnn_util_kernels.h"
#include "engine/kernels/gpu/transpose_gpu.h"
#include "engine/kernels/gpu/transpose_reduce.h"
#include "engine/runtime/gpu/gpu_device.h"

namespace sluice {
namespace gpu {
namespace {

class GpuTransposeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const int rank = in.dims();
    // perm is int32: host memory on a GPU.
    auto checked = array_util::CheckedPermutation(ctx->input(1), rank);
    OP_REQUIRES_OK(ctx, checked.status());
    const std::vector<int64_t>& perm = *checked;
    std::vector<int64_t> out_dims(rank);
    for (int i = 0; i < rank; ++i) out_dims[i] = in.dim_size(static_cast<int>(perm[i]));
    auto shape = TensorShape::Build(out_dims);
    OP_REQUIRES_OK(ctx, shape.status());
    if (in.NumElements() == 0) {
      Tensor* empty = nullptr;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &empty));
      return;
    }
    const absl::Span<const int64_t> in_dims = in.shape().dim_sizes();
    const TransposePlan plan = PlanTranspose(std::vector<int64_t>(in_dims.begin(), in_dims.end()), perm);
    const int elem_bytes = static_cast<int>(in.TotalBytes() / in.NumElements());
    if (plan.kind == TransposePlan::kNone) {
      // Only size-1 dims moved: the same bytes in another shape.
      auto same = in.Reshaped(*shape);
      OP_REQUIRES_OK(ctx, same.status());
      ctx->set_output(0, *same);
      return;
    }
    OP_REQUIRES(ctx, plan.kind != TransposePlan::kGather || plan.out_dims.size() <= kMaxTransposeRank,
                absl::UnimplementedError(absl::StrCat("Transpose on the GPU handles up to ", kMaxTransposeRank,
                                                      " dims after merging neighbours, got ", plan.out_dims.size())));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *shape, &out));
    cudaStream_t stream = GetGpuDevice(ctx)->compute_stream();
    // The tiled kernel only moves values: 4- and 8-byte elements of any type
    // go through it as float and double bits.
    if (plan.kind == TransposePlan::kBatched2d && elem_bytes == 4) {
      OP_REQUIRES_CUDA(ctx, LaunchTranspose(stream, static_cast<const float*>(in.raw_data()), plan.batch, plan.rows,
                                            plan.cols, static_cast<float*>(out->raw_data())));
      return;
    }
    if (plan.kind == TransposePlan::kBatched2d && elem_bytes == 8) {
      OP_REQUIRES_CUDA(ctx, LaunchTranspose(stream, static_cast<const double*>(in.raw_data()), plan.batch, plan.rows,
                                            plan.cols, static_cast<double*>(out->raw_data())));
      return;
    }
    // A gather, or a 2-D transpose of 1- or 2-byte elements as one.
    std::vector<int64_t> out_dims_g = plan.out_dims, strides_g = plan.in_strides;
    if (plan.kind == TransposePlan::kBatched2d) {
      out_dims_g = {plan.batch, plan.cols, plan.rows};
      strides_g = {plan.rows * plan.cols, 1, plan.cols};
    }
    OP_REQUIRES_CUDA(ctx, LaunchPermute(stream, elem_bytes, in.raw_data(), out->raw_data(),
                                        static_cast<int>(out_dims_g.size()), out_dims_g.data(), strides_g.data(),
                                        out->NumElements()));
  }
};

REGISTER_KERNEL_BUILDER(Name("Transpose")
                            .Device(kDeviceGpu)
                            .TypeConstraint("T", {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16, DT_INT64, DT_BOOL,
                                                  DT_UINT8, DT_INT8, DT_INT16, DT_UINT16})
                            .TypeConstraint<int32_t>("Tperm"),
                        GpuTransposeOp);

}  // namespace
}  // namespace gpu
}  // namespace sluice

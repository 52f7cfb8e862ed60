// Tile on the GPU for the dtypes that live in device memory there (float,
// double, int64, bool; int32 stays on the CPU). The checks and errors are the
// CPU kernel's (engine/kernels/slice_ops.cc); Mean's gradient tiles the loss
// gradient with it every step, so without it that gradient would cross to the
// CPU and back.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/gpu/tile_gpu.h"
#include "engine/runtime/gpu/gpu_device.h"

namespace sluice {
namespace gpu {
namespace {

class GpuTileOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const Tensor& multiples = ctx->input(1);  // int32: host memory on a GPU
    const int rank = in.dims();
    OP_REQUIRES(ctx, multiples.dims() == 1 && multiples.NumElements() == rank,
                absl::InvalidArgumentError(absl::StrCat("expected multiples argument to be a vector of length ", rank,
                                                        " but got length ", multiples.NumElements())));
    OP_REQUIRES(ctx, rank <= kMaxTileRank,
                absl::UnimplementedError(absl::StrCat("Tile on the GPU handles up to ", kMaxTileRank,
                                                      " dimensions, got ", rank)));
    int64_t in_dims[kMaxTileRank], out_dims[kMaxTileRank];
    std::vector<int64_t> out_vec(rank);
    for (int i = 0; i < rank; ++i) {
      const int64_t m = multiples.data<int32_t>()[i];
      OP_REQUIRES(ctx, m >= 0, absl::InvalidArgumentError(absl::StrCat("expected multiples[", i, "] >= 0, but got ", m)));
      OP_REQUIRES(ctx, in.dim_size(i) == 0 || m <= kMaxTensorElements / in.dim_size(i),
                  absl::InvalidArgumentError("tiled shape overflows the maximum tensor size"));
      in_dims[i] = in.dim_size(i);
      out_dims[i] = out_vec[i] = in.dim_size(i) * m;
    }
    auto out_shape = TensorShape::Build(out_vec);
    OP_REQUIRES(ctx, out_shape.ok(),
                absl::InvalidArgumentError(absl::StrCat("tiled shape: ", out_shape.status().message())));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *out_shape, &out));
    if (out->NumElements() == 0) return;
    if (rank == 0) {
      OP_REQUIRES_CUDA(ctx, cudaMemcpyAsync(out->raw_data(), in.raw_data(), in.TotalBytes(), cudaMemcpyDeviceToDevice,
                                            GetGpuDevice(ctx)->compute_stream()));
      return;
    }
    const int elem_bytes = static_cast<int>(in.TotalBytes() / std::max<int64_t>(in.NumElements(), 1));
    OP_REQUIRES_CUDA(ctx, LaunchTile(GetGpuDevice(ctx)->compute_stream(), elem_bytes, in.raw_data(), out->raw_data(),
                                     rank, in_dims, out_dims, out->NumElements()));
  }
};

REGISTER_KERNEL_BUILDER(
    Name("Tile").Device(kDeviceGpu).TypeConstraint("T", {DT_FLOAT, DT_DOUBLE, DT_INT64, DT_BOOL}).TypeConstraint<int32_t>(
        "Tmultiples"),
    GpuTileOp);

}  // namespace
}  // namespace gpu
}  // namespace sluice

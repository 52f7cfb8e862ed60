// CPU BatchMatMul (same batch dims) and BatchMatMulV2 (numpy-broadcast batch
// dims): x [..., m, k] (adj_x: [..., k, m]) times y [..., k, n] (adj_y:
// [..., n, k]). Large matrices run one product at a time on the device's
// intra-op pool; many small ones run in parallel over the batch, each product
// on the calling thread. float32 products use CpuGemm, other types Eigen's
// tensor contraction. Shape checks: matmul_shape.h (shared with the GPU
// kernels).
// Thread safety: kernels are stateless.

// GCC 12 flags the AVX-512 intrinsics that Eigen's half/bfloat16 contraction
// inlines (avx512fintrin.h's __Y) as maybe-uninitialized: some 6,000 false
// warnings (25 MB) for this file on an AVX-512 machine.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <algorithm>
#include <vector>

#include "engine/kernels/batch_gemm.h"
#include "engine/kernels/cwise_ops_common.h"
#include "engine/kernels/matmul_shape.h"

namespace sluice {
namespace {

template <typename T, bool kBroadcast>
class BatchMatMulOp : public OpKernel {
 public:
  explicit BatchMatMulOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("adj_x", &adj_x_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("adj_y", &adj_y_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    BatchMatMulShape s;
    OP_REQUIRES_OK(ctx, ComputeBatchMatMulShape(x.shape(), y.shape(), adj_x_, adj_y_, kBroadcast, &s));
    const int64_t xr = s.xr, xc = s.xc, yr = s.yr, yc = s.yc, m = s.m, n = s.n, k = s.k;
    const cwise::BroadcastPlan& plan = s.plan;
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, s.out, &out));
    if (out->NumElements() == 0) return;
    const int64_t batches = plan.out_shape.num_elements();
    // Per output batch, the x and y batch indices.
    std::vector<int64_t> xi(batches), yi(batches);
    const int64_t nbx = s.bx.num_elements(), nby = s.by.num_elements();
    switch (plan.kind) {
      case cwise::BroadcastPlan::kSame:
      case cwise::BroadcastPlan::kYScalar:
      case cwise::BroadcastPlan::kXScalar:
        for (int64_t b = 0; b < batches; ++b) {
          xi[b] = nbx == 1 ? 0 : b;
          yi[b] = nby == 1 ? 0 : b;
        }
        break;
      case cwise::BroadcastPlan::kGeneral: {
        const int64_t inner = plan.dims.back();
        cwise::ForEachRow(plan, 0, batches / inner, [&](int64_t row, int64_t xo, int64_t yo) {
          for (int64_t j = 0; j < inner; ++j) {
            xi[row * inner + j] = xo + (plan.inner_x_scalar ? 0 : j);
            yi[row * inner + j] = yo + (plan.inner_y_scalar ? 0 : j);
          }
        });
        break;
      }
    }
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    T* op = out->data<T>();
    if (k == 0) {
      std::fill(op, op + out->NumElements(), T(0));
      return;
    }
    batch_gemm::MultiplyBatches<T>(ctx, xp, yp, op, xi, yi, {xr, xc, yr, yc, m, n, k}, adj_x_, adj_y_);
  }

 private:
  bool adj_x_ = false, adj_y_ = false;
};

#define SLUICE_REG_(T)                                                                                          \
  REGISTER_KERNEL_BUILDER(Name("BatchMatMul").Device(kDeviceCpu).TypeConstraint<T>("T"), BatchMatMulOp<T, false>); \
  REGISTER_KERNEL_BUILDER(Name("BatchMatMulV2").Device(kDeviceCpu).TypeConstraint<T>("T"), BatchMatMulOp<T, true>)
SLUICE_REG_(float);
SLUICE_REG_(double);
SLUICE_REG_(half);
SLUICE_REG_(bfloat16);
SLUICE_REG_(int32_t);
SLUICE_REG_(int64_t);
#undef SLUICE_REG_

}  // namespace
}  // namespace sluice

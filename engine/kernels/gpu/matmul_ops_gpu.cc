// GPU MatMul, BatchMatMul and BatchMatMulV2 (float32, float64) with cuBLAS,
// and _FusedMatMul (float32: the product, then bias [+ Relu] in one pass).
// Shape checks and messages: matmul_shape.h, shared with the CPU kernels
// (matmul_op.cc, batch_matmul_op.cc). cuBLAS is column-major and our tensors
// row-major: a row-major [r, c] matrix is its column-major transpose, so
// C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T:
// gemm(opB, opA, n, m, k, B, A, C).
// Batches whose operands advance by a fixed stride (same batch shape, or one
// side with a single batch) use one strided-batched gemm; other broadcasts
// pass per-batch pointer arrays (built in pinned host memory, copied to the
// device on the compute stream). K == 0 zero-fills the output.
// Thread safety: kernels are stateless; the cuBLAS handle is used under
// GpuDevice::LockCublas().
#include <climits>
#include <type_traits>

#include "engine/kernels/fused_epilogue.h"
#include "engine/kernels/gpu/bias_gpu.h"
#include "engine/kernels/gpu/gpu_kernel_util.h"
#include "engine/kernels/matmul_shape.h"

namespace sluice {
namespace gpu {
namespace {

bool FitsInt(int64_t v) { return v >= 0 && v <= INT_MAX; }

// One row-major product out[m, n] = op(a) op(b); lda/ldb are the stored row
// lengths of a and b.
template <typename T>
cublasStatus_t Gemm(cublasHandle_t h, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                    const T* b, int64_t ldb, T* c) {
  const T one = 1, zero = 0;
  const cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const bool small = FitsInt(m) && FitsInt(n) && FitsInt(k) && FitsInt(lda) && FitsInt(ldb);
  if constexpr (std::is_same<T, float>::value) {
    if (small) return cublasSgemm(h, op_b, op_a, n, m, k, &one, b, ldb, a, lda, &zero, c, n);
    return cublasSgemm_64(h, op_b, op_a, n, m, k, &one, b, ldb, a, lda, &zero, c, n);
  } else {
    if (small) return cublasDgemm(h, op_b, op_a, n, m, k, &one, b, ldb, a, lda, &zero, c, n);
    return cublasDgemm_64(h, op_b, op_a, n, m, k, &one, b, ldb, a, lda, &zero, c, n);
  }
}

template <typename T>
cublasStatus_t GemmStridedBatched(cublasHandle_t h, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a,
                                  int64_t lda, int64_t stride_a, const T* b, int64_t ldb, int64_t stride_b, T* c,
                                  int64_t batches) {
  const T one = 1, zero = 0;
  const cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const bool small = FitsInt(m) && FitsInt(n) && FitsInt(k) && FitsInt(lda) && FitsInt(ldb) && FitsInt(batches);
  if constexpr (std::is_same<T, float>::value) {
    if (small) {
      return cublasSgemmStridedBatched(h, op_b, op_a, n, m, k, &one, b, ldb, stride_b, a, lda, stride_a, &zero, c, n,
                                       m * n, batches);
    }
    return cublasSgemmStridedBatched_64(h, op_b, op_a, n, m, k, &one, b, ldb, stride_b, a, lda, stride_a, &zero, c,
                                        n, m * n, batches);
  } else {
    if (small) {
      return cublasDgemmStridedBatched(h, op_b, op_a, n, m, k, &one, b, ldb, stride_b, a, lda, stride_a, &zero, c, n,
                                       m * n, batches);
    }
    return cublasDgemmStridedBatched_64(h, op_b, op_a, n, m, k, &one, b, ldb, stride_b, a, lda, stride_a, &zero, c,
                                        n, m * n, batches);
  }
}

// ptrs: device arrays [a pointers | b pointers | c pointers], batches each.
template <typename T>
cublasStatus_t GemmBatched(cublasHandle_t h, bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t lda,
                           int64_t ldb, void* const* ptrs, int64_t batches) {
  const T one = 1, zero = 0;
  const cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const T* const* a = reinterpret_cast<const T* const*>(ptrs);
  const T* const* b = reinterpret_cast<const T* const*>(ptrs + batches);
  T* const* c = reinterpret_cast<T* const*>(ptrs + 2 * batches);
  if constexpr (std::is_same<T, float>::value) {
    return cublasSgemmBatched_64(h, op_b, op_a, n, m, k, &one, b, ldb, a, lda, &zero, c, n, batches);
  } else {
    return cublasDgemmBatched_64(h, op_b, op_a, n, m, k, &one, b, ldb, a, lda, &zero, c, n, batches);
  }
}

// MatMul, and _FusedMatMul (float32, the fusion pass's MatMul + BiasAdd [+
// Relu]): the product, then the bias and Relu in one pass over the output
// (LaunchBiasAdd in place) instead of BiasAdd's and Relu's two.
template <typename T>
class MatMulGpuOp : public OpKernel {
 public:
  explicit MatMulGpuOp(OpKernelConstruction* ctx) : OpKernel(ctx), fused_(ctx->def().op() == "_FusedMatMul") {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("transpose_a", &transpose_a_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("transpose_b", &transpose_b_));
    if (fused_) OP_REQUIRES_OK(ctx, ReadBiasEpilogueAttrs(ctx, &relu_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    MatMulShape s;
    OP_REQUIRES_OK(ctx, ComputeMatMulShape(a.shape(), b.shape(), transpose_a_, transpose_b_, &s));
    if (fused_) OP_REQUIRES_OK(ctx, CheckBias(ctx->input(2), s.out.dim_size(1)));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, s.out, &out));
    if (out->NumElements() == 0) return;
    GpuDevice* gpu = GetGpuDevice(ctx);
    const int64_t k = s.k;
    if (k == 0) {
      OP_REQUIRES_CUDA(ctx, cudaMemsetAsync(out->raw_data(), 0, out->TotalBytes(), gpu->compute_stream()));
    } else {
      auto lock = gpu->LockCublas();
      OP_REQUIRES_CUBLAS(ctx, cublasSetPointerMode(lock->handle, CUBLAS_POINTER_MODE_HOST));
      OP_REQUIRES_CUBLAS(ctx, Gemm<T>(lock->handle, transpose_a_, transpose_b_, out->dim_size(0), out->dim_size(1),
                                      k, a.data<T>(), a.dim_size(1), b.data<T>(), b.dim_size(1), out->data<T>()));
    }
    if (fused_) {  // k == 0: act(bias) in every row, as on the CPU
      OP_REQUIRES_CUDA(ctx, LaunchBiasAdd(gpu->compute_stream(), ElemTypeOf<T>(), out->raw_data(),
                                          ctx->input(2).raw_data(), out->raw_data(), out->dim_size(0),
                                          out->dim_size(1), 1, relu_));
    }
  }

 private:
  const bool fused_;
  bool transpose_a_ = false;
  bool transpose_b_ = false;
  bool relu_ = false;
};

template <typename T, bool kBroadcast>
class BatchMatMulGpuOp : public OpKernel {
 public:
  explicit BatchMatMulGpuOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
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
    GpuDevice* gpu = GetGpuDevice(ctx);
    cudaStream_t stream = gpu->compute_stream();
    if (k == 0) {
      OP_REQUIRES_CUDA(ctx, cudaMemsetAsync(out->raw_data(), 0, out->TotalBytes(), stream));
      return;
    }
    const int64_t batches = plan.out_shape.num_elements();
    const int64_t nbx = s.bx.num_elements(), nby = s.by.num_elements();
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    T* op = out->data<T>();
    if (plan.kind != cwise::BroadcastPlan::kGeneral) {
      // Every operand either has all the batches or a single one.
      auto lock = gpu->LockCublas();
      OP_REQUIRES_CUBLAS(ctx, cublasSetPointerMode(lock->handle, CUBLAS_POINTER_MODE_HOST));
      if (batches == 1) {
        OP_REQUIRES_CUBLAS(ctx, Gemm<T>(lock->handle, adj_x_, adj_y_, m, n, k, xp, xc, yp, yc, op));
        return;
      }
      OP_REQUIRES_CUBLAS(ctx, GemmStridedBatched<T>(lock->handle, adj_x_, adj_y_, m, n, k, xp, xc,
                                                    nbx == 1 ? 0 : xr * xc, yp, yc, nby == 1 ? 0 : yr * yc, op,
                                                    batches));
      return;
    }
    // General broadcast: per-batch pointers, as the CPU kernel's batch indices.
    const int64_t inner = plan.dims.back();
    Tensor host_ptrs(gpu->host_allocator(), DT_INT64, TensorShape({3 * batches}));
    OP_REQUIRES(ctx, host_ptrs.raw_data() != nullptr,
                absl::ResourceExhaustedError("out of pinned host memory for BatchMatMul pointers"));
    void** hp = static_cast<void**>(host_ptrs.raw_data());
    const T* xb = xp;
    const T* yb = yp;
    cwise::ForEachRow(plan, 0, batches / inner, [&](int64_t row, int64_t xo, int64_t yo) {
      for (int64_t j = 0; j < inner; ++j) {
        const int64_t b = row * inner + j;
        const int64_t xi = xo + (plan.inner_x_scalar ? 0 : j);
        const int64_t yi = yo + (plan.inner_y_scalar ? 0 : j);
        hp[b] = const_cast<T*>(xb + xi * xr * xc);
        hp[batches + b] = const_cast<T*>(yb + yi * yr * yc);
        hp[2 * batches + b] = op + b * m * n;
      }
    });
    Tensor device_ptrs;
    OP_REQUIRES_OK(ctx, ctx->allocate_temp(DT_INT64, TensorShape({3 * batches}), &device_ptrs));
    OP_REQUIRES_CUDA(ctx, cudaMemcpyAsync(device_ptrs.raw_data(), host_ptrs.raw_data(), host_ptrs.TotalBytes(),
                                          cudaMemcpyHostToDevice, stream));
    gpu->ThenRun(stream, [keep = host_ptrs](absl::Status) {});
    auto lock = gpu->LockCublas();
    OP_REQUIRES_CUBLAS(ctx, cublasSetPointerMode(lock->handle, CUBLAS_POINTER_MODE_HOST));
    OP_REQUIRES_CUBLAS(ctx, GemmBatched<T>(lock->handle, adj_x_, adj_y_, m, n, k, xc, yc,
                                           static_cast<void* const*>(device_ptrs.raw_data()), batches));
  }

 private:
  bool adj_x_ = false, adj_y_ = false;
};

#define SLUICE_REG_(T)                                                                                        \
  REGISTER_KERNEL_BUILDER(Name("MatMul").Device(kDeviceGpu).TypeConstraint<T>("T"), MatMulGpuOp<T>);            \
  REGISTER_KERNEL_BUILDER(Name("BatchMatMul").Device(kDeviceGpu).TypeConstraint<T>("T"),                       \
                          BatchMatMulGpuOp<T, false>);                                                          \
  REGISTER_KERNEL_BUILDER(Name("BatchMatMulV2").Device(kDeviceGpu).TypeConstraint<T>("T"),                     \
                          BatchMatMulGpuOp<T, true>)
SLUICE_REG_(float);
SLUICE_REG_(double);
REGISTER_KERNEL_BUILDER(Name("_FusedMatMul").Device(kDeviceGpu).TypeConstraint<float>("T"), MatMulGpuOp<float>);
#undef SLUICE_REG_

}  // namespace
}  // namespace gpu
}  // namespace sluice

// CPU MatMul: float32 through CpuGemm (our blocked GEMM), the other types as
// an Eigen tensor contraction; both on the device's intra-op pool. Shape
// checks: matmul_shape.h (shared with the GPU kernel). _FusedMatMul (float32):
// the same product with the bias (and Relu) applied in CpuGemm's epilogue.
#include <type_traits>

#include "engine/framework/op_kernel.h"
#include "engine/kernels/cpu_gemm.h"
#include "engine/kernels/fused_epilogue.h"
#include "engine/kernels/matmul_shape.h"

namespace sluice {
namespace {

// CpuGemm's arguments for out = op(a) op(b), all float32 row-major [rows, cols].
GemmArgs FloatGemmArgs(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b, int64_t k, Tensor* out) {
  GemmArgs g;
  g.m = out->dim_size(0);
  g.n = out->dim_size(1);
  g.k = k;
  g.a = a.data<float>();
  g.lda = a.dim_size(1);
  g.transpose_a = transpose_a;
  g.b = b.data<float>();
  g.ldb = b.dim_size(1);
  g.transpose_b = transpose_b;
  g.c = out->data<float>();
  g.ldc = g.n;
  return g;
}

template <typename T>
class MatMulOp : public OpKernel {
 public:
  explicit MatMulOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("transpose_a", &transpose_a_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("transpose_b", &transpose_b_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    MatMulShape s;
    OP_REQUIRES_OK(ctx, ComputeMatMulShape(a.shape(), b.shape(), transpose_a_, transpose_b_, &s));
    const int a_inner = s.a_inner, b_inner = s.b_inner;
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, s.out, &out));
    if (out->NumElements() == 0) return;
    if (s.k == 0) {
      out->flat<T>().setZero();
      return;
    }
    if constexpr (std::is_same<T, float>::value) {
      CpuGemm(FloatGemmArgs(a, b, transpose_a_, transpose_b_, s.k, out), ctx->eigen_cpu_device());
    } else {  // (an else, so float32 instantiates no Eigen contraction)
      Eigen::array<Eigen::IndexPair<Eigen::DenseIndex>, 1> dims{Eigen::IndexPair<Eigen::DenseIndex>(a_inner, b_inner)};
      // Not float: Eigen's contraction on this thread (see Product in
      // conv_ops.cc for why not on the device's ThreadPoolDevice).
      out->matrix<T>() = a.matrix<T>().contract(b.matrix<T>(), dims);
    }
  }

 private:
  bool transpose_a_ = false;
  bool transpose_b_ = false;
};

// out = act(op(a) op(b) + bias): MatMul, BiasAdd and (with fused_ops
// [BiasAdd, Relu]) Relu in one pass over the output.
class FusedMatMulOp : public OpKernel {
 public:
  explicit FusedMatMulOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("transpose_a", &transpose_a_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("transpose_b", &transpose_b_));
    OP_REQUIRES_OK(ctx, ReadBiasEpilogueAttrs(ctx, &relu_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    const Tensor& bias = ctx->input(2);
    MatMulShape s;
    OP_REQUIRES_OK(ctx, ComputeMatMulShape(a.shape(), b.shape(), transpose_a_, transpose_b_, &s));
    OP_REQUIRES_OK(ctx, CheckBias(bias, s.out.dim_size(1)));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, s.out, &out));
    if (out->NumElements() == 0) return;
    // k == 0: CpuGemm writes act(bias) in every row.
    GemmArgs g = FloatGemmArgs(a, b, transpose_a_, transpose_b_, s.k, out);
    g.bias = bias.data<float>();
    g.relu = relu_;
    CpuGemm(g, ctx->eigen_cpu_device());
  }

 private:
  bool transpose_a_ = false;
  bool transpose_b_ = false;
  bool relu_ = false;
};

REGISTER_KERNEL_BUILDER(Name("_FusedMatMul").Device(kDeviceCpu).TypeConstraint<float>("T"), FusedMatMulOp);

#define SLUICE_REGISTER_MATMUL_(T) \
  REGISTER_KERNEL_BUILDER(Name("MatMul").Device(kDeviceCpu).TypeConstraint<T>("T"), MatMulOp<T>)
SLUICE_REGISTER_MATMUL_(float);
SLUICE_REGISTER_MATMUL_(double);
SLUICE_REGISTER_MATMUL_(int32_t);
SLUICE_REGISTER_MATMUL_(int64_t);
SLUICE_REGISTER_MATMUL_(half);
SLUICE_REGISTER_MATMUL_(bfloat16);
SLUICE_REGISTER_MATMUL_(complex64);
#undef SLUICE_REGISTER_MATMUL_

}  // namespace
}  // namespace sluice

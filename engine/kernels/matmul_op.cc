// CPU MatMul: float32 through CpuGemm (our blocked GEMM), the other types as
// an Eigen tensor contraction; both on the device's intra-op pool. Shape
// checks: matmul_shape.h (shared with the GPU kernel). _FusedMatMul (float32):
// the same product with the bias (and Relu) applied in CpuGemm's epilogue. A
// narrow float product, whose transpose fills the micro-kernel's tiles at least
// 1.5 times better (fashion's 10 logits with AVX-512's 8 x 32 tiles), is
// computed as its transpose (matmul_exact_test: bit for bit the direct product).
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

// True when C^T = op(B)^T op(A)^T wastes clearly less of the micro-kernel's
// tiles than C = op(A) op(B): a narrow C (fashion's logits, n = 10, fill a
// third of a 32-column tile; their transpose fills 10 of 16 rows), with k
// deep enough that transposing the small result back costs next to nothing.
bool TransposedProductIsBetter(int64_t m, int64_t n, int64_t k) {
  return k >= 16 && CpuGemmTileUse(n, m) >= 1.5 * CpuGemmTileUse(m, n);
}

// out = act(op(a) op(b) + bias) (bias null: none; act Relu when `relu`), float32.
// A narrow product (k >= 16) is computed as its transpose into scratch ([n, m])
// and transposed into out with the bias and Relu applied as CpuGemm's
// epilogue applies them (the same roundings, so the result is bitwise that of
// the direct product); any other product goes to CpuGemm directly.
absl::Status FloatProduct(OpKernelContext* ctx, const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b,
                          int64_t k, const float* bias, bool relu, Tensor* out) {
  const int64_t m = out->dim_size(0), n = out->dim_size(1);
  if (!TransposedProductIsBetter(m, n, k)) {
    GemmArgs g = FloatGemmArgs(a, b, transpose_a, transpose_b, k, out);
    g.bias = bias;
    g.relu = relu;
    CpuGemm(g, ctx->eigen_cpu_device());
    return absl::OkStatus();
  }
  Tensor scratch;
  absl::Status s = ctx->allocate_temp(DT_FLOAT, TensorShape({n, m}), &scratch);
  if (!s.ok()) return s;
  // C^T = op(B)^T op(A)^T: each operand read with its transpose flag flipped.
  CpuGemm(FloatGemmArgs(b, a, !transpose_b, !transpose_a, k, &scratch), ctx->eigen_cpu_device());
  const float* t = scratch.data<float>();
  float* c = out->data<float>();
  for (int64_t j = 0; j < n; ++j) {
    const float add = bias != nullptr ? bias[j] : 0.0f;
    for (int64_t i = 0; i < m; ++i) {
      float x = t[j * m + i];
      if (bias != nullptr) x += add;
      if (relu && x < 0.0f) x = 0.0f;  // NaN stays NaN, as in the epilogue
      c[i * n + j] = x;
    }
  }
  return absl::OkStatus();
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
      OP_REQUIRES_OK(ctx, FloatProduct(ctx, a, b, transpose_a_, transpose_b_, s.k, nullptr, false, out));
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
    // k == 0 (never the transposed path): CpuGemm writes act(bias) in every row.
    OP_REQUIRES_OK(ctx, FloatProduct(ctx, a, b, transpose_a_, transpose_b_, s.k, bias.data<float>(), relu_, out));
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

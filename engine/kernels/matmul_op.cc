// CPU MatMul: float32 through CpuGemm (our blocked GEMM), the other types as
// an Eigen tensor contraction; both on the device's intra-op pool.
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/cpu_gemm.h"

namespace sluice {
namespace {

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
    OP_REQUIRES(ctx, a.dims() == 2 && b.dims() == 2,
                absl::InvalidArgumentError(absl::StrCat("MatMul needs matrices, got shapes ", a.shape().DebugString(),
                                                        " and ", b.shape().DebugString())));
    const int a_inner = transpose_a_ ? 0 : 1;
    const int b_inner = transpose_b_ ? 1 : 0;
    OP_REQUIRES(ctx, a.dim_size(a_inner) == b.dim_size(b_inner),
                absl::InvalidArgumentError(absl::StrCat("inner dimensions differ: a is ", a.shape().DebugString(),
                                                        transpose_a_ ? " (transposed)" : "", ", b is ",
                                                        b.shape().DebugString(), transpose_b_ ? " (transposed)" : "")));
    // [m, n] takes one dim from each input: [2^40, 0] x [0, 2^40] is two
    // empty matrices whose product is not a valid shape.
    auto out_shape = TensorShape::Build({a.dim_size(1 - a_inner), b.dim_size(1 - b_inner)});
    OP_REQUIRES_OK(ctx, out_shape.status());
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *out_shape, &out));
    if (out->NumElements() == 0) return;
    if (a.dim_size(a_inner) == 0) {
      out->flat<T>().setZero();
      return;
    }
    if constexpr (std::is_same<T, float>::value) {
      GemmArgs g;
      g.m = out->dim_size(0);
      g.n = out->dim_size(1);
      g.k = a.dim_size(a_inner);
      g.a = a.data<float>();
      g.lda = a.dim_size(1);
      g.transpose_a = transpose_a_;
      g.b = b.data<float>();
      g.ldb = b.dim_size(1);
      g.transpose_b = transpose_b_;
      g.c = out->data<float>();
      g.ldc = g.n;
      CpuGemm(g, ctx->eigen_cpu_device());
    } else {  // (an else, so float32 instantiates no Eigen contraction)
      Eigen::array<Eigen::IndexPair<Eigen::DenseIndex>, 1> dims{Eigen::IndexPair<Eigen::DenseIndex>(a_inner, b_inner)};
      out->matrix<T>().device(ctx->eigen_cpu_device()) = a.matrix<T>().contract(b.matrix<T>(), dims);
    }
  }

 private:
  bool transpose_a_ = false;
  bool transpose_b_ = false;
};

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

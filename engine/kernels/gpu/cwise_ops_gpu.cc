// GPU kernels (OpKernel glue) for the element-wise ops: broadcasting
// arithmetic and comparisons, unary math, Relu/Elu and the activation
// gradients, and AddN. Shapes are checked on the host exactly as the CPU
// kernels do (engine/kernels/cwise_*.cc, relu_op.cc, math_misc_ops.cc: same
// broadcast plan, same errors); the work is enqueued on the compute stream.
// Thread safety: kernels are stateless.
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/kernels/gpu/gpu_kernel_util.h"

namespace sluice {
namespace gpu {
namespace {

// out = op(x, y) with numpy broadcasting.
void ComputeBinary(OpKernelContext* ctx, BinaryOp op, ElemType type) {
  const Tensor& x = ctx->input(0);
  const Tensor& y = ctx->input(1);
  cwise::BroadcastPlan plan;
  OP_REQUIRES_OK(ctx, cwise::MakeBroadcastPlan(x.shape(), y.shape(), &plan));
  Tensor* out;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(0, plan.out_shape, &out));
  const int64_t n = out->NumElements();
  if (n == 0) return;
  BroadcastShape shape;
  OP_REQUIRES_OK(ctx, ToBroadcastShape(plan, &shape));
  OP_REQUIRES_CUDA(ctx, LaunchBinary(ComputeStream(ctx), op, type, x.raw_data(), y.raw_data(), out->raw_data(), n,
                                     ToMode(plan.kind), shape));
}

template <typename T, BinaryOp OP>
class BinaryGpuOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { ComputeBinary(ctx, OP, ElemTypeOf<T>()); }
};

// Equal / NotEqual: with incompatible_shape_error=false, shapes that do not
// broadcast compare as "all different" (a scalar false / true), as on the CPU.
template <typename T, BinaryOp OP>
class EqualityGpuOp : public OpKernel {
 public:
  explicit EqualityGpuOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    if (!ctx->GetAttr("incompatible_shape_error", &incompatible_shape_error_).ok()) {
      incompatible_shape_error_ = true;
    }
  }
  void Compute(OpKernelContext* ctx) override {
    if (!incompatible_shape_error_) {
      cwise::BroadcastPlan plan;
      if (!cwise::MakeBroadcastPlan(ctx->input(0).shape(), ctx->input(1).shape(), &plan).ok()) {
        Tensor* out;
        OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape(), &out));
        OP_REQUIRES_CUDA(ctx, cudaMemsetAsync(out->raw_data(), OP == BinaryOp::kNotEqual ? 1 : 0, sizeof(bool),
                                              ComputeStream(ctx)));
        return;
      }
    }
    ComputeBinary(ctx, OP, ElemTypeOf<T>());
  }

 private:
  bool incompatible_shape_error_ = true;
};

// Same-shape binary helpers: (y, dy) -> dx for Tanh/Sigmoid/Sqrt/Rsqrt grads.
template <typename T, BinaryOp OP>
class UnaryGradGpuOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& y = ctx->input(0);
    const Tensor& dy = ctx->input(1);
    OP_REQUIRES(ctx, y.shape() == dy.shape(),
                absl::InvalidArgumentError(absl::StrCat("y and dy must have the same shape, got ",
                                                        y.shape().DebugString(), " and ", dy.shape().DebugString())));
    ComputeBinary(ctx, OP, ElemTypeOf<T>());
  }
};

// ReluGrad(gradients, features), EluGrad(gradients, outputs).
template <typename T, BinaryOp OP>
class ActivationGradGpuOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    OP_REQUIRES(ctx, a.shape() == b.shape(),
                absl::InvalidArgumentError(absl::StrCat("gradients and features must have the same shape: ",
                                                        a.shape().DebugString(), " vs ", b.shape().DebugString())));
    ComputeBinary(ctx, OP, ElemTypeOf<T>());
  }
};

template <typename T, UnaryOp OP>
class UnaryGpuOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    OP_REQUIRES_CUDA(ctx, LaunchUnary(ComputeStream(ctx), OP, ElemTypeOf<T>(), x.raw_data(), out->raw_data(),
                                      x.NumElements()));
  }
};

template <typename T>
class AddNGpuOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs();
    const Tensor& first = ctx->input(0);
    for (int i = 1; i < n; ++i) {
      OP_REQUIRES(ctx, ctx->input(i).shape() == first.shape(),
                  absl::InvalidArgumentError(absl::StrCat("AddN inputs must have the same shape: input 0 is ",
                                                          first.shape().DebugString(), ", input ", i, " is ",
                                                          ctx->input(i).shape().DebugString())));
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, first.shape(), &out));
    if (out->NumElements() == 0) return;
    std::vector<const void*> inputs(n);
    for (int i = 0; i < n; ++i) inputs[i] = ctx->input(i).raw_data();
    OP_REQUIRES_CUDA(ctx, LaunchAddN(ComputeStream(ctx), ElemTypeOf<T>(), inputs.data(), n, out->raw_data(),
                                     out->NumElements()));
  }
};

#define SLUICE_REG_(OP, T, ...) \
  REGISTER_KERNEL_BUILDER(Name(OP).Device(kDeviceGpu).TypeConstraint<T>("T"), __VA_ARGS__)

// Arithmetic on every GPU number type.
#define SLUICE_REG_ARITH_(T)                                           \
  SLUICE_REG_("Add", T, BinaryGpuOp<T, BinaryOp::kAdd>);               \
  SLUICE_REG_("AddV2", T, BinaryGpuOp<T, BinaryOp::kAdd>);             \
  SLUICE_REG_("Sub", T, BinaryGpuOp<T, BinaryOp::kSub>);               \
  SLUICE_REG_("Mul", T, BinaryGpuOp<T, BinaryOp::kMul>);               \
  SLUICE_REG_("Maximum", T, BinaryGpuOp<T, BinaryOp::kMax>);           \
  SLUICE_REG_("Minimum", T, BinaryGpuOp<T, BinaryOp::kMin>);           \
  SLUICE_REG_("SquaredDifference", T, BinaryGpuOp<T, BinaryOp::kSquaredDifference>); \
  SLUICE_REG_("Less", T, BinaryGpuOp<T, BinaryOp::kLess>);             \
  SLUICE_REG_("LessEqual", T, BinaryGpuOp<T, BinaryOp::kLessEqual>);   \
  SLUICE_REG_("Greater", T, BinaryGpuOp<T, BinaryOp::kGreater>);       \
  SLUICE_REG_("GreaterEqual", T, BinaryGpuOp<T, BinaryOp::kGreaterEqual>); \
  SLUICE_REG_("Equal", T, EqualityGpuOp<T, BinaryOp::kEqual>);         \
  SLUICE_REG_("NotEqual", T, EqualityGpuOp<T, BinaryOp::kNotEqual>);   \
  SLUICE_REG_("Neg", T, UnaryGpuOp<T, UnaryOp::kNeg>);                 \
  SLUICE_REG_("Abs", T, UnaryGpuOp<T, UnaryOp::kAbs>);                 \
  SLUICE_REG_("Square", T, UnaryGpuOp<T, UnaryOp::kSquare>);           \
  SLUICE_REG_("AddN", T, AddNGpuOp<T>)
SLUICE_REG_ARITH_(float);
SLUICE_REG_ARITH_(double);
SLUICE_REG_ARITH_(int64_t);
#undef SLUICE_REG_ARITH_

SLUICE_REG_("Equal", bool, EqualityGpuOp<bool, BinaryOp::kEqual>);
SLUICE_REG_("NotEqual", bool, EqualityGpuOp<bool, BinaryOp::kNotEqual>);

// Floating-point only.
#define SLUICE_REG_FLOAT_(T)                                                 \
  SLUICE_REG_("Div", T, BinaryGpuOp<T, BinaryOp::kDiv>);                     \
  SLUICE_REG_("RealDiv", T, BinaryGpuOp<T, BinaryOp::kDiv>);                 \
  SLUICE_REG_("Pow", T, BinaryGpuOp<T, BinaryOp::kPow>);                     \
  SLUICE_REG_("Sqrt", T, UnaryGpuOp<T, UnaryOp::kSqrt>);                     \
  SLUICE_REG_("Rsqrt", T, UnaryGpuOp<T, UnaryOp::kRsqrt>);                   \
  SLUICE_REG_("Exp", T, UnaryGpuOp<T, UnaryOp::kExp>);                       \
  SLUICE_REG_("Log", T, UnaryGpuOp<T, UnaryOp::kLog>);                       \
  SLUICE_REG_("Log1p", T, UnaryGpuOp<T, UnaryOp::kLog1p>);                   \
  SLUICE_REG_("Tanh", T, UnaryGpuOp<T, UnaryOp::kTanh>);                     \
  SLUICE_REG_("Sigmoid", T, UnaryGpuOp<T, UnaryOp::kSigmoid>);               \
  SLUICE_REG_("Reciprocal", T, UnaryGpuOp<T, UnaryOp::kReciprocal>);         \
  SLUICE_REG_("TanhGrad", T, UnaryGradGpuOp<T, BinaryOp::kTanhGrad>);        \
  SLUICE_REG_("SigmoidGrad", T, UnaryGradGpuOp<T, BinaryOp::kSigmoidGrad>);  \
  SLUICE_REG_("SqrtGrad", T, UnaryGradGpuOp<T, BinaryOp::kSqrtGrad>);        \
  SLUICE_REG_("RsqrtGrad", T, UnaryGradGpuOp<T, BinaryOp::kRsqrtGrad>);      \
  SLUICE_REG_("Relu", T, UnaryGpuOp<T, UnaryOp::kRelu>);                     \
  SLUICE_REG_("Elu", T, UnaryGpuOp<T, UnaryOp::kElu>);                       \
  SLUICE_REG_("ReluGrad", T, ActivationGradGpuOp<T, BinaryOp::kReluGrad>);   \
  SLUICE_REG_("EluGrad", T, ActivationGradGpuOp<T, BinaryOp::kEluGrad>)
SLUICE_REG_FLOAT_(float);
SLUICE_REG_FLOAT_(double);
#undef SLUICE_REG_FLOAT_
#undef SLUICE_REG_

}  // namespace
}  // namespace gpu
}  // namespace sluice

// CPU kernels for the elementwise unary math ops (Neg, Abs, Sign, Square,
// Sqrt, Rsqrt, Exp, Log, Log1p, Tanh, Sigmoid, Reciprocal, Sin, Cos, Erfc,
// Erf, Lgamma, Digamma, Floor, Ceil, Round)
// and the gradient helper ops TensorFlow's gradients use (TanhGrad,
// SigmoidGrad, SqrtGrad, RsqrtGrad: inputs y and dy of the same shape). Vectorized Eigen expressions evaluated
// in parallel chunks; float Erfc has its own vector loop (erfc_float.h). Thread safety: kernels are stateless.
#include "absl/strings/str_cat.h"
#include "engine/kernels/cwise_ops_common.h"
#include "engine/kernels/erfc_float.h"

namespace sluice {
namespace {

#define SLUICE_UNARY_FUNCTOR_(NAME, EXPR)                \
  struct NAME {                                          \
    template <typename A>                                \
    auto operator()(const A& a) const { return EXPR; }   \
  }
SLUICE_UNARY_FUNCTOR_(IdentityF, a);
SLUICE_UNARY_FUNCTOR_(NegF, -a);
SLUICE_UNARY_FUNCTOR_(AbsF, a.abs());
SLUICE_UNARY_FUNCTOR_(SquareF, a.square());
SLUICE_UNARY_FUNCTOR_(SqrtF, a.sqrt());
SLUICE_UNARY_FUNCTOR_(RsqrtF, a.rsqrt());
SLUICE_UNARY_FUNCTOR_(ExpF, a.exp());
SLUICE_UNARY_FUNCTOR_(LogF, a.log());
SLUICE_UNARY_FUNCTOR_(Log1pF, a.log1p());
SLUICE_UNARY_FUNCTOR_(TanhF, a.tanh());
SLUICE_UNARY_FUNCTOR_(SigmoidF, a.sigmoid());
SLUICE_UNARY_FUNCTOR_(ReciprocalF, a.inverse());
SLUICE_UNARY_FUNCTOR_(SignF, a.sign());
SLUICE_UNARY_FUNCTOR_(ErfcF, a.erfc());
SLUICE_UNARY_FUNCTOR_(ErfF, a.erf());
SLUICE_UNARY_FUNCTOR_(LgammaF, a.lgamma());
SLUICE_UNARY_FUNCTOR_(DigammaF, a.digamma());
SLUICE_UNARY_FUNCTOR_(FloorF, a.floor());
SLUICE_UNARY_FUNCTOR_(CeilF, a.ceil());
SLUICE_UNARY_FUNCTOR_(RintF, a.rint());  // half to even, as TensorFlow's Round
#undef SLUICE_UNARY_FUNCTOR_

// Eigen's Tensor has no sin()/cos() members; its scalar functors vectorize
// for float and double (half and bfloat16 go through float).
template <typename T>
struct SinF {
  template <typename A>
  auto operator()(const A& a) const { return a.unaryExpr(Eigen::internal::scalar_sin_op<T>()); }
};
template <typename T>
struct CosF {
  template <typename A>
  auto operator()(const A& a) const { return a.unaryExpr(Eigen::internal::scalar_cos_op<T>()); }
};

template <typename T, typename F, int kCost>
class UnaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    cwise::ApplyUnary<T, T>(ctx, x, out, F(), kCost);
  }
};

// float Erfc: erfc_float.h's vector loop (Eigen's float erfc calls the
// scalar erfcf per element), in parallel chunks.
class ErfcFloatOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    const float* in = x.data<float>();
    float* o = out->data<float>();
    cwise::ParallelFor(ctx, x.NumElements(), 16,
                       [&](int64_t first, int64_t last) { ErfcFloat(in + first, o + first, last - first); });
  }
};

// (y, dy) -> dx, elementwise; y and dy must have the same shape.
#define SLUICE_GRAD_FUNCTOR_(NAME, EXPR)                             \
  struct NAME {                                                      \
    template <typename Y, typename D>                                \
    auto operator()(const Y& y, const D& dy) const { return EXPR; }  \
  }
template <typename T>
SLUICE_GRAD_FUNCTOR_(TanhGradF, dy * (y.constant(T(1)) - y * y));
template <typename T>
SLUICE_GRAD_FUNCTOR_(SigmoidGradF, dy * y * (y.constant(T(1)) - y));
template <typename T>
SLUICE_GRAD_FUNCTOR_(SqrtGradF, dy * y.constant(T(0.5)) / y);
template <typename T>
SLUICE_GRAD_FUNCTOR_(RsqrtGradF, dy * y.cube() * y.constant(T(-0.5)));
#undef SLUICE_GRAD_FUNCTOR_

template <typename T, typename F>
class UnaryGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& y = ctx->input(0);
    const Tensor& dy = ctx->input(1);
    OP_REQUIRES(ctx, y.shape() == dy.shape(),
                absl::InvalidArgumentError(absl::StrCat("y and dy must have the same shape, got ",
                                                        y.shape().DebugString(), " and ", dy.shape().DebugString())));
    cwise::BroadcastPlan plan;
    OP_REQUIRES_OK(ctx, cwise::MakeBroadcastPlan(y.shape(), dy.shape(), &plan));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, y.shape(), &out));
    cwise::ApplyBinary<T, T>(ctx, y, dy, plan, out, F());
  }
};

#define SLUICE_REG_(OP, T, ...) \
  REGISTER_KERNEL_BUILDER(Name(OP).Device(kDeviceCpu).TypeConstraint<T>("T"), __VA_ARGS__)
#define SLUICE_REG_SIGNED_(T)                     \
  SLUICE_REG_("Neg", T, UnaryOp<T, NegF, 1>);     \
  SLUICE_REG_("Abs", T, UnaryOp<T, AbsF, 1>);     \
  SLUICE_REG_("Sign", T, UnaryOp<T, SignF, 1>);   \
  SLUICE_REG_("Square", T, UnaryOp<T, SquareF, 1>)
#define SLUICE_REG_FLOAT_(T)                                       \
  SLUICE_REG_SIGNED_(T);                                           \
  SLUICE_REG_("Sqrt", T, UnaryOp<T, SqrtF, 4>);                    \
  SLUICE_REG_("Rsqrt", T, UnaryOp<T, RsqrtF, 4>);                  \
  SLUICE_REG_("Exp", T, UnaryOp<T, ExpF, 8>);                      \
  SLUICE_REG_("Log", T, UnaryOp<T, LogF, 8>);                      \
  SLUICE_REG_("Log1p", T, UnaryOp<T, Log1pF, 8>);                  \
  SLUICE_REG_("Tanh", T, UnaryOp<T, TanhF, 8>);                    \
  SLUICE_REG_("Sigmoid", T, UnaryOp<T, SigmoidF, 8>);              \
  SLUICE_REG_("Reciprocal", T, UnaryOp<T, ReciprocalF, 2>);        \
  SLUICE_REG_("Sin", T, UnaryOp<T, SinF<T>, 8>);                   \
  SLUICE_REG_("Cos", T, UnaryOp<T, CosF<T>, 8>);                   \
  SLUICE_REG_("Floor", T, UnaryOp<T, FloorF, 1>);                  \
  SLUICE_REG_("Ceil", T, UnaryOp<T, CeilF, 1>);                    \
  SLUICE_REG_("Round", T, UnaryOp<T, RintF, 1>);                   \
  SLUICE_REG_("Erf", T, UnaryOp<T, ErfF, 16>);                     \
  SLUICE_REG_("Lgamma", T, UnaryOp<T, LgammaF, 32>);               \
  SLUICE_REG_("Digamma", T, UnaryOp<T, DigammaF, 32>);             \
  SLUICE_REG_("TanhGrad", T, UnaryGradOp<T, TanhGradF<T>>);        \
  SLUICE_REG_("SigmoidGrad", T, UnaryGradOp<T, SigmoidGradF<T>>);  \
  SLUICE_REG_("SqrtGrad", T, UnaryGradOp<T, SqrtGradF<T>>);        \
  SLUICE_REG_("RsqrtGrad", T, UnaryGradOp<T, RsqrtGradF<T>>)
SLUICE_REG_FLOAT_(float);
SLUICE_REG_FLOAT_(double);
SLUICE_REG_FLOAT_(half);
SLUICE_REG_FLOAT_(bfloat16);
SLUICE_REG_("Erfc", float, ErfcFloatOp);
SLUICE_REG_("Erfc", double, UnaryOp<double, ErfcF, 16>);
SLUICE_REG_("Erfc", half, UnaryOp<half, ErfcF, 16>);
SLUICE_REG_("Erfc", bfloat16, UnaryOp<bfloat16, ErfcF, 16>);
SLUICE_REG_SIGNED_(int8_t);
SLUICE_REG_SIGNED_(int16_t);
SLUICE_REG_SIGNED_(int32_t);
SLUICE_REG_SIGNED_(int64_t);
// Integers are already round.
SLUICE_REG_("Round", int8_t, UnaryOp<int8_t, IdentityF, 1>);
SLUICE_REG_("Round", int16_t, UnaryOp<int16_t, IdentityF, 1>);
SLUICE_REG_("Round", int32_t, UnaryOp<int32_t, IdentityF, 1>);
SLUICE_REG_("Round", int64_t, UnaryOp<int64_t, IdentityF, 1>);
#undef SLUICE_REG_FLOAT_
#undef SLUICE_REG_SIGNED_
#undef SLUICE_REG_

}  // namespace
}  // namespace sluice

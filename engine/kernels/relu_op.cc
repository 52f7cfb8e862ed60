// CPU kernels for the activations Relu, Relu6, LeakyRelu, Elu, Selu,
// Softplus and Softsign and their gradient helpers (ReluGrad, Relu6Grad,
// LeakyReluGrad, EluGrad, SeluGrad, SoftplusGrad, SoftsignGrad): Eigen expressions evaluated in chunks by
// the cwise loops (inline below a million elements; above, ranges on the
// intra-op pool that never wait for a busy pool thread). Eigen's own
// ThreadPoolDevice split waited for the other inter-op thread's GEMM blocks:
// a [128, 512] ReluGrad took 200-760 us in a fashion_mlp step instead of ~10.
// Thread safety: kernels are stateless (LeakyRelu's alpha is read once, at
// construction).
#include <cmath>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/cwise_ops_common.h"

namespace sluice {
namespace {

// output 0 = f(input 0), elementwise; `cost` in element-operations per element.
template <typename T, typename F>
void UnaryCompute(OpKernelContext* ctx, const F& f, int64_t cost = 1) {
  const Tensor& x = ctx->input(0);
  Tensor* out;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
  cwise::ApplyUnary<T, T>(ctx, x, out, f, cost);
}

// Shared check: gradients and the forward tensor have the same shape.
bool SameShapes(OpKernelContext* ctx) {
  const Tensor& a = ctx->input(0);
  const Tensor& b = ctx->input(1);
  if (a.shape() == b.shape()) return true;
  ctx->CtxFailure(absl::InvalidArgumentError(absl::StrCat("gradients and features must have the same shape: ",
                                                          a.shape().DebugString(), " vs ", b.shape().DebugString())));
  return false;
}

// output 0 = f(gradients, features) over the two same-shape inputs.
template <typename T, typename F>
void GradCompute(OpKernelContext* ctx, const F& f) {
  if (!SameShapes(ctx)) return;
  Tensor* out;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(0, ctx->input(0).shape(), &out));
  cwise::ApplyBinary<T, T>(ctx, ctx->input(0), ctx->input(1), cwise::BroadcastPlan(), out, f);
}

template <typename T>
class ReluOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    UnaryCompute<T>(ctx, [](const auto& x) { return x.cwiseMax(static_cast<T>(0)); });
  }
};

template <typename T>
class EluOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    // Negative part: exp(x) - 1 (expm1 for accuracy near 0).
    UnaryCompute<T>(
        ctx, [](const auto& x) { return (x < static_cast<T>(0)).select(x.expm1(), x); }, 16);
  }
};

template <typename T>
class ReluGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    GradCompute<T>(ctx, [](const auto& dy, const auto& x) {
      return (x > static_cast<T>(0)).select(dy, dy.constant(static_cast<T>(0)));
    });
  }
};

template <typename T>
class EluGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    GradCompute<T>(ctx, [](const auto& dy, const auto& y) {
      return (y < static_cast<T>(0)).select(dy * (y + static_cast<T>(1)), dy);
    });
  }
};

template <typename T>
class Relu6Op : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    UnaryCompute<T>(ctx, [](const auto& x) { return x.cwiseMax(static_cast<T>(0)).cwiseMin(static_cast<T>(6)); });
  }
};

template <typename T>
class Relu6GradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    GradCompute<T>(ctx, [](const auto& dy, const auto& x) {
      return ((x > static_cast<T>(0)) && (x < static_cast<T>(6))).select(dy, dy.constant(static_cast<T>(0)));
    });
  }
};

template <typename T>
class LeakyReluOp : public OpKernel {
 public:
  explicit LeakyReluOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("alpha", &alpha_));
  }
  void Compute(OpKernelContext* ctx) override {
    const T alpha = static_cast<T>(alpha_);
    UnaryCompute<T>(ctx, [alpha](const auto& x) { return (x > static_cast<T>(0)).select(x, x * alpha); });
  }

 private:
  float alpha_ = 0.2f;
};

template <typename T>
class LeakyReluGradOp : public OpKernel {
 public:
  explicit LeakyReluGradOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("alpha", &alpha_));
  }
  void Compute(OpKernelContext* ctx) override {
    const T alpha = static_cast<T>(alpha_);
    GradCompute<T>(ctx,
                   [alpha](const auto& dy, const auto& x) { return (x > static_cast<T>(0)).select(dy, dy * alpha); });
  }

 private:
  float alpha_ = 0.2f;
};

// TensorFlow's SELU constants: scale and scale * alpha.
constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSeluScaleAlpha = 1.7580993408473768599402175208123;

template <typename T>
class SeluOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    UnaryCompute<T>(
        ctx,
        [](const auto& x) {
          return (x < static_cast<T>(0))
              .select(x.expm1() * static_cast<T>(kSeluScaleAlpha), x * static_cast<T>(kSeluScale));
        },
        16);
  }
};

template <typename T>
class SeluGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    GradCompute<T>(ctx, [](const auto& dy, const auto& y) {
      return (y < static_cast<T>(0))
          .select(dy * (y + static_cast<T>(kSeluScaleAlpha)), dy * static_cast<T>(kSeluScale));
    });
  }
};

// log(1 + exp(x)) in float (double for double), so half and bfloat16 never
// overflow exp: x itself above -log(eps) - 2, exp(x) below log(eps) + 2
// (both exact to the compute type's precision), log1p(exp(x)) between.
template <typename T>
struct SoftplusScalar {
  T operator()(const T& v) const {
    using C = typename std::conditional<std::is_same<T, double>::value, double, float>::type;
    const C threshold = std::log(std::numeric_limits<C>::epsilon()) + C(2);
    const C x = static_cast<C>(v);
    if (x > -threshold) return static_cast<T>(x);
    if (x < threshold) return static_cast<T>(std::exp(x));
    return static_cast<T>(std::log1p(std::exp(x)));
  }
};

template <typename T>
class SoftplusOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    UnaryCompute<T>(
        ctx, [](const auto& a) { return a.unaryExpr(SoftplusScalar<T>()); }, 16);
  }
};

// gradients / (1 + exp(-features)), i.e. gradients * sigmoid(features).
template <typename T>
class SoftplusGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    GradCompute<T>(ctx, [](const auto& dy, const auto& x) { return dy / ((-x).exp() + static_cast<T>(1)); });
  }
};

// features / (1 + |features|).
template <typename T>
class SoftsignOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    UnaryCompute<T>(ctx, [](const auto& x) { return x / (x.abs() + static_cast<T>(1)); }, 4);
  }
};

// gradients / (1 + |features|)^2.
template <typename T>
class SoftsignGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    GradCompute<T>(ctx, [](const auto& dy, const auto& x) { return dy / (x.abs() + static_cast<T>(1)).square(); });
  }
};

#define SLUICE_REGISTER_RELU_(T)                                                                  \
  REGISTER_KERNEL_BUILDER(Name("Relu").Device(kDeviceCpu).TypeConstraint<T>("T"), ReluOp<T>);       \
  REGISTER_KERNEL_BUILDER(Name("ReluGrad").Device(kDeviceCpu).TypeConstraint<T>("T"), ReluGradOp<T>); \
  REGISTER_KERNEL_BUILDER(Name("Relu6").Device(kDeviceCpu).TypeConstraint<T>("T"), Relu6Op<T>);     \
  REGISTER_KERNEL_BUILDER(Name("Relu6Grad").Device(kDeviceCpu).TypeConstraint<T>("T"), Relu6GradOp<T>)
SLUICE_REGISTER_RELU_(float);
SLUICE_REGISTER_RELU_(double);
SLUICE_REGISTER_RELU_(half);
SLUICE_REGISTER_RELU_(bfloat16);
SLUICE_REGISTER_RELU_(int8_t);
SLUICE_REGISTER_RELU_(int16_t);
SLUICE_REGISTER_RELU_(int32_t);
SLUICE_REGISTER_RELU_(int64_t);
SLUICE_REGISTER_RELU_(uint8_t);
SLUICE_REGISTER_RELU_(uint16_t);
#undef SLUICE_REGISTER_RELU_

#define SLUICE_REGISTER_ELU_(T)                                                                          \
  REGISTER_KERNEL_BUILDER(Name("Elu").Device(kDeviceCpu).TypeConstraint<T>("T"), EluOp<T>);                 \
  REGISTER_KERNEL_BUILDER(Name("EluGrad").Device(kDeviceCpu).TypeConstraint<T>("T"), EluGradOp<T>);         \
  REGISTER_KERNEL_BUILDER(Name("LeakyRelu").Device(kDeviceCpu).TypeConstraint<T>("T"), LeakyReluOp<T>);     \
  REGISTER_KERNEL_BUILDER(Name("LeakyReluGrad").Device(kDeviceCpu).TypeConstraint<T>("T"), LeakyReluGradOp<T>); \
  REGISTER_KERNEL_BUILDER(Name("Selu").Device(kDeviceCpu).TypeConstraint<T>("T"), SeluOp<T>);               \
  REGISTER_KERNEL_BUILDER(Name("SeluGrad").Device(kDeviceCpu).TypeConstraint<T>("T"), SeluGradOp<T>);       \
  REGISTER_KERNEL_BUILDER(Name("Softplus").Device(kDeviceCpu).TypeConstraint<T>("T"), SoftplusOp<T>);       \
  REGISTER_KERNEL_BUILDER(Name("SoftplusGrad").Device(kDeviceCpu).TypeConstraint<T>("T"), SoftplusGradOp<T>); \
  REGISTER_KERNEL_BUILDER(Name("Softsign").Device(kDeviceCpu).TypeConstraint<T>("T"), SoftsignOp<T>);       \
  REGISTER_KERNEL_BUILDER(Name("SoftsignGrad").Device(kDeviceCpu).TypeConstraint<T>("T"), SoftsignGradOp<T>)
SLUICE_REGISTER_ELU_(float);
SLUICE_REGISTER_ELU_(double);
SLUICE_REGISTER_ELU_(half);
SLUICE_REGISTER_ELU_(bfloat16);
#undef SLUICE_REGISTER_ELU_

}  // namespace
}  // namespace sluice

// CPU kernels for the broadcasting arithmetic ops: Add, AddV2, Sub, Mul, Div,
// RealDiv, DivNoNan, FloorDiv, FloorMod, Maximum, Minimum, Pow, SquaredDifference,
// Atan2 and Polygamma.
// Integer division by zero (and negative integer powers) fail with
// InvalidArgument before anything is computed; INT_MIN / -1 wraps instead of
// trapping.
// Thread safety: kernels are stateless.
#include <cmath>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "engine/kernels/cwise_ops_common.h"

namespace sluice {
namespace {

using cwise::BinaryCompute;

#define SLUICE_EXPR_FUNCTOR_(NAME, EXPR)                        \
  struct NAME {                                                 \
    template <typename A, typename B>                           \
    auto operator()(const A& a, const B& b) const { return EXPR; } \
  }
SLUICE_EXPR_FUNCTOR_(AddF, a + b);
SLUICE_EXPR_FUNCTOR_(SubF, a - b);
SLUICE_EXPR_FUNCTOR_(MulF, a * b);
SLUICE_EXPR_FUNCTOR_(DivF, a / b);
SLUICE_EXPR_FUNCTOR_(FloorDivFloatF, (a / b).floor());
SLUICE_EXPR_FUNCTOR_(MaxF, a.cwiseMax(b));
SLUICE_EXPR_FUNCTOR_(MinF, a.cwiseMin(b));
SLUICE_EXPR_FUNCTOR_(SquaredDifferenceF, (a - b).square());
SLUICE_EXPR_FUNCTOR_(PolygammaF, a.polygamma(b));
#undef SLUICE_EXPR_FUNCTOR_

// Truncating integer division without the INT_MIN / -1 trap.
template <typename T>
struct SafeIntDiv {
  T operator()(const T& a, const T& b) const {
    if (std::is_signed<T>::value && b == static_cast<T>(-1)) {
      return static_cast<T>(0 - static_cast<typename std::make_unsigned<T>::type>(a));
    }
    return static_cast<T>(a / b);
  }
};
template <typename T>
struct SafeIntFloorDiv {
  T operator()(const T& a, const T& b) const {
    T q = SafeIntDiv<T>()(a, b);
    if (std::is_signed<T>::value && b != static_cast<T>(-1) && (a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
  }
};
// x - floor(x / y) * y, with the sign of y (Python's %). Integers: the
// truncated remainder moved into y's sign; x % -1 is 0 without the
// INT_MIN % -1 trap. Floating types: fmod in float (double for double).
template <typename T>
struct FloorModScalar {
  T operator()(const T& a, const T& b) const {
    if constexpr (std::is_integral<T>::value) {
      if (std::is_signed<T>::value && b == static_cast<T>(-1)) return T(0);
      T r = static_cast<T>(a % b);
      if (std::is_signed<T>::value && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
      return r;
    } else {
      using C = typename std::conditional<std::is_same<T, double>::value, double, float>::type;
      const C x = static_cast<C>(a), y = static_cast<C>(b);
      C r = std::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return static_cast<T>(r);
    }
  }
};
// x / y, or 0 where y is 0.
template <typename T>
struct DivNoNanScalar {
  T operator()(const T& a, const T& b) const { return b == T(0) ? T(0) : static_cast<T>(a / b); }
};
template <typename Scalar>
struct WrapScalarFunctor {
  template <typename A, typename B>
  auto operator()(const A& a, const B& b) const {
    return a.binaryExpr(b, Scalar());
  }
};

template <typename T>
struct PowScalar {
  T operator()(const T& a, const T& b) const {
    if constexpr (std::is_integral<T>::value) {
      T result = 1, base = a;
      for (T e = b; e > 0; e >>= 1) {
        if (e & 1) result = static_cast<T>(static_cast<typename std::make_unsigned<T>::type>(result) *
                                           static_cast<typename std::make_unsigned<T>::type>(base));
        base = static_cast<T>(static_cast<typename std::make_unsigned<T>::type>(base) *
                              static_cast<typename std::make_unsigned<T>::type>(base));
      }
      return result;
    } else if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value) {
      return std::pow(a, b);
    } else {
      return static_cast<T>(std::pow(static_cast<float>(a), static_cast<float>(b)));
    }
  }
};

// atan2(y, x) in float (double for double).
template <typename T>
struct Atan2Scalar {
  T operator()(const T& y, const T& x) const {
    using C = typename std::conditional<std::is_same<T, double>::value, double, float>::type;
    return static_cast<T>(std::atan2(static_cast<C>(y), static_cast<C>(x)));
  }
};

template <typename T, typename F>
class BinaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override { BinaryCompute<T, T>(ctx, F()); }
};

template <typename T>
bool AnyZero(const Tensor& t) {
  const T* p = t.data<T>();
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    if (p[i] == T(0)) return true;
  }
  return false;
}

// Div / FloorDiv on integers: InvalidArgument on a zero divisor.
template <typename T, typename Scalar>
class IntDivOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    cwise::BroadcastPlan plan;
    OP_REQUIRES_OK(ctx, cwise::MakeBroadcastPlan(ctx->input(0).shape(), ctx->input(1).shape(), &plan));
    OP_REQUIRES(ctx, !AnyZero<T>(ctx->input(1)), absl::InvalidArgumentError("Integer division by zero"));
    BinaryCompute<T, T>(ctx, WrapScalarFunctor<Scalar>());
  }
};

template <typename T>
class PowOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    cwise::BroadcastPlan plan;
    OP_REQUIRES_OK(ctx, cwise::MakeBroadcastPlan(ctx->input(0).shape(), ctx->input(1).shape(), &plan));
    if constexpr (std::is_integral<T>::value) {
      const Tensor& y = ctx->input(1);
      const T* p = y.data<T>();
      for (int64_t i = 0; i < y.NumElements(); ++i) {
        OP_REQUIRES(ctx, p[i] >= 0,
                    absl::InvalidArgumentError("Integers to negative integer powers are not allowed"));
      }
    }
    BinaryCompute<T, T>(ctx, WrapScalarFunctor<PowScalar<T>>());
  }
};

#define SLUICE_REG_(OP, T, KERNEL) \
  REGISTER_KERNEL_BUILDER(Name(OP).Device(kDeviceCpu).TypeConstraint<T>("T"), KERNEL)

// Add, AddV2, Sub, Mul, Maximum, Minimum: every real number type.
#define SLUICE_REG_ARITH_(T)                        \
  SLUICE_REG_("Add", T, (BinaryOp<T, AddF>));       \
  SLUICE_REG_("AddV2", T, (BinaryOp<T, AddF>));     \
  SLUICE_REG_("Sub", T, (BinaryOp<T, SubF>));       \
  SLUICE_REG_("Mul", T, (BinaryOp<T, MulF>));       \
  SLUICE_REG_("Maximum", T, (BinaryOp<T, MaxF>));   \
  SLUICE_REG_("Minimum", T, (BinaryOp<T, MinF>))
SLUICE_REG_ARITH_(float);
SLUICE_REG_ARITH_(double);
SLUICE_REG_ARITH_(half);
SLUICE_REG_ARITH_(bfloat16);
SLUICE_REG_ARITH_(int8_t);
SLUICE_REG_ARITH_(int16_t);
SLUICE_REG_ARITH_(int32_t);
SLUICE_REG_ARITH_(int64_t);
SLUICE_REG_ARITH_(uint8_t);
SLUICE_REG_ARITH_(uint16_t);
#undef SLUICE_REG_ARITH_

// Floating division, Pow and SquaredDifference.
#define SLUICE_REG_FLOAT_(T)                                         \
  SLUICE_REG_("Div", T, (BinaryOp<T, DivF>));                        \
  SLUICE_REG_("RealDiv", T, (BinaryOp<T, DivF>));                    \
  SLUICE_REG_("DivNoNan", T, (BinaryOp<T, WrapScalarFunctor<DivNoNanScalar<T>>>)); \
  SLUICE_REG_("FloorDiv", T, (BinaryOp<T, FloorDivFloatF>));         \
  SLUICE_REG_("FloorMod", T, (BinaryOp<T, WrapScalarFunctor<FloorModScalar<T>>>)); \
  SLUICE_REG_("SquaredDifference", T, (BinaryOp<T, SquaredDifferenceF>)); \
  SLUICE_REG_("Pow", T, PowOp<T>)
SLUICE_REG_FLOAT_(float);
SLUICE_REG_FLOAT_(double);
SLUICE_REG_FLOAT_(half);
SLUICE_REG_FLOAT_(bfloat16);
#undef SLUICE_REG_FLOAT_
SLUICE_REG_("Atan2", float, (BinaryOp<float, WrapScalarFunctor<Atan2Scalar<float>>>));
SLUICE_REG_("Atan2", double, (BinaryOp<double, WrapScalarFunctor<Atan2Scalar<double>>>));
SLUICE_REG_("Atan2", half, (BinaryOp<half, WrapScalarFunctor<Atan2Scalar<half>>>));
SLUICE_REG_("Atan2", bfloat16, (BinaryOp<bfloat16, WrapScalarFunctor<Atan2Scalar<bfloat16>>>));
SLUICE_REG_("Polygamma", float, (BinaryOp<float, PolygammaF>));
SLUICE_REG_("Polygamma", double, (BinaryOp<double, PolygammaF>));
SLUICE_REG_("Polygamma", half, (BinaryOp<half, PolygammaF>));
SLUICE_REG_("Polygamma", bfloat16, (BinaryOp<bfloat16, PolygammaF>));

#define SLUICE_REG_INT_DIV_(T)                                 \
  SLUICE_REG_("Div", T, (IntDivOp<T, SafeIntDiv<T>>));         \
  SLUICE_REG_("FloorDiv", T, (IntDivOp<T, SafeIntFloorDiv<T>>)); \
  SLUICE_REG_("FloorMod", T, (IntDivOp<T, FloorModScalar<T>>))
SLUICE_REG_INT_DIV_(int8_t);
SLUICE_REG_INT_DIV_(int16_t);
SLUICE_REG_INT_DIV_(int32_t);
SLUICE_REG_INT_DIV_(int64_t);
SLUICE_REG_INT_DIV_(uint8_t);
SLUICE_REG_INT_DIV_(uint16_t);
#undef SLUICE_REG_INT_DIV_

SLUICE_REG_("SquaredDifference", int32_t, (BinaryOp<int32_t, SquaredDifferenceF>));
SLUICE_REG_("SquaredDifference", int64_t, (BinaryOp<int64_t, SquaredDifferenceF>));
SLUICE_REG_("Pow", int32_t, PowOp<int32_t>);
SLUICE_REG_("Pow", int64_t, PowOp<int64_t>);

// String concatenation (TensorFlow's Add on strings).
class StringAddOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    cwise::BroadcastPlan plan;
    OP_REQUIRES_OK(ctx, cwise::MakeBroadcastPlan(x.shape(), y.shape(), &plan));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, plan.out_shape, &out));
    const int64_t n = out->NumElements();
    if (n == 0) return;
    const tstring* a = x.data<tstring>();
    const tstring* b = y.data<tstring>();
    tstring* c = out->data<tstring>();
    const int64_t na = x.NumElements(), nb = y.NumElements();
    if (plan.kind != cwise::BroadcastPlan::kGeneral) {
      for (int64_t i = 0; i < n; ++i) c[i] = a[na == 1 ? 0 : i] + b[nb == 1 ? 0 : i];
      return;
    }
    const int64_t inner = plan.dims.back();
    cwise::ForEachRow(plan, 0, n / inner, [&](int64_t row, int64_t xo, int64_t yo) {
      for (int64_t j = 0; j < inner; ++j) {
        c[row * inner + j] = a[xo + (plan.inner_x_scalar ? 0 : j)] + b[yo + (plan.inner_y_scalar ? 0 : j)];
      }
    });
  }
};
REGISTER_KERNEL_BUILDER(Name("Add").Device(kDeviceCpu).TypeConstraint<tstring>("T"), StringAddOp);

#undef SLUICE_REG_

}  // namespace
}  // namespace sluice

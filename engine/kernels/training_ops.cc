// CPU kernels for the training ops (engine/ops/training_ops.cc states each
// update rule): the Apply* optimizers, their sparse forms and
// ScatterAdd/ScatterSub/ScatterUpdate; the same kernels, with kResource, serve
// ResourceApplyGradientDescent/Momentum/Adagrad/RMSProp/Adam/Ftrl(V2),
// ResourceSparseApplyMomentum/Adagrad/Ftrl(V2) and ResourceScatterAdd/Sub/
// Update (variables behind handles, TrainingVars; no output). Each locks
// the mutexes of its variables (always, whatever use_locking says; in address order, so two kernels sharing
// variables cannot deadlock), checks shapes and initialization (both with
// training_ops_util.h, shared with the GPU kernels), updates the
// variables in place (elementwise in float for half/bfloat16, in parallel
// on the intra-op pool for large variables) and forwards the variable's ref
// to output 0.
// Thread safety: all mutation happens under the variables' mutexes.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/nn_util.h"
#include "engine/kernels/run_tasks.h"
#include "engine/kernels/training_ops_util.h"

namespace sluice {
namespace {

template <typename T>
typename AccumulatorType<T>::type Scalar(OpKernelContext* ctx, int i) {
  return static_cast<typename AccumulatorType<T>::type>(ctx->input(i).data<T>()[0]);
}

// Runs range_fn(first, last) over [0, n) split into ranges, in parallel when n
// is large.
template <typename RangeFn>
void ForEachRange(OpKernelContext* ctx, int64_t n, int cost, const RangeFn& range_fn) {
  if (n < 16384) {
    range_fn(int64_t{0}, n);
  } else {
    const auto& d = ctx->eigen_cpu_device();
    ParallelForRanges(d.getPool(), d.numThreads(), n, cost, 16, range_fn);
  }
}

// Momentum for float32 over [0, n): restrict pointers and the Nesterov choice
// outside the loop, so the loop vectorizes (the generic lambda below does not).
template <bool kNesterov>
void MomentumRange(float* __restrict var, float* __restrict accum, const float* __restrict grad, float lr,
                   float momentum, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i];
    const float a = accum[i] * momentum + g;
    accum[i] = a;
    const float step = kNesterov ? g * lr + a * momentum * lr : lr * a;
    var[i] = var[i] - step;
  }
}

// Adam for float32 over [0, n), in float as the generic loop computes it;
// a plain loop on restrict pointers so it vectorizes.
template <bool kNesterov>
void AdamRange(float* __restrict var, float* __restrict m, float* __restrict v, const float* __restrict grad,
               float lr_t, float beta1, float beta2, float epsilon, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i];
    const float mi = m[i] + (g - m[i]) * (1.0f - beta1);
    const float vi = v[i] + (g * g - v[i]) * (1.0f - beta2);
    m[i] = mi;
    v[i] = vi;
    const float numerator = kNesterov ? mi * beta1 + (1.0f - beta1) * g : mi;
    var[i] = var[i] - lr_t * numerator / (std::sqrt(vi) + epsilon);
  }
}

// Runs fn(i) for i in [0, n), in parallel when n is large. fn(i) touches only
// element i of each array, so blocks of 8 carry no dependences (ivdep); a fixed
// trip count lets GCC's -O2 vectorizer (the very-cheap cost model) use SIMD.
template <typename Fn>
void ForEach(OpKernelContext* ctx, int64_t n, int cost, const Fn& fn) {
  auto body = [&](Eigen::Index first, Eigen::Index last) {
    Eigen::Index i = first;
    for (; i + 8 <= last; i += 8) {
#pragma GCC ivdep
      for (int j = 0; j < 8; ++j) fn(i + j);
    }
    for (; i < last; ++i) fn(i);
  };
  ForEachRange(ctx, n, cost, body);
}

template <typename T, bool kResource>
class ApplyGradientDescentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    using Acc = typename AccumulatorType<T>::type;
    {
      TrainingVars vars(ctx, 1, kResource, DataTypeToEnum<T>::value);
      OP_REQUIRES_OK(ctx, vars.status());
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, vars, {2}, {1}));
      T* var = vars.data<T>(0);
      const T* delta = ctx->input(2).data<T>();
      const Acc alpha = Scalar<T>(ctx, 1);
      ForEach(ctx, vars.var(0)->NumElements(), 2, [&](int64_t i) {
        var[i] = static_cast<T>(static_cast<Acc>(var[i]) - alpha * static_cast<Acc>(delta[i]));
      });
    }
    if (!kResource) ctx->forward_ref_input_to_ref_output(0, 0);
  }
};

template <typename T, bool kResource>
class ApplyMomentumOp : public OpKernel {
 public:
  explicit ApplyMomentumOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("use_nesterov", &nesterov_));
  }
  void Compute(OpKernelContext* ctx) override {
    using Acc = typename AccumulatorType<T>::type;
    {
      TrainingVars vars(ctx, 2, kResource, DataTypeToEnum<T>::value);
      OP_REQUIRES_OK(ctx, vars.status());
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, vars, {3}, {2, 4}));
      T* var = vars.data<T>(0);
      T* accum = vars.data<T>(1);
      const T* grad = ctx->input(3).data<T>();
      const Acc lr = Scalar<T>(ctx, 2), momentum = Scalar<T>(ctx, 4);
      const bool nesterov = nesterov_;
      if constexpr (std::is_same<T, float>::value && std::is_same<Acc, float>::value) {
        ForEachRange(ctx, vars.var(0)->NumElements(), 5, [&](int64_t first, int64_t last) {
          if (nesterov) {
            MomentumRange<true>(var + first, accum + first, grad + first, lr, momentum, last - first);
          } else {
            MomentumRange<false>(var + first, accum + first, grad + first, lr, momentum, last - first);
          }
        });
      } else {
        ForEach(ctx, vars.var(0)->NumElements(), 5, [&](int64_t i) {
          const Acc g = static_cast<Acc>(grad[i]);
          const Acc a = static_cast<Acc>(accum[i]) * momentum + g;
          accum[i] = static_cast<T>(a);
          const Acc step = nesterov ? g * lr + a * momentum * lr : lr * a;
          var[i] = static_cast<T>(static_cast<Acc>(var[i]) - step);
        });
      }
    }
    if (!kResource) ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool nesterov_ = false;
};

template <typename T, bool kResource>
class ApplyAdagradOp : public OpKernel {
 public:
  explicit ApplyAdagradOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("update_slots", &update_slots_));
  }
  void Compute(OpKernelContext* ctx) override {
    using Acc = typename AccumulatorType<T>::type;
    {
      TrainingVars vars(ctx, 2, kResource, DataTypeToEnum<T>::value);
      OP_REQUIRES_OK(ctx, vars.status());
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, vars, {3}, {2}));
      T* var = vars.data<T>(0);
      T* accum = vars.data<T>(1);
      const T* grad = ctx->input(3).data<T>();
      const Acc lr = Scalar<T>(ctx, 2);
      const bool update = update_slots_;
      ForEach(ctx, vars.var(0)->NumElements(), 20, [&](int64_t i) {
        const Acc g = static_cast<Acc>(grad[i]);
        Acc a = static_cast<Acc>(accum[i]);
        if (update) {
          a += g * g;
          accum[i] = static_cast<T>(a);
        }
        var[i] = static_cast<T>(static_cast<Acc>(var[i]) - lr * g / std::sqrt(a));
      });
    }
    if (!kResource) ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool update_slots_ = true;
};

template <typename T, bool kResource>
class ApplyRMSPropOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    using Acc = typename AccumulatorType<T>::type;
    {
      TrainingVars vars(ctx, 3, kResource, DataTypeToEnum<T>::value);
      OP_REQUIRES_OK(ctx, vars.status());
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, vars, {7}, {3, 4, 5, 6}));
      T* var = vars.data<T>(0);
      T* ms = vars.data<T>(1);
      T* mom = vars.data<T>(2);
      const T* grad = ctx->input(7).data<T>();
      const Acc lr = Scalar<T>(ctx, 3), rho = Scalar<T>(ctx, 4), momentum = Scalar<T>(ctx, 5),
                epsilon = Scalar<T>(ctx, 6);
      ForEach(ctx, vars.var(0)->NumElements(), 25, [&](int64_t i) {
        const Acc g = static_cast<Acc>(grad[i]);
        const Acc m2 = static_cast<Acc>(ms[i]) * rho + g * g * (Acc(1) - rho);
        ms[i] = static_cast<T>(m2);
        const Acc m = static_cast<Acc>(mom[i]) * momentum + lr * g / std::sqrt(m2 + epsilon);
        mom[i] = static_cast<T>(m);
        var[i] = static_cast<T>(static_cast<Acc>(var[i]) - m);
      });
    }
    if (!kResource) ctx->forward_ref_input_to_ref_output(0, 0);
  }
};

template <typename T, bool kResource>
class ApplyAdamOp : public OpKernel {
 public:
  explicit ApplyAdamOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("use_nesterov", &nesterov_));
  }
  void Compute(OpKernelContext* ctx) override {
    using Acc = typename AccumulatorType<T>::type;
    {
      TrainingVars vars(ctx, 3, kResource, DataTypeToEnum<T>::value);
      OP_REQUIRES_OK(ctx, vars.status());
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, vars, {9}, {3, 4, 5, 6, 7, 8}));
      T* var = vars.data<T>(0);
      T* m = vars.data<T>(1);
      T* v = vars.data<T>(2);
      const T* grad = ctx->input(9).data<T>();
      const Acc beta1_power = Scalar<T>(ctx, 3), beta2_power = Scalar<T>(ctx, 4), lr = Scalar<T>(ctx, 5),
                beta1 = Scalar<T>(ctx, 6), beta2 = Scalar<T>(ctx, 7), epsilon = Scalar<T>(ctx, 8);
      const Acc lr_t = lr * std::sqrt(Acc(1) - beta2_power) / (Acc(1) - beta1_power);
      const bool nesterov = nesterov_;
      if constexpr (std::is_same<T, float>::value && std::is_same<Acc, float>::value) {
        ForEachRange(ctx, vars.var(0)->NumElements(), 30, [&](int64_t first, int64_t last) {
          if (nesterov) {
            AdamRange<true>(var + first, m + first, v + first, grad + first, lr_t, beta1, beta2, epsilon,
                            last - first);
          } else {
            AdamRange<false>(var + first, m + first, v + first, grad + first, lr_t, beta1, beta2, epsilon,
                             last - first);
          }
        });
      } else {
        ForEach(ctx, vars.var(0)->NumElements(), 30, [&](int64_t i) {
          const Acc g = static_cast<Acc>(grad[i]);
          const Acc mi = static_cast<Acc>(m[i]) + (g - static_cast<Acc>(m[i])) * (Acc(1) - beta1);
          const Acc vi = static_cast<Acc>(v[i]) + (g * g - static_cast<Acc>(v[i])) * (Acc(1) - beta2);
          m[i] = static_cast<T>(mi);
          v[i] = static_cast<T>(vi);
          const Acc numerator = nesterov ? mi * beta1 + (Acc(1) - beta1) * g : mi;
          var[i] = static_cast<T>(static_cast<Acc>(var[i]) - lr_t * numerator / (std::sqrt(vi) + epsilon));
        });
      }
    }
    if (!kResource) ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool nesterov_ = false;
};

// Checks a sparse update: var at least 1-D, indices a vector, grad of shape
// [len(indices)] + var.shape[1:], every index in [0, var.dim(0)).
template <typename Index>
absl::Status CheckSparse(OpKernelContext* ctx, const TensorShape& var, int grad_input, int indices_input,
                         int64_t* row) {
  const Tensor& grad = ctx->input(grad_input);
  const Tensor& indices = ctx->input(indices_input);
  if (var.dims() < 1) return absl::InvalidArgumentError("the variable must be at least 1-D");
  if (indices.dims() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("indices must be a vector, got ", indices.shape().DebugString()));
  }
  bool ok = grad.dims() == var.dims() && grad.dim_size(0) == indices.dim_size(0);
  for (int d = 1; ok && d < var.dims(); ++d) ok = grad.dim_size(d) == var.dim_size(d);
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat("updates of shape ", grad.shape().DebugString(),
                                                   " do not match indices ", indices.shape().DebugString(),
                                                   " and the variable's shape ", var.DebugString()));
  }
  const Index* idx = indices.data<Index>();
  for (int64_t i = 0; i < indices.NumElements(); ++i) {
    if (idx[i] < 0 || static_cast<int64_t>(idx[i]) >= var.dim_size(0)) {
      return absl::InvalidArgumentError(absl::StrCat("index ", idx[i], " at position ", i,
                                                     " is out of range [0, ", var.dim_size(0), ")"));
    }
  }
  *row = var.dim_size(0) == 0 ? 0 : var.num_elements() / var.dim_size(0);
  return absl::OkStatus();
}

template <typename T, typename Index, bool kResource>
class SparseApplyMomentumOp : public OpKernel {
 public:
  explicit SparseApplyMomentumOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("use_nesterov", &nesterov_));
  }
  void Compute(OpKernelContext* ctx) override {
    using Acc = typename AccumulatorType<T>::type;
    {
      TrainingVars vars(ctx, 2, kResource, DataTypeToEnum<T>::value);
      OP_REQUIRES_OK(ctx, vars.status());
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, vars, {}, {2, 5}));
      int64_t row;
      OP_REQUIRES_OK(ctx, CheckSparse<Index>(ctx, vars.var(0)->shape(), 3, 4, &row));
      T* var = vars.data<T>(0);
      T* accum = vars.data<T>(1);
      const T* grad = ctx->input(3).data<T>();
      const Index* idx = ctx->input(4).data<Index>();
      const Acc lr = Scalar<T>(ctx, 2), momentum = Scalar<T>(ctx, 5);
      for (int64_t i = 0; i < ctx->input(4).NumElements(); ++i) {
        const int64_t base = static_cast<int64_t>(idx[i]) * row;
        for (int64_t j = 0; j < row; ++j) {
          const Acc g = static_cast<Acc>(grad[i * row + j]);
          const Acc a = static_cast<Acc>(accum[base + j]) * momentum + g;
          accum[base + j] = static_cast<T>(a);
          const Acc step = nesterov_ ? g * lr + a * momentum * lr : lr * a;
          var[base + j] = static_cast<T>(static_cast<Acc>(var[base + j]) - step);
        }
      }
    }
    if (!kResource) ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool nesterov_ = false;
};

template <typename T, typename Index, bool kResource>
class SparseApplyAdagradOp : public OpKernel {
 public:
  explicit SparseApplyAdagradOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("update_slots", &update_slots_));
  }
  void Compute(OpKernelContext* ctx) override {
    using Acc = typename AccumulatorType<T>::type;
    {
      TrainingVars vars(ctx, 2, kResource, DataTypeToEnum<T>::value);
      OP_REQUIRES_OK(ctx, vars.status());
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, vars, {}, {2}));
      int64_t row;
      OP_REQUIRES_OK(ctx, CheckSparse<Index>(ctx, vars.var(0)->shape(), 3, 4, &row));
      T* var = vars.data<T>(0);
      T* accum = vars.data<T>(1);
      const T* grad = ctx->input(3).data<T>();
      const Index* idx = ctx->input(4).data<Index>();
      const Acc lr = Scalar<T>(ctx, 2);
      for (int64_t i = 0; i < ctx->input(4).NumElements(); ++i) {
        const int64_t base = static_cast<int64_t>(idx[i]) * row;
        for (int64_t j = 0; j < row; ++j) {
          const Acc g = static_cast<Acc>(grad[i * row + j]);
          Acc a = static_cast<Acc>(accum[base + j]);
          if (update_slots_) {
            a += g * g;
            accum[base + j] = static_cast<T>(a);
          }
          var[base + j] = static_cast<T>(static_cast<Acc>(var[base + j]) - lr * g / std::sqrt(a));
        }
      }
    }
    if (!kResource) ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool update_slots_ = true;
};

// FTRL-proximal as TensorFlow computes it (ApplyFtrl, ApplyFtrlV2 and their
// sparse forms, training_ops.cc there): one element of var, accum and linear
// in the accumulator type. l2_shrinkage is 0 for the V1 ops.
template <typename Acc>
struct FtrlParams {
  Acc lr, l1, l2, l2_shrinkage, lr_power;
  bool multiply_linear_by_lr;
};

template <typename Acc>
inline void FtrlStep(const FtrlParams<Acc>& p, Acc g, Acc* var, Acc* accum, Acc* linear) {
  const Acc v = *var, a = *accum;
  const Acc g_shrunk = g + Acc(2) * p.l2_shrinkage * v;
  const Acc new_a = a + g * g;
  const bool half = p.lr_power == Acc(-0.5);
  const Acc new_pow = half ? std::sqrt(new_a) : std::pow(new_a, -p.lr_power);
  const Acc old_pow = half ? std::sqrt(a) : std::pow(a, -p.lr_power);
  Acc l, l1, quadratic;
  if (p.multiply_linear_by_lr) {
    l = *linear + g_shrunk * p.lr - (new_pow - old_pow) * v;
    l1 = p.l1 * p.lr;
    quadratic = new_pow + Acc(2) * p.l2 * p.lr;
  } else {
    l = *linear + g_shrunk - (new_pow - old_pow) / p.lr * v;
    l1 = p.l1;
    quadratic = new_pow / p.lr + Acc(2) * p.l2;
  }
  *var = std::abs(l) > l1 ? ((l < Acc(0) ? -l1 : l1) - l) / quadratic : Acc(0);
  *accum = new_a;
  *linear = l;
}

// The FTRL hyperparameters, inputs first.. (lr, l1, l2[, l2_shrinkage],
// lr_power), checked as TensorFlow does.
template <typename T>
absl::StatusOr<FtrlParams<typename AccumulatorType<T>::type>> GetFtrlParams(OpKernelContext* ctx, int first, bool v2,
                                                                           bool multiply_linear_by_lr) {
  using Acc = typename AccumulatorType<T>::type;
  FtrlParams<Acc> p;
  p.lr = Scalar<T>(ctx, first);
  p.l1 = Scalar<T>(ctx, first + 1);
  p.l2 = Scalar<T>(ctx, first + 2);
  p.l2_shrinkage = v2 ? Scalar<T>(ctx, first + 3) : Acc(0);
  p.lr_power = Scalar<T>(ctx, first + (v2 ? 4 : 3));
  p.multiply_linear_by_lr = multiply_linear_by_lr;
  if (!(p.lr > Acc(0))) return absl::InvalidArgumentError(absl::StrCat("lr is not a positive scalar: ", p.lr));
  if (!(p.l1 >= Acc(0))) return absl::InvalidArgumentError(absl::StrCat("l1 is not a non-negative scalar: ", p.l1));
  if (!(p.l2 >= Acc(0))) return absl::InvalidArgumentError(absl::StrCat("l2 is not a non-negative scalar: ", p.l2));
  if (!(p.l2_shrinkage >= Acc(0))) {
    return absl::InvalidArgumentError(absl::StrCat("l2_shrinkage is not a non-negative scalar: ", p.l2_shrinkage));
  }
  if (!(p.lr_power <= Acc(0))) {
    return absl::InvalidArgumentError(absl::StrCat("lr_power is not a non-positive scalar: ", p.lr_power));
  }
  return p;
}

// ApplyFtrl(V2) and ResourceApplyFtrl(V2): inputs var, accum, linear, grad,
// then the hyperparameters from input 4.
template <typename T, bool kResource, bool kV2>
class ApplyFtrlOp : public OpKernel {
 public:
  explicit ApplyFtrlOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("multiply_linear_by_lr", &multiply_linear_by_lr_));
  }
  void Compute(OpKernelContext* ctx) override {
    using Acc = typename AccumulatorType<T>::type;
    {
      TrainingVars vars(ctx, 3, kResource, DataTypeToEnum<T>::value);
      OP_REQUIRES_OK(ctx, vars.status());
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, vars, {3}, {4, 5, 6, 7}));
      if (kV2) OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, vars, {}, {8}));
      auto params = GetFtrlParams<T>(ctx, 4, kV2, multiply_linear_by_lr_);
      OP_REQUIRES_OK(ctx, params.status());
      const FtrlParams<Acc> p = *params;
      T* var = vars.data<T>(0);
      T* accum = vars.data<T>(1);
      T* linear = vars.data<T>(2);
      const T* grad = ctx->input(3).data<T>();
      ForEach(ctx, vars.var(0)->NumElements(), 60, [&](int64_t i) {
        Acc v = static_cast<Acc>(var[i]), a = static_cast<Acc>(accum[i]), l = static_cast<Acc>(linear[i]);
        FtrlStep(p, static_cast<Acc>(grad[i]), &v, &a, &l);
        var[i] = static_cast<T>(v);
        accum[i] = static_cast<T>(a);
        linear[i] = static_cast<T>(l);
      });
    }
    if (!kResource) ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool multiply_linear_by_lr_ = false;
};

// SparseApplyFtrl(V2) and ResourceSparseApplyFtrl(V2): inputs var, accum,
// linear, grad, indices, then the hyperparameters from input 5; rows in order.
template <typename T, typename Index, bool kResource, bool kV2>
class SparseApplyFtrlOp : public OpKernel {
 public:
  explicit SparseApplyFtrlOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("multiply_linear_by_lr", &multiply_linear_by_lr_));
  }
  void Compute(OpKernelContext* ctx) override {
    using Acc = typename AccumulatorType<T>::type;
    {
      TrainingVars vars(ctx, 3, kResource, DataTypeToEnum<T>::value);
      OP_REQUIRES_OK(ctx, vars.status());
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, vars, {}, {5, 6, 7, 8}));
      if (kV2) OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, vars, {}, {9}));
      int64_t row;
      OP_REQUIRES_OK(ctx, CheckSparse<Index>(ctx, vars.var(0)->shape(), 3, 4, &row));
      auto params = GetFtrlParams<T>(ctx, 5, kV2, multiply_linear_by_lr_);
      OP_REQUIRES_OK(ctx, params.status());
      const FtrlParams<Acc> p = *params;
      T* var = vars.data<T>(0);
      T* accum = vars.data<T>(1);
      T* linear = vars.data<T>(2);
      const T* grad = ctx->input(3).data<T>();
      const Index* idx = ctx->input(4).data<Index>();
      for (int64_t i = 0; i < ctx->input(4).NumElements(); ++i) {
        const int64_t base = static_cast<int64_t>(idx[i]) * row;
        for (int64_t j = 0; j < row; ++j) {
          const int64_t k = base + j;
          Acc v = static_cast<Acc>(var[k]), a = static_cast<Acc>(accum[k]), l = static_cast<Acc>(linear[k]);
          FtrlStep(p, static_cast<Acc>(grad[i * row + j]), &v, &a, &l);
          var[k] = static_cast<T>(v);
          accum[k] = static_cast<T>(a);
          linear[k] = static_cast<T>(l);
        }
      }
    }
    if (!kResource) ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool multiply_linear_by_lr_ = false;
};

enum class ScatterMode { kAdd, kSub, kUpdate };

// ScatterAdd/ScatterSub and ResourceScatterAdd/Sub/Update: updates of shape
// indices.shape + var.shape[1:], or a scalar applied to every named row.
template <typename T, typename Index, ScatterMode kMode, bool kResource>
class ScatterUpdateOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    {
      TrainingVars vars(ctx, 1, kResource, DataTypeToEnum<T>::value);
      OP_REQUIRES_OK(ctx, vars.status());
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, vars, {}, {}));
      // TensorFlow also accepts updates of shape indices.shape + var.shape[1:]
      // for multi-dimensional indices; flatten them to a vector here.
      const Tensor& indices = ctx->input(1);
      const Tensor& updates = ctx->input(2);
      const TensorShape& var_shape = vars.var(0)->shape();
      OP_REQUIRES(ctx, var_shape.dims() >= 1,
                  absl::InvalidArgumentError("the variable must be at least 1-D"));
      const bool scalar = updates.dims() == 0;
      bool ok = scalar || updates.dims() == indices.dims() + var_shape.dims() - 1;
      for (int d = 0; ok && !scalar && d < indices.dims(); ++d) ok = updates.dim_size(d) == indices.dim_size(d);
      for (int d = 1; ok && !scalar && d < var_shape.dims(); ++d) {
        ok = updates.dim_size(indices.dims() + d - 1) == var_shape.dim_size(d);
      }
      OP_REQUIRES(ctx, ok,
                  absl::InvalidArgumentError(absl::StrCat(
                      "updates of shape ", updates.shape().DebugString(), " must be indices.shape + ref.shape[1:] = ",
                      indices.shape().DebugString(), " + ", var_shape.DebugString(), "[1:]")));
      const int64_t n = indices.NumElements();
      const Index* idx = indices.data<Index>();
      for (int64_t i = 0; i < n; ++i) {
        OP_REQUIRES(ctx, idx[i] >= 0 && static_cast<int64_t>(idx[i]) < var_shape.dim_size(0),
                    absl::InvalidArgumentError(absl::StrCat("index ", idx[i], " at position ", i,
                                                            " is out of range [0, ", var_shape.dim_size(0), ")")));
      }
      const int64_t row = var_shape.dim_size(0) == 0 ? 0 : var_shape.num_elements() / var_shape.dim_size(0);
      T* var = vars.data<T>(0);
      const T* u = updates.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        T* dst = var + static_cast<int64_t>(idx[i]) * row;
        for (int64_t j = 0; j < row; ++j) {
          const T src = scalar ? u[0] : u[i * row + j];
          if constexpr (kMode == ScatterMode::kAdd) {
            dst[j] = static_cast<T>(dst[j] + src);
          } else if constexpr (kMode == ScatterMode::kSub) {
            dst[j] = static_cast<T>(dst[j] - src);
          } else {
            dst[j] = src;
          }
        }
      }
    }
    if (!kResource) ctx->forward_ref_input_to_ref_output(0, 0);
  }
};

#define SLUICE_REGISTER_T_I_(OP, T, Index, ...)                                                               \
  REGISTER_KERNEL_BUILDER(                                                                                    \
      Name(OP).Device(kDeviceCpu).TypeConstraint<T>("T").TypeConstraint<Index>("Tindices"), __VA_ARGS__)
#define SLUICE_REGISTER_SPARSE_(T, Index)                                                                     \
  SLUICE_REGISTER_T_I_("SparseApplyMomentum", T, Index, SparseApplyMomentumOp<T, Index, false>);              \
  SLUICE_REGISTER_T_I_("ResourceSparseApplyMomentum", T, Index, SparseApplyMomentumOp<T, Index, true>);       \
  SLUICE_REGISTER_T_I_("SparseApplyAdagrad", T, Index, SparseApplyAdagradOp<T, Index, false>);                \
  SLUICE_REGISTER_T_I_("ResourceSparseApplyAdagrad", T, Index, SparseApplyAdagradOp<T, Index, true>);         \
  SLUICE_REGISTER_T_I_("SparseApplyFtrl", T, Index, SparseApplyFtrlOp<T, Index, false, false>);               \
  SLUICE_REGISTER_T_I_("ResourceSparseApplyFtrl", T, Index, SparseApplyFtrlOp<T, Index, true, false>);        \
  SLUICE_REGISTER_T_I_("SparseApplyFtrlV2", T, Index, SparseApplyFtrlOp<T, Index, false, true>);              \
  SLUICE_REGISTER_T_I_("ResourceSparseApplyFtrlV2", T, Index, SparseApplyFtrlOp<T, Index, true, true>)
#define SLUICE_REGISTER_SCATTER_(T, Index)                                                                    \
  SLUICE_REGISTER_T_I_("ScatterAdd", T, Index, ScatterUpdateOp<T, Index, ScatterMode::kAdd, false>);          \
  SLUICE_REGISTER_T_I_("ScatterSub", T, Index, ScatterUpdateOp<T, Index, ScatterMode::kSub, false>);          \
  SLUICE_REGISTER_T_I_("ScatterUpdate", T, Index, ScatterUpdateOp<T, Index, ScatterMode::kUpdate, false>);    \
  REGISTER_KERNEL_BUILDER(                                                                                    \
      Name("ResourceScatterAdd").Device(kDeviceCpu).TypeConstraint<T>("dtype").TypeConstraint<Index>("Tindices"), \
      ScatterUpdateOp<T, Index, ScatterMode::kAdd, true>);                                                    \
  REGISTER_KERNEL_BUILDER(                                                                                    \
      Name("ResourceScatterSub").Device(kDeviceCpu).TypeConstraint<T>("dtype").TypeConstraint<Index>("Tindices"), \
      ScatterUpdateOp<T, Index, ScatterMode::kSub, true>);                                                    \
  REGISTER_KERNEL_BUILDER(Name("ResourceScatterUpdate")                                                       \
                              .Device(kDeviceCpu)                                                             \
                              .TypeConstraint<T>("dtype")                                                     \
                              .TypeConstraint<Index>("Tindices"),                                             \
                          ScatterUpdateOp<T, Index, ScatterMode::kUpdate, true>)
#define SLUICE_REGISTER_TRAINING_(T)                                                                           \
  REGISTER_KERNEL_BUILDER(Name("ApplyGradientDescent").Device(kDeviceCpu).TypeConstraint<T>("T"),              \
                          ApplyGradientDescentOp<T, false>);                                                   \
  REGISTER_KERNEL_BUILDER(Name("ApplyMomentum").Device(kDeviceCpu).TypeConstraint<T>("T"), ApplyMomentumOp<T, false>); \
  REGISTER_KERNEL_BUILDER(Name("ApplyAdagrad").Device(kDeviceCpu).TypeConstraint<T>("T"), ApplyAdagradOp<T, false>); \
  REGISTER_KERNEL_BUILDER(Name("ApplyRMSProp").Device(kDeviceCpu).TypeConstraint<T>("T"), ApplyRMSPropOp<T, false>); \
  REGISTER_KERNEL_BUILDER(Name("ApplyAdam").Device(kDeviceCpu).TypeConstraint<T>("T"), ApplyAdamOp<T, false>);  \
  REGISTER_KERNEL_BUILDER(Name("ApplyFtrl").Device(kDeviceCpu).TypeConstraint<T>("T"), ApplyFtrlOp<T, false, false>); \
  REGISTER_KERNEL_BUILDER(Name("ApplyFtrlV2").Device(kDeviceCpu).TypeConstraint<T>("T"), ApplyFtrlOp<T, false, true>); \
  REGISTER_KERNEL_BUILDER(Name("ResourceApplyGradientDescent").Device(kDeviceCpu).TypeConstraint<T>("T"),      \
                          ApplyGradientDescentOp<T, true>);                                                    \
  REGISTER_KERNEL_BUILDER(Name("ResourceApplyMomentum").Device(kDeviceCpu).TypeConstraint<T>("T"),             \
                          ApplyMomentumOp<T, true>);                                                           \
  REGISTER_KERNEL_BUILDER(Name("ResourceApplyAdagrad").Device(kDeviceCpu).TypeConstraint<T>("T"),              \
                          ApplyAdagradOp<T, true>);                                                            \
  REGISTER_KERNEL_BUILDER(Name("ResourceApplyRMSProp").Device(kDeviceCpu).TypeConstraint<T>("T"),              \
                          ApplyRMSPropOp<T, true>);                                                            \
  REGISTER_KERNEL_BUILDER(Name("ResourceApplyAdam").Device(kDeviceCpu).TypeConstraint<T>("T"),                 \
                          ApplyAdamOp<T, true>);                                                               \
  REGISTER_KERNEL_BUILDER(Name("ResourceApplyFtrl").Device(kDeviceCpu).TypeConstraint<T>("T"),                 \
                          ApplyFtrlOp<T, true, false>);                                                        \
  REGISTER_KERNEL_BUILDER(Name("ResourceApplyFtrlV2").Device(kDeviceCpu).TypeConstraint<T>("T"),               \
                          ApplyFtrlOp<T, true, true>);                                                         \
  SLUICE_REGISTER_SPARSE_(T, int32_t);                                                                         \
  SLUICE_REGISTER_SPARSE_(T, int64_t);                                                                         \
  SLUICE_REGISTER_SCATTER_(T, int32_t);                                                                        \
  SLUICE_REGISTER_SCATTER_(T, int64_t)
SLUICE_REGISTER_TRAINING_(float);
SLUICE_REGISTER_TRAINING_(double);
SLUICE_REGISTER_TRAINING_(half);
SLUICE_REGISTER_TRAINING_(bfloat16);
SLUICE_REGISTER_SCATTER_(int32_t, int32_t);
SLUICE_REGISTER_SCATTER_(int32_t, int64_t);
SLUICE_REGISTER_SCATTER_(int64_t, int32_t);
SLUICE_REGISTER_SCATTER_(int64_t, int64_t);
#undef SLUICE_REGISTER_TRAINING_
#undef SLUICE_REGISTER_SCATTER_
#undef SLUICE_REGISTER_SPARSE_
#undef SLUICE_REGISTER_T_I_

}  // namespace
}  // namespace sluice

// CPU kernels for the training ops (engine/ops/training_ops.cc states each
// update rule): the Apply* optimizers, their sparse forms and
// ScatterAdd/ScatterSub; the same kernels, with kResource, serve
// ResourceApplyGradientDescent/Momentum/Adam and ResourceSparseApplyMomentum
// (variables behind handles, TrainingVars; no output). Each locks the mutexes of its ref inputs (always,
// whatever use_locking says; in address order, so two kernels sharing
// variables cannot deadlock), checks shapes and initialization (both with
// training_ops_util.h, shared with the GPU kernels), updates the
// variables in place (elementwise in float for half/bfloat16, in parallel
// on the intra-op pool for large variables) and forwards the variable's ref
// to output 0.
// Thread safety: all mutation happens under the variables' mutexes.
#include <cmath>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/nn_util.h"
#include "engine/kernels/training_ops_util.h"

namespace sluice {
namespace {

template <typename T>
typename AccumulatorType<T>::type Scalar(OpKernelContext* ctx, int i) {
  return static_cast<typename AccumulatorType<T>::type>(ctx->input(i).data<T>()[0]);
}

template <typename T>
T* Ref(OpKernelContext* ctx, int i) {
  return ctx->mutable_input(i)->data<T>();
}

// Runs range_fn(first, last) over [0, n) split into ranges, in parallel when n
// is large.
template <typename RangeFn>
void ForEachRange(OpKernelContext* ctx, int64_t n, int cost, const RangeFn& range_fn) {
  if (n < 16384) {
    range_fn(0, n);
  } else {
    ctx->eigen_cpu_device().parallelFor(n, Eigen::TensorOpCost(16, 16, cost),
                                        [&](Eigen::Index first, Eigen::Index last) { range_fn(first, last); });
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
  if (n < 16384) {
    body(0, n);
  } else {
    ctx->eigen_cpu_device().parallelFor(n, Eigen::TensorOpCost(16, 16, cost), body);
  }
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

template <typename T>
class ApplyAdagradOp : public OpKernel {
 public:
  explicit ApplyAdagradOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("update_slots", &update_slots_));
  }
  void Compute(OpKernelContext* ctx) override {
    using Acc = typename AccumulatorType<T>::type;
    {
      RefInputLocks locks(ctx, 2);
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, 2, {3}, {2}));
      T* var = Ref<T>(ctx, 0);
      T* accum = Ref<T>(ctx, 1);
      const T* grad = ctx->input(3).data<T>();
      const Acc lr = Scalar<T>(ctx, 2);
      const bool update = update_slots_;
      ForEach(ctx, ctx->mutable_input(0)->NumElements(), 20, [&](int64_t i) {
        const Acc g = static_cast<Acc>(grad[i]);
        Acc a = static_cast<Acc>(accum[i]);
        if (update) {
          a += g * g;
          accum[i] = static_cast<T>(a);
        }
        var[i] = static_cast<T>(static_cast<Acc>(var[i]) - lr * g / std::sqrt(a));
      });
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool update_slots_ = true;
};

template <typename T>
class ApplyRMSPropOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    using Acc = typename AccumulatorType<T>::type;
    {
      RefInputLocks locks(ctx, 3);
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, 3, {7}, {3, 4, 5, 6}));
      T* var = Ref<T>(ctx, 0);
      T* ms = Ref<T>(ctx, 1);
      T* mom = Ref<T>(ctx, 2);
      const T* grad = ctx->input(7).data<T>();
      const Acc lr = Scalar<T>(ctx, 3), rho = Scalar<T>(ctx, 4), momentum = Scalar<T>(ctx, 5),
                epsilon = Scalar<T>(ctx, 6);
      ForEach(ctx, ctx->mutable_input(0)->NumElements(), 25, [&](int64_t i) {
        const Acc g = static_cast<Acc>(grad[i]);
        const Acc m2 = static_cast<Acc>(ms[i]) * rho + g * g * (Acc(1) - rho);
        ms[i] = static_cast<T>(m2);
        const Acc m = static_cast<Acc>(mom[i]) * momentum + lr * g / std::sqrt(m2 + epsilon);
        mom[i] = static_cast<T>(m);
        var[i] = static_cast<T>(static_cast<Acc>(var[i]) - m);
      });
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
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

template <typename T, typename Index>
class SparseApplyAdagradOp : public OpKernel {
 public:
  explicit SparseApplyAdagradOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("update_slots", &update_slots_));
  }
  void Compute(OpKernelContext* ctx) override {
    using Acc = typename AccumulatorType<T>::type;
    {
      RefInputLocks locks(ctx, 2);
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, 2, {}, {2}));
      int64_t row;
      OP_REQUIRES_OK(ctx, CheckSparse<Index>(ctx, ctx->mutable_input(0)->shape(), 3, 4, &row));
      T* var = Ref<T>(ctx, 0);
      T* accum = Ref<T>(ctx, 1);
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
    ctx->forward_ref_input_to_ref_output(0, 0);
  }

 private:
  bool update_slots_ = true;
};

template <typename T, typename Index, bool kAdd>
class ScatterUpdateOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    {
      RefInputLocks locks(ctx, 1);
      OP_REQUIRES_OK(ctx, CheckTrainingInputs(ctx, 1, {}, {}));
      // TensorFlow also accepts updates of shape indices.shape + var.shape[1:]
      // for multi-dimensional indices; flatten them to a vector here.
      const Tensor& indices = ctx->input(1);
      const Tensor& updates = ctx->input(2);
      const TensorShape& var_shape = ctx->mutable_input(0)->shape();
      OP_REQUIRES(ctx, var_shape.dims() >= 1,
                  absl::InvalidArgumentError("the variable must be at least 1-D"));
      bool ok = updates.dims() == indices.dims() + var_shape.dims() - 1;
      for (int d = 0; ok && d < indices.dims(); ++d) ok = updates.dim_size(d) == indices.dim_size(d);
      for (int d = 1; ok && d < var_shape.dims(); ++d) {
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
      T* var = Ref<T>(ctx, 0);
      const T* u = updates.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        T* dst = var + static_cast<int64_t>(idx[i]) * row;
        const T* src = u + i * row;
        for (int64_t j = 0; j < row; ++j) dst[j] = static_cast<T>(kAdd ? dst[j] + src[j] : dst[j] - src[j]);
      }
    }
    ctx->forward_ref_input_to_ref_output(0, 0);
  }
};

#define SLUICE_REGISTER_SPARSE_(T, Index)                                                                          \
  REGISTER_KERNEL_BUILDER(                                                                                         \
      Name("SparseApplyMomentum").Device(kDeviceCpu).TypeConstraint<T>("T").TypeConstraint<Index>("Tindices"),     \
      SparseApplyMomentumOp<T, Index, false>);                                                                     \
  REGISTER_KERNEL_BUILDER(Name("ResourceSparseApplyMomentum")                                                      \
                              .Device(kDeviceCpu)                                                                  \
                              .TypeConstraint<T>("T")                                                              \
                              .TypeConstraint<Index>("Tindices"),                                                  \
                          SparseApplyMomentumOp<T, Index, true>);                                                  \
  REGISTER_KERNEL_BUILDER(                                                                                         \
      Name("SparseApplyAdagrad").Device(kDeviceCpu).TypeConstraint<T>("T").TypeConstraint<Index>("Tindices"),      \
      SparseApplyAdagradOp<T, Index>)
#define SLUICE_REGISTER_SCATTER_(T, Index)                                                                      \
  REGISTER_KERNEL_BUILDER(                                                                                      \
      Name("ScatterAdd").Device(kDeviceCpu).TypeConstraint<T>("T").TypeConstraint<Index>("Tindices"),           \
      ScatterUpdateOp<T, Index, true>);                                                                         \
  REGISTER_KERNEL_BUILDER(                                                                                      \
      Name("ScatterSub").Device(kDeviceCpu).TypeConstraint<T>("T").TypeConstraint<Index>("Tindices"),           \
      ScatterUpdateOp<T, Index, false>)
#define SLUICE_REGISTER_TRAINING_(T)                                                                           \
  REGISTER_KERNEL_BUILDER(Name("ApplyGradientDescent").Device(kDeviceCpu).TypeConstraint<T>("T"),              \
                          ApplyGradientDescentOp<T, false>);                                                   \
  REGISTER_KERNEL_BUILDER(Name("ApplyMomentum").Device(kDeviceCpu).TypeConstraint<T>("T"), ApplyMomentumOp<T, false>); \
  REGISTER_KERNEL_BUILDER(Name("ApplyAdagrad").Device(kDeviceCpu).TypeConstraint<T>("T"), ApplyAdagradOp<T>);   \
  REGISTER_KERNEL_BUILDER(Name("ApplyRMSProp").Device(kDeviceCpu).TypeConstraint<T>("T"), ApplyRMSPropOp<T>);   \
  REGISTER_KERNEL_BUILDER(Name("ApplyAdam").Device(kDeviceCpu).TypeConstraint<T>("T"), ApplyAdamOp<T, false>);  \
  REGISTER_KERNEL_BUILDER(Name("ResourceApplyGradientDescent").Device(kDeviceCpu).TypeConstraint<T>("T"),      \
                          ApplyGradientDescentOp<T, true>);                                                    \
  REGISTER_KERNEL_BUILDER(Name("ResourceApplyMomentum").Device(kDeviceCpu).TypeConstraint<T>("T"),             \
                          ApplyMomentumOp<T, true>);                                                           \
  REGISTER_KERNEL_BUILDER(Name("ResourceApplyAdam").Device(kDeviceCpu).TypeConstraint<T>("T"),                 \
                          ApplyAdamOp<T, true>);                                                               \
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

}  // namespace
}  // namespace sluice

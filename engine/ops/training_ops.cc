// Training ops: the optimizers' in-place updates (ApplyGradientDescent,
// ApplyMomentum, ApplyAdagrad, ApplyRMSProp, ApplyAdam, ApplyFtrl(V2)), their
// sparse forms (SparseApplyMomentum, SparseApplyAdagrad, SparseApplyFtrl(V2))
// and ScatterAdd/ScatterSub/ScatterUpdate, with
// TensorFlow's signatures (tensorflow/core/ops/training_ops.cc, state_ops.cc).
// Each takes its variable (and slots) as ref inputs, mutates them under the
// variables' mutexes, and outputs the variable's ref. Updates (TensorFlow's):
//   GradientDescent  var -= alpha * delta
//   Momentum         accum = accum * momentum + grad
//                    var -= lr * accum            (nesterov: lr * (grad + momentum * accum))
//   Adagrad          accum += grad^2 (if update_slots); var -= lr * grad / sqrt(accum)
//   RMSProp          ms = rho * ms + (1 - rho) * grad^2
//                    mom = momentum * mom + lr * grad / sqrt(ms + epsilon); var -= mom
//   Adam             lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
//                    m += (grad - m) * (1 - beta1); v += (grad^2 - v) * (1 - beta2)
//                    var -= lr_t * m / (sqrt(v) + epsilon)
//                    (nesterov: lr_t * (m * beta1 + (1 - beta1) * grad) / (sqrt(v) + epsilon))
//   Ftrl             (FTRL-proximal; p = -lr_power; V2: g' = grad + 2 * l2_shrinkage * var, V1: g' = grad)
//                    new_accum = accum + grad^2
//                    linear += g' - (new_accum^p - accum^p) / lr * var
//                    var = |linear| > l1 ? (sign(linear) * l1 - linear) / (new_accum^p / lr + 2 * l2) : 0
//                    accum = new_accum
//                    (multiply_linear_by_lr: linear += g' * lr - (new_accum^p - accum^p) * var, and
//                     l1 * lr for l1, new_accum^p + 2 * l2 * lr for the denominator)
//                    lr > 0, l1, l2, l2_shrinkage >= 0, lr_power <= 0 are checked at run time
// Sparse forms apply the same rule to the rows named by `indices`, in order.
// Not differentiable (state updates).
// Thread safety: registrations run at static initialization.
#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"

namespace sluice {
namespace {

// Output 0: the variable's shape, merged with the dense inputs listed.
absl::Status ApplyShape(InferenceContext* c, std::initializer_list<int> same_as_var) {
  PartialShape var = c->input(0);
  for (int i : same_as_var) {
    auto merged = var.Merge(c->input(i));
    if (!merged.ok()) {
      return c->Error(absl::StrCat("input ", i, " has shape ", c->input(i).DebugString(),
                                   " but the variable has shape ", var.DebugString()));
    }
    var = *merged;
  }
  c->set_output(0, var);
  return absl::OkStatus();
}

}  // namespace

#define SLUICE_TRAINING_TYPES "T: {bfloat16, half, float, double}"

REGISTER_OP("ApplyGradientDescent")
    .Input("var: Ref(T)")
    .Input("alpha: T")
    .Input("delta: T")
    .Output("out: Ref(T)")
    .Attr(SLUICE_TRAINING_TYPES)
    .Attr("use_locking: bool = false")
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) { return ApplyShape(c, {2}); });

REGISTER_OP("ApplyMomentum")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("lr: T")
    .Input("grad: T")
    .Input("momentum: T")
    .Output("out: Ref(T)")
    .Attr(SLUICE_TRAINING_TYPES)
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) { return ApplyShape(c, {1, 3}); });

REGISTER_OP("ApplyAdagrad")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("lr: T")
    .Input("grad: T")
    .Output("out: Ref(T)")
    .Attr(SLUICE_TRAINING_TYPES)
    .Attr("use_locking: bool = false")
    .Attr("update_slots: bool = true")
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) { return ApplyShape(c, {1, 3}); });

REGISTER_OP("ApplyRMSProp")
    .Input("var: Ref(T)")
    .Input("ms: Ref(T)")
    .Input("mom: Ref(T)")
    .Input("lr: T")
    .Input("rho: T")
    .Input("momentum: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Output("out: Ref(T)")
    .Attr(SLUICE_TRAINING_TYPES)
    .Attr("use_locking: bool = false")
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) { return ApplyShape(c, {1, 2, 7}); });

REGISTER_OP("ApplyAdam")
    .Input("var: Ref(T)")
    .Input("m: Ref(T)")
    .Input("v: Ref(T)")
    .Input("beta1_power: T")
    .Input("beta2_power: T")
    .Input("lr: T")
    .Input("beta1: T")
    .Input("beta2: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Output("out: Ref(T)")
    .Attr(SLUICE_TRAINING_TYPES)
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) { return ApplyShape(c, {1, 2, 9}); });

REGISTER_OP("SparseApplyMomentum")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("lr: T")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Input("momentum: T")
    .Output("out: Ref(T)")
    .Attr(SLUICE_TRAINING_TYPES)
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) { return ApplyShape(c, {1}); });

REGISTER_OP("SparseApplyAdagrad")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("lr: T")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Output("out: Ref(T)")
    .Attr(SLUICE_TRAINING_TYPES)
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .Attr("update_slots: bool = true")
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) { return ApplyShape(c, {1}); });

REGISTER_OP("ApplyFtrl")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("linear: Ref(T)")
    .Input("grad: T")
    .Input("lr: T")
    .Input("l1: T")
    .Input("l2: T")
    .Input("lr_power: T")
    .Output("out: Ref(T)")
    .Attr(SLUICE_TRAINING_TYPES)
    .Attr("use_locking: bool = false")
    .Attr("multiply_linear_by_lr: bool = false")
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) { return ApplyShape(c, {1, 2, 3}); });

REGISTER_OP("ApplyFtrlV2")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("linear: Ref(T)")
    .Input("grad: T")
    .Input("lr: T")
    .Input("l1: T")
    .Input("l2: T")
    .Input("l2_shrinkage: T")
    .Input("lr_power: T")
    .Output("out: Ref(T)")
    .Attr(SLUICE_TRAINING_TYPES)
    .Attr("use_locking: bool = false")
    .Attr("multiply_linear_by_lr: bool = false")
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) { return ApplyShape(c, {1, 2, 3}); });

REGISTER_OP("SparseApplyFtrl")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("linear: Ref(T)")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Input("lr: T")
    .Input("l1: T")
    .Input("l2: T")
    .Input("lr_power: T")
    .Output("out: Ref(T)")
    .Attr(SLUICE_TRAINING_TYPES)
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .Attr("multiply_linear_by_lr: bool = false")
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) { return ApplyShape(c, {1, 2}); });

REGISTER_OP("SparseApplyFtrlV2")
    .Input("var: Ref(T)")
    .Input("accum: Ref(T)")
    .Input("linear: Ref(T)")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Input("lr: T")
    .Input("l1: T")
    .Input("l2: T")
    .Input("l2_shrinkage: T")
    .Input("lr_power: T")
    .Output("out: Ref(T)")
    .Attr(SLUICE_TRAINING_TYPES)
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .Attr("multiply_linear_by_lr: bool = false")
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) { return ApplyShape(c, {1, 2}); });

// ref[indices[i], ...] += updates[i, ...] (duplicates accumulate; a scalar
// update applies to every element of the named rows).
REGISTER_OP("ScatterAdd")
    .Input("ref: Ref(T)")
    .Input("indices: Tindices")
    .Input("updates: T")
    .Output("output_ref: Ref(T)")
    .Attr("T: {bfloat16, half, float, double, int32, int64}")
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .SetNotDifferentiable()
    .SetShapeFn(shape_fns::Unchanged);

// ref[indices[i], ...] -= updates[i, ...] (duplicates accumulate).
REGISTER_OP("ScatterSub")
    .Input("ref: Ref(T)")
    .Input("indices: Tindices")
    .Input("updates: T")
    .Output("output_ref: Ref(T)")
    .Attr("T: {bfloat16, half, float, double, int32, int64}")
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .SetNotDifferentiable()
    .SetShapeFn(shape_fns::Unchanged);

// ref[indices[i], ...] = updates[i, ...] (for repeated indices the last
// one wins).
REGISTER_OP("ScatterUpdate")
    .Input("ref: Ref(T)")
    .Input("indices: Tindices")
    .Input("updates: T")
    .Output("output_ref: Ref(T)")
    .Attr("T: type")
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = true")
    .SetNotDifferentiable()
    .SetShapeFn(shape_fns::Unchanged);

#undef SLUICE_TRAINING_TYPES

}  // namespace sluice

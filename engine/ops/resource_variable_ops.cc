// Resource variables (TensorFlow's tensorflow/core/ops/resource_variable_ops.cc
// and the ResourceApply* half of training_ops.cc, same signatures): a
// VarHandleOp outputs a DT_RESOURCE handle naming a variable in its device's
// ResourceMgr; ReadVariableOp, Assign*VariableOp, ResourceGather and the
// ResourceApply* optimizers take that handle and read or mutate the variable
// behind it. They live beside the reference variables (VariableV2,
// state_ops.cc) but are distinct resources: a VariableV2 and a VarHandleOp of
// one name clash instead of sharing. A handle carries the shape its
// VarHandleOp declares (ShapeRefiner passes it along the handle's edges), so
// ReadVariableOp and ResourceGather infer their outputs from it, and
// AssignVariableOp's kernel refuses values outside it.
// Gradients (TensorFlow's): ReadVariableOp passes its gradient through to the
// handle (_ReadGrad); ResourceGather's is sparse (IndexedSlices) with the
// variable's shape from VariableShape; state updates are not differentiable.
// The update rules of the ResourceApply* ops are the Apply* ops' (see
// training_ops.cc), with the variables behind handles and no output.
// Thread safety: registrations run at static initialization.
#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/gradients.h"
#include "engine/ops/array_grad_util.h"

namespace sluice {
namespace {

// Ops without outputs: nothing to infer.
absl::Status NoOutputs(InferenceContext*) { return absl::OkStatus(); }

// The shape input 0's handle declares for its variable (unknown when the
// handle's origin is not known statically).
PartialShape DeclaredShape(InferenceContext* c) {
  const std::vector<PartialShape>& declared = c->input_handle_shapes(0);
  return declared.empty() ? PartialShape::Unknown() : declared[0];
}

}  // namespace

REGISTER_OP("VarHandleOp")
    .Output("resource: resource")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .Attr("debug_name: string = ''")
    .Attr("dtype: type")
    .Attr("shape: shape")
    .Attr("allowed_devices: list(string) = []")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) {  // a scalar handle to a variable of the declared shape
      TensorShapeProto proto;
      absl::Status s = c->GetAttr("shape", &proto);
      if (!s.ok()) return s;
      auto declared = PartialShape::FromProto(proto);
      if (!declared.ok()) return c->Error(absl::StrCat("attr 'shape': ", declared.status().message()));
      c->set_output(0, PartialShape::Scalar());
      c->set_output_handle_shapes(0, {*std::move(declared)});
      return absl::OkStatus();
    });

REGISTER_OP("ReadVariableOp")
    .Input("resource: resource")
    .Output("value: dtype")
    .Attr("dtype: type")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, DeclaredShape(c));
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      g->SetInputGrad(0, g->grad(0));
      return absl::OkStatus();
    });

REGISTER_OP("AssignVariableOp")
    .Input("resource: resource")
    .Input("value: dtype")
    .Attr("dtype: type")
    .Attr("validate_shape: bool = false")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) {  // the kernel checks values known only at run time
      const PartialShape declared = DeclaredShape(c);
      if (!declared.IsCompatibleWith(c->input(1))) {
        return c->Error(absl::StrCat("a value of shape ", c->input(1).DebugString(),
                                     " does not fit the variable's declared shape ", declared.DebugString()));
      }
      return absl::OkStatus();
    });

REGISTER_OP("AssignAddVariableOp")
    .Input("resource: resource")
    .Input("value: dtype")
    .Attr("dtype: type")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

REGISTER_OP("AssignSubVariableOp")
    .Input("resource: resource")
    .Input("value: dtype")
    .Attr("dtype: type")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

REGISTER_OP("VarIsInitializedOp")
    .Input("resource: resource")
    .Output("is_initialized: bool")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(shape_fns::Scalar);

REGISTER_OP("DestroyResourceOp")
    .Input("resource: resource")
    .Attr("ignore_lookup_error: bool = true")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

REGISTER_OP("VariableShape")
    .Input("input: resource")
    .Output("output: out_type")
    .Attr("out_type: {int32, int64} = DT_INT32")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn([](InferenceContext* c) {
      const PartialShape declared = DeclaredShape(c);
      c->set_output(0, PartialShape::FromDims({declared.rank_known() ? declared.rank() : -1}));
      return absl::OkStatus();
    });

REGISTER_OP("ResourceGather")
    .Input("resource: resource")
    .Input("indices: Tindices")
    .Output("output: dtype")
    .Attr("batch_dims: int = 0")
    .Attr("validate_indices: bool = true")
    .Attr("dtype: type")
    .Attr("Tindices: {int32, int64}")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {  // indices' shape + the variable's rows (batch_dims 0)
      const PartialShape params = DeclaredShape(c);
      const PartialShape& indices = c->input(1);
      int64_t batch_dims = 0;
      absl::Status s = c->GetAttr("batch_dims", &batch_dims);
      if (!s.ok()) return s;
      if (batch_dims != 0 || !params.rank_known() || params.rank() < 1 || !indices.rank_known()) {
        c->set_output(0, PartialShape::Unknown());
        return absl::OkStatus();
      }
      std::vector<int64_t> dims(indices.dims().begin(), indices.dims().end());
      dims.insert(dims.end(), params.dims().begin() + 1, params.dims().end());
      c->set_output(0, PartialShape::FromDims(dims));
      return absl::OkStatus();
    })
    .SetGradient([](GradientBuilder* g) {
      int64_t batch_dims = 0;
      absl::Status s = g->GetAttr("batch_dims", &batch_dims);
      if (!s.ok()) return s;
      if (batch_dims != 0) {
        return absl::UnimplementedError(absl::StrCat("the gradient of ResourceGather '", g->node().name(),
                                                     "' with batch_dims ", batch_dims, " (only 0)"));
      }
      Output shape = g->b().Op("shape", "VariableShape", {g->input(0)},
                               {{"out_type", MakeAttr(g->input(1).dtype())}});
      return array_grad::GatherRowsGrad(g, shape);
    });

#define SLUICE_RESOURCE_TRAINING_TYPES "T: {bfloat16, half, float, double}"

REGISTER_OP("ResourceApplyGradientDescent")
    .Input("var: resource")
    .Input("alpha: T")
    .Input("delta: T")
    .Attr(SLUICE_RESOURCE_TRAINING_TYPES)
    .Attr("use_locking: bool = false")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

REGISTER_OP("ResourceApplyMomentum")
    .Input("var: resource")
    .Input("accum: resource")
    .Input("lr: T")
    .Input("grad: T")
    .Input("momentum: T")
    .Attr(SLUICE_RESOURCE_TRAINING_TYPES)
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

REGISTER_OP("ResourceApplyAdam")
    .Input("var: resource")
    .Input("m: resource")
    .Input("v: resource")
    .Input("beta1_power: T")
    .Input("beta2_power: T")
    .Input("lr: T")
    .Input("beta1: T")
    .Input("beta2: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Attr(SLUICE_RESOURCE_TRAINING_TYPES)
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

REGISTER_OP("ResourceSparseApplyMomentum")
    .Input("var: resource")
    .Input("accum: resource")
    .Input("lr: T")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Input("momentum: T")
    .Attr(SLUICE_RESOURCE_TRAINING_TYPES)
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .Attr("use_nesterov: bool = false")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

REGISTER_OP("ResourceApplyAdagrad")
    .Input("var: resource")
    .Input("accum: resource")
    .Input("lr: T")
    .Input("grad: T")
    .Attr(SLUICE_RESOURCE_TRAINING_TYPES)
    .Attr("use_locking: bool = false")
    .Attr("update_slots: bool = true")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

REGISTER_OP("ResourceApplyRMSProp")
    .Input("var: resource")
    .Input("ms: resource")
    .Input("mom: resource")
    .Input("lr: T")
    .Input("rho: T")
    .Input("momentum: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Attr(SLUICE_RESOURCE_TRAINING_TYPES)
    .Attr("use_locking: bool = false")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

REGISTER_OP("ResourceSparseApplyAdagrad")
    .Input("var: resource")
    .Input("accum: resource")
    .Input("lr: T")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Attr(SLUICE_RESOURCE_TRAINING_TYPES)
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .Attr("update_slots: bool = true")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

REGISTER_OP("ResourceApplyFtrl")
    .Input("var: resource")
    .Input("accum: resource")
    .Input("linear: resource")
    .Input("grad: T")
    .Input("lr: T")
    .Input("l1: T")
    .Input("l2: T")
    .Input("lr_power: T")
    .Attr(SLUICE_RESOURCE_TRAINING_TYPES)
    .Attr("use_locking: bool = false")
    .Attr("multiply_linear_by_lr: bool = false")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

REGISTER_OP("ResourceApplyFtrlV2")
    .Input("var: resource")
    .Input("accum: resource")
    .Input("linear: resource")
    .Input("grad: T")
    .Input("lr: T")
    .Input("l1: T")
    .Input("l2: T")
    .Input("l2_shrinkage: T")
    .Input("lr_power: T")
    .Attr(SLUICE_RESOURCE_TRAINING_TYPES)
    .Attr("use_locking: bool = false")
    .Attr("multiply_linear_by_lr: bool = false")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

REGISTER_OP("ResourceSparseApplyFtrl")
    .Input("var: resource")
    .Input("accum: resource")
    .Input("linear: resource")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Input("lr: T")
    .Input("l1: T")
    .Input("l2: T")
    .Input("lr_power: T")
    .Attr(SLUICE_RESOURCE_TRAINING_TYPES)
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .Attr("multiply_linear_by_lr: bool = false")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

REGISTER_OP("ResourceSparseApplyFtrlV2")
    .Input("var: resource")
    .Input("accum: resource")
    .Input("linear: resource")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Input("lr: T")
    .Input("l1: T")
    .Input("l2: T")
    .Input("l2_shrinkage: T")
    .Input("lr_power: T")
    .Attr(SLUICE_RESOURCE_TRAINING_TYPES)
    .Attr("Tindices: {int32, int64}")
    .Attr("use_locking: bool = false")
    .Attr("multiply_linear_by_lr: bool = false")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

// var[indices[i], ...] += updates[i, ...] (or the scalar updates), rows in order.
REGISTER_OP("ResourceScatterAdd")
    .Input("resource: resource")
    .Input("indices: Tindices")
    .Input("updates: dtype")
    .Attr("dtype: {bfloat16, half, float, double, int32, int64}")
    .Attr("Tindices: {int32, int64}")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

// var[indices[i], ...] -= updates[i, ...] (or the scalar updates), rows in order.
REGISTER_OP("ResourceScatterSub")
    .Input("resource: resource")
    .Input("indices: Tindices")
    .Input("updates: dtype")
    .Attr("dtype: {bfloat16, half, float, double, int32, int64}")
    .Attr("Tindices: {int32, int64}")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

// var[indices[i], ...] = updates[i, ...] (or the scalar updates), rows in order.
REGISTER_OP("ResourceScatterUpdate")
    .Input("resource: resource")
    .Input("indices: Tindices")
    .Input("updates: dtype")
    .Attr("dtype: {bfloat16, half, float, double, int32, int64}")
    .Attr("Tindices: {int32, int64}")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

// TensorFlow's variables share their buffer with readers until this op says
// otherwise; ours always copy on write (a writer gives itself a buffer of its
// own when a reader still holds the old one, PrepareToUpdate), so there is
// nothing to disable: a stateful no-op that checks its handle.
REGISTER_OP("DisableCopyOnRead")
    .Input("resource: resource")
    .SetIsStateful()
    .SetNotDifferentiable()
    .SetShapeFn(NoOutputs);

#undef SLUICE_RESOURCE_TRAINING_TYPES

}  // namespace sluice

// Variable ops (whitepaper §4.1 "stateful operations"): Variable/VariableV2
// hold a tensor in their device's ResourceMgr and output a reference to it;
// Assign and AssignAdd mutate it through that reference.
#include "absl/strings/str_cat.h"
#include "engine/framework/op_def.h"
#include "engine/framework/shape_inference.h"

namespace sluice {
namespace {

absl::Status AssignShape(InferenceContext* c) {
  bool validate_shape;
  absl::Status s = c->GetAttr("validate_shape", &validate_shape);
  if (!s.ok()) return s;
  if (!validate_shape) {
    c->set_output(0, c->input(1));
    return absl::OkStatus();
  }
  auto merged = c->input(0).Merge(c->input(1));
  if (!merged.ok()) {
    return c->Error(absl::StrCat("cannot assign a value of shape ", c->input(1).DebugString(),
                                 " to a variable of shape ", c->input(0).DebugString()));
  }
  c->set_output(0, *merged);
  return absl::OkStatus();
}

absl::Status AssignUpdateShape(InferenceContext* c) {
  if (!c->input(0).IsCompatibleWith(c->input(1))) {
    return c->Error(absl::StrCat("update of shape ", c->input(1).DebugString(), " does not match the variable's shape ",
                                 c->input(0).DebugString()));
  }
  c->set_output(0, c->input(0));
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("VariableV2")
    .Output("ref: Ref(dtype)")
    .Attr("shape: shape")
    .Attr("dtype: type")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(shape_fns::FromShapeAttr);

REGISTER_OP("Variable")
    .Output("ref: Ref(dtype)")
    .Attr("shape: shape")
    .Attr("dtype: type")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(shape_fns::FromShapeAttr);

// Whether a variable holds a value yet (TensorFlow's signature). A worker of
// a replicated run polls it until the chief has initialized or restored.
REGISTER_OP("IsVariableInitialized")
    .Input("ref: Ref(dtype)")
    .Output("is_initialized: bool")
    .Attr("dtype: type")
    .SetAllowsUninitializedInput()
    .SetShapeFn(shape_fns::Scalar);

REGISTER_OP("Assign")
    .Input("ref: Ref(T)")
    .Input("value: T")
    .Output("output_ref: Ref(T)")
    .Attr("T: type")
    .Attr("validate_shape: bool = true")
    .Attr("use_locking: bool = true")
    .SetAllowsUninitializedInput()
    .SetShapeFn(AssignShape);

REGISTER_OP("AssignAdd")
    .Input("ref: Ref(T)")
    .Input("value: T")
    .Output("output_ref: Ref(T)")
    .Attr("T: {bfloat16, half, float, double, uint8, int8, uint16, int16, int32, int64, complex64}")
    .Attr("use_locking: bool = false")
    .SetShapeFn(AssignUpdateShape);

}  // namespace sluice

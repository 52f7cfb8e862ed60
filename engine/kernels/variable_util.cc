// See variable_util.h.
#include "engine/kernels/variable_util.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/framework/resource_mgr.h"

namespace sluice {

absl::Status ReadVariableAttrs(OpKernelConstruction* ctx, VariableAttrs* attrs) {
  absl::Status s = ctx->GetAttr("container", &attrs->container);
  if (s.ok()) s = ctx->GetAttr("shared_name", &attrs->shared_name);
  if (s.ok()) s = ctx->GetAttr("dtype", &attrs->dtype);
  if (!s.ok()) return s;
  if (attrs->container.empty()) attrs->container = ResourceMgr::kDefaultContainer;
  if (attrs->shared_name.empty()) attrs->shared_name = ctx->def().name();
  return absl::OkStatus();
}

absl::Status OutputVariableRef(OpKernelContext* ctx, const VariableAttrs& attrs) {
  const DataType dtype = attrs.dtype;
  auto var = ctx->resource_manager()->LookupOrCreate<VariableResource>(
      attrs.container, attrs.shared_name, [dtype]() -> absl::StatusOr<std::shared_ptr<VariableResource>> {
        return std::make_shared<VariableResource>(dtype);
      });
  if (!var.ok()) return var.status();
  VariableResource* v = var->get();
  // Another node (another graph, a session before this one) may have made
  // it: sharing a variable means agreeing on its type.
  if (v->dtype() != dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("attr 'dtype' is ", DataTypeString(dtype), " but variable '", attrs.shared_name,
                     "' in container '", attrs.container, "' already exists as ", DataTypeString(v->dtype()),
                     " (nodes sharing a variable through shared_name must declare the same dtype)"));
  }
  ctx->set_output_ref(0, v->mu(), v->tensor(), std::move(var).value());
  return absl::OkStatus();
}

absl::Status CheckAssignShape(const Tensor& var, const Tensor& value, bool validate_shape) {
  if (validate_shape && var.IsInitialized() && var.shape() != value.shape()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot assign a value of shape ", value.shape().DebugString(),
                                                   " to a variable of shape ", var.shape().DebugString()));
  }
  return absl::OkStatus();
}

absl::Status CheckAssignAddShape(const Tensor& var, const Tensor& value) {
  if (var.shape() != value.shape()) {
    return absl::InvalidArgumentError(absl::StrCat("update of shape ", value.shape().DebugString(),
                                                   " does not match the variable's shape ", var.shape().DebugString()));
  }
  return absl::OkStatus();
}

}  // namespace sluice

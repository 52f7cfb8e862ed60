// See resource_variable_util.h.
#include "engine/kernels/resource_variable_util.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/framework/device.h"
#include "engine/framework/shape_inference.h"

namespace sluice {

std::string ResourceVariable::DebugString() const {
  return "Resource" + VariableResource::DebugString();
}

absl::StatusOr<ResourceHandle> HandleFromInput(OpKernelContext* ctx, int i) {
  const Tensor& t = ctx->input(i);
  if (t.dtype() != DT_RESOURCE || t.NumElements() != 1 || t.dims() != 0) {
    return absl::InvalidArgumentError(absl::StrCat("input ", i, " must be a scalar resource handle, got a ",
                                                   DataTypeString(t.dtype()), " tensor of shape ",
                                                   t.shape().DebugString()));
  }
  const ResourceHandle& h = t.data<ResourceHandle>()[0];
  if (!h.device.empty() && h.device != ctx->device()->name()) {
    // Its resource lives in another device's ResourceMgr (the placer keeps
    // consumers beside their VarHandleOp; a hand-placed graph may not).
    return absl::InvalidArgumentError(absl::StrCat("input ", i, " is a handle to ", h.DebugString(),
                                                   ", used on device ", ctx->device()->name()));
  }
  if (h.type_name != ResourceVariable::kTypeName) {
    return absl::InvalidArgumentError(absl::StrCat("input ", i, " is a handle to ", h.DebugString(),
                                                   ", not to a resource variable"));
  }
  return h;
}

namespace {

absl::Status CheckDtype(const ResourceVariable& var, const ResourceHandle& h, DataType dtype) {
  if (dtype != DT_INVALID && var.dtype() != dtype) {
    return absl::InvalidArgumentError(absl::StrCat("variable '", h.name, "' in container '", h.container,
                                                   "' holds ", DataTypeString(var.dtype()), " but the node expects ",
                                                   DataTypeString(dtype)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<ResourceVariable>> LookupResourceVariable(OpKernelContext* ctx, int i,
                                                                         DataType dtype) {
  auto h = HandleFromInput(ctx, i);
  if (!h.ok()) return h.status();
  auto var = ctx->resource_manager()->Lookup<ResourceVariable>(h->container, h->name);
  if (!var.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "Error while reading resource variable '", h->name, "' from container '", h->container,
        "': it does not exist. This could mean that the variable was uninitialized or destroyed"));
  }
  absl::Status s = CheckDtype(**var, *h, dtype);
  if (!s.ok()) return s;
  return var;
}

absl::StatusOr<std::shared_ptr<ResourceVariable>> LookupOrCreateResourceVariable(OpKernelContext* ctx, int i,
                                                                                 DataType dtype) {
  auto h = HandleFromInput(ctx, i);
  if (!h.ok()) return h.status();
  auto var = ctx->resource_manager()->LookupOrCreate<ResourceVariable>(
      h->container, h->name, [dtype]() -> absl::StatusOr<std::shared_ptr<ResourceVariable>> {
        return std::make_shared<ResourceVariable>(dtype);
      });
  if (!var.ok()) return var.status();
  absl::Status s = CheckDtype(**var, *h, dtype);
  if (!s.ok()) return s;
  return var;
}

absl::Status CheckDeclaredShape(const ResourceHandle& handle, const TensorShape& shape) {
  if (handle.declared_rank < 0) return absl::OkStatus();
  const PartialShape declared = PartialShape::FromDims(handle.declared_dims);
  if (declared.IsCompatibleWith(shape)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("resource variable '", handle.name, "' in container '",
                                                 handle.container, "': a value of shape ", shape.DebugString(),
                                                 " does not fit the shape ", declared.DebugString(),
                                                 " its VarHandleOp declares"));
}

absl::Status CheckInitialized(ResourceVariable* var, const ResourceHandle& handle) {
  if (!var->tensor()->IsInitialized()) {
    return absl::FailedPreconditionError(absl::StrCat("Error while reading resource variable '", handle.name,
                                                      "' from container '", handle.container,
                                                      "': it is uninitialized"));
  }
  return absl::OkStatus();
}

absl::Status CheckReadable(ResourceVariable* var, const ResourceHandle& handle) {
  absl::Status s = CheckInitialized(var, handle);
  if (!s.ok()) return s;
  return CheckDeclaredShape(handle, var->tensor()->shape());
}

void PrepareToUpdate(Tensor* var) {
  if (var->NumElements() > 0 && !var->RefCountIsOne()) *var = var->Clone();
}

}  // namespace sluice

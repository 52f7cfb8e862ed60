// Host-side parts of the resource-variable kernels (resource_variable_ops.cc,
// and the ResourceApply* kernels in training_ops.cc): the variable a handle
// names, looked up in the kernel's device's ResourceMgr, with one set of error
// messages. A resource variable is a VariableResource of its own C++ type, so
// it never aliases a reference variable (VariableV2) of the same name.
// Readers take a shallow copy of the variable's tensor under its mutex;
// writers hold the mutex and call PrepareToUpdate first (copy-on-write), so a
// value a reader took never changes under it.
// Thread safety: the lookups are safe to call concurrently (the ResourceMgr
// synchronizes); PrepareToUpdate REQUIRES the variable's mutex.
#ifndef SLUICE_ENGINE_KERNELS_RESOURCE_VARIABLE_UTIL_H_
#define SLUICE_ENGINE_KERNELS_RESOURCE_VARIABLE_UTIL_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/resource_handle.h"
#include "engine/framework/resource_mgr.h"

namespace sluice {

class ResourceVariable : public VariableResource {
 public:
  static constexpr char kTypeName[] = "ResourceVariable";
  using VariableResource::VariableResource;
  std::string DebugString() const override;
};

// The handle input `i` holds. InvalidArgument unless it is a scalar
// DT_RESOURCE tensor naming a ResourceVariable on this kernel's device.
absl::StatusOr<ResourceHandle> HandleFromInput(OpKernelContext* ctx, int i);

// The variable behind input `i`'s handle. FailedPrecondition naming the
// variable when it does not exist (never assigned, or destroyed);
// InvalidArgument when it holds another dtype than `dtype` (DT_INVALID: any).
absl::StatusOr<std::shared_ptr<ResourceVariable>> LookupResourceVariable(OpKernelContext* ctx, int i,
                                                                         DataType dtype);

// As above, but creates an uninitialized variable of `dtype` when absent
// (AssignVariableOp).
absl::StatusOr<std::shared_ptr<ResourceVariable>> LookupOrCreateResourceVariable(OpKernelContext* ctx, int i,
                                                                                 DataType dtype);

// InvalidArgument naming the variable unless `shape` fits the shape its
// handle declares (ResourceHandle::declared_rank and declared_dims). Assigns
// check the value; reads check the variable's value too, since handles of
// one shared_name may declare different shapes.
absl::Status CheckDeclaredShape(const ResourceHandle& handle, const TensorShape& shape);

// FailedPrecondition naming the variable unless it holds a value.
// REQUIRES: var's mutex held.
absl::Status CheckInitialized(ResourceVariable* var, const ResourceHandle& handle);

// What a read needs: CheckInitialized, then CheckDeclaredShape of the value.
// REQUIRES: var's mutex held.
absl::Status CheckReadable(ResourceVariable* var, const ResourceHandle& handle);

// Gives `var` a buffer of its own when a reader still shares it.
// REQUIRES: the variable's mutex held; *var initialized.
void PrepareToUpdate(Tensor* var);

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_RESOURCE_VARIABLE_UTIL_H_

// Helpers for kernels whose resources live for one step (TensorArrays and
// stacks, as in TensorFlow's per-step container): making a handle to a
// resource in the step's container on this device, and finding the resource
// behind a handle input, with one set of error messages.
// Thread safety: the functions are safe to call concurrently (the ResourceMgr
// synchronizes).
#ifndef SLUICE_ENGINE_KERNELS_STEP_RESOURCE_UTIL_H_
#define SLUICE_ENGINE_KERNELS_STEP_RESOURCE_UTIL_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/framework/device.h"
#include "engine/framework/op_kernel.h"
#include "engine/framework/resource_handle.h"
#include "engine/framework/resource_mgr.h"

namespace sluice {

// The step container's name; FailedPrecondition outside an executor.
inline absl::StatusOr<std::string> StepContainerName(OpKernelContext* ctx) {
  if (ctx->step_container() == nullptr) {
    return absl::FailedPreconditionError("this kernel keeps per-step state and must run inside an executor's step");
  }
  return ctx->step_container()->name();
}

// Sets output `i` to a scalar handle naming `name` of `type_name` in the
// step's container on this device.
inline absl::Status OutputStepHandle(OpKernelContext* ctx, int i, const std::string& container,
                                     const std::string& name, const char* type_name) {
  Tensor* out = nullptr;
  absl::Status s = ctx->allocate_output(i, TensorShape({}), &out);
  if (!s.ok()) return s;
  ResourceHandle& h = out->data<ResourceHandle>()[0];
  h.device = ctx->device()->name();
  h.container = container;
  h.name = name;
  h.type_name = type_name;
  return absl::OkStatus();
}

// The handle input `i` holds (in the input tensor: valid while the kernel
// runs; a copy would be four strings): InvalidArgument unless a scalar
// DT_RESOURCE tensor naming a resource of `type_name`.
inline absl::StatusOr<const ResourceHandle*> StepHandleFromInput(OpKernelContext* ctx, int i, const char* type_name) {
  const Tensor& t = ctx->input(i);
  if (t.dtype() != DT_RESOURCE || t.dims() != 0) {
    return absl::InvalidArgumentError(absl::StrCat("input ", i, " must be a scalar resource handle, got a ",
                                                   DataTypeString(t.dtype()), " tensor of shape ",
                                                   t.shape().DebugString()));
  }
  const ResourceHandle& h = t.data<ResourceHandle>()[0];
  if (h.type_name != type_name) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", i, " is a handle to ", h.DebugString(), ", not to a ", type_name));
  }
  return &h;
}

// The resource of type T behind handle input `i`. NotFound (saying that it
// lives for one step on its own device) when there is none.
template <typename T>
absl::StatusOr<std::shared_ptr<T>> LookupStepResource(OpKernelContext* ctx, int i) {
  auto h = StepHandleFromInput(ctx, i, T::kTypeName);
  if (!h.ok()) return h.status();
  const ResourceHandle& handle = **h;
  auto r = ctx->resource_manager()->Lookup<T>(handle.container, handle.name);
  if (!r.ok()) {
    return absl::NotFoundError(absl::StrCat(
        T::kTypeName, " ", handle.name, " does not exist on ", ctx->device()->name(),
        " (it lives for the step that made it, on the device of the node that made it: ", handle.DebugString(), ")"));
  }
  return r;
}

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_STEP_RESOURCE_UTIL_H_

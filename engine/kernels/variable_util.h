// Host-side parts of the variable kernels shared by the CPU kernels
// (variable_ops.cc) and the GPU kernels (gpu/state_ops_gpu.cc): reading a
// Variable node's attrs, finding or making its VariableResource in the
// device's ResourceMgr, and Assign's and AssignAdd's shape checks, with one
// set of error messages. Device-neutral (no CUDA).
// Thread safety: OutputVariableRef is safe to call concurrently (the
// ResourceMgr synchronizes); the shape checks REQUIRE the variable's mutex.
#ifndef SLUICE_ENGINE_KERNELS_VARIABLE_UTIL_H_
#define SLUICE_ENGINE_KERNELS_VARIABLE_UTIL_H_

#include <string>

#include "absl/status/status.h"
#include "engine/framework/op_kernel.h"

namespace sluice {

// Where a Variable/VariableV2 node's state lives and its dtype.
struct VariableAttrs {
  std::string container;    // the container attr, or ResourceMgr::kDefaultContainer
  std::string shared_name;  // the shared_name attr, or the node's name
  DataType dtype = DT_INVALID;
};

absl::Status ReadVariableAttrs(OpKernelConstruction* ctx, VariableAttrs* attrs);

// Looks the variable up in the device's ResourceMgr (making an uninitialized
// one of attrs.dtype if there is none) and outputs its ref as output 0.
// InvalidArgument when a variable of that name exists with another dtype.
absl::Status OutputVariableRef(OpKernelContext* ctx, const VariableAttrs& attrs);

// Assign: with validate_shape, an initialized variable keeps its shape.
absl::Status CheckAssignShape(const Tensor& var, const Tensor& value, bool validate_shape);

// AssignAdd: the update has the variable's shape.
absl::Status CheckAssignAddShape(const Tensor& var, const Tensor& value);

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_VARIABLE_UTIL_H_

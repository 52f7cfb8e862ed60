// ResourceHandle: the value a DT_RESOURCE tensor holds (TensorFlow's
// ResourceHandleProto fields we use): where a resource lives (device,
// container, name) and what it is (its C++ type's name and, for variables,
// its dtype and declared shape). A VarHandleOp outputs one;
// ResourceApply*/ReadVariableOp look the resource up by it in the device's
// ResourceMgr. Handles are stored in a
// Tensor's buffer as objects (like strings) and never serialized: a Tensor of
// DT_RESOURCE has no TensorProto encoding.
// Thread safety: a value type.
#ifndef SLUICE_ENGINE_FRAMEWORK_RESOURCE_HANDLE_H_
#define SLUICE_ENGINE_FRAMEWORK_RESOURCE_HANDLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "engine/framework/types.pb.h"

namespace sluice {

struct ResourceHandle {
  std::string device;     // full device name of the owning ResourceMgr's device
  std::string container;  // never empty for a handle a kernel made
  std::string name;
  std::string type_name;  // e.g. "ResourceVariable"
  DataType dtype = DT_INVALID;  // a variable's element type; DT_INVALID otherwise
  // A variable's shape as its VarHandleOp declares it (the `shape` attr):
  // any shape while `declared_rank` is -1, else `declared_dims`, -1 for a dim
  // left open. Static shape inference trusts the declaration (ReadVariableOp's
  // output has it), so AssignVariableOp refuses a value outside it. Not part
  // of the handle's identity (operator==).
  int declared_rank = -1;
  std::vector<int64_t> declared_dims;

  // "container/name (type_name on device)".
  std::string DebugString() const {
    return container + "/" + name + " (" + type_name + " on " + (device.empty() ? "any device" : device) + ")";
  }
  bool operator==(const ResourceHandle& o) const {
    return device == o.device && container == o.container && name == o.name && type_name == o.type_name &&
           dtype == o.dtype;
  }
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_RESOURCE_HANDLE_H_

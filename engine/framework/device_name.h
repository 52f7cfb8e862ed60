// Device names (whitepaper §3, §4.3): "/job:<j>/replica:<r>/task:<t>/device:<TYPE>:<id>".
// A DeviceName is a parsed name, full or partial: a part that is not set means
// "any", so "/job:ps" names every device of the ps job and "/device:CPU:*" every
// CPU. Nodes request devices with partial names; the DeviceSet holds full ones.
//
// Accepted syntax (parts in any order, each at most once; "*" as a value means
// "any"):
//   /job:<name>          name: a letter, then letters, digits or '_'
//   /replica:<n>  /task:<n>       n: a non-negative decimal int
//   /device:<TYPE>[:<id>|:*]      TYPE: a letter, then letters, digits or '_';
//                                 upper-cased ("/device:cpu:0" is "CPU")
//   /cpu:<id>  /gpu:<id>          legacy forms of /device:CPU:<id>, /device:GPU:<id>
// The empty string is the empty spec (matches every device).
//
// Plain values and free functions; thread-compatible.
#ifndef SLUICE_ENGINE_FRAMEWORK_DEVICE_NAME_H_
#define SLUICE_ENGINE_FRAMEWORK_DEVICE_NAME_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice {

// A parsed TensorFlow device name, full or partial; a part not set means "any".
struct DeviceName {
  bool has_job = false;
  std::string job;
  bool has_replica = false;
  int replica = 0;
  bool has_task = false;
  int task = 0;
  bool has_type = false;
  std::string type;  // canonical upper case: "CPU", "GPU"
  bool has_id = false;
  int id = 0;  // "CPU:*" -> has_type, !has_id
};

// "" is the empty spec. Accepts "/job:ps/replica:0/task:1/device:CPU:0",
// partial forms ("/job:ps", "/device:CPU:*", "/task:1"), and the legacy "/cpu:0"
// "/gpu:1" "/device:cpu:0". Errors: InvalidArgument "device '<s>': <what>"
// (unknown part with did-you-mean, bad number, negative, duplicate part,
// missing leading '/', bad type).
absl::StatusOr<DeviceName> ParseDeviceName(absl::string_view s);

// Canonical form with only the set parts, in the order job, replica, task,
// device; "/device:CPU:*" for a type without id, "/device:*:<id>" for an id
// without type; "" for the empty spec. ParseDeviceName reads it back.
std::string DeviceNameToString(const DeviceName& d);

// Every part is set.
bool IsFullySpecified(const DeviceName& d);

// Every part set in `spec` equals the one in `name`.
bool DeviceNameMatches(const DeviceName& spec, const DeviceName& name);

// Whether two specs can name the same device (no part set in both differs).
bool DeviceNamesCompatible(const DeviceName& a, const DeviceName& b);

// Sets in *target the parts of `other` it lacks; a part set in both with
// different values is InvalidArgument naming the part and both values, and
// leaves *target unchanged.
absl::Status MergeDeviceNames(const DeviceName& other, DeviceName* target);

bool operator==(const DeviceName& a, const DeviceName& b);
inline bool operator!=(const DeviceName& a, const DeviceName& b) { return !(a == b); }

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_DEVICE_NAME_H_

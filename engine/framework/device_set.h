// DeviceSet: the devices one graph may be placed on, with dense indices
// 0..n-1 in the order given (index 0 is the client / host CPU, which feeds
// and fetches go through). Passes (placement, partitioning) work with the
// indices; the parsed names make partial-name matching cheap.
// Also ProcessIncarnation(): the incarnation every local device reports, so a
// rendezvous key names a device *instance* and a restarted task is told apart.
//
// Ownership: borrows the devices (a DeviceMgr owns them) and must not outlive
// them. Thread safety: immutable after construction; all methods may be
// called concurrently.
#ifndef SLUICE_ENGINE_FRAMEWORK_DEVICE_SET_H_
#define SLUICE_ENGINE_FRAMEWORK_DEVICE_SET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "engine/framework/device.h"
#include "engine/framework/device_name.h"

namespace sluice {

// A random non-zero number drawn once per process; every device of this
// process reports it as its incarnation (a restarted task gets a new one).
uint64_t ProcessIncarnation();

class DeviceSet {
 public:
  // REQUIRES: `devices` non-empty, each name a full device name, names unique
  // (CHECKed: device names come from our own DeviceMgr, not from users).
  explicit DeviceSet(std::vector<Device*> devices);

  int num_devices() const { return static_cast<int>(devices_.size()); }
  // REQUIRES: 0 <= i < num_devices() (for all the per-index accessors).
  Device* device(int i) const { return devices_[i]; }
  const DeviceName& parsed_name(int i) const { return parsed_[i]; }
  const std::string& name(int i) const { return devices_[i]->name(); }
  // ProcessIncarnation() for local devices (all devices are local for now).
  uint64_t incarnation(int i) const;
  // The index of the device with this full name, -1 when absent.
  int IndexOf(absl::string_view full_name) const;
  // Indices of the devices `spec` matches, ascending.
  std::vector<int> Matching(const DeviceName& spec) const;
  // The distinct device types, in order of first appearance by index.
  std::vector<std::string> DeviceTypes() const;

 private:
  std::vector<Device*> devices_;
  std::vector<DeviceName> parsed_;
  absl::flat_hash_map<std::string, int> index_;
};

// The devices of `mgr`, in its order (the host CPU first). Borrows them.
DeviceSet DeviceSetOf(const DeviceMgr& mgr);

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_DEVICE_SET_H_

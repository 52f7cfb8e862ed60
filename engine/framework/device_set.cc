// DeviceSet and the process incarnation.
#include "engine/framework/device_set.h"

#include <algorithm>
#include <random>
#include <utility>

#include "engine/platform/logging.h"

namespace sluice {

uint64_t ProcessIncarnation() {
  static const uint64_t incarnation = [] {
    std::random_device rd;
    uint64_t v = 0;
    while (v == 0) v = (static_cast<uint64_t>(rd()) << 32) ^ static_cast<uint64_t>(rd());
    return v;
  }();
  return incarnation;
}

DeviceSet::DeviceSet(std::vector<Device*> devices) : devices_(std::move(devices)) {
  CHECK(!devices_.empty()) << "a DeviceSet needs at least one device";
  parsed_.reserve(devices_.size());
  for (int i = 0; i < static_cast<int>(devices_.size()); ++i) {
    CHECK(devices_[i] != nullptr) << "device " << i << " is null";
    auto parsed = ParseDeviceName(devices_[i]->name());
    CHECK(parsed.ok()) << parsed.status();
    CHECK(IsFullySpecified(*parsed)) << "device '" << devices_[i]->name() << "' is not a full device name";
    CHECK(index_.emplace(devices_[i]->name(), i).second) << "duplicate device '" << devices_[i]->name() << "'";
    parsed_.push_back(*std::move(parsed));
  }
}

uint64_t DeviceSet::incarnation(int i) const {
  (void)i;
  return ProcessIncarnation();
}

int DeviceSet::IndexOf(absl::string_view full_name) const {
  auto it = index_.find(full_name);
  return it == index_.end() ? -1 : it->second;
}

std::vector<int> DeviceSet::Matching(const DeviceName& spec) const {
  std::vector<int> out;
  for (int i = 0; i < num_devices(); ++i) {
    if (DeviceNameMatches(spec, parsed_[i])) out.push_back(i);
  }
  return out;
}

std::vector<std::string> DeviceSet::DeviceTypes() const {
  std::vector<std::string> types;
  for (Device* d : devices_) {
    if (std::find(types.begin(), types.end(), d->device_type()) == types.end()) types.push_back(d->device_type());
  }
  return types;
}

DeviceSet DeviceSetOf(const DeviceMgr& mgr) {
  std::vector<Device*> devices;
  for (const auto& d : mgr.devices()) devices.push_back(d.get());
  return DeviceSet(std::move(devices));
}

}  // namespace sluice

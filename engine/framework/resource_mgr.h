// ResourceMgr: named, typed, stateful resources (variables, queues, readers)
// grouped into containers, as in whitepaper §4.7. Each Device owns one; the
// default container lives as long as the process, so sessions on this device
// share its resources; Cleanup(container) clears one container ("Reset").
// Thread safety: all methods may be called concurrently.
#ifndef SLUICE_ENGINE_FRAMEWORK_RESOURCE_MGR_H_
#define SLUICE_ENGINE_FRAMEWORK_RESOURCE_MGR_H_

#include <functional>
#include <memory>
#include <string>
#include <typeindex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/framework/tensor.h"

namespace sluice {

class ResourceBase {
 public:
  virtual ~ResourceBase() = default;
  virtual std::string DebugString() const = 0;
};

// A Variable's state: one tensor and the mutex that orders writers. Its
// dtype is fixed by the node that creates it: Variable nodes sharing it (the
// same container and shared_name) must declare the same dtype, so a kernel
// never finds a tensor of another type behind a reference.
class VariableResource : public ResourceBase {
 public:
  explicit VariableResource(DataType dtype) : dtype_(dtype) {}
  DataType dtype() const { return dtype_; }
  absl::Mutex* mu() { return &mu_; }
  // REQUIRES: mu() held for writes; readers that tolerate races read unlocked
  // (as TensorFlow's ref variables do).
  Tensor* tensor() { return &tensor_; }
  std::string DebugString() const override;

 private:
  const DataType dtype_;
  absl::Mutex mu_;
  Tensor tensor_;
};

class ResourceMgr {
 public:
  static constexpr char kDefaultContainer[] = "localhost";

  // Returns the resource, creating it with `creator` when absent. An existing
  // resource of another C++ type is InvalidArgument.
  template <typename T>
  absl::StatusOr<std::shared_ptr<T>> LookupOrCreate(const std::string& container, const std::string& name,
                                                    const std::function<absl::StatusOr<std::shared_ptr<T>>()>& creator);
  // NotFound when absent.
  template <typename T>
  absl::StatusOr<std::shared_ptr<T>> Lookup(const std::string& container, const std::string& name) const;

  // Removes one resource of type T (its users keep it alive until they let
  // go). NotFound when there is none of that name and type.
  template <typename T>
  absl::Status Delete(const std::string& container, const std::string& name) {
    return DoDelete(container, name, std::type_index(typeid(T)));
  }

  // Drops every resource of `container` (resources in use stay alive until
  // their last user lets go). Unknown containers are fine.
  void Cleanup(const std::string& container);
  std::vector<std::string> Containers() const;
  int64_t NumResources() const;

 private:
  using Key = std::pair<std::type_index, std::string>;
  struct Entry {
    std::type_index type;
    std::shared_ptr<ResourceBase> resource;
  };
  absl::StatusOr<std::shared_ptr<ResourceBase>> DoLookupOrCreate(
      const std::string& container, const std::string& name, std::type_index type,
      const std::function<absl::StatusOr<std::shared_ptr<ResourceBase>>()>& creator);

  absl::Status DoDelete(const std::string& container, const std::string& name, std::type_index type);

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, absl::flat_hash_map<std::string, Entry>> containers_ ABSL_GUARDED_BY(mu_);
};

template <typename T>
absl::StatusOr<std::shared_ptr<T>> ResourceMgr::LookupOrCreate(
    const std::string& container, const std::string& name,
    const std::function<absl::StatusOr<std::shared_ptr<T>>()>& creator) {
  auto r = DoLookupOrCreate(container, name, std::type_index(typeid(T)),
                            [&]() -> absl::StatusOr<std::shared_ptr<ResourceBase>> {
                              auto made = creator();
                              if (!made.ok()) return made.status();
                              return std::shared_ptr<ResourceBase>(std::move(made).value());
                            });
  if (!r.ok()) return r.status();
  return std::static_pointer_cast<T>(std::move(r).value());
}

template <typename T>
absl::StatusOr<std::shared_ptr<T>> ResourceMgr::Lookup(const std::string& container,
                                                       const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto c = containers_.find(container);
  if (c != containers_.end()) {
    auto it = c->second.find(name);
    if (it != c->second.end() && it->second.type == std::type_index(typeid(T))) {
      return std::static_pointer_cast<T>(it->second.resource);
    }
  }
  return absl::NotFoundError("resource " + container + "/" + name + " does not exist");
}

}  // namespace sluice

#endif  // SLUICE_ENGINE_FRAMEWORK_RESOURCE_MGR_H_

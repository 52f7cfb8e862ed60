// ResourceMgr: containers of named resources.
#include "engine/framework/resource_mgr.h"

#include "absl/strings/str_cat.h"

namespace sluice {

std::string VariableResource::DebugString() const {
  return absl::StrCat("Variable of ", DataTypeString(dtype_), " ", tensor_.DebugString(3));
}

absl::StatusOr<std::shared_ptr<ResourceBase>> ResourceMgr::DoLookupOrCreate(
    const std::string& container, const std::string& name, std::type_index type,
    const std::function<absl::StatusOr<std::shared_ptr<ResourceBase>>()>& creator) {
  absl::MutexLock lock(&mu_);
  auto& resources = containers_[container];
  auto it = resources.find(name);
  if (it != resources.end()) {
    if (it->second.type != type) {
      return absl::InvalidArgumentError(absl::StrCat("resource ", container, "/", name,
                                                     " exists with another type (",
                                                     it->second.resource->DebugString(), ")"));
    }
    return it->second.resource;
  }
  auto made = creator();
  if (!made.ok()) return made.status();
  resources.emplace(name, Entry{type, *made});
  return *made;
}

absl::Status ResourceMgr::DoDelete(const std::string& container, const std::string& name, std::type_index type) {
  std::shared_ptr<ResourceBase> doomed;  // destroyed outside the lock
  absl::MutexLock lock(&mu_);
  auto c = containers_.find(container);
  if (c != containers_.end()) {
    auto it = c->second.find(name);
    if (it != c->second.end() && it->second.type == type) {
      doomed = std::move(it->second.resource);
      c->second.erase(it);
      return absl::OkStatus();
    }
  }
  return absl::NotFoundError(absl::StrCat("resource ", container, "/", name, " does not exist"));
}

void ResourceMgr::Cleanup(const std::string& container) {
  absl::flat_hash_map<std::string, Entry> doomed;
  {
    absl::MutexLock lock(&mu_);
    auto it = containers_.find(container);
    if (it == containers_.end()) return;
    doomed = std::move(it->second);
    containers_.erase(it);
  }
  // `doomed` is destroyed outside the lock.
}

std::vector<std::string> ResourceMgr::Containers() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, resources] : containers_) names.push_back(name);
  return names;
}

int64_t ResourceMgr::NumResources() const {
  absl::MutexLock lock(&mu_);
  int64_t n = 0;
  for (const auto& [name, resources] : containers_) n += resources.size();
  return n;
}

}  // namespace sluice

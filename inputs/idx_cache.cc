// IdxFileCache: see idx_cache.h.
#include "inputs/idx_cache.h"

#include <cstdlib>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace sluice {

absl::StatusOr<std::string> GzipIdentity(Env* env, const std::string& path) {
  auto size = env->GetFileSize(path);
  if (!size.ok()) return size.status();
  if (*size < 18) return std::string();  // a gzip header and trailer alone are 18 bytes
  auto file = env->NewRandomAccessFile(path);
  if (!file.ok()) return file.status();
  char head[2], tail[8];
  absl::string_view h, t;
  absl::Status s = (*file)->Read(0, 2, &h, head);
  if (!s.ok()) return s;
  if (!LooksGzipped(h)) return std::string();
  s = (*file)->Read(*size - 8, 8, &t, tail);
  if (!s.ok()) return s;
  if (t.size() != 8) return std::string();
  return absl::StrCat(*size, ":", t);
}

IdxFileCache* IdxFileCache::Default() {
  static IdxFileCache* cache = [] {
    uint64_t budget = uint64_t{1} << 30;
    const char* env = std::getenv("SLUICE_IDX_CACHE_BYTES");
    uint64_t parsed;
    if (env != nullptr && absl::SimpleAtoi(env, &parsed)) budget = parsed;
    return new IdxFileCache(budget);
  }();
  return cache;
}

void IdxFileCache::Unkeep(Entry* entry, std::vector<std::shared_ptr<const IdxFile>>* released) {
  if (entry->kept == nullptr) return;
  bytes_ -= entry->kept->data.size();
  lru_.erase(entry->lru);
  released->push_back(std::move(entry->kept));
  entry->kept = nullptr;
}

absl::StatusOr<std::shared_ptr<const IdxFile>> IdxFileCache::Read(Env* env, const std::string& path) {
  auto identity = GzipIdentity(env, path);
  if (!identity.ok()) return identity.status();
  const Key key(env->id(), path);
  std::vector<std::shared_ptr<const IdxFile>> released;  // freed after the lock (tens of megabytes)
  if (!identity->empty()) {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      Entry& entry = it->second;
      if (entry.identity == *identity) {
        if (entry.kept != nullptr) {
          lru_.splice(lru_.begin(), lru_, entry.lru);
          return entry.kept;
        }
        if (std::shared_ptr<const IdxFile> held = entry.seen.lock()) return held;
      }
      // The file changed (or nobody holds it): its old items go now,
      // whatever its new read gives.
      Unkeep(&entry, &released);
      entries_.erase(it);
    }
  }
  auto parsed = ReadIdxFile(env, path);
  absl::MutexLock lock(&mu_);
  ++parses_;
  if (!parsed.ok()) return parsed.status();
  auto file = std::make_shared<const IdxFile>(std::move(parsed).value());
  if (identity->empty()) return file;

  Entry& entry = entries_[key];  // new, or a concurrent first read's
  Unkeep(&entry, &released);
  entry.identity = *identity;
  entry.seen = file;
  if (file->data.size() <= budget_bytes_) {
    while (!lru_.empty() && bytes_ + file->data.size() > budget_bytes_) {
      Unkeep(&entries_.find(lru_.back())->second, &released);
    }
    lru_.push_front(key);
    entry.lru = lru_.begin();
    entry.kept = file;
    bytes_ += file->data.size();
  }
  return file;
}

int64_t IdxFileCache::files() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(lru_.size());
}

uint64_t IdxFileCache::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

int64_t IdxFileCache::parses() const {
  absl::MutexLock lock(&mu_);
  return parses_;
}

}  // namespace sluice

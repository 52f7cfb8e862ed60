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

absl::StatusOr<std::shared_ptr<const IdxFile>> IdxFileCache::Read(Env* env, const std::string& path) {
  auto identity = GzipIdentity(env, path);
  if (!identity.ok()) return identity.status();
  const Key key(env, path);
  if (!identity->empty()) {
    std::shared_ptr<const IdxFile> stale;  // released after the lock
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      if (it->second.identity == *identity) {
        lru_.splice(lru_.begin(), lru_, it->second.lru);
        return it->second.file;
      }
      // The file changed: its old items go now, whatever its new read gives.
      bytes_ -= it->second.file->data.size();
      stale = std::move(it->second.file);
      lru_.erase(it->second.lru);
      entries_.erase(it);
    }
  }
  auto parsed = ReadIdxFile(env, path);
  {
    absl::MutexLock lock(&mu_);
    ++parses_;
  }
  if (!parsed.ok()) return parsed.status();
  auto file = std::make_shared<const IdxFile>(std::move(parsed).value());
  if (identity->empty() || file->data.size() > budget_bytes_) return file;

  // Dropped files are released after the lock (freeing tens of megabytes).
  std::vector<std::shared_ptr<const IdxFile>> dropped;
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) {  // an older version, or a concurrent first read's
    bytes_ -= it->second.file->data.size();
    dropped.push_back(std::move(it->second.file));
    lru_.erase(it->second.lru);
    entries_.erase(it);
  }
  while (!lru_.empty() && bytes_ + file->data.size() > budget_bytes_) {
    auto last = entries_.find(lru_.back());
    bytes_ -= last->second.file->data.size();
    dropped.push_back(std::move(last->second.file));
    entries_.erase(last);
    lru_.pop_back();
  }
  lru_.push_front(key);
  entries_[key] = Entry{*identity, file, lru_.begin()};
  bytes_ += file->data.size();
  return file;
}

int64_t IdxFileCache::files() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(entries_.size());
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

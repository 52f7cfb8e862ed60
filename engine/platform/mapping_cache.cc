// MappingCache (see mapping_cache.h): a small table of whole-file mappings
// under one mutex, evicted least recently used first.
#include "engine/platform/mapping_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>

#include "absl/strings/numbers.h"
#include "engine/platform/logging.h"

namespace sluice {

struct MappingCache::State {
  struct Entry {
    std::shared_ptr<const MappedRegion> whole;
    uint64_t size = 0;
    int fd = -1;  // our own descriptor of the file, to see it deleted
    uint64_t last_use = 0;
  };
  using Key = std::pair<uint64_t, uint64_t>;  // (device, inode)
  using Entries = std::map<Key, Entry>;

  uint64_t budget_bytes;
  int max_files;
  mutable std::mutex mu;
  Entries entries;
  uint64_t bytes = 0;
  uint64_t uses = 0;
  std::chrono::steady_clock::time_point last_sweep;

  Entries::iterator Drop(Entries::iterator it) {
    ::close(it->second.fd);
    bytes -= it->second.size;
    return entries.erase(it);
  }
  // Drops the files whose last link is gone.
  void DropDeleted() {
    for (auto it = entries.begin(); it != entries.end();) {
      struct stat st;
      if (::fstat(it->second.fd, &st) != 0 || st.st_nlink == 0) {
        it = Drop(it);
      } else {
        ++it;
      }
    }
    last_sweep = std::chrono::steady_clock::now();
  }
  void DropLeastRecentlyUsed() {
    auto oldest = entries.begin();
    for (auto it = entries.begin(); it != entries.end(); ++it) {
      if (it->second.last_use < oldest->second.last_use) oldest = it;
    }
    Drop(oldest);
  }
};

MappingCache::MappingCache(uint64_t budget_bytes, int max_files) : state_(std::make_unique<State>()) {
  state_->budget_bytes = budget_bytes;
  state_->max_files = max_files;
  state_->last_sweep = std::chrono::steady_clock::now();
}

MappingCache::~MappingCache() {
  std::lock_guard<std::mutex> lock(state_->mu);
  for (auto it = state_->entries.begin(); it != state_->entries.end();) it = state_->Drop(it);
}

namespace {

// SLUICE_MAPPING_CACHE_BYTES, or the default when it is unset or not a number.
uint64_t BudgetFromEnv() {
  const char* v = std::getenv("SLUICE_MAPPING_CACHE_BYTES");
  if (v == nullptr) return MappingCache::kDefaultBudgetBytes;
  uint64_t bytes = 0;
  if (!absl::SimpleAtoi(v, &bytes)) {
    LOG(WARNING) << "SLUICE_MAPPING_CACHE_BYTES='" << v << "' is not a number of bytes; using "
                 << MappingCache::kDefaultBudgetBytes;
    return MappingCache::kDefaultBudgetBytes;
  }
  return bytes;
}

}  // namespace

MappingCache& MappingCache::Default() {
  // Never destroyed: readers on other threads may still map at exit.
  static MappingCache* cache = new MappingCache(BudgetFromEnv());
  return *cache;
}

std::unique_ptr<MappedRegion> MappingCache::View(int fd, uint64_t device, uint64_t inode, uint64_t size,
                                                 uint64_t offset, size_t n, absl::string_view name) {
  State& s = *state_;
  if (size == 0 || size > s.budget_bytes / 4) return nullptr;
  std::lock_guard<std::mutex> lock(s.mu);
  if (std::chrono::steady_clock::now() - s.last_sweep > std::chrono::seconds(1)) s.DropDeleted();
  auto it = s.entries.find({device, inode});
  if (it != s.entries.end() && (it->second.size != size || it->second.whole->damaged())) {
    s.Drop(it);
    it = s.entries.end();
  }
  if (it == s.entries.end()) {
    s.DropDeleted();
    while (!s.entries.empty() &&
           (s.bytes + size > s.budget_bytes || static_cast<int>(s.entries.size()) >= s.max_files)) {
      s.DropLeastRecentlyUsed();
    }
    if (s.max_files <= 0) return nullptr;
    auto whole = MappedRegion::Create(fd, 0, static_cast<size_t>(size), name);
    if (!whole.ok()) return nullptr;
    const int kept = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (kept < 0) return nullptr;
    State::Entry entry;
    entry.whole = std::shared_ptr<const MappedRegion>(std::move(whole).value());
    entry.size = size;
    entry.fd = kept;
    it = s.entries.emplace(State::Key(device, inode), std::move(entry)).first;
    s.bytes += size;
  }
  it->second.last_use = ++s.uses;
  return MappedRegion::View(it->second.whole, offset < size ? static_cast<size_t>(offset) : static_cast<size_t>(size),
                            n);
}

void MappingCache::Forget(uint64_t device, uint64_t inode) {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->entries.find({device, inode});
  if (it != state_->entries.end()) state_->Drop(it);
}

int MappingCache::files() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return static_cast<int>(state_->entries.size());
}

uint64_t MappingCache::bytes() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->bytes;
}

}  // namespace sluice

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
#include <vector>

#include "absl/strings/numbers.h"
#include "engine/platform/logging.h"

namespace sluice {

namespace {

struct CachedFile {
  std::shared_ptr<const MappedRegion> whole;
  MappingCache::FileState file;
  int fd = -1;  // our own descriptor of the file, to see it deleted
  uint64_t last_use = 0;
};

// Entries taken out of the table: destroyed after the lock is released (a
// Graveyard declared before the lock_guard outlives it), which closes their
// descriptors and, with no view left, unmaps them.
struct Graveyard {
  std::vector<CachedFile> entries;
  ~Graveyard() {
    for (auto& e : entries) ::close(e.fd);
  }
};

}  // namespace

struct MappingCache::State {
  using Entry = CachedFile;
  using Key = std::pair<uint64_t, uint64_t>;  // (device, inode)
  using Entries = std::map<Key, Entry>;

  uint64_t budget_bytes;
  int max_files;
  mutable std::mutex mu;
  Entries entries;
  uint64_t bytes = 0;
  uint64_t uses = 0;
  std::chrono::steady_clock::time_point last_sweep;

  // Takes an entry out of the table into `dropped`, whose destruction (after
  // the lock is released) closes its descriptor and, with no view left,
  // unmaps it: unmapping a large mapping, or the last reference to a deleted
  // file (which frees its blocks), must not hold up other lookups.
  Entries::iterator Drop(Entries::iterator it, std::vector<Entry>* dropped) {
    bytes -= it->second.file.size;
    dropped->push_back(std::move(it->second));
    return entries.erase(it);
  }
  // Drops the files whose last link is gone.
  void DropDeleted(std::vector<Entry>* dropped) {
    for (auto it = entries.begin(); it != entries.end();) {
      struct stat st;
      if (::fstat(it->second.fd, &st) != 0 || st.st_nlink == 0) {
        it = Drop(it, dropped);
      } else {
        ++it;
      }
    }
    last_sweep = std::chrono::steady_clock::now();
  }
  void DropLeastRecentlyUsed(std::vector<Entry>* dropped) {
    auto oldest = entries.begin();
    for (auto it = entries.begin(); it != entries.end(); ++it) {
      if (it->second.last_use < oldest->second.last_use) oldest = it;
    }
    Drop(oldest, dropped);
  }
};

MappingCache::MappingCache(uint64_t budget_bytes, int max_files) : state_(std::make_unique<State>()) {
  state_->budget_bytes = budget_bytes;
  state_->max_files = max_files;
  state_->last_sweep = std::chrono::steady_clock::now();
}

MappingCache::~MappingCache() {
  Graveyard dropped;
  std::lock_guard<std::mutex> lock(state_->mu);
  for (auto it = state_->entries.begin(); it != state_->entries.end();) it = state_->Drop(it, &dropped.entries);
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

MappingCache::FileState MappingCache::FileStateOf(const struct stat& st) {
  FileState file;
  file.device = static_cast<uint64_t>(st.st_dev);
  file.inode = static_cast<uint64_t>(st.st_ino);
  file.size = static_cast<uint64_t>(st.st_size);
  file.modified_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return file;
}

std::unique_ptr<MappedRegion> MappingCache::View(int fd, const FileState& file, uint64_t offset, size_t n,
                                                 absl::string_view name) {
  State& s = *state_;
  if (file.size == 0 || file.size > s.budget_bytes / 4 || s.max_files <= 0) return nullptr;
  Graveyard dropped;
  std::lock_guard<std::mutex> lock(s.mu);
  if (std::chrono::steady_clock::now() - s.last_sweep > std::chrono::seconds(1)) s.DropDeleted(&dropped.entries);
  auto it = s.entries.find({file.device, file.inode});
  if (it != s.entries.end() && (it->second.file.size != file.size || it->second.file.modified_ns != file.modified_ns ||
                                it->second.whole->damaged())) {
    s.Drop(it, &dropped.entries);
    it = s.entries.end();
  }
  if (it == s.entries.end()) {
    auto whole = MappedRegion::Create(fd, 0, static_cast<size_t>(file.size), name);
    if (!whole.ok()) return nullptr;
    const int kept = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (kept < 0) return nullptr;
    s.DropDeleted(&dropped.entries);
    while (!s.entries.empty() &&
           (s.bytes + file.size > s.budget_bytes || static_cast<int>(s.entries.size()) >= s.max_files)) {
      s.DropLeastRecentlyUsed(&dropped.entries);
    }
    State::Entry entry;
    entry.whole = std::shared_ptr<const MappedRegion>(std::move(whole).value());
    entry.file = file;
    entry.fd = kept;
    it = s.entries.emplace(State::Key(file.device, file.inode), std::move(entry)).first;
    s.bytes += file.size;
  }
  it->second.last_use = ++s.uses;
  const size_t at = offset < file.size ? static_cast<size_t>(offset) : static_cast<size_t>(file.size);
  return MappedRegion::View(it->second.whole, at, n);
}

void MappingCache::Forget(uint64_t device, uint64_t inode) {
  Graveyard dropped;
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->entries.find({device, inode});
  if (it != state_->entries.end()) state_->Drop(it, &dropped.entries);
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

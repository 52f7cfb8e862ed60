// MappingCache: whole-file mappings that outlive their readers, so that a file
// read again (training's next epoch, through a new RecordReader) is not mapped,
// faulted in and given page-table entries all over again.
//
// Why: every page a mapping touches for the first time costs the kernel a
// fault and an entry in the page tables. For a file whose page cache sits in
// 2 MB folios that is one fault and one entry per 2 MB; for one written by
// another program in small pieces (folios of 4-64 KB) it is one entry per 4 KB
// page, and mapping such a file cost about as much as the kernel's copy of it
// into a buffer: the mapped TFRecord reader, which mapped and unmapped 4 MB
// windows on every pass, ran at 0.40-0.51 of a plain read there, while a
// second pass over a mapping that stayed ran at 1.4-2.4 (docs/PERFORMANCE.md,
// "Session 33"). The cache keeps each file's whole mapping, and so its page
// tables, for the next reader.
//
// Identity and freshness: a file is (device, inode). While the cache maps a
// file the kernel cannot reuse that inode number (the mapping holds the
// inode). On a local file system a shared mapping shows the file's current
// bytes; the cache maps a file again when its size or modification time
// changed (stacked file systems such as overlayfs can keep the inode of a
// file they copy up, and the old mapping would show the old copy), and drops
// one whose mapping was damaged (the file was cut under it: mapped_region.h).
// Damage is per mapping, so it now covers the whole file: every view of it
// reports damaged(), and their readers read the file instead (the same bytes,
// slower) until they map it again.
//
// Budget: the cache holds at most `budget_bytes` of mapped files and
// `max_files` files; the least recently used go first; a file larger than a
// quarter of the budget is not cached (its readers map windows of it as
// before). A view handed out keeps its whole mapping until the view goes,
// after the cache dropped it too (RecordReader lets go of its view at the end
// of the file). The process's cache (Default()) takes its budget from
// SLUICE_MAPPING_CACHE_BYTES (0 turns it off; default kDefaultBudgetBytes).
// Pages of cached files stay page cache the kernel may reclaim, but while
// mapped they count in the process's resident set (RssFile in
// /proc/PID/status).
//
// Deleted files: Env::Default() tells the cache of the files it deletes or
// replaces (Forget). For files deleted by others, the cache keeps a descriptor
// of each file it maps and drops a file whose last link is gone (checked when
// a file is added, and at most once a second on lookups), so that its disk
// space is freed once no view of it is left. (An NFS client keeps a file
// deleted while open as a linked .nfsXXXX file: that one stays until it is
// evicted.) Mappings are unmapped and descriptors closed outside the lock.
//
// Thread safety: every method may be called from any thread.
#ifndef SLUICE_ENGINE_PLATFORM_MAPPING_CACHE_H_
#define SLUICE_ENGINE_PLATFORM_MAPPING_CACHE_H_

#include <sys/stat.h>

#include <cstdint>
#include <memory>

#include "absl/strings/string_view.h"
#include "engine/platform/mapped_region.h"

namespace sluice {

class MappingCache {
 public:
  static constexpr uint64_t kDefaultBudgetBytes = 1ull << 30;
  static constexpr int kDefaultMaxFiles = 64;

  explicit MappingCache(uint64_t budget_bytes, int max_files = kDefaultMaxFiles);
  ~MappingCache();
  MappingCache(const MappingCache&) = delete;
  MappingCache& operator=(const MappingCache&) = delete;

  // The process's cache, which Env::Default()'s files map through.
  static MappingCache& Default();

  // What the caller's fstat of a file says now.
  struct FileState {
    uint64_t device = 0;
    uint64_t inode = 0;
    uint64_t size = 0;
    int64_t modified_ns = 0;  // modification time, ns since the epoch
  };
  static FileState FileStateOf(const struct stat& st);

  // A region showing bytes [offset, offset + n) of the regular file open as
  // `fd` (cut at its end), taken from the cached mapping of the whole file,
  // which this call makes if the cache has none that fits `file`. nullptr
  // when the file is not cached (the cache is off, the file is empty or larger
  // than a quarter of the budget, or mapping it whole failed): the caller maps
  // a window of it itself. `name` is for error messages.
  std::unique_ptr<MappedRegion> View(int fd, const FileState& file, uint64_t offset, size_t n,
                                     absl::string_view name);

  // Drops the file (device, inode) if the cache holds it. Env::Default()
  // calls this when it deletes a file or renames another over it, so that the
  // file's pages and disk space are freed then (once no view of it is left),
  // not at a later lookup.
  void Forget(uint64_t device, uint64_t inode);

  // What the cache holds now: files, and bytes mapped for them.
  int files() const;
  uint64_t bytes() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_PLATFORM_MAPPING_CACHE_H_

// IdxFileCache: gzip-compressed IDX files inflated once per process. Building
// a pipeline reads each file's header and checks its data (models/
// input_pipeline.cc), the pipeline's readers then read its items every epoch,
// and every evaluation opens the test files again: Fashion-MNIST's training
// images took 0.2 s to inflate each time (a tenth of a one-step `train` run),
// and a reader's first epoch spent a third of its time there.
//
// A file is known by the Env it was read through (Env::id(), so a later Env at
// a freed Env's address shares nothing with it), its path and its identity:
// its size and last 8 bytes (the gzip trailer: CRC-32 and length of the
// data), read on every lookup, so a rewritten file is inflated anew. Plain
// (uncompressed) files are not kept: reading them costs about what checking
// them would. Files are kept least recently used first out beyond the budget
// (bytes of items); a file larger than the budget is not kept. A file that is
// not kept is still found while someone holds it (an IdxRecordReader holds its
// last file between epochs, so a file over the budget is not inflated every
// epoch).
// Thread safety: all methods are thread-safe; two first reads of one file
// may both inflate it (the second result is kept).
#ifndef SLUICE_INPUTS_IDX_CACHE_H_
#define SLUICE_INPUTS_IDX_CACHE_H_

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/platform/env.h"
#include "inputs/idx.h"

namespace sluice {

class IdxFileCache {
 public:
  explicit IdxFileCache(uint64_t budget_bytes) : budget_bytes_(budget_bytes) {}
  IdxFileCache(const IdxFileCache&) = delete;
  IdxFileCache& operator=(const IdxFileCache&) = delete;

  // The process's cache: 1 GiB, or SLUICE_IDX_CACHE_BYTES bytes (0: nothing
  // is kept).
  static IdxFileCache* Default();

  // The parsed file at `path` (ReadIdxFile's result and errors), from the
  // cache when a gzip file's identity is unchanged.
  absl::StatusOr<std::shared_ptr<const IdxFile>> Read(Env* env, const std::string& path) ABSL_LOCKS_EXCLUDED(mu_);

  // For tests and logs: files kept (within the budget), their bytes, and
  // ReadIdxFile calls made.
  int64_t files() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t bytes() const ABSL_LOCKS_EXCLUDED(mu_);
  int64_t parses() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Key = std::pair<uint64_t, std::string>;  // Env::id(), path
  struct Entry {
    std::string identity;
    std::weak_ptr<const IdxFile> seen;    // the file, while anyone holds it
    std::shared_ptr<const IdxFile> kept;  // the file, while within the budget
    std::list<Key>::iterator lru;         // with `kept`: its place in lru_ (front: most recent)
  };

  // Stops keeping the entry's file (its bytes and LRU place); the file goes
  // to *released, to be freed after the lock.
  void Unkeep(Entry* entry, std::vector<std::shared_ptr<const IdxFile>>* released)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t budget_bytes_;
  mutable absl::Mutex mu_;
  std::map<Key, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::list<Key> lru_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t parses_ ABSL_GUARDED_BY(mu_) = 0;
};

// What identifies a gzip file's contents without inflating it: its size and
// its last 8 bytes. Empty for a file that is not gzip (or too short to be
// one).
absl::StatusOr<std::string> GzipIdentity(Env* env, const std::string& path);

}  // namespace sluice

#endif  // SLUICE_INPUTS_IDX_CACHE_H_

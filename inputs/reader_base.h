// ReaderBase: a reader resource (whitepaper §4.5): it turns a queue of file
// names into a stream of (key, value) records, taking the next file name from
// the queue when the current file is done. The ReaderRead kernel calls
// ReadAsync, which never blocks a thread waiting for a file name: it dequeues
// asynchronously (cancellable through the step's CancellationManager).
// ReaderReadUpTo calls ReadUpToAsync, the same for a batch of records.
// Subclasses (readers.h) implement one file format.
//
// A bad record (DataLoss) leaves the reader at that record: later reads
// return the same error until Reset or RestoreState. A file that cannot be
// opened fails one read and counts as done, so the next read moves on.
//
// State can be serialized (ReaderState proto: counters, current file,
// position in it, files taken but not started) and restored, so a restored
// reader continues with exactly the next record.
//
// Ownership: created with std::make_shared and held by the ResourceMgr.
// Thread safety: all methods may be called concurrently; reads of one reader
// are serialized on its mutex (file I/O happens under it).
#ifndef SLUICE_INPUTS_READER_BASE_H_
#define SLUICE_INPUTS_READER_BASE_H_

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "engine/framework/cancellation.h"
#include "engine/framework/resource_mgr.h"
#include "engine/platform/env.h"
#include "inputs/queue_base.h"

namespace sluice {

class ReaderBase : public ResourceBase, public std::enable_shared_from_this<ReaderBase> {
 public:
  using ReadCallback = std::function<void(const absl::Status&, std::string key, std::string value)>;

  ReaderBase(std::string reader_type, std::string name, Env* env);
  ~ReaderBase() override = default;

  // The next record. OutOfRange once the file-name queue is closed and empty
  // and every file is read; errors of a file (DataLoss, NotFound...) name it.
  void ReadAsync(std::shared_ptr<QueueBase> queue, CancellationManager* cm, ReadCallback done);

  using ReadUpToCallback =
      std::function<void(const absl::Status&, std::vector<std::string> keys, std::vector<std::string> values)>;
  // Between 1 and max_records records (ReaderReadUpTo), all from one file: a
  // batch ends early at the end of a file, or before a bad record (which the
  // next read then reports). Otherwise as ReadAsync.
  // REQUIRES: max_records >= 1.
  void ReadUpToAsync(std::shared_ptr<QueueBase> queue, CancellationManager* cm, int64_t max_records,
                     ReadUpToCallback done);

  int64_t NumRecordsProduced() const;
  int64_t NumWorkUnitsCompleted() const;
  // Back to the freshly created state.
  void Reset();
  std::string SerializeState() const;
  // InvalidArgument for a state of another reader type or an unparsable
  // proto; the file's errors when it cannot be reopened at its position.
  absl::Status RestoreState(const std::string& state);

  // After `limit` work units in a row without a record (every file empty, or
  // only a header), a read fails with FailedPrecondition instead of taking
  // file after file for ever; 0: no limit. Set before the first read.
  void set_empty_work_limit(int64_t limit) {
    absl::MutexLock lock(&mu_);
    empty_work_limit_ = limit;
  }

  const std::string& reader_type() const { return reader_type_; }
  Tensor* handle() { return &handle_; }
  absl::Mutex* handle_mu() { return &handle_mu_; }
  std::string DebugString() const override;

 protected:
  // Format hooks, called with mu_ held.
  // Opens `file` and positions at `position` (0: the start).
  virtual absl::Status OpenLocked(const std::string& file, int64_t position) = 0;
  // One record of the open file: sets *produced, or *at_end at its end.
  virtual absl::Status ReadLocked(std::string* key, std::string* value, bool* produced, bool* at_end) = 0;
  virtual void CloseLocked() = 0;
  // Where the next record starts (for SerializeState).
  virtual int64_t PositionLocked() const = 0;

  Env* env() const { return env_; }
  const std::string& current_work() const { return current_; }  // REQUIRES: mu_ held
  // Work units started, counting the one being opened.  REQUIRES: mu_ held
  int64_t work_started_locked() const ABSL_NO_THREAD_SAFETY_ANALYSIS { return work_started_; }

 private:
  // Reads from open or pending files without waiting. Returns true when done
  // (a record or an error in *s); false when a file name is needed, or (with
  // !open_next) when the open file is done.
  bool TryReadLocked(absl::Status* s, std::string* key, std::string* value, bool open_next = true)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Dequeues one file name into pending_ without holding a thread, then
  // calls next(OK), or next(error) (OutOfRange: no more files).
  void FetchWorkAsync(std::shared_ptr<QueueBase> queue, CancellationManager* cm,
                      std::function<void(const absl::Status&)> next);

  const std::string reader_type_;
  const std::string name_;
  Env* const env_;
  absl::Mutex handle_mu_;
  Tensor handle_;

  mutable absl::Mutex mu_;
  bool has_work_ ABSL_GUARDED_BY(mu_) = false;
  std::string current_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> pending_ ABSL_GUARDED_BY(mu_);
  int64_t work_started_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t work_finished_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t records_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t empty_work_limit_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t records_at_open_ ABSL_GUARDED_BY(mu_) = 0;  // records_ when the open work unit started
  int64_t empty_in_a_row_ ABSL_GUARDED_BY(mu_) = 0;   // work units finished in a row without a record
};

}  // namespace sluice

#endif  // SLUICE_INPUTS_READER_BASE_H_

// FaultEnv (tests only): the one fault-injecting Env. It wraps another Env
// (normally Env::Default() over a test's temporary directory) and can make the
// disk misbehave the ways real ones do:
//   - a crash after a chosen number of mutating operations (NewWritableFile,
//     NewAppendableFile, NewExclusiveFile, Append, Flush, Sync, Close,
//     RenameFile, DeleteFile, DeleteRecursively, CreateDirs, SyncDir,
//     SyncFile); the crashing Append can be a short write (half its bytes reach
//     the file); every operation after the crash fails with Unavailable, as if
//     the process were gone;
//   - a full disk: once a byte budget is spent, Append writes what fits and
//     fails with ResourceExhausted (a short write, like ENOSPC);
//   - failing fsyncs (Sync, SyncFile, SyncDir return Unavailable);
//   - read errors: reads of a file that cover a chosen byte fail (its files
//     cannot be mapped, so readers that would map read them, and every
//     injected fault reaches them);
//   - a power cut: DropUnsyncedData() truncates each file written through
//     this Env to the bytes it had fsynced (after LevelDB's
//     FaultInjectionTestEnv).
// Ownership: borrows the base Env, which must outlive it and its files.
// REQUIRES for DropUnsyncedData: the base Env's paths are POSIX paths.
// Thread safety: all methods may be called concurrently (one mutex).
#ifndef SLUICE_ENGINE_PLATFORM_FAULT_ENV_H_
#define SLUICE_ENGINE_PLATFORM_FAULT_ENV_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "engine/platform/env.h"

namespace sluice {

class FaultEnv : public Env {
 public:
  explicit FaultEnv(Env* base) : base_(base) {}

  // Mutating operations 0..n-1 (counting from now) succeed; operation n
  // crashes. n < 0: never crash.
  void CrashAfter(int n, bool short_write = false);
  bool crashed() const;
  // Mutating operations performed so far (successful ones).
  int ops() const;
  // Appends fail with ResourceExhausted once `bytes` more bytes have been
  // appended (the failing Append writes what fits); -1: no limit.
  void SetWriteBudget(int64_t bytes);
  // While on, every fsync (Sync, SyncFile, SyncDir) fails with Unavailable.
  void FailSyncs(bool fail);
  // Reads of `path` that cover byte `offset` fail with Unavailable.
  void InjectReadError(const std::string& path, uint64_t offset);
  // Truncates files written through this Env to their fsynced length.
  void DropUnsyncedData();

  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> NewExclusiveFile(const std::string& path) override;
  absl::Status FileExists(const std::string& path) override { return base_->FileExists(path); }
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override { return base_->GetFileSize(path); }
  absl::StatusOr<FileType> GetFileType(const std::string& path) override { return base_->GetFileType(path); }
  bool IsDirectory(const std::string& path) override { return base_->IsDirectory(path); }
  absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override {
    return base_->GetChildren(dir);
  }
  absl::Status RenameFile(const std::string& from, const std::string& to) override;
  absl::Status DeleteFile(const std::string& path) override;
  absl::Status DeleteRecursively(const std::string& path) override;
  absl::Status CreateDirs(const std::string& dir) override;
  absl::Status SyncDir(const std::string& dir) override;
  absl::Status SyncFile(const std::string& path) override;
  int64_t NowMicros() override { return base_->NowMicros(); }

  // For FaultEnv's files. Step counts a mutating operation and returns false
  // when it crashes (*short_write: the crashing Append should write half).
  bool Step(bool* short_write = nullptr);
  // How many of `want` bytes the write budget lets through (all when unlimited).
  size_t TakeWriteBudget(size_t want);
  bool syncs_fail() const;
  // True when a read of [offset, offset + n) of `path` must fail.
  bool ReadFails(const std::string& path, uint64_t offset, size_t n) const;
  void RecordAppend(const std::string& path, uint64_t bytes);
  void RecordSync(const std::string& path);

 private:
  struct FileState {
    uint64_t size = 0;
    uint64_t synced = 0;
  };
  absl::StatusOr<std::unique_ptr<WritableFile>> Wrap(const std::string& path,
                                                     absl::StatusOr<std::unique_ptr<WritableFile>> base,
                                                     uint64_t initial_size);

  Env* const base_;
  mutable absl::Mutex mu_;
  int remaining_ ABSL_GUARDED_BY(mu_) = -1;
  bool short_write_ ABSL_GUARDED_BY(mu_) = false;
  bool crashed_ ABSL_GUARDED_BY(mu_) = false;
  int ops_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t write_budget_ ABSL_GUARDED_BY(mu_) = -1;
  bool fail_syncs_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, uint64_t> read_errors_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, FileState> files_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_PLATFORM_FAULT_ENV_H_

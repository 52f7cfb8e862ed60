// FaultEnv (tests only): an Env over another that simulates a crash after a
// chosen number of mutating operations (NewWritableFile, Append, Sync, Close,
// RenameFile, SyncDir, CreateDirs, DeleteRecursively). The crashing Append
// can be a short write (half its bytes reach the file); every operation after
// the crash fails with Unavailable, as if the process were gone.
// DropUnsyncedData() then truncates each file written through this Env to
// the bytes it had fsynced, like a power cut (after LevelDB's
// FaultInjectionTestEnv).
// Thread safety: all methods lock one mutex.
#ifndef SLUICE_CHECKPOINT_FAULT_ENV_H_
#define SLUICE_CHECKPOINT_FAULT_ENV_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "checkpoint/env.h"

namespace sluice {
namespace checkpoint {

class FaultEnv : public Env {
 public:
  explicit FaultEnv(Env* base) : base_(base) {}

  // Operations 0..n-1 (counting from now) succeed; operation n crashes.
  // n < 0: never crash.
  void CrashAfter(int n, bool short_write = false);
  bool crashed() const;
  // Mutating operations performed so far (successful ones).
  int ops() const;
  // Truncates files written through this Env to their fsynced length.
  void DropUnsyncedData();

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  absl::StatusOr<std::string> ReadFile(const std::string& path) override { return base_->ReadFile(path); }
  absl::Status RenameFile(const std::string& from, const std::string& to) override;
  absl::Status SyncDir(const std::string& dir) override;
  absl::Status SyncFile(const std::string& path) override;
  bool FileExists(const std::string& path) override { return base_->FileExists(path); }
  bool IsDirectory(const std::string& path) override { return base_->IsDirectory(path); }
  absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override {
    return base_->GetChildren(dir);
  }
  absl::Status CreateDirs(const std::string& dir) override;
  absl::Status DeleteRecursively(const std::string& path) override;
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override { return base_->GetFileSize(path); }

  // Used by FaultEnv's files: counts an operation; false when it crashes.
  // *short_write is set when the crashing operation should write half.
  bool Step(bool* short_write = nullptr);
  void RecordAppend(const std::string& path, uint64_t bytes);
  void RecordSync(const std::string& path);

 private:
  struct FileState {
    uint64_t size = 0;
    uint64_t synced = 0;
  };
  Env* const base_;
  mutable absl::Mutex mu_;
  int remaining_ = -1;
  bool short_write_ = false;
  bool crashed_ = false;
  int ops_ = 0;
  std::map<std::string, FileState> files_;
};

}  // namespace checkpoint
}  // namespace sluice

#endif  // SLUICE_CHECKPOINT_FAULT_ENV_H_

// Env: the small file-system interface the checkpoint code uses for
// everything outside RocksDB (the `checkpoint` state file, checkpoint
// directories: create, rename, delete, fsync), after LevelDB's Env
// (DESIGN.md "An Env for files"). Env::Default() is POSIX; tests wrap it
// (fault_env.h) to inject short writes and crashes between steps.
//
// Errors carry the path. Ownership: callers own returned files;
// Env::Default() lives forever. Thread safety: Env methods may be called
// concurrently; a WritableFile is used by one thread at a time.
#ifndef SLUICE_CHECKPOINT_ENV_H_
#define SLUICE_CHECKPOINT_ENV_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice {
namespace checkpoint {

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual absl::Status Append(absl::string_view data) = 0;
  // fsync of the file's data.
  virtual absl::Status Sync() = 0;
  virtual absl::Status Close() = 0;
};

class Env {
 public:
  virtual ~Env() = default;
  static Env* Default();

  // Creates or truncates.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  virtual absl::StatusOr<std::string> ReadFile(const std::string& path) = 0;
  // Atomic replace (rename(2)).
  virtual absl::Status RenameFile(const std::string& from, const std::string& to) = 0;
  // fsync of a directory, making renames and creations in it durable.
  virtual absl::Status SyncDir(const std::string& dir) = 0;
  // fsync of an existing file (e.g. one RocksDB wrote).
  virtual absl::Status SyncFile(const std::string& path) = 0;
  virtual bool FileExists(const std::string& path) = 0;
  virtual bool IsDirectory(const std::string& path) = 0;
  // Names (not paths), without "." and "..", sorted.
  virtual absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) = 0;
  // Creates `dir` and missing parents; an existing directory is fine.
  virtual absl::Status CreateDirs(const std::string& dir) = 0;
  // Deletes a file or a directory tree; a missing path is fine.
  virtual absl::Status DeleteRecursively(const std::string& path) = 0;
  virtual absl::StatusOr<uint64_t> GetFileSize(const std::string& path) = 0;

  // For reading files whose names or contents come from untrusted bytes (a
  // checkpoint's FILES inventory, its stores). Both have POSIX default
  // implementations, so wrappers (FaultEnv) need not override them.
  //
  // What `path` itself is, by lstat(2): a final symlink is not followed.
  enum class FileType { kRegular, kDirectory, kSymlink, kOther /* FIFO, socket, device */ };
  struct FileInfo {
    FileType type = FileType::kOther;
    uint64_t size = 0;
  };
  virtual absl::StatusOr<FileInfo> GetFileInfo(const std::string& path);
  // Reads `path` if it is a regular file (not a symlink, FIFO or device: those
  // are refused with FailedPrecondition, without blocking) of at most
  // `max_bytes`; a longer file is OutOfRange, and no more than max_bytes + 1
  // bytes are ever read or buffered.
  virtual absl::StatusOr<std::string> ReadRegularFile(const std::string& path, uint64_t max_bytes);
};

// "dir/name" (no doubled slash).
std::string JoinPath(absl::string_view dir, absl::string_view name);
// Writes `data` to `path` atomically and durably: write `path`.tmp, fsync,
// close, rename over `path`, fsync the parent directory. After a crash at any
// point `path` holds either its old contents or `data`.
absl::Status WriteFileAtomically(Env* env, const std::string& path, absl::string_view data);
// Fsyncs every file under `dir` (recursively) and every directory, bottom up.
absl::Status SyncTree(Env* env, const std::string& dir);

}  // namespace checkpoint
}  // namespace sluice

#endif  // SLUICE_CHECKPOINT_ENV_H_

// A small file abstraction for what monitoring/ writes (event files), so tests can inject
// faults (short writes, failing flushes, full disks) the way DESIGN.md's "Env for files" asks.
// FileSystem::Default() is POSIX. When the engine grows its own Env this becomes a thin adapter.
// Ownership: NewWritableFile returns an owned file; FileSystem::Default() lives forever.
// Thread safety: FileSystem methods may be called concurrently; a WritableFile is used by one
// thread at a time.
#ifndef SLUICE_MONITORING_FILE_SYSTEM_H_
#define SLUICE_MONITORING_FILE_SYSTEM_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice {

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Appends all of `data` or returns an error (after which the file's tail is unspecified).
  virtual absl::Status Append(absl::string_view data) = 0;
  // Hands buffered bytes to the OS (readers in other processes then see them).
  virtual absl::Status Flush() = 0;
  // Flush, then make the bytes durable (fsync).
  virtual absl::Status Sync() = 0;
  // Flush and close; later calls on this file fail with FailedPrecondition.
  virtual absl::Status Close() = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  static FileSystem* Default();

  // Creates `path` for writing. AlreadyExists when it exists; the parent directory must exist.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // mkdir -p.
  virtual absl::Status CreateDirs(const std::string& path) = 0;
};

// errno -> absl::Status with the operation and path in the message (NotFound, PermissionDenied,
// AlreadyExists, ResourceExhausted for ENOSPC, Internal otherwise).
absl::Status ErrnoToStatus(int err, absl::string_view op, absl::string_view path);

}  // namespace sluice

#endif  // SLUICE_MONITORING_FILE_SYSTEM_H_

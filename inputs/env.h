// Env: the file system as the inputs (and later checkpoints, event files) see
// it, after LevelDB's Env (DESIGN.md "An Env for files"). Env::Default() is
// the POSIX file system; tests wrap it (testing/fault_env.h) to inject short
// reads, I/O errors and full disks.
//
// Errors: NotFound for missing files, PermissionDenied, ResourceExhausted for
// a full disk, Unavailable for other I/O errors; every message names the path.
// Ownership: callers own the file objects an Env returns; Env::Default() lives
// forever. Thread safety: Env methods and RandomAccessFile::Read may be called
// concurrently; a WritableFile is used by one thread at a time.
#ifndef SLUICE_INPUTS_ENV_H_
#define SLUICE_INPUTS_ENV_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice {

class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads up to n bytes at `offset` into `scratch` (which must hold n bytes)
  // and points *result at them. Reaching the end of the file is not an error:
  // *result is then shorter than n (empty at or past the end). Files that
  // grow while open (a writer appending) show their new bytes to later reads.
  virtual absl::Status Read(uint64_t offset, size_t n, absl::string_view* result, char* scratch) const = 0;
  virtual const std::string& name() const = 0;
};

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual absl::Status Append(absl::string_view data) = 0;
  // Hands buffered bytes to the OS (readers then see them).
  virtual absl::Status Flush() = 0;
  // Flush, then make the bytes durable (fsync).
  virtual absl::Status Sync() = 0;
  virtual absl::Status Close() = 0;
  virtual const std::string& name() const = 0;
};

class Env {
 public:
  virtual ~Env() = default;
  static Env* Default();

  virtual absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) = 0;
  // Creates or truncates.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // Creates or appends at the end.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) = 0;
  virtual absl::Status FileExists(const std::string& path) = 0;
  virtual absl::StatusOr<uint64_t> GetFileSize(const std::string& path) = 0;
  // Names (not paths) of the entries of `dir`, without "." and "..".
  virtual absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) = 0;
  virtual absl::Status RenameFile(const std::string& from, const std::string& to) = 0;
  virtual absl::Status DeleteFile(const std::string& path) = 0;
  // Creates `dir` and missing parents; an existing directory is fine.
  virtual absl::Status RecursivelyCreateDir(const std::string& dir) = 0;

  // Paths matching a glob (`*`, `?`, `[...]` in the last component only),
  // sorted. A pattern without wildcards matches itself when the file exists.
  absl::StatusOr<std::vector<std::string>> GetMatchingPaths(const std::string& pattern);
};

// Reads a whole file.
absl::StatusOr<std::string> ReadFileToString(Env* env, const std::string& path);
// Writes a whole file (create or truncate), then closes it.
absl::Status WriteStringToFile(Env* env, const std::string& path, absl::string_view data);

// "dir/name" (no doubled slash).
std::string JoinPath(absl::string_view dir, absl::string_view name);

}  // namespace sluice

#endif  // SLUICE_INPUTS_ENV_H_

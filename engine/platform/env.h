// Env: the file system and clock as every module sees them, after LevelDB's
// Env (DESIGN.md "An Env for files"). Input readers, checkpoints, event files
// and the records tool all go through it, so one fault-injecting Env
// (fault_env.h) can stand in for the disk in any of their tests.
// Env::Default() is POSIX.
//
// Errors: every message names the operation and the path. errno maps to
// NotFound (ENOENT, ENOTDIR), PermissionDenied (EACCES, EPERM, EROFS),
// AlreadyExists (EEXIST), ResourceExhausted (ENOSPC, EDQUOT: a full disk) and
// Unavailable for other I/O errors (retryable, exit code >= 128).
// Ownership: callers own the file objects an Env returns; Env::Default() lives
// forever. Thread safety: Env methods and RandomAccessFile::Read and Map may be called
// concurrently; a WritableFile is used by one thread at a time.
#ifndef SLUICE_ENGINE_PLATFORM_ENV_H_
#define SLUICE_ENGINE_PLATFORM_ENV_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/platform/mapped_region.h"

namespace sluice {

class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads up to n bytes at `offset` into `scratch` (which must hold n bytes)
  // and points *result at them. Reaching the end of the file is not an error:
  // *result is then shorter than n (empty at or past the end). Files that
  // grow while open (a writer appending) show their new bytes to later reads.
  virtual absl::Status Read(uint64_t offset, size_t n, absl::string_view* result, char* scratch) const = 0;
  // Maps up to n bytes at `offset` read-only (mapped_region.h): fewer at the
  // end of the file as it is now, none at or past it. Unimplemented where the
  // file cannot be mapped (the default; a POSIX file that is not a regular
  // file, or that reports a size of 0, as /proc's do); callers then Read.
  virtual absl::StatusOr<std::unique_ptr<MappedRegion>> Map(uint64_t offset, size_t n) const;
  virtual const std::string& name() const = 0;
};

// Appends go through a user-space buffer: Flush hands them to the OS (readers
// in other processes then see them), Sync makes them durable.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Appends all of `data` or returns an error (the file's tail is then
  // unspecified: it may hold part of `data`).
  virtual absl::Status Append(absl::string_view data) = 0;
  // Hands buffered bytes to the OS.
  virtual absl::Status Flush() = 0;
  // Flush, then make the bytes durable (fdatasync).
  virtual absl::Status Sync() = 0;
  // Flush and close; later Append/Flush/Sync fail with FailedPrecondition and
  // a second Close is a no-op.
  virtual absl::Status Close() = 0;
  virtual const std::string& name() const = 0;
};

// What a path names, without following a final symbolic link (lstat).
enum class FileType { kRegular, kDirectory, kSymlink, kFifo, kOther };

class Env {
 public:
  Env();
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;
  virtual ~Env() = default;
  static Env* Default();

  // A number that no other Env of this process has had: caches of what an
  // Env read key by it, not by the Env's address, which a later Env may reuse.
  uint64_t id() const { return id_; }

  // Opens an existing file for reading; FailedPrecondition for a directory.
  virtual absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) = 0;
  // Creates or truncates.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // Creates or appends at the end.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) = 0;
  // Creates a file that must not exist yet (AlreadyExists otherwise).
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewExclusiveFile(const std::string& path) = 0;

  // OK when `path` exists (NotFound, or the error that prevents knowing).
  virtual absl::Status FileExists(const std::string& path) = 0;
  virtual absl::StatusOr<uint64_t> GetFileSize(const std::string& path) = 0;
  virtual absl::StatusOr<FileType> GetFileType(const std::string& path) = 0;
  // True when `path` is a directory (following symbolic links).
  virtual bool IsDirectory(const std::string& path) = 0;
  // Names (not paths) of the entries of `dir`, without "." and "..", sorted.
  virtual absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) = 0;

  // Atomic replace (rename(2)).
  virtual absl::Status RenameFile(const std::string& from, const std::string& to) = 0;
  virtual absl::Status DeleteFile(const std::string& path) = 0;
  // Deletes a file or a directory tree; a missing path is fine.
  virtual absl::Status DeleteRecursively(const std::string& path) = 0;
  // Creates `dir` and missing parents; an existing directory is fine, an
  // existing file of that name is FailedPrecondition.
  virtual absl::Status CreateDirs(const std::string& dir) = 0;

  // fsync of a directory: makes renames and creations in it durable.
  virtual absl::Status SyncDir(const std::string& dir) = 0;
  // fsync of an existing file (e.g. one RocksDB wrote).
  virtual absl::Status SyncFile(const std::string& path) = 0;

  // Microseconds since the Unix epoch (the wall clock).
  virtual int64_t NowMicros() = 0;

  // Paths matching a glob (`*`, `?`, `[...]` in the last component only),
  // sorted. A pattern without wildcards matches itself when the file exists.
  absl::StatusOr<std::vector<std::string>> GetMatchingPaths(const std::string& pattern);

 private:
  const uint64_t id_;
};

// Reads a whole file; a file longer than `max_bytes` is ResourceExhausted
// (naming the path and the limit), found after reading at most `max_bytes`
// plus one 1 MiB chunk, so a device that never ends cannot exhaust memory.
absl::StatusOr<std::string> ReadFileToString(Env* env, const std::string& path,
                                             uint64_t max_bytes = std::numeric_limits<uint64_t>::max());
// ReadFileToString for a path whose name or contents come from untrusted
// bytes (a checkpoint's FILES inventory, its state file): `path` itself must
// be a regular file (by lstat: a symlink, FIFO, socket, device or directory is
// FailedPrecondition, refused without opening it, so nothing blocks).
absl::StatusOr<std::string> ReadRegularFile(Env* env, const std::string& path, uint64_t max_bytes);
// Writes a whole file (create or truncate), then closes it.
absl::Status WriteStringToFile(Env* env, const std::string& path, absl::string_view data);
// Writes `data` to `path` atomically and durably: write `path`.tmp, fsync,
// close, rename over `path`, fsync the parent directory. After a crash at any
// point `path` holds either its old contents or `data`.
absl::Status WriteFileAtomically(Env* env, const std::string& path, absl::string_view data);
// Fsyncs every file under `dir` (recursively) and every directory, bottom up.
absl::Status SyncTree(Env* env, const std::string& dir);

// "dir/name" (no doubled slash).
std::string JoinPath(absl::string_view dir, absl::string_view name);
// The directory part of `path`: "." without a slash, "/" for "/name".
std::string Dirname(absl::string_view path);

// errno -> absl::Status, as described at the top of this file; the message is
// "<op> <path>: <strerror>".
absl::Status ErrnoToStatus(int err, absl::string_view op, absl::string_view path);

}  // namespace sluice

#endif  // SLUICE_ENGINE_PLATFORM_ENV_H_

// POSIX FileSystem: a user-space buffer over write(2), fsync on Sync.
#include "monitoring/file_system.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace sluice {

absl::Status ErrnoToStatus(int err, absl::string_view op, absl::string_view path) {
  std::string msg = absl::StrCat(op, " ", path, ": ", std::strerror(err));
  switch (err) {
    case ENOENT: case ENOTDIR: return absl::NotFoundError(msg);
    case EACCES: case EPERM: case EROFS: return absl::PermissionDeniedError(msg);
    case EEXIST: return absl::AlreadyExistsError(msg);
    case ENOSPC: case EDQUOT: return absl::ResourceExhaustedError(msg);
    default: return absl::InternalError(msg);
  }
}

namespace {

constexpr size_t kBufferSize = 64 << 10;

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override { Close().IgnoreError(); }

  absl::Status Append(absl::string_view data) override {
    if (fd_ < 0) return Closed();
    if (buffer_.size() + data.size() > kBufferSize) {
      absl::Status s = FlushBuffer();
      if (!s.ok()) return s;
      if (data.size() > kBufferSize) return WriteAll(data);
    }
    buffer_.append(data.data(), data.size());
    return absl::OkStatus();
  }

  absl::Status Flush() override {
    if (fd_ < 0) return Closed();
    return FlushBuffer();
  }

  absl::Status Sync() override {
    if (fd_ < 0) return Closed();
    absl::Status s = FlushBuffer();
    if (!s.ok()) return s;
    if (::fsync(fd_) != 0) return ErrnoToStatus(errno, "fsync", path_);
    return absl::OkStatus();
  }

  absl::Status Close() override {
    if (fd_ < 0) return absl::OkStatus();
    absl::Status s = FlushBuffer();
    if (::close(fd_) != 0 && s.ok()) s = ErrnoToStatus(errno, "close", path_);
    fd_ = -1;
    return s;
  }

 private:
  absl::Status Closed() const { return absl::FailedPreconditionError(absl::StrCat(path_, " is closed")); }

  absl::Status FlushBuffer() {
    absl::Status s = WriteAll(buffer_);
    buffer_.clear();
    return s;
  }

  absl::Status WriteAll(absl::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoToStatus(errno, "write", path_);
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return absl::OkStatus();
  }

  const std::string path_;
  int fd_;
  std::string buffer_;
};

class PosixFileSystem : public FileSystem {
 public:
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoToStatus(errno, "open", path);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }

  absl::Status CreateDirs(const std::string& path) override {
    if (path.empty()) return absl::InvalidArgumentError("CreateDirs: empty path");
    for (size_t pos = 1; pos <= path.size(); ++pos) {
      if (pos != path.size() && path[pos] != '/') continue;
      std::string prefix = path.substr(0, pos);
      if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoToStatus(errno, "mkdir", prefix);
    }
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, "stat", path);
    if (!S_ISDIR(st.st_mode)) return absl::FailedPreconditionError(absl::StrCat(path, " is not a directory"));
    return absl::OkStatus();
  }
};

}  // namespace

FileSystem* FileSystem::Default() {
  static FileSystem* fs = new PosixFileSystem();
  return fs;
}

}  // namespace sluice

// POSIX Env and the atomic-write helpers: see env.h.
#include "checkpoint/env.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "engine/framework/status_macros.h"

namespace sluice {
namespace checkpoint {
namespace {

absl::Status IoError(const std::string& what, const std::string& path, int err) {
  std::string msg = absl::StrCat(what, " ", path, ": ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
  if (err == ENOSPC || err == EDQUOT) return absl::ResourceExhaustedError(msg);
  return absl::UnavailableError(msg);
}

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }
  absl::Status Append(absl::string_view data) override {
    const char* p = data.data();
    size_t n = data.size();
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return IoError("write", path_, errno);
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return absl::OkStatus();
  }
  absl::Status Sync() override {
    if (::fdatasync(fd_) != 0) return IoError("fsync", path_, errno);
    return absl::OkStatus();
  }
  absl::Status Close() override {
    int fd = fd_;
    fd_ = -1;
    if (fd >= 0 && ::close(fd) != 0) return IoError("close", path_, errno);
    return absl::OkStatus();
  }

 private:
  std::string path_;
  int fd_;
};

absl::Status SyncPath(const std::string& path, bool dir) {
  int fd = ::open(path.c_str(), (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return IoError("open", path, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return IoError("fsync", path, err);
  return absl::OkStatus();
}

class PosixEnv : public Env {
 public:
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return IoError("open", path, errno);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }
  absl::StatusOr<std::string> ReadFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return IoError("open", path, errno);
    std::string out;
    char buf[65536];
    while (true) {
      ssize_t r = ::read(fd, buf, sizeof(buf));
      if (r < 0) {
        if (errno == EINTR) continue;
        int err = errno;
        ::close(fd);
        return IoError("read", path, err);
      }
      if (r == 0) break;
      out.append(buf, static_cast<size_t>(r));
    }
    ::close(fd);
    return out;
  }
  absl::Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return IoError("rename " + from + " to", to, errno);
    return absl::OkStatus();
  }
  absl::Status SyncDir(const std::string& dir) override { return SyncPath(dir, true); }
  absl::Status SyncFile(const std::string& path) override { return SyncPath(path, false); }
  bool FileExists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }
  bool IsDirectory(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }
  absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return IoError("opendir", dir, errno);
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      names.emplace_back(e->d_name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }
  absl::Status CreateDirs(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return absl::UnavailableError(absl::StrCat("mkdir ", dir, ": ", ec.message()));
    return absl::OkStatus();
  }
  absl::Status DeleteRecursively(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return absl::UnavailableError(absl::StrCat("delete ", path, ": ", ec.message()));
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return IoError("stat", path, errno);
    return static_cast<uint64_t>(st.st_size);
  }
};

std::string Dirname(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

absl::StatusOr<Env::FileInfo> Env::GetFileInfo(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return IoError("lstat", path, errno);
  FileInfo info;
  info.size = static_cast<uint64_t>(st.st_size);
  if (S_ISREG(st.st_mode)) {
    info.type = FileType::kRegular;
  } else if (S_ISDIR(st.st_mode)) {
    info.type = FileType::kDirectory;
  } else if (S_ISLNK(st.st_mode)) {
    info.type = FileType::kSymlink;
  }
  return info;
}

absl::StatusOr<std::string> Env::ReadRegularFile(const std::string& path, uint64_t max_bytes) {
  // O_NOFOLLOW: a symlink fails with ELOOP; O_NONBLOCK: opening a FIFO does
  // not wait for a writer (and is ignored for regular files).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ELOOP) return absl::FailedPreconditionError(absl::StrCat(path, " is a symlink, not a regular file"));
    return IoError("open", path, errno);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return IoError("fstat", path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::FailedPreconditionError(absl::StrCat(path, " is not a regular file"));
  }
  auto too_long = [&] {
    return absl::OutOfRangeError(absl::StrCat(path, " is longer than ", max_bytes, " bytes"));
  };
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return too_long();
  }
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[65536];
  while (true) {
    // Up to one byte past the limit, to tell a file that grew from one that fits.
    const uint64_t left = max_bytes - out.size();
    const size_t want = left >= sizeof(buf) ? sizeof(buf) : static_cast<size_t>(left) + 1;
    ssize_t r = ::read(fd, buf, want);
    if (r < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return IoError("read", path, err);
    }
    if (r == 0) break;
    out.append(buf, static_cast<size_t>(r));
    if (out.size() > max_bytes) {
      ::close(fd);
      return too_long();
    }
  }
  ::close(fd);
  return out;
}

Env* Env::Default() {
  static Env* env = new PosixEnv();
  return env;
}

std::string JoinPath(absl::string_view dir, absl::string_view name) {
  if (dir.empty()) return std::string(name);
  if (dir.back() == '/') return absl::StrCat(dir, name);
  return absl::StrCat(dir, "/", name);
}

absl::Status WriteFileAtomically(Env* env, const std::string& path, absl::string_view data) {
  const std::string tmp = path + ".tmp";
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env->NewWritableFile(tmp));
  absl::Status s = file->Append(data);
  if (s.ok()) s = file->Sync();
  absl::Status c = file->Close();
  if (s.ok()) s = c;
  if (!s.ok()) return s;
  SLUICE_RETURN_IF_ERROR(env->RenameFile(tmp, path));
  return env->SyncDir(Dirname(path));
}

absl::Status SyncTree(Env* env, const std::string& dir) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> children, env->GetChildren(dir));
  for (const std::string& name : children) {
    std::string path = JoinPath(dir, name);
    if (env->IsDirectory(path)) {
      SLUICE_RETURN_IF_ERROR(SyncTree(env, path));
    } else {
      SLUICE_RETURN_IF_ERROR(env->SyncFile(path));
    }
  }
  return env->SyncDir(dir);
}

}  // namespace checkpoint
}  // namespace sluice

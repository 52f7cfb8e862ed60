// The POSIX Env, and the helpers every Env shares.
#include "inputs/env.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

absl::Status IoError(const std::string& context, int err) {
  std::string msg = absl::StrCat(context, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(msg);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(msg);
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(msg);
    case EEXIST:
      return absl::AlreadyExistsError(msg);
    default:
      return absl::UnavailableError(msg);
  }
}

class PosixRandomAccessFile : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string name, int fd) : name_(std::move(name)), fd_(fd) {}
  ~PosixRandomAccessFile() override { close(fd_); }
  absl::Status Read(uint64_t offset, size_t n, absl::string_view* result, char* scratch) const override {
    size_t got = 0;
    while (got < n) {
      ssize_t r = pread(fd_, scratch + got, n - got, static_cast<off_t>(offset + got));
      if (r < 0) {
        if (errno == EINTR) continue;
        *result = absl::string_view(scratch, got);
        return IoError(absl::StrCat("reading ", name_, " at offset ", offset + got), errno);
      }
      if (r == 0) break;  // end of file
      got += static_cast<size_t>(r);
    }
    *result = absl::string_view(scratch, got);
    return absl::OkStatus();
  }
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  int fd_;
};

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string name, int fd) : name_(std::move(name)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) Close().IgnoreError();
  }
  absl::Status Append(absl::string_view data) override {
    if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(name_, " is closed"));
    if (buffer_.size() + data.size() > kBufferSize) {
      absl::Status s = WriteRaw(buffer_.data(), buffer_.size());
      buffer_.clear();
      if (!s.ok()) return s;
      if (data.size() >= kBufferSize) return WriteRaw(data.data(), data.size());
    }
    buffer_.append(data.data(), data.size());
    return absl::OkStatus();
  }
  absl::Status Flush() override {
    if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(name_, " is closed"));
    absl::Status s = WriteRaw(buffer_.data(), buffer_.size());
    buffer_.clear();
    return s;
  }
  absl::Status Sync() override {
    absl::Status s = Flush();
    if (!s.ok()) return s;
    if (fdatasync(fd_) != 0) return IoError(absl::StrCat("syncing ", name_), errno);
    return absl::OkStatus();
  }
  absl::Status Close() override {
    if (fd_ < 0) return absl::OkStatus();
    absl::Status s = Flush();
    if (close(fd_) != 0 && s.ok()) s = IoError(absl::StrCat("closing ", name_), errno);
    fd_ = -1;
    return s;
  }
  const std::string& name() const override { return name_; }

 private:
  static constexpr size_t kBufferSize = 256 << 10;
  absl::Status WriteRaw(const char* p, size_t n) {
    while (n > 0) {
      ssize_t w = write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return IoError(absl::StrCat("writing ", name_), errno);
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return absl::OkStatus();
  }
  std::string name_;
  int fd_;
  std::string buffer_;
};

class PosixEnv : public Env {
 public:
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return IoError(absl::StrCat("opening ", path), errno);
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      close(fd);
      return absl::FailedPreconditionError(absl::StrCat(path, " is a directory"));
    }
    return std::unique_ptr<RandomAccessFile>(new PosixRandomAccessFile(path, fd));
  }
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return Open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC);
  }
  absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    return Open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC);
  }
  absl::Status FileExists(const std::string& path) override {
    if (access(path.c_str(), F_OK) == 0) return absl::OkStatus();
    return IoError(path, errno);
  }
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return IoError(absl::StrCat("stat ", path), errno);
    return static_cast<uint64_t>(st.st_size);
  }
  absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override {
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return IoError(absl::StrCat("listing ", dir), errno);
    std::vector<std::string> out;
    while (struct dirent* e = readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      out.emplace_back(e->d_name);
    }
    closedir(d);
    return out;
  }
  absl::Status RenameFile(const std::string& from, const std::string& to) override {
    if (rename(from.c_str(), to.c_str()) != 0) return IoError(absl::StrCat("renaming ", from, " to ", to), errno);
    return absl::OkStatus();
  }
  absl::Status DeleteFile(const std::string& path) override {
    if (unlink(path.c_str()) != 0) return IoError(absl::StrCat("deleting ", path), errno);
    return absl::OkStatus();
  }
  absl::Status RecursivelyCreateDir(const std::string& dir) override {
    std::string partial;
    for (size_t i = 0; i <= dir.size(); ++i) {
      if (i == dir.size() || (dir[i] == '/' && i > 0)) {
        partial = dir.substr(0, i);
        if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
          return IoError(absl::StrCat("creating directory ", partial), errno);
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<std::unique_ptr<WritableFile>> Open(const std::string& path, int flags) {
    int fd = open(path.c_str(), flags, 0644);
    if (fd < 0) return IoError(absl::StrCat("opening ", path, " for writing"), errno);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }
};

}  // namespace

Env* Env::Default() {
  static Env* env = new PosixEnv;
  return env;
}

absl::StatusOr<std::vector<std::string>> Env::GetMatchingPaths(const std::string& pattern) {
  size_t slash = pattern.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : pattern.substr(0, slash));
  std::string base = slash == std::string::npos ? pattern : pattern.substr(slash + 1);
  std::vector<std::string> out;
  if (base.find_first_of("*?[") == std::string::npos) {
    if (FileExists(pattern).ok()) out.push_back(pattern);
    return out;
  }
  auto children = GetChildren(dir);
  if (!children.ok()) {
    if (absl::IsNotFound(children.status())) return out;
    return children.status();
  }
  for (const std::string& name : *children) {
    if (fnmatch(base.c_str(), name.c_str(), FNM_PERIOD) == 0) {
      out.push_back(slash == std::string::npos ? name : JoinPath(pattern.substr(0, slash), name));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<std::string> ReadFileToString(Env* env, const std::string& path) {
  auto file = env->NewRandomAccessFile(path);
  if (!file.ok()) return file.status();
  std::string out;
  constexpr size_t kChunk = 1 << 20;
  std::string scratch(kChunk, '\0');
  uint64_t offset = 0;
  while (true) {
    absl::string_view got;
    absl::Status s = (*file)->Read(offset, kChunk, &got, scratch.data());
    if (!s.ok()) return s;
    out.append(got.data(), got.size());
    offset += got.size();
    if (got.size() < kChunk) break;
  }
  return out;
}

absl::Status WriteStringToFile(Env* env, const std::string& path, absl::string_view data) {
  auto file = env->NewWritableFile(path);
  if (!file.ok()) return file.status();
  absl::Status s = (*file)->Append(data);
  absl::Status c = (*file)->Close();
  return s.ok() ? c : s;
}

std::string JoinPath(absl::string_view dir, absl::string_view name) {
  if (dir.empty()) return std::string(name);
  if (dir.back() == '/') return absl::StrCat(dir, name);
  return absl::StrCat(dir, "/", name);
}

}  // namespace sluice

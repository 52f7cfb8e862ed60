// The POSIX Env, and the helpers every Env shares (see env.h).
#include "engine/platform/env.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/platform/mapping_cache.h"
#include "engine/platform/status_macros.h"

namespace sluice {

absl::Status ErrnoToStatus(int err, absl::string_view op, absl::string_view path) {
  std::string msg = absl::StrCat(op, " ", path, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(msg);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(msg);
    case EEXIST:
      return absl::AlreadyExistsError(msg);
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(msg);
    default:
      return absl::UnavailableError(msg);
  }
}

absl::StatusOr<std::unique_ptr<MappedRegion>> RandomAccessFile::Map(uint64_t, size_t) const {
  return absl::UnimplementedError(absl::StrCat(name(), " cannot be mapped"));
}

namespace {

class PosixRandomAccessFile : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string name, int fd) : name_(std::move(name)), fd_(fd) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }
  absl::Status Read(uint64_t offset, size_t n, absl::string_view* result, char* scratch) const override {
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::pread(fd_, scratch + got, n - got, static_cast<off_t>(offset + got));
      if (r < 0) {
        if (errno == EINTR) continue;
        *result = absl::string_view(scratch, got);
        return ErrnoToStatus(errno, "read", absl::StrCat(name_, " at offset ", offset + got));
      }
      if (r == 0) break;  // end of file
      got += static_cast<size_t>(r);
    }
    *result = absl::string_view(scratch, got);
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<MappedRegion>> Map(uint64_t offset, size_t n) const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return ErrnoToStatus(errno, "stat", name_);
    if (!S_ISREG(st.st_mode)) return absl::UnimplementedError(absl::StrCat(name_, " is not a regular file"));
    // Files of /proc and the like say 0 and still have bytes: only reads see
    // them. (A cached mapping of a file cut to nothing goes.)
    if (st.st_size == 0) {
      MappingCache::Default().Forget(st.st_dev, st.st_ino);
      return absl::UnimplementedError(absl::StrCat(name_, " reports a size of 0"));
    }
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    const uint64_t left = offset < size ? size - offset : 0;
    const size_t want = n < left ? n : static_cast<size_t>(left);
    // Through the process's whole-file mappings where the file fits them, so
    // a file read again is not mapped and faulted in again (mapping_cache.h).
    if (want > 0) {
      std::unique_ptr<MappedRegion> view =
          MappingCache::Default().View(fd_, MappingCache::FileStateOf(st), offset, want, name_);
      if (view != nullptr) return view;
    }
    return MappedRegion::Create(fd_, offset, want, name_);
  }
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  int fd_;
};

// Buffers appends and writes them in pieces that end on multiples of
// kChunkBytes of the file (a large append goes straight to the file in such
// pieces). Kernels that cache files in large folios (Linux 6.16 and later on
// ext4; XFS, tmpfs) size a folio by the write that creates it, so a file
// written in aligned 2 MB pieces is cached in folios of up to 2 MB, which a
// reader that maps it (RecordReader) takes with one fault and one TLB entry
// each instead of one per 4 KB page: on a 6.18 guest, a pass that mapped a
// file and checked its CRC ran at 0.71-0.76 of a plain read of it when it was
// written in 256 KB pieces, and at 1.09-1.15 when written in aligned 2 MB
// pieces (docs/PERFORMANCE.md, "Session 30").
// The buffer grows only as far as the data appended since the last write.
class PosixWritableFile : public WritableFile {
 public:
  // `offset`: the file's size when opened (where appends start).
  PosixWritableFile(std::string name, int fd, uint64_t offset)
      : name_(std::move(name)), fd_(fd), written_(offset) {}
  ~PosixWritableFile() override { Close().IgnoreError(); }
  absl::Status Append(absl::string_view data) override {
    if (fd_ < 0) return Closed();
    size_t room = kChunkBytes - static_cast<size_t>((written_ + buffer_.size()) % kChunkBytes);
    while (data.size() >= room) {
      if (buffer_.empty()) {
        SLUICE_RETURN_IF_ERROR(WriteAll(data.substr(0, room)));
      } else {
        buffer_.append(data.data(), room);
        SLUICE_RETURN_IF_ERROR(FlushBuffer());
      }
      data.remove_prefix(room);
      room = kChunkBytes;
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
    SLUICE_RETURN_IF_ERROR(FlushBuffer());
    if (::fdatasync(fd_) != 0) return ErrnoToStatus(errno, "fsync", name_);
    return absl::OkStatus();
  }
  absl::Status Close() override {
    if (fd_ < 0) return absl::OkStatus();
    absl::Status s = FlushBuffer();
    if (::close(fd_) != 0 && s.ok()) s = ErrnoToStatus(errno, "close", name_);
    fd_ = -1;
    return s;
  }
  const std::string& name() const override { return name_; }

 private:
  static constexpr size_t kChunkBytes = 2 << 20;
  absl::Status Closed() const { return absl::FailedPreconditionError(absl::StrCat(name_, " is closed")); }
  absl::Status FlushBuffer() {
    absl::Status s = WriteAll(buffer_);
    buffer_.clear();
    return s;
  }
  absl::Status WriteAll(absl::string_view data) {
    while (!data.empty()) {
      ssize_t w = ::write(fd_, data.data(), data.size());
      if (w < 0) {
        if (errno == EINTR) continue;
        return ErrnoToStatus(errno, "write", name_);
      }
      data.remove_prefix(static_cast<size_t>(w));
      written_ += static_cast<uint64_t>(w);
    }
    return absl::OkStatus();
  }
  std::string name_;
  int fd_;
  uint64_t written_;  // the file's size as this writer has made it
  std::string buffer_;
};

absl::Status SyncPath(const std::string& path, bool dir) {
  int fd = ::open(path.c_str(), (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "open", path);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoToStatus(err, "fsync", path);
  return absl::OkStatus();
}

class PosixEnv : public Env {
 public:
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    // O_NONBLOCK: opening a FIFO does not wait for a writer (reads of
    // regular files ignore the flag); its reads then fail instead of hanging.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return ErrnoToStatus(errno, "open", path);
    struct stat st;
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      ::close(fd);
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
  absl::StatusOr<std::unique_ptr<WritableFile>> NewExclusiveFile(const std::string& path) override {
    return Open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC);
  }
  absl::Status FileExists(const std::string& path) override {
    if (::access(path.c_str(), F_OK) == 0) return absl::OkStatus();
    return ErrnoToStatus(errno, "access", path);
  }
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, "stat", path);
    return static_cast<uint64_t>(st.st_size);
  }
  absl::StatusOr<FileType> GetFileType(const std::string& path) override {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, "lstat", path);
    if (S_ISREG(st.st_mode)) return FileType::kRegular;
    if (S_ISDIR(st.st_mode)) return FileType::kDirectory;
    if (S_ISLNK(st.st_mode)) return FileType::kSymlink;
    if (S_ISFIFO(st.st_mode)) return FileType::kFifo;
    return FileType::kOther;
  }
  bool IsDirectory(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }
  absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return ErrnoToStatus(errno, "list", dir);
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      names.emplace_back(e->d_name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }
  absl::Status RenameFile(const std::string& from, const std::string& to) override {
    struct stat replaced;
    const bool replaces = ::lstat(to.c_str(), &replaced) == 0;
    if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoToStatus(errno, absl::StrCat("rename ", from, " to"), to);
    if (replaces) MappingCache::Default().Forget(replaced.st_dev, replaced.st_ino);
    return absl::OkStatus();
  }
  absl::Status DeleteFile(const std::string& path) override {
    struct stat st;
    const bool known = ::lstat(path.c_str(), &st) == 0;
    if (::unlink(path.c_str()) != 0) return ErrnoToStatus(errno, "delete", path);
    // A file this process has mapped goes from the cache now, so its space
    // is freed now, not at a later lookup (mapping_cache.h).
    if (known) MappingCache::Default().Forget(st.st_dev, st.st_ino);
    return absl::OkStatus();
  }
  absl::Status DeleteRecursively(const std::string& path) override {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return absl::OkStatus();
      return ErrnoToStatus(errno, "lstat", path);
    }
    if (S_ISDIR(st.st_mode)) {  // never follows a link out of the tree
      SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> children, GetChildren(path));
      for (const std::string& name : children) SLUICE_RETURN_IF_ERROR(DeleteRecursively(JoinPath(path, name)));
      if (::rmdir(path.c_str()) != 0 && errno != ENOENT) return ErrnoToStatus(errno, "delete", path);
      return absl::OkStatus();
    }
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoToStatus(errno, "delete", path);
    MappingCache::Default().Forget(st.st_dev, st.st_ino);
    return absl::OkStatus();
  }
  absl::Status CreateDirs(const std::string& dir) override {
    if (dir.empty()) return absl::InvalidArgumentError("create directory: empty path");
    for (size_t pos = 1; pos <= dir.size(); ++pos) {
      if (pos != dir.size() && dir[pos] != '/') continue;
      const std::string prefix = dir.substr(0, pos);
      if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoToStatus(errno, "mkdir", prefix);
    }
    if (!IsDirectory(dir)) return absl::FailedPreconditionError(absl::StrCat(dir, " is not a directory"));
    return absl::OkStatus();
  }
  absl::Status SyncDir(const std::string& dir) override { return SyncPath(dir, true); }
  absl::Status SyncFile(const std::string& path) override { return SyncPath(path, false); }
  int64_t NowMicros() override {
    struct timeval tv;
    ::gettimeofday(&tv, nullptr);
    return static_cast<int64_t>(tv.tv_sec) * 1000000 + tv.tv_usec;
  }

 private:
  absl::StatusOr<std::unique_ptr<WritableFile>> Open(const std::string& path, int flags) {
    int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return ErrnoToStatus(errno, "open for writing", path);
    // Appends start at the end (O_APPEND), or at 0 for a new or truncated file.
    struct stat st;
    const uint64_t size = ::fstat(fd, &st) == 0 && st.st_size > 0 ? static_cast<uint64_t>(st.st_size) : 0;
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd, size));
  }
};

}  // namespace

Env::Env() : id_([] {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}()) {}

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

absl::StatusOr<std::string> ReadFileToString(Env* env, const std::string& path, uint64_t max_bytes) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, env->NewRandomAccessFile(path));
  // A file whose size says it is too large is refused before a byte is read
  // (a 1 GiB limit took 4 s and 1 GiB of memory to say so); the loop below
  // still bounds what a device or a growing file can make it read.
  if (auto size = env->GetFileSize(path); size.ok() && *size > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, " is larger than the ", max_bytes, " bytes that may be read from it (", *size, " bytes)"));
  }
  std::string out;
  constexpr size_t kChunk = 1 << 20;
  std::string scratch(kChunk, '\0');
  uint64_t offset = 0;
  while (true) {
    absl::string_view got;
    SLUICE_RETURN_IF_ERROR(file->Read(offset, kChunk, &got, scratch.data()));
    if (got.size() > max_bytes - out.size()) {
      return absl::ResourceExhaustedError(
          absl::StrCat(path, " is larger than the ", max_bytes, " bytes that may be read from it"));
    }
    out.append(got.data(), got.size());
    offset += got.size();
    if (got.size() < kChunk) break;
  }
  return out;
}

absl::StatusOr<std::string> ReadRegularFile(Env* env, const std::string& path, uint64_t max_bytes) {
  SLUICE_ASSIGN_OR_RETURN(FileType type, env->GetFileType(path));
  switch (type) {
    case FileType::kRegular:
      return ReadFileToString(env, path, max_bytes);
    case FileType::kSymlink:
      return absl::FailedPreconditionError(absl::StrCat(path, " is a symlink, not a regular file"));
    case FileType::kDirectory:
      return absl::FailedPreconditionError(absl::StrCat(path, " is a directory, not a regular file"));
    case FileType::kFifo:
    case FileType::kOther:
      break;
  }
  return absl::FailedPreconditionError(absl::StrCat(path, " is not a regular file (FIFO, socket or device)"));
}

absl::Status WriteStringToFile(Env* env, const std::string& path, absl::string_view data) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env->NewWritableFile(path));
  absl::Status s = file->Append(data);
  absl::Status c = file->Close();
  return s.ok() ? c : s;
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

std::string JoinPath(absl::string_view dir, absl::string_view name) {
  if (dir.empty()) return std::string(name);
  if (dir.back() == '/') return absl::StrCat(dir, name);
  return absl::StrCat(dir, "/", name);
}

std::string Dirname(absl::string_view path) {
  size_t slash = path.find_last_of('/');
  if (slash == absl::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

}  // namespace sluice

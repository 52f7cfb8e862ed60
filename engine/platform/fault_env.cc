// FaultEnv: see fault_env.h.
#include "engine/platform/fault_env.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

absl::Status Crashed(const std::string& what) {
  return absl::UnavailableError(absl::StrCat("injected crash at ", what));
}

absl::Status SyncFailed(const std::string& path) {
  return absl::UnavailableError(absl::StrCat("fsync ", path, ": injected I/O error"));
}

class FaultRandomAccessFile : public RandomAccessFile {
 public:
  FaultRandomAccessFile(const FaultEnv* env, std::unique_ptr<RandomAccessFile> base)
      : env_(env), base_(std::move(base)) {}
  absl::Status Read(uint64_t offset, size_t n, absl::string_view* result, char* scratch) const override {
    if (env_->ReadFails(name(), offset, n)) {
      *result = absl::string_view();
      return absl::UnavailableError(absl::StrCat("read ", name(), " at offset ", offset, ": injected I/O error"));
    }
    return base_->Read(offset, n, result, scratch);
  }
  const std::string& name() const override { return base_->name(); }

 private:
  const FaultEnv* env_;
  std::unique_ptr<RandomAccessFile> base_;
};

class FaultWritableFile : public WritableFile {
 public:
  FaultWritableFile(FaultEnv* env, std::string path, std::unique_ptr<WritableFile> base)
      : env_(env), path_(std::move(path)), base_(std::move(base)) {}
  absl::Status Append(absl::string_view data) override {
    bool short_write = false;
    if (!env_->Step(&short_write)) {
      if (short_write) Write(data.substr(0, data.size() / 2)).IgnoreError();
      return Crashed("append to " + path_);
    }
    const size_t allowed = env_->TakeWriteBudget(data.size());
    absl::Status s = Write(data.substr(0, allowed));
    if (s.ok() && allowed < data.size()) {
      return absl::ResourceExhaustedError(absl::StrCat("write ", path_, ": no space left on device (injected)"));
    }
    return s;
  }
  absl::Status Flush() override {
    if (!env_->Step()) return Crashed("flush of " + path_);
    return base_->Flush();
  }
  absl::Status Sync() override {
    if (!env_->Step()) return Crashed("fsync of " + path_);
    if (env_->syncs_fail()) return SyncFailed(path_);
    absl::Status s = base_->Sync();
    if (s.ok()) env_->RecordSync(path_);
    return s;
  }
  absl::Status Close() override {
    if (!env_->Step()) {
      base_->Close().IgnoreError();
      return Crashed("close of " + path_);
    }
    return base_->Close();
  }
  const std::string& name() const override { return path_; }

 private:
  // Appends and hands the bytes to the OS at once, so that nothing waits in
  // the base file's buffer: after a crash, a destructor's flush cannot add
  // bytes behind DropUnsyncedData's back.
  absl::Status Write(absl::string_view data) {
    absl::Status s = base_->Append(data);
    if (s.ok()) s = base_->Flush();
    if (s.ok()) env_->RecordAppend(path_, data.size());
    return s;
  }
  FaultEnv* env_;
  std::string path_;
  std::unique_ptr<WritableFile> base_;
};

}  // namespace

void FaultEnv::CrashAfter(int n, bool short_write) {
  absl::MutexLock lock(&mu_);
  remaining_ = n;
  short_write_ = short_write;
  crashed_ = false;
}

bool FaultEnv::crashed() const {
  absl::MutexLock lock(&mu_);
  return crashed_;
}

int FaultEnv::ops() const {
  absl::MutexLock lock(&mu_);
  return ops_;
}

void FaultEnv::SetWriteBudget(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  write_budget_ = bytes;
}

void FaultEnv::FailSyncs(bool fail) {
  absl::MutexLock lock(&mu_);
  fail_syncs_ = fail;
}

void FaultEnv::InjectReadError(const std::string& path, uint64_t offset) {
  absl::MutexLock lock(&mu_);
  read_errors_[path] = offset;
}

bool FaultEnv::Step(bool* short_write) {
  absl::MutexLock lock(&mu_);
  if (crashed_) return false;
  if (remaining_ == 0) {
    crashed_ = true;
    if (short_write != nullptr) *short_write = short_write_;
    return false;
  }
  if (remaining_ > 0) --remaining_;
  ++ops_;
  return true;
}

size_t FaultEnv::TakeWriteBudget(size_t want) {
  absl::MutexLock lock(&mu_);
  if (write_budget_ < 0) return want;
  const size_t allowed = static_cast<uint64_t>(write_budget_) < want ? static_cast<size_t>(write_budget_) : want;
  write_budget_ -= static_cast<int64_t>(allowed);
  return allowed;
}

bool FaultEnv::syncs_fail() const {
  absl::MutexLock lock(&mu_);
  return fail_syncs_;
}

bool FaultEnv::ReadFails(const std::string& path, uint64_t offset, size_t n) const {
  absl::MutexLock lock(&mu_);
  auto it = read_errors_.find(path);
  return it != read_errors_.end() && it->second >= offset && it->second - offset < n;
}

void FaultEnv::RecordAppend(const std::string& path, uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  files_[path].size += bytes;
}

void FaultEnv::RecordSync(const std::string& path) {
  absl::MutexLock lock(&mu_);
  files_[path].synced = files_[path].size;
}

void FaultEnv::DropUnsyncedData() {
  absl::MutexLock lock(&mu_);
  for (const auto& [path, state] : files_) {
    if (state.synced < state.size && base_->FileExists(path).ok()) {
      if (::truncate(path.c_str(), static_cast<off_t>(state.synced)) != 0) continue;
    }
  }
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> FaultEnv::NewRandomAccessFile(const std::string& path) {
  auto base = base_->NewRandomAccessFile(path);
  if (!base.ok()) return base.status();
  return std::unique_ptr<RandomAccessFile>(new FaultRandomAccessFile(this, *std::move(base)));
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultEnv::Wrap(const std::string& path,
                                                             absl::StatusOr<std::unique_ptr<WritableFile>> base,
                                                             uint64_t initial_size) {
  if (!base.ok()) return base.status();
  {
    absl::MutexLock lock(&mu_);
    files_[path] = FileState{initial_size, initial_size};
  }
  return std::unique_ptr<WritableFile>(new FaultWritableFile(this, path, *std::move(base)));
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultEnv::NewWritableFile(const std::string& path) {
  if (!Step()) return Crashed("create " + path);
  return Wrap(path, base_->NewWritableFile(path), 0);
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultEnv::NewAppendableFile(const std::string& path) {
  if (!Step()) return Crashed("open for append " + path);
  // What the file held before is treated as durable.
  auto size = base_->GetFileSize(path);
  return Wrap(path, base_->NewAppendableFile(path), size.ok() ? *size : 0);
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultEnv::NewExclusiveFile(const std::string& path) {
  if (!Step()) return Crashed("create " + path);
  return Wrap(path, base_->NewExclusiveFile(path), 0);
}

absl::Status FaultEnv::RenameFile(const std::string& from, const std::string& to) {
  if (!Step()) return Crashed("rename " + from);
  absl::Status s = base_->RenameFile(from, to);
  if (s.ok()) {
    absl::MutexLock lock(&mu_);
    auto it = files_.find(from);
    if (it != files_.end()) {
      files_[to] = it->second;
      files_.erase(from);
    }
  }
  return s;
}

absl::Status FaultEnv::DeleteFile(const std::string& path) {
  if (!Step()) return Crashed("delete " + path);
  return base_->DeleteFile(path);
}

absl::Status FaultEnv::DeleteRecursively(const std::string& path) {
  if (!Step()) return Crashed("delete " + path);
  return base_->DeleteRecursively(path);
}

absl::Status FaultEnv::CreateDirs(const std::string& dir) {
  if (!Step()) return Crashed("mkdir " + dir);
  return base_->CreateDirs(dir);
}

absl::Status FaultEnv::SyncDir(const std::string& dir) {
  if (!Step()) return Crashed("fsync of " + dir);
  if (syncs_fail()) return SyncFailed(dir);
  return base_->SyncDir(dir);
}

absl::Status FaultEnv::SyncFile(const std::string& path) {
  if (!Step()) return Crashed("fsync of " + path);
  if (syncs_fail()) return SyncFailed(path);
  absl::Status s = base_->SyncFile(path);
  if (s.ok()) RecordSync(path);
  return s;
}

}  // namespace sluice

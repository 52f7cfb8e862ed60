// FaultEnv: see fault_env.h.
#include "checkpoint/fault_env.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace checkpoint {
namespace {

absl::Status Crashed(const std::string& what) {
  return absl::UnavailableError(absl::StrCat("injected crash at ", what));
}

class FaultFile : public WritableFile {
 public:
  FaultFile(FaultEnv* env, std::string path, std::unique_ptr<WritableFile> base)
      : env_(env), path_(std::move(path)), base_(std::move(base)) {}
  absl::Status Append(absl::string_view data) override {
    bool short_write = false;
    if (!env_->Step(&short_write)) {
      if (short_write) {
        absl::string_view half = data.substr(0, data.size() / 2);
        if (base_->Append(half).ok()) env_->RecordAppend(path_, half.size());
      }
      return Crashed("append to " + path_);
    }
    absl::Status s = base_->Append(data);
    if (s.ok()) env_->RecordAppend(path_, data.size());
    return s;
  }
  absl::Status Sync() override {
    if (!env_->Step()) return Crashed("fsync of " + path_);
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

 private:
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
    if (state.synced < state.size && base_->FileExists(path)) {
      if (::truncate(path.c_str(), static_cast<off_t>(state.synced)) != 0) continue;
    }
  }
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultEnv::NewWritableFile(const std::string& path) {
  if (!Step()) return Crashed("create " + path);
  auto base = base_->NewWritableFile(path);
  if (!base.ok()) return base.status();
  {
    absl::MutexLock lock(&mu_);
    files_[path] = FileState();
  }
  return std::unique_ptr<WritableFile>(new FaultFile(this, path, *std::move(base)));
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

absl::Status FaultEnv::SyncDir(const std::string& dir) {
  if (!Step()) return Crashed("fsync of " + dir);
  return base_->SyncDir(dir);
}

absl::Status FaultEnv::SyncFile(const std::string& path) {
  if (!Step()) return Crashed("fsync of " + path);
  absl::Status s = base_->SyncFile(path);
  if (s.ok()) RecordSync(path);
  return s;
}

absl::Status FaultEnv::CreateDirs(const std::string& dir) {
  if (!Step()) return Crashed("mkdir " + dir);
  return base_->CreateDirs(dir);
}

absl::Status FaultEnv::DeleteRecursively(const std::string& path) {
  if (!Step()) return Crashed("delete " + path);
  return base_->DeleteRecursively(path);
}

}  // namespace checkpoint
}  // namespace sluice

// MemEnv: in-memory files with injected faults.
#include "inputs/testing/mem_env.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace sluice {

class MemRandomAccessFile : public RandomAccessFile {
 public:
  MemRandomAccessFile(MemEnv* env, std::string name, std::shared_ptr<MemEnv::File> file)
      : env_(env), name_(std::move(name)), file_(std::move(file)) {}
  absl::Status Read(uint64_t offset, size_t n, absl::string_view* result, char* scratch) const override {
    {
      absl::MutexLock lock(&env_->mu_);
      auto it = env_->read_errors_.find(name_);
      if (it != env_->read_errors_.end() && it->second >= offset && it->second < offset + n) {
        *result = absl::string_view(scratch, 0);
        return absl::UnavailableError(absl::StrCat("injected I/O error reading ", name_, " at offset ", it->second));
      }
    }
    absl::MutexLock lock(&file_->mu);
    const std::string& d = file_->data;
    size_t got = offset >= d.size() ? 0 : std::min<size_t>(n, d.size() - offset);
    if (got > 0) std::copy_n(d.data() + offset, got, scratch);
    *result = absl::string_view(scratch, got);
    return absl::OkStatus();
  }
  const std::string& name() const override { return name_; }

 private:
  MemEnv* env_;
  std::string name_;
  std::shared_ptr<MemEnv::File> file_;
};

class MemWritableFile : public WritableFile {
 public:
  MemWritableFile(MemEnv* env, std::string name, std::shared_ptr<MemEnv::File> file)
      : env_(env), name_(std::move(name)), file_(std::move(file)) {}
  absl::Status Append(absl::string_view data) override {
    if (closed_) return absl::FailedPreconditionError(absl::StrCat(name_, " is closed"));
    size_t fits = data.size();
    {
      absl::MutexLock lock(&env_->mu_);
      if (env_->write_budget_ >= 0) {
        fits = std::min<size_t>(fits, static_cast<size_t>(env_->write_budget_));
        env_->write_budget_ -= static_cast<int64_t>(fits);
      }
    }
    {
      absl::MutexLock lock(&file_->mu);
      file_->data.append(data.data(), fits);
    }
    if (fits < data.size()) {
      return absl::ResourceExhaustedError(absl::StrCat("writing ", name_, ": no space left on device (injected)"));
    }
    return absl::OkStatus();
  }
  absl::Status Flush() override { return absl::OkStatus(); }
  absl::Status Sync() override { return absl::OkStatus(); }
  absl::Status Close() override {
    closed_ = true;
    return absl::OkStatus();
  }
  const std::string& name() const override { return name_; }

 private:
  MemEnv* env_;
  std::string name_;
  std::shared_ptr<MemEnv::File> file_;
  bool closed_ = false;
};

std::shared_ptr<MemEnv::File> MemEnv::Find(const std::string& path) const {
  absl::MutexLock lock(&mu_);
  auto it = files_.find(path);
  return it == files_.end() ? nullptr : it->second;
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> MemEnv::NewRandomAccessFile(const std::string& path) {
  auto f = Find(path);
  if (f == nullptr) return absl::NotFoundError(absl::StrCat("opening ", path, ": no such file"));
  return std::unique_ptr<RandomAccessFile>(new MemRandomAccessFile(this, path, std::move(f)));
}

absl::StatusOr<std::unique_ptr<WritableFile>> MemEnv::Open(const std::string& path, bool truncate) {
  std::shared_ptr<File> f;
  {
    absl::MutexLock lock(&mu_);
    auto& slot = files_[path];
    if (slot == nullptr || truncate) slot = std::make_shared<File>();
    f = slot;
  }
  return std::unique_ptr<WritableFile>(new MemWritableFile(this, path, std::move(f)));
}

absl::StatusOr<std::unique_ptr<WritableFile>> MemEnv::NewWritableFile(const std::string& path) {
  return Open(path, true);
}
absl::StatusOr<std::unique_ptr<WritableFile>> MemEnv::NewAppendableFile(const std::string& path) {
  return Open(path, false);
}

absl::Status MemEnv::FileExists(const std::string& path) {
  if (Find(path) == nullptr) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> MemEnv::GetFileSize(const std::string& path) {
  auto f = Find(path);
  if (f == nullptr) return absl::NotFoundError(absl::StrCat("stat ", path, ": no such file"));
  absl::MutexLock lock(&f->mu);
  return static_cast<uint64_t>(f->data.size());
}

absl::StatusOr<std::vector<std::string>> MemEnv::GetChildren(const std::string& dir) {
  std::string prefix = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  std::vector<std::string> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [path, f] : files_) {
    if (!absl::StartsWith(path, prefix)) continue;
    std::string rest = path.substr(prefix.size());
    rest = rest.substr(0, rest.find('/'));
    if (out.empty() || out.back() != rest) out.push_back(rest);
  }
  return out;
}

absl::Status MemEnv::RenameFile(const std::string& from, const std::string& to) {
  absl::MutexLock lock(&mu_);
  auto it = files_.find(from);
  if (it == files_.end()) return absl::NotFoundError(absl::StrCat("renaming ", from, ": no such file"));
  files_[to] = it->second;
  files_.erase(from);
  return absl::OkStatus();
}

absl::Status MemEnv::DeleteFile(const std::string& path) {
  absl::MutexLock lock(&mu_);
  if (files_.erase(path) == 0) return absl::NotFoundError(absl::StrCat("deleting ", path, ": no such file"));
  return absl::OkStatus();
}

void MemEnv::SetContents(const std::string& path, std::string data) {
  std::shared_ptr<File> f;
  {
    absl::MutexLock lock(&mu_);
    auto& slot = files_[path];
    if (slot == nullptr) slot = std::make_shared<File>();
    f = slot;
  }
  absl::MutexLock lock(&f->mu);
  f->data = std::move(data);
}

std::string MemEnv::GetContents(const std::string& path) const {
  auto f = Find(path);
  if (f == nullptr) return "";
  absl::MutexLock lock(&f->mu);
  return f->data;
}

void MemEnv::SetWriteBudget(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  write_budget_ = bytes;
}

void MemEnv::InjectReadError(const std::string& path, uint64_t offset) {
  absl::MutexLock lock(&mu_);
  read_errors_[path] = offset;
}

}  // namespace sluice

// MemEnv: an in-memory Env with fault injection, for tests (DESIGN.md "An Env
// for files"). Files are byte strings keyed by path; directories are implied
// by paths. Faults: a disk that fills up after N more bytes (Append writes
// what fits, then fails with ResourceExhausted, like a short write), I/O
// errors on reads that touch a given byte of a file, and direct edits of file
// contents (truncate, flip a bit) to model crashes and corruption.
// Thread safety: all methods may be called concurrently.
#ifndef SLUICE_INPUTS_TESTING_MEM_ENV_H_
#define SLUICE_INPUTS_TESTING_MEM_ENV_H_

#include <map>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "inputs/env.h"

namespace sluice {

class MemEnv : public Env {
 public:
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override;
  absl::Status FileExists(const std::string& path) override;
  absl::StatusOr<uint64_t> GetFileSize(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override;
  absl::Status RenameFile(const std::string& from, const std::string& to) override;
  absl::Status DeleteFile(const std::string& path) override;
  absl::Status RecursivelyCreateDir(const std::string&) override { return absl::OkStatus(); }

  // Direct access to contents (tests corrupt files with these).
  void SetContents(const std::string& path, std::string data);
  std::string GetContents(const std::string& path) const;

  // Appends fail once `bytes` more bytes have been written (-1: no limit).
  void SetWriteBudget(int64_t bytes);
  // Reads of `path` that cover byte `offset` fail with Unavailable.
  void InjectReadError(const std::string& path, uint64_t offset);

 private:
  friend class MemRandomAccessFile;
  friend class MemWritableFile;
  struct File {
    absl::Mutex mu;
    std::string data ABSL_GUARDED_BY(mu);
  };
  std::shared_ptr<File> Find(const std::string& path) const;
  absl::StatusOr<std::unique_ptr<WritableFile>> Open(const std::string& path, bool truncate);

  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<File>> files_ ABSL_GUARDED_BY(mu_);
  int64_t write_budget_ ABSL_GUARDED_BY(mu_) = -1;
  std::map<std::string, uint64_t> read_errors_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice

#endif  // SLUICE_INPUTS_TESTING_MEM_ENV_H_

// StringFile: a RandomAccessFile over bytes in memory, for readers that take a
// file (RecordReader, the IDX stream) when the bytes are already in memory
// (ParseIdx) or come from a fuzzer. Each Read copies into the caller's
// scratch buffer, as a real file does, so a reader that keeps a result past
// its scratch's life misbehaves here too (and ASan sees it).
// Ownership: views bytes it does not own; they must outlive it.
// Thread safety: Read is const and safe to call concurrently.
#ifndef SLUICE_ENGINE_PLATFORM_STRING_FILE_H_
#define SLUICE_ENGINE_PLATFORM_STRING_FILE_H_

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "engine/platform/env.h"

namespace sluice {

class StringFile : public RandomAccessFile {
 public:
  StringFile(absl::string_view bytes, std::string name) : bytes_(bytes), name_(std::move(name)) {}
  absl::Status Read(uint64_t offset, size_t n, absl::string_view* result, char* scratch) const override {
    if (offset >= bytes_.size()) {
      *result = absl::string_view();
      return absl::OkStatus();
    }
    const size_t len = std::min<uint64_t>(n, bytes_.size() - offset);
    std::memcpy(scratch, bytes_.data() + offset, len);
    *result = absl::string_view(scratch, len);
    return absl::OkStatus();
  }
  const std::string& name() const override { return name_; }

 private:
  absl::string_view bytes_;
  std::string name_;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_PLATFORM_STRING_FILE_H_

// Helpers shared by the fuzz targets: StringFile (engine/platform/string_file.h) over the
// fuzzer's bytes, a reader that takes option bytes off the front of an input, and FUZZ_CHECK, which aborts
// (a finding for libFuzzer, a failure for the replay test) when a target's own assertion
// about the code under test does not hold.
// Ownership: StringFile views bytes it does not own. Thread safety: none needed (one input
// at a time).
#ifndef SLUICE_TESTS_FUZZ_FUZZ_UTIL_H_
#define SLUICE_TESTS_FUZZ_FUZZ_UTIL_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/base/internal/endian.h"
#include "engine/platform/crc32c.h"
#include "engine/platform/env.h"
#include "engine/platform/string_file.h"

#define FUZZ_CHECK(cond, ...)                                                   \
  do {                                                                          \
    if (!(cond)) {                                                              \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, "  " __VA_ARGS__);                                   \
      std::fprintf(stderr, "\n");                                               \
      std::abort();                                                             \
    }                                                                           \
  } while (0)

namespace sluice {
namespace fuzz {

// The in-memory file the targets feed their readers.
using ::sluice::StringFile;

// Takes small option values off the front of an input; the rest is the payload.
class InputBytes {
 public:
  InputBytes(const uint8_t* data, size_t size) : rest_(reinterpret_cast<const char*>(data), size) {}
  // The next byte, or 0 when none is left.
  uint8_t Byte() {
    if (rest_.empty()) return 0;
    const uint8_t b = static_cast<uint8_t>(rest_[0]);
    rest_.remove_prefix(1);
    return b;
  }
  // Up to `n` bytes (fewer at the end).
  absl::string_view Take(size_t n) {
    absl::string_view out = rest_.substr(0, n);
    rest_.remove_prefix(out.size());
    return out;
  }
  // A piece whose length is the next little-endian uint16 (for inputs made of several parts).
  absl::string_view Piece() {
    const size_t n = Byte() | (static_cast<size_t>(Byte()) << 8);
    return Take(n);
  }
  absl::string_view rest() const { return rest_; }
  bool empty() const { return rest_.empty(); }

 private:
  absl::string_view rest_;
};

// Rewrites both checksums of every TFRecord frame in `bytes` that is complete enough to hold
// them, so that a fuzzer's bytes reach the record contents (lengths and data stay as given).
inline void FixRecordChecksums(std::string* bytes) {
  size_t pos = 0;
  while (bytes->size() - pos >= 12) {
    char* header = &(*bytes)[pos];
    absl::little_endian::Store32(header + 8, crc32c::Mask(crc32c::Value(header, 8)));
    const uint64_t length = absl::little_endian::Load64(header);
    if (length > bytes->size() - pos - 12 || bytes->size() - pos - 12 - length < 4) return;
    char* data = header + 12;
    absl::little_endian::Store32(data + length, crc32c::Mask(crc32c::Value(data, length)));
    pos += 12 + length + 4;
  }
}

}  // namespace fuzz
}  // namespace sluice

#endif  // SLUICE_TESTS_FUZZ_FUZZ_UTIL_H_

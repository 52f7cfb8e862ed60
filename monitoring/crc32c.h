// CRC32C (Castagnoli polynomial 0x82F63B78, reflected), as TFRecord framing and LevelDB use it,
// plus TensorFlow's mask for CRCs stored next to the data they cover. The system Abseil
// (20220623) has no absl/crc, hence this file. Uses the SSE4.2 crc32 instruction when the build
// targets it (-march=native on x86-64) and a table otherwise; both give identical results.
// Lives in sluice::monitoring::crc32c so it links beside inputs/' and checkpoint/'s copies
// (sluice::crc32c, sluice::checkpoint::crc32c) in one binary, like `train`.
// Ownership: none. Thread safety: pure functions.
#ifndef SLUICE_MONITORING_CRC32C_H_
#define SLUICE_MONITORING_CRC32C_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace sluice {
namespace monitoring {
namespace crc32c {

// The CRC32C of data[0, n) appended to a stream whose CRC32C so far is `crc` (0 to start).
uint32_t Extend(uint32_t crc, const char* data, size_t n);
inline uint32_t Value(const char* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(absl::string_view data) { return Extend(0, data.data(), data.size()); }

// The table implementation, always; exposed so tests can compare both paths.
uint32_t ExtendPortable(uint32_t crc, const char* data, size_t n);

// TensorFlow's masking (mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8): a CRC of data that
// itself contains CRCs is then not degenerate.
constexpr uint32_t kMaskDelta = 0xa282ead8u;
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
inline uint32_t Unmask(uint32_t masked) {
  const uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace crc32c
}  // namespace monitoring
}  // namespace sluice

#endif  // SLUICE_MONITORING_CRC32C_H_

// CRC32C (Castagnoli) for checkpoint chunks and whole tensors: SSE4.2 crc32
// instruction when the CPU has it (checked once at run time), else a
// slicing-by-8 table. Combine() joins the CRCs of two adjacent byte ranges, so
// a whole-tensor CRC comes from its chunk CRCs without a second pass.
// (inputs/ and monitoring/ have their own copies; to be deduplicated. Ours
// lives in namespace sluice::checkpoint so the copies can link together.)
// Thread safety: pure functions.
#ifndef SLUICE_CHECKPOINT_CRC32C_H_
#define SLUICE_CHECKPOINT_CRC32C_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace sluice {
namespace checkpoint {
namespace crc32c {

// The CRC32C of concat(A, data[0, n)) where init_crc is the CRC32C of A.
uint32_t Extend(uint32_t init_crc, const char* data, size_t n);
inline uint32_t Value(const char* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(absl::string_view s) { return Extend(0, s.data(), s.size()); }

// The portable table implementation (exposed so tests can compare the two).
uint32_t ExtendPortable(uint32_t init_crc, const char* data, size_t n);
bool UsesHardware();

// CRC32C of concat(A, B) from crc_a = CRC32C(A), crc_b = CRC32C(B), len_b = |B|.
uint32_t Combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

}  // namespace crc32c
}  // namespace checkpoint
}  // namespace sluice

#endif  // SLUICE_CHECKPOINT_CRC32C_H_

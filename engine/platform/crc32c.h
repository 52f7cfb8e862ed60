// CRC32C (Castagnoli polynomial 0x82F63B78, reflected): the one checksum of the
// project, used by TFRecord framing (input records, event files) and by
// checkpoints (chunks and whole tensors). The system Abseil (20220623) has no
// absl/crc, hence this file.
// Uses the SSE4.2 crc32 instruction (three interleaved streams, six in Extend
// from 672 bytes where they pay, combined with PCLMULQDQ) when the CPU has both (checked once
// at run time), else a slicing-by-8 table; when the build targets AVX-512F and
// VPCLMULQDQ, buffers of 64 bytes and more are instead folded 256 bytes at a
// time by carry-less multiplication (in Extend from 2 KiB, with six crc32
// streams over part of the buffer at the same time on a CPU where they pay,
// which Extend times once per process: UsesSixStreams). All give identical
// results. Combine joins the CRCs of two adjacent byte ranges without reading
// the bytes again. Mask/Unmask are TFRecord's masking of stored CRCs (a CRC of
// data that itself holds CRCs is then less degenerate).
// Ownership: none. Thread safety: pure functions.
#ifndef SLUICE_ENGINE_PLATFORM_CRC32C_H_
#define SLUICE_ENGINE_PLATFORM_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

#include "absl/strings/string_view.h"

namespace sluice {
namespace crc32c {

// The CRC32C of concat(A, data[0, n)) where init_crc is the CRC32C of A.
uint32_t Extend(uint32_t init_crc, const char* data, size_t n);
inline uint32_t Value(const char* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(absl::string_view s) { return Extend(0, s.data(), s.size()); }
// Value of exactly 8 bytes (a TFRecord length), inline: one crc32 instruction
// when the build targets SSE4.2 (-march=native on such a CPU), else Value.
inline uint32_t ValueOf8Bytes(const char* data) {
#if defined(__SSE4_2__) && defined(__x86_64__)
  uint64_t word;
  std::memcpy(&word, data, 8);
  return ~static_cast<uint32_t>(_mm_crc32_u64(0xffffffffu, word));
#else
  return Value(data, 8);
#endif
}
// Extend that also copies data[0, n) to dst[0, n) in the same pass (for a
// reader that verifies a record while copying it out of its buffer).
// REQUIRES: the two ranges do not overlap.
uint32_t ExtendAndCopy(uint32_t init_crc, const char* data, size_t n, char* dst);

// The portable table implementation (exposed so tests can compare the two).
uint32_t ExtendPortable(uint32_t init_crc, const char* data, size_t n);
// True when Extend uses the SSE4.2 and PCLMULQDQ instructions.
bool UsesHardware();
// True when Extend runs six crc32 streams over long buffers (beside folding
// in AVX-512 builds): chosen once per process by timing both ways, or by
// SLUICE_CRC32C_SIX_STREAMS=1/0.
bool UsesSixStreams();
// Extend with the six streams on or off whatever UsesSixStreams says, so that
// tests check both ways on any CPU.
uint32_t ExtendWithSixStreamsForTesting(uint32_t init_crc, const char* data, size_t n, bool six_streams);

// The CRC32C of concat(A, B) from crc_a = CRC32C(A), crc_b = CRC32C(B) and
// len_b = |B| (O(log len_b) carry-less products; A and B are not read).
uint32_t Combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

constexpr uint32_t kMaskDelta = 0xa282ead8u;
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
inline uint32_t Unmask(uint32_t masked) {
  uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace crc32c
}  // namespace sluice

#endif  // SLUICE_ENGINE_PLATFORM_CRC32C_H_

// CRC32C: slicing-by-4 tables built once, and the SSE4.2 path when compiled for it.
#include "monitoring/crc32c.h"

#include <array>
#include <cstring>

#if defined(__SSE4_2__) && defined(__x86_64__)
#include <nmmintrin.h>
#define SLUICE_CRC32C_HW 1
#endif

namespace sluice {
namespace monitoring {
namespace crc32c {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli

struct Tables {
  std::array<std::array<uint32_t, 256>, 4> t;
  Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 4; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};

const Tables& GetTables() {
  static const Tables* tables = new Tables();
  return *tables;
}

}  // namespace

uint32_t ExtendPortable(uint32_t crc, const char* data, size_t n) {
  const auto& t = GetTables().t;
  const auto* p = reinterpret_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  while (n >= 4) {
    uint32_t word;
    std::memcpy(&word, p, 4);  // little-endian host (x86-64, aarch64)
    c ^= word;
    c = t[3][c & 0xff] ^ t[2][(c >> 8) & 0xff] ^ t[1][(c >> 16) & 0xff] ^ t[0][c >> 24];
    p += 4;
    n -= 4;
  }
  while (n-- > 0) c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return ~c;
}

uint32_t Extend(uint32_t crc, const char* data, size_t n) {
#ifdef SLUICE_CRC32C_HW
  const auto* p = reinterpret_cast<const uint8_t*>(data);
  uint64_t c = static_cast<uint32_t>(~crc);
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n-- > 0) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
#else
  return ExtendPortable(crc, data, n);
#endif
}

}  // namespace crc32c
}  // namespace monitoring
}  // namespace sluice

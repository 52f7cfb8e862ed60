// CRC32C implementation: see crc32c.h.
#include "checkpoint/crc32c.h"

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

namespace sluice {
namespace checkpoint {
namespace crc32c {
namespace {

constexpr uint32_t kPoly = 0x82f63b78u;  // reflected Castagnoli polynomial

struct Tables {
  uint32_t t[8][256];
  Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};

const Tables& GetTables() {
  static const Tables* tables = new Tables();
  return *tables;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t ExtendHardware(uint32_t crc, const char* p, size_t n) {
  uint64_t c = ~crc;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), static_cast<uint8_t>(*p));
    ++p;
    --n;
  }
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), static_cast<uint8_t>(*p));
    ++p;
    --n;
  }
  return ~static_cast<uint32_t>(c);
}

bool DetectSse42() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  return (ecx & bit_SSE4_2) != 0;
}
#endif

// GF(2) matrix helpers for Combine (as in zlib's crc32_combine).
uint32_t Gf2MatrixTimes(const uint32_t* mat, uint32_t vec) {
  uint32_t sum = 0;
  while (vec) {
    if (vec & 1) sum ^= *mat;
    vec >>= 1;
    ++mat;
  }
  return sum;
}

void Gf2MatrixSquare(uint32_t* square, const uint32_t* mat) {
  for (int n = 0; n < 32; ++n) square[n] = Gf2MatrixTimes(mat, mat[n]);
}

}  // namespace

uint32_t ExtendPortable(uint32_t crc, const char* data, size_t n) {
  const Tables& t = GetTables();
  const uint8_t* p = reinterpret_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = t.t[7][lo & 0xff] ^ t.t[6][(lo >> 8) & 0xff] ^ t.t[5][(lo >> 16) & 0xff] ^ t.t[4][lo >> 24] ^
        t.t[3][hi & 0xff] ^ t.t[2][(hi >> 8) & 0xff] ^ t.t[1][(hi >> 16) & 0xff] ^ t.t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    c = t.t[0][(c ^ *p) & 0xff] ^ (c >> 8);
    ++p;
    --n;
  }
  return ~c;
}

bool UsesHardware() {
#if defined(__x86_64__)
  static const bool has = DetectSse42();
  return has;
#else
  return false;
#endif
}

uint32_t Extend(uint32_t crc, const char* data, size_t n) {
#if defined(__x86_64__)
  if (UsesHardware()) return ExtendHardware(crc, data, n);
#endif
  return ExtendPortable(crc, data, n);
}

uint32_t Combine(uint32_t crc1, uint32_t crc2, uint64_t len2) {
  if (len2 == 0) return crc1;
  uint32_t even[32];
  uint32_t odd[32];
  odd[0] = kPoly;
  uint32_t row = 1;
  for (int n = 1; n < 32; ++n) {
    odd[n] = row;
    row <<= 1;
  }
  Gf2MatrixSquare(even, odd);  // 2 zero bits
  Gf2MatrixSquare(odd, even);  // 4 zero bits
  do {
    Gf2MatrixSquare(even, odd);
    if (len2 & 1) crc1 = Gf2MatrixTimes(even, crc1);
    len2 >>= 1;
    if (len2 == 0) break;
    Gf2MatrixSquare(odd, even);
    if (len2 & 1) crc1 = Gf2MatrixTimes(odd, crc1);
    len2 >>= 1;
  } while (len2 != 0);
  return crc1 ^ crc2;
}

}  // namespace crc32c
}  // namespace checkpoint
}  // namespace sluice

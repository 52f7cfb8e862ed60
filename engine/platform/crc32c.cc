// CRC32C: slicing-by-8 tables built once, an SSE4.2 + PCLMUL path chosen at
// run time, and Combine by arithmetic on polynomials mod P.
#include "engine/platform/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#include <wmmintrin.h>
#endif

namespace sluice {
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
  static const Tables* tables = new Tables;
  return *tables;
}

#if defined(__x86_64__)
// The hardware path: the crc32 instruction has a latency of three cycles and a
// throughput of one, so three independent streams run over three consecutive
// blocks of L bytes and are then combined. Moving a CRC state s over L zero
// bytes multiplies it by x^(8L) mod P; with reflected bit order that is
// crc32_u64(0, clmul(s, x^(8L-33) mod P)) (the product's extra factor x and
// the instruction's x^32 make up the 33). Every multiple of 8 bytes up to
// kLong has its constant, so a record of any length is one three-way pass
// plus a tail of under 24 bytes.
constexpr size_t kLong = 8192;        // block of the long loop
constexpr size_t kMaxWords = kLong / 8;
constexpr size_t kMinThreeWay = 64;   // below this, one stream is as fast

// x^n mod P (reflected: bit i is the coefficient of x^(31-i)) from x^m mod P.
uint32_t TimesXPow(uint32_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) v = (v >> 1) ^ ((v & 1) ? kPoly : 0);
  return v;
}

struct CombineConstants {
  uint32_t one[kMaxWords + 1];  // [j]: x^(64j - 33) mod P, shifts a state over 8j bytes
  uint32_t two[kMaxWords + 1];  // [j]: x^(128j - 33) mod P, shifts a state over 16j bytes
  CombineConstants() {
    one[0] = two[0] = 0;  // unused
    uint32_t a = TimesXPow(0x80000000u, 31), b = TimesXPow(0x80000000u, 95);
    for (size_t j = 1; j <= kMaxWords; ++j) {
      one[j] = a;
      two[j] = b;
      a = TimesXPow(a, 64);
      b = TimesXPow(b, 128);
    }
  }
};

const CombineConstants& GetCombineConstants() {
  static const CombineConstants* k = new CombineConstants;
  return *k;
}

#define SLUICE_CRC_TARGET __attribute__((target("sse4.2,pclmul")))

// s * x^(8L) mod P, where k = x^(8L-33) mod P.
SLUICE_CRC_TARGET inline uint32_t Shift(uint32_t s, uint32_t k) {
  __m128i product = _mm_clmulepi64_si128(_mm_cvtsi32_si128(static_cast<int>(s)),
                                         _mm_cvtsi32_si128(static_cast<int>(k)), 0x00);
  return static_cast<uint32_t>(_mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(product))));
}

// The state after blocks p[0, 3 * 8j) from state `crc`, three streams at once;
// with kCopy, the blocks are also copied to dst.
// REQUIRES: 1 <= j <= kMaxWords.
template <bool kCopy>
SLUICE_CRC_TARGET inline uint32_t ThreeWay(uint32_t crc, const char* p, char* dst, size_t j,
                                           const CombineConstants& k) {
  const size_t block = 8 * j;
  uint64_t c0 = crc, c1 = 0, c2 = 0;
  const char* end = p + block;
  do {
    uint64_t w0, w1, w2;
    std::memcpy(&w0, p, 8);
    std::memcpy(&w1, p + block, 8);
    std::memcpy(&w2, p + 2 * block, 8);
    if (kCopy) {
      std::memcpy(dst, &w0, 8);
      std::memcpy(dst + block, &w1, 8);
      std::memcpy(dst + 2 * block, &w2, 8);
      dst += 8;
    }
    c0 = _mm_crc32_u64(c0, w0);
    c1 = _mm_crc32_u64(c1, w1);
    c2 = _mm_crc32_u64(c2, w2);
    p += 8;
  } while (p < end);
  return Shift(static_cast<uint32_t>(c0), k.two[j]) ^ Shift(static_cast<uint32_t>(c1), k.one[j]) ^
         static_cast<uint32_t>(c2);
}

template <bool kCopy>
SLUICE_CRC_TARGET uint32_t ExtendHardware(uint32_t init_crc, const char* p, size_t n, char* dst) {
  // Unaligned 8-byte loads cost nothing extra on x86-64, so no prologue.
  uint32_t c = init_crc ^ 0xffffffffu;
  if (n >= kMinThreeWay) {
    const CombineConstants& k = GetCombineConstants();
    while (n >= 3 * kLong) {
      c = ThreeWay<kCopy>(c, p, dst, kMaxWords, k);
      p += 3 * kLong;
      if (kCopy) dst += 3 * kLong;
      n -= 3 * kLong;
    }
    if (n >= kMinThreeWay) {
      const size_t j = n / 24;
      c = ThreeWay<kCopy>(c, p, dst, j, k);
      p += 24 * j;
      if (kCopy) dst += 24 * j;
      n -= 24 * j;
    }
  }
  if (kCopy && n > 0) std::memcpy(dst, p, n);
  uint64_t c64 = c;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c64 = _mm_crc32_u64(c64, word);
    p += 8;
    n -= 8;
  }
  c = static_cast<uint32_t>(c64);
  if (n >= 4) {
    uint32_t word;
    std::memcpy(&word, p, 4);
    c = _mm_crc32_u32(c, word);
    p += 4;
    n -= 4;
  }
  while (n > 0) {
    c = _mm_crc32_u8(c, static_cast<uint8_t>(*p++));
    --n;
  }
  return c ^ 0xffffffffu;
}

bool DetectHardware() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul");
}
#else
template <bool kCopy>
uint32_t ExtendHardware(uint32_t init_crc, const char* p, size_t n, char* dst) {
  if (kCopy && n > 0) std::memcpy(dst, p, n);
  return ExtendPortable(init_crc, p, n);
}
bool DetectHardware() { return false; }
#endif

// a * b mod P in the reflected representation (bit 31 is the coefficient of
// x^0, bit 0 that of x^31): for each set bit of a, from x^0 upwards, add b
// times that power of x.
uint32_t MultiplyModP(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t bit = 0x80000000u; bit != 0; bit >>= 1) {
    if (a & bit) product ^= b;
    b = (b >> 1) ^ ((b & 1) ? kPoly : 0);  // b *= x
  }
  return product;
}

// x^(8n) mod P: square-and-multiply over the bits of n, from x^8.
uint32_t XPowEightN(uint64_t n) {
  uint32_t result = 0x80000000u;        // x^0
  uint32_t power = 0x80000000u >> 8;    // x^8
  while (n != 0) {
    if (n & 1) result = MultiplyModP(result, power);
    power = MultiplyModP(power, power);
    n >>= 1;
  }
  return result;
}

}  // namespace

uint32_t ExtendPortable(uint32_t init_crc, const char* data, size_t n) {
  const Tables& tb = GetTables();
  const auto* p = reinterpret_cast<const uint8_t*>(data);
  uint32_t c = init_crc ^ 0xffffffffu;
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;  // little-endian hosts only (x86-64, aarch64)
    c = tb.t[7][lo & 0xff] ^ tb.t[6][(lo >> 8) & 0xff] ^ tb.t[5][(lo >> 16) & 0xff] ^ tb.t[4][lo >> 24] ^
        tb.t[3][hi & 0xff] ^ tb.t[2][(hi >> 8) & 0xff] ^ tb.t[1][(hi >> 16) & 0xff] ^ tb.t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    c = (c >> 8) ^ tb.t[0][(c ^ *p++) & 0xff];
    --n;
  }
  return c ^ 0xffffffffu;
}

bool UsesHardware() {
  static const bool hw = DetectHardware();
  return hw;
}

uint32_t Extend(uint32_t init_crc, const char* data, size_t n) {
  return UsesHardware() ? ExtendHardware<false>(init_crc, data, n, nullptr) : ExtendPortable(init_crc, data, n);
}

uint32_t ExtendAndCopy(uint32_t init_crc, const char* data, size_t n, char* dst) {
  if (UsesHardware()) return ExtendHardware<true>(init_crc, data, n, dst);
  if (n > 0) std::memcpy(dst, data, n);
  return ExtendPortable(init_crc, data, n);
}

// The pre- and post-conditioning (the two 0xffffffff XORs) cancel between
// CRC(A || B) and CRC(B), so what remains is A's CRC moved over |B| zero bytes,
// i.e. multiplied by x^(8|B|) mod P.
uint32_t Combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  if (len_b == 0) return crc_a;
  return MultiplyModP(crc_a, XPowEightN(len_b)) ^ crc_b;
}

}  // namespace crc32c
}  // namespace sluice

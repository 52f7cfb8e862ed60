// CRC32C: slicing-by-8 tables built once, an SSE4.2 + PCLMUL path chosen at
// run time (three or six crc32 streams; with 512-bit VPCLMULQDQ folding for
// buffers of 64 bytes and more when the build targets AVX-512, beside six
// crc32 streams from 2 KiB up where the CPU runs them fast enough: timed once),
// and Combine by arithmetic on polynomials mod P.
#include "engine/platform/crc32c.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "engine/platform/logging.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#include <wmmintrin.h>
#endif
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__VPCLMULQDQ__)
#include <immintrin.h>
#define SLUICE_CRC32C_FOLD 1
#else
#define SLUICE_CRC32C_FOLD 0
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
// throughput of one per cycle on many cores (two on a Zen 5: see SixStreams),
// so three independent streams run over three consecutive blocks of L bytes
// and are then combined. Moving a CRC state s over L zero
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

// Six crc32 streams over six consecutive blocks: the instruction's latency is
// three cycles and a Zen 5 issues two per cycle (a probe: 9.4 GB/s for one
// stream, 28 for three, 52 for six), so six independent streams keep it busy.
// With folding (AVX-512 builds) they run beside it (Hybrid below; alone, they
// were slower than folding for a kilobyte in BM_Crc32c); without it they take
// ThreeWay's place from kMinSixWay bytes (SixWay). At the end, each block's
// state is moved over the blocks after it (Shift) and the states are added.
constexpr size_t kStreams = 6;
constexpr size_t kMaxStreamWords = kMaxWords / kStreams;  // Shift's constants reach 8 * kMaxWords bytes

struct SixStreams {
  const char* q;  // the first block; block i starts i blocks later
  size_t block;   // bytes per block, a multiple of 8
  uint64_t c0 = 0, c1 = 0, c2 = 0, c3 = 0, c4 = 0, c5 = 0;

  // The eight bytes at `offset` of every block.
  SLUICE_CRC_TARGET void Step(size_t offset) {
    c0 = _mm_crc32_u64(c0, Word(0, offset));
    c1 = _mm_crc32_u64(c1, Word(1, offset));
    c2 = _mm_crc32_u64(c2, Word(2, offset));
    c3 = _mm_crc32_u64(c3, Word(3, offset));
    c4 = _mm_crc32_u64(c4, Word(4, offset));
    c5 = _mm_crc32_u64(c5, Word(5, offset));
  }
  uint64_t Word(size_t stream, size_t offset) const {
    uint64_t w;
    std::memcpy(&w, q + stream * block + offset, 8);
    return w;
  }
  // The raw state at the end of the six blocks, given `before`, the raw state
  // at the start of the first (the streams themselves start from zero).
  // REQUIRES: block / 8 <= kMaxStreamWords.
  SLUICE_CRC_TARGET uint32_t Combined(uint32_t before, const CombineConstants& k) const {
    const size_t w = block / 8;
    return Shift(before, k.one[6 * w]) ^ Shift(static_cast<uint32_t>(c0), k.one[5 * w]) ^
           Shift(static_cast<uint32_t>(c1), k.one[4 * w]) ^ Shift(static_cast<uint32_t>(c2), k.one[3 * w]) ^
           Shift(static_cast<uint32_t>(c3), k.one[2 * w]) ^ Shift(static_cast<uint32_t>(c4), k.one[w]) ^
           static_cast<uint32_t>(c5);
  }
};

// The raw state after p[0, 48 * words) from raw state `state`, six streams
// at once (builds without folding).
// REQUIRES: 1 <= words <= kMaxStreamWords.
SLUICE_CRC_TARGET inline uint32_t SixWay(uint32_t state, const char* p, size_t words, const CombineConstants& k) {
  SixStreams streams{p, 8 * words};
  for (size_t offset = 0; offset < streams.block; offset += 8) streams.Step(offset);
  return streams.Combined(state, k);
}
constexpr size_t kMinSixWay = 672;  // below, ThreeWay was as fast or faster (Zen 5, AVX2 build)

#if SLUICE_CRC32C_FOLD
// Carry-less folding with 512-bit VPCLMULQDQ, for buffers of 64 bytes and more
// when the build targets AVX-512F and VPCLMULQDQ (-march=native on such a CPU).
// The idea: the CRC state after a message M is M(x) * x^32 mod P (the
// pre-conditioning enters as an XOR of the state into M's first four bytes).
// Any polynomial congruent to M mod P gives the same state, so the message is
// shortened ("folded") 16 bytes at a time: a 16-byte lane L that sits d bits
// ahead of a later lane N is replaced by L * x^d mod P, added into N. With
// L = H * x^64 + Lo (H is the lane's first eight bytes, the higher powers in
// the reflected bit order), L * x^d = H * x^(d+64) + Lo * x^d, and each half
// needs one 64 x 32-bit carry-less product with a constant, a result of under
// 96 bits that fits in N's 128. The bytes that are left (one lane) are then a
// 16-byte message whose CRC from state zero, by the crc32 instruction, is the
// state.
//
// Bit order: a reflected 32-bit constant k (bit i is the coefficient of
// x^(31-i)) in the low half of a 64-bit lane stands for k * x^32, and the
// carry-less product of two reflected values comes out with one more factor
// of x; so the multiplier x^e is stored as x^(e-33) mod P, as in Shift above.
//
// Four 512-bit accumulators (16 lanes, 256 bytes) are folded per iteration:
// the products of one iteration do not depend on each other, so the loop is
// bound by the multiplier's throughput, not its latency.
constexpr size_t kMinFold = 64;  // below, the three crc32 streams are no faster

// x^e mod P, reflected, by e multiplications of x^0 by x (compile time only).
constexpr uint32_t XPowModP(uint32_t e) {
  uint32_t v = 0x80000000u;  // x^0
  for (uint32_t i = 0; i < e; ++i) v = (v >> 1) ^ ((v & 1) ? kPoly : 0);
  return v;
}

// The two multipliers that move a lane forward over `bytes` bytes (d = 8 *
// bytes bits): `high` multiplies the lane's first eight bytes by x^(d+64),
// `low` its last eight by x^d; both with the -33 of the file comment.
struct FoldConstant {
  uint64_t high;
  uint64_t low;
};
constexpr FoldConstant ForDistance(uint32_t bytes) {
  return {XPowModP(8 * bytes + 64 - 33), XPowModP(8 * bytes - 33)};
}

constexpr FoldConstant k16 = ForDistance(16);    // lane to the next lane
constexpr FoldConstant k32 = ForDistance(32);
constexpr FoldConstant k48 = ForDistance(48);
constexpr FoldConstant k64 = ForDistance(64);    // a register to the next
constexpr FoldConstant k128 = ForDistance(128);
constexpr FoldConstant k192 = ForDistance(192);
constexpr FoldConstant k256 = ForDistance(256);  // over the four accumulators

// The constant in every 128-bit lane: `high` in the low quadword (which holds
// the lane's first eight bytes), `low` in the high quadword.
SLUICE_CRC_TARGET inline __m512i Broadcast(FoldConstant k) {
  const auto high = static_cast<long long>(k.high), low = static_cast<long long>(k.low);
  return _mm512_set_epi64(low, high, low, high, low, high, low, high);
}

// Every lane of x moved forward by the distance of k, added to next.
SLUICE_CRC_TARGET inline __m512i FoldInto(__m512i x, __m512i k, __m512i next) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11),
                                   next, 0x96);  // a ^ b ^ c
}

// The 64 bytes at p + offset (and with kCopy, a copy at dst + offset).
template <bool kCopy>
SLUICE_CRC_TARGET inline __m512i Load64(const char* p, char* dst, size_t offset) {
  const __m512i v = _mm512_loadu_si512(p + offset);
  if (kCopy) _mm512_storeu_si512(dst + offset, v);
  return v;
}

// The four accumulators of 256 consecutive bytes folded into the last
// register; the six products are independent.
SLUICE_CRC_TARGET inline __m512i FoldFour(__m512i x0, __m512i x1, __m512i x2, __m512i x3) {
  __m512i x = FoldInto(x2, Broadcast(k64), x3);
  x = FoldInto(x1, Broadcast(k128), x);
  return FoldInto(x0, Broadcast(k192), x);
}

// A register's four lanes folded into its last (lanes 0, 1 and 2 move over 48,
// 32 and 16 bytes; lane 3's constants are zero, so its products are too).
SLUICE_CRC_TARGET inline __m128i FoldLanes(__m512i x) {
  const __m512i lanes = _mm512_set_epi64(0, 0, static_cast<long long>(k16.low), static_cast<long long>(k16.high),
                                         static_cast<long long>(k32.low), static_cast<long long>(k32.high),
                                         static_cast<long long>(k48.low), static_cast<long long>(k48.high));
  const __m512i moved =
      _mm512_xor_si512(_mm512_clmulepi64_epi128(x, lanes, 0x00), _mm512_clmulepi64_epi128(x, lanes, 0x11));
  // (maskz_ forms: GCC 12 warns about the undefined upper bits of the plain ones.)
  const __m256i half = _mm256_xor_si256(_mm512_maskz_extracti64x4_epi64(0xff, moved, 0),
                                        _mm512_maskz_extracti64x4_epi64(0xff, moved, 1));
  return _mm_xor_si128(_mm_xor_si128(_mm256_castsi256_si128(half), _mm256_extracti128_si256(half, 1)),
                       _mm512_maskz_extracti32x4_epi32(0xf, x, 3));
}

// The state of a folded 16-byte message: its CRC from state zero.
SLUICE_CRC_TARGET inline uint32_t LaneState(__m128i r) {
  const uint64_t first = static_cast<uint64_t>(_mm_cvtsi128_si64(r));
  const uint64_t second = static_cast<uint64_t>(_mm_extract_epi64(r, 1));
  return static_cast<uint32_t>(_mm_crc32_u64(_mm_crc32_u64(0, first), second));
}

// The raw state (no conditioning) after data[0, n) from raw state `state`,
// for n rounded down to a multiple of 16; *consumed is set to that count and
// the caller finishes the rest (under 16 bytes). With kCopy, the consumed bytes
// are also copied to dst.
// REQUIRES: n >= kMinFold.
template <bool kCopy>
SLUICE_CRC_TARGET uint32_t Fold(uint32_t state, const char* p, size_t n, char* dst, size_t* consumed) {
  const char* const begin = p;
  // The state enters as an XOR into the first four bytes.
  const __m512i entry = _mm512_maskz_set1_epi32(1, static_cast<int>(state));
  __m512i x;
  if (n >= 256) {
    __m512i x0 = _mm512_xor_si512(Load64<kCopy>(p, dst, 0), entry);
    __m512i x1 = Load64<kCopy>(p, dst, 64);
    __m512i x2 = Load64<kCopy>(p, dst, 128);
    __m512i x3 = Load64<kCopy>(p, dst, 192);
    p += 256;
    if (kCopy) dst += 256;
    n -= 256;
    const __m512i k = Broadcast(k256);
    while (n >= 256) {
      x0 = FoldInto(x0, k, Load64<kCopy>(p, dst, 0));
      x1 = FoldInto(x1, k, Load64<kCopy>(p, dst, 64));
      x2 = FoldInto(x2, k, Load64<kCopy>(p, dst, 128));
      x3 = FoldInto(x3, k, Load64<kCopy>(p, dst, 192));
      p += 256;
      if (kCopy) dst += 256;
      n -= 256;
    }
    x = FoldFour(x0, x1, x2, x3);
  } else {
    x = _mm512_xor_si512(Load64<kCopy>(p, dst, 0), entry);
    p += 64;
    if (kCopy) dst += 64;
    n -= 64;
  }
  const __m512i k = Broadcast(k64);
  while (n >= 64) {
    x = FoldInto(x, k, Load64<kCopy>(p, dst, 0));
    p += 64;
    if (kCopy) dst += 64;
    n -= 64;
  }
  __m128i r = FoldLanes(x);
  const __m128i k1 = _mm_set_epi64x(static_cast<long long>(k16.low), static_cast<long long>(k16.high));
  while (n >= 16) {
    const __m128i next = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if (kCopy) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), next);
      dst += 16;
    }
    r = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(r, k1, 0x00), _mm_clmulepi64_si128(r, k1, 0x11)), next);
    p += 16;
    n -= 16;
  }
  *consumed = static_cast<size_t>(p - begin);
  return LaneState(r);
}

// Both units at once. Folding is bound by the carry-less multiplier (about
// 0.4 VPCLMULQDQ per cycle on a Zen 5: 13 bytes per cycle) and leaves the
// integer units idle, where the crc32 streams run (16 bytes per cycle). So a
// piece of the buffer is split in two: its first 256 * (folds + 1) bytes are
// folded while six streams run over the 48 * words bytes after them,
// kHybridWordsPerFold words of each stream beside each fold; the streams'
// last words run beside the folded registers' reduction.
constexpr size_t kHybridWordsPerFold = 6;  // 288 bytes of streams beside each 256 folded
constexpr size_t kHybridTailWords = 10;    // per stream, beside the reduction
constexpr size_t kHybridMaxFolds = 24;     // pieces of at most 6400 + 48 * 154 bytes

constexpr size_t kMinHybrid = 2048;  // below, folding alone is as fast (or faster)

constexpr size_t HybridBytes(size_t folds, size_t words) { return 256 * (folds + 1) + 8 * kStreams * words; }
// Bytes of a piece per fold (256 folded, 288 in streams) and beside the
// reduction; the largest piece.
constexpr size_t kHybridPerFold = 256 + 8 * kStreams * kHybridWordsPerFold;
constexpr size_t kHybridTailBytes = 8 * kStreams * kHybridTailWords;
constexpr size_t kHybridMaxPiece = HybridBytes(kHybridMaxFolds, kHybridWordsPerFold * kHybridMaxFolds + kHybridTailWords);
static_assert(kHybridMaxPiece == 13792, "the tests name this size");
// A piece under kHybridMaxPiece has fewer folds and at most (kHybridPerFold +
// kHybridTailBytes - 1) / 48 words beyond six per fold (see ExtendHardware):
// its streams stay within Shift's constants too.
static_assert(kHybridWordsPerFold * (kHybridMaxFolds - 1) + (kHybridPerFold + kHybridTailBytes - 1) / (8 * kStreams) <=
                  kMaxStreamWords,
              "");
// Every piece has at least one fold.
static_assert(kMinHybrid - 256 >= kHybridTailBytes + kHybridPerFold, "");

// The raw state after the HybridBytes(folds, words) bytes at p from raw state
// `state`.
// REQUIRES: kHybridWordsPerFold * folds <= words <= kMaxStreamWords, words >= 1.
SLUICE_CRC_TARGET uint32_t Hybrid(uint32_t state, const char* p, size_t folds, size_t words,
                                  const CombineConstants& k) {
  DCHECK(words >= 1 && kHybridWordsPerFold * folds <= words && words <= kMaxStreamWords);
  SixStreams streams{p + 256 * (folds + 1), 8 * words};
  const __m512i entry = _mm512_maskz_set1_epi32(1, static_cast<int>(state));
  __m512i x0 = _mm512_xor_si512(Load64<false>(p, nullptr, 0), entry);
  __m512i x1 = Load64<false>(p, nullptr, 64);
  __m512i x2 = Load64<false>(p, nullptr, 128);
  __m512i x3 = Load64<false>(p, nullptr, 192);
  const __m512i k256x = Broadcast(k256);
  size_t offset = 0;
  for (size_t f = 0; f < folds; ++f) {
    p += 256;
    x0 = FoldInto(x0, k256x, Load64<false>(p, nullptr, 0));
    x1 = FoldInto(x1, k256x, Load64<false>(p, nullptr, 64));
    x2 = FoldInto(x2, k256x, Load64<false>(p, nullptr, 128));
    x3 = FoldInto(x3, k256x, Load64<false>(p, nullptr, 192));
#pragma GCC unroll 6
    for (size_t u = 0; u < kHybridWordsPerFold; ++u, offset += 8) streams.Step(offset);
  }
  const uint32_t folded = LaneState(FoldLanes(FoldFour(x0, x1, x2, x3)));
  for (; offset < streams.block; offset += 8) streams.Step(offset);
  return streams.Combined(folded, k);
}

#endif  // SLUICE_CRC32C_FOLD

// `six_streams`: whether the six crc32 streams run (Hybrid beside folding,
// SixWay without it; SixStreamsPay says when they do). kCopy never uses them.
template <bool kCopy>
SLUICE_CRC_TARGET uint32_t ExtendHardware(uint32_t init_crc, const char* p, size_t n, char* dst, bool six_streams) {
  // Unaligned 8-byte loads cost nothing extra on x86-64, so no prologue.
  uint32_t c = init_crc ^ 0xffffffffu;
#if SLUICE_CRC32C_FOLD
  if (!kCopy && six_streams) {
    // Folding and six crc32 streams at once (Hybrid), in pieces of at most
    // kHybridMaxPiece bytes; the last piece takes every stream word that is
    // left, so under 48 bytes remain. A piece before the last leaves at
    // least kMinHybrid bytes for it.
    const CombineConstants& k = GetCombineConstants();
    while (n >= kMinHybrid) {
      const size_t budget = n > kHybridMaxPiece && n - kHybridMaxPiece < kMinHybrid ? n - kMinHybrid : n;
      const size_t spare = budget - 256;
      size_t folds = (spare - kHybridTailBytes) / kHybridPerFold;  // >= 1 (static_assert above)
      size_t words;
      if (folds >= kHybridMaxFolds) {
        folds = kHybridMaxFolds;
        words = kHybridWordsPerFold * folds + kHybridTailWords;
      } else {  // 6 * folds + 10 <= words <= 6 * folds + 21
        words = (spare - 256 * folds) / (8 * kStreams);
      }
      c = Hybrid(c, p, folds, words, k);
      const size_t done = HybridBytes(folds, words);
      p += done;
      n -= done;
    }
  }
  // 512-bit carry-less folding down to a tail of under 16 bytes.
  if (n >= kMinFold) {
    size_t consumed;
    c = Fold<kCopy>(c, p, n, dst, &consumed);
    p += consumed;
    if (kCopy) dst += consumed;
    n -= consumed;
  }
#endif
  if (n >= kMinThreeWay) {
    const CombineConstants& k = GetCombineConstants();
#if !SLUICE_CRC32C_FOLD
    if (!kCopy && six_streams) {  // (with a copy, ThreeWay: 8-byte stores in six streams were slower)
      constexpr size_t kMaxBlock = 8 * kStreams * kMaxStreamWords;
      while (n >= kMaxBlock) {
        c = SixWay(c, p, kMaxStreamWords, k);
        p += kMaxBlock;
        n -= kMaxBlock;
      }
      if (n >= kMinSixWay) {
        const size_t words = n / (8 * kStreams);
        c = SixWay(c, p, words, k);
        p += 8 * kStreams * words;
        n -= 8 * kStreams * words;
      }
    }
#endif
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
uint32_t ExtendHardware(uint32_t init_crc, const char* p, size_t n, char* dst, bool /*six_streams*/) {
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

namespace {

// Whether the six crc32 streams make long buffers faster on this CPU. They
// need a core that issues two crc32 instructions per cycle: on a Zen 5 they
// did (session 34: 64 KiB in L1 at 75-81 GB/s against 47-51 by folding
// alone), on a Zen 4, which issues one, they were 1.1-1.6x slower in L1 and
// 1.3-3.4x from memory (docs/PERFORMANCE.md, session 42). So both ways are
// timed once per process on 8 KiB in L1 (one untimed call of each first,
// then five alternated windows of 64 calls each, about 0.1 ms in all), and
// the streams are used only when clearly faster. The results are the same
// either way. SLUICE_CRC32C_SIX_STREAMS=1 or 0 decides instead (other values
// are ignored).
bool SixStreamsPay() {
  if (!UsesHardware()) return false;
  if (const char* forced = std::getenv("SLUICE_CRC32C_SIX_STREAMS"); forced != nullptr) {
    if (std::strcmp(forced, "1") == 0) return true;
    if (std::strcmp(forced, "0") == 0) return false;
  }
  alignas(64) char buffer[8192];
  for (size_t i = 0; i < sizeof(buffer); ++i) buffer[i] = static_cast<char>(i * 2654435761u >> 13);
  uint32_t sink = 0;
  auto calls = [&](int count, bool six) {
    for (int call = 0; call < count; ++call) {
      // The buffer may have changed and the result is used: no call can be
      // dropped or moved out of the timed window.
      asm volatile("" : : "r"(buffer) : "memory");
      sink = ExtendHardware<false>(sink, buffer, sizeof(buffer), nullptr, six);
      asm volatile("" : "+r"(sink));
    }
  };
  calls(1, false);
  calls(1, true);
  double best[2] = {1e30, 1e30};
  for (int trial = 0; trial < 5; ++trial) {
    for (int six = 0; six < 2; ++six) {
      const auto start = std::chrono::steady_clock::now();
      calls(64, six != 0);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      best[six] = std::min(best[six], seconds);
    }
  }
  return best[1] < 0.9 * best[0];
}

}  // namespace

bool UsesSixStreams() {
  static const bool six = SixStreamsPay();
  return six;
}

uint32_t Extend(uint32_t init_crc, const char* data, size_t n) {
  return UsesHardware() ? ExtendHardware<false>(init_crc, data, n, nullptr, UsesSixStreams())
                        : ExtendPortable(init_crc, data, n);
}

uint32_t ExtendWithSixStreamsForTesting(uint32_t init_crc, const char* data, size_t n, bool six_streams) {
  return UsesHardware() ? ExtendHardware<false>(init_crc, data, n, nullptr, six_streams)
                        : ExtendPortable(init_crc, data, n);
}

uint32_t ExtendAndCopy(uint32_t init_crc, const char* data, size_t n, char* dst) {
  if (UsesHardware()) return ExtendHardware<true>(init_crc, data, n, dst, false);
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

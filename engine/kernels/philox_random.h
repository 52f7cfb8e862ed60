// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11), the counter-based generator behind the random ops and Dropout:
// output block = Philox(key, counter) for a 64-bit key and 128-bit counter,
// so any element of a random tensor can be computed independently (parallel
// fill) and the stream is a pure function of (key, counter).
//
// Keys come from the ops' (seed, seed2) attrs (PhiloxKeyFromSeeds); both 0
// means "random": a fresh key from std::random_device per kernel.
// Thread safety: pure functions.
#ifndef SLUICE_ENGINE_KERNELS_PHILOX_RANDOM_H_
#define SLUICE_ENGINE_KERNELS_PHILOX_RANDOM_H_

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace sluice {
namespace philox {

using Block = std::array<uint32_t, 4>;

struct Key {
  uint32_t k0 = 0, k1 = 0;
};

inline Block Philox4x32(Key key, Block ctr) {
  constexpr uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57, kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * ctr[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * ctr[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    ctr = {hi1 ^ ctr[1] ^ key.k0, lo1, hi0 ^ ctr[3] ^ key.k1, lo0};
    key.k0 += kW0;
    key.k1 += kW1;
  }
  return ctr;
}

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The key for (seed, seed2); (0, 0) draws a nondeterministic key.
inline Key KeyFromSeeds(int64_t seed, int64_t seed2) {
  uint64_t k;
  if (seed == 0 && seed2 == 0) {
    std::random_device rd;
    k = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  } else {
    k = SplitMix64(static_cast<uint64_t>(seed) ^ SplitMix64(static_cast<uint64_t>(seed2)));
  }
  return Key{static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)};
}

// Block `index` of stream (`run`, `sub`): a kernel's run number and a
// sub-stream (e.g. rejection-sampling attempts).
inline Block Generate(Key key, uint64_t index, uint32_t run, uint32_t sub = 0) {
  return Philox4x32(key, Block{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), run, sub});
}

#if defined(__AVX512F__)
// Blocks index0 .. index0 + 15 of stream (`run`, `sub`) at once: word j of
// block index0 + l lands in lane l of words[j], equal to Generate(key,
// index0 + l, run, sub)[j]. The 32 x 32 -> 64-bit products of a round come
// from two vpmuludq (even and odd lanes) for the high halves and vpmulld for
// the low ones.
inline void Generate16(Key key, uint64_t index0, uint32_t run, uint32_t sub, __m512i (&words)[4]) {
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  __m512i c0 = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(index0))), lane);
  __m512i c1 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(index0 >> 32)));
  // A low word that wrapped past 2^32 carries into the high word, as index0 + l does.
  c1 = _mm512_mask_add_epi32(c1, _mm512_cmplt_epu32_mask(c0, lane), c1, _mm512_set1_epi32(1));
  __m512i c2 = _mm512_set1_epi32(static_cast<int>(run));
  __m512i c3 = _mm512_set1_epi32(static_cast<int>(sub));
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m512i m1 = _mm512_set1_epi32(static_cast<int>(0xCD9E8D57u));
  auto mul_hi = [](__m512i a, __m512i m) {
    const __m512i even = _mm512_mul_epu32(a, m);
    const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
    return _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
  };
  for (int round = 0; round < 10; ++round) {
    const __m512i k0 = _mm512_set1_epi32(static_cast<int>(key.k0)), k1 = _mm512_set1_epi32(static_cast<int>(key.k1));
    const __m512i hi0 = mul_hi(c0, m0), lo0 = _mm512_mullo_epi32(c0, m0);
    const __m512i hi1 = mul_hi(c2, m1), lo1 = _mm512_mullo_epi32(c2, m1);
    c0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), k0);
    c1 = lo1;
    c2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), k1);
    c3 = lo0;
    key.k0 += 0x9E3779B9u;
    key.k1 += 0xBB67AE85u;
  }
  words[0] = c0;
  words[1] = c1;
  words[2] = c2;
  words[3] = c3;
}

// ToFloat in each lane.
inline __m512 ToFloat16(__m512i x) {
  const __m512i bits =
      _mm512_or_si512(_mm512_and_si512(x, _mm512_set1_epi32(0x7fffff)), _mm512_set1_epi32(0x3f800000));
  return _mm512_sub_ps(_mm512_castsi512_ps(bits), _mm512_set1_ps(1.0f));
}

// Stream order from block order: v[j] holds word j of blocks 0..15 (lane l =
// block l); afterwards v[k] holds elements 16k .. 16k + 15 of the stream
// (element 4 * block + word).
inline void BlocksToElements(__m512 (&v)[4]) {
  const __m512 u01lo = _mm512_unpacklo_ps(v[0], v[1]), u01hi = _mm512_unpackhi_ps(v[0], v[1]);
  const __m512 u23lo = _mm512_unpacklo_ps(v[2], v[3]), u23hi = _mm512_unpackhi_ps(v[2], v[3]);
  // b_m: in 128-bit lane L, the four words of block 4L + m.
  const __m512 b0 = _mm512_shuffle_ps(u01lo, u23lo, _MM_SHUFFLE(1, 0, 1, 0));
  const __m512 b1 = _mm512_shuffle_ps(u01lo, u23lo, _MM_SHUFFLE(3, 2, 3, 2));
  const __m512 b2 = _mm512_shuffle_ps(u01hi, u23hi, _MM_SHUFFLE(1, 0, 1, 0));
  const __m512 b3 = _mm512_shuffle_ps(u01hi, u23hi, _MM_SHUFFLE(3, 2, 3, 2));
  // Output k gathers 128-bit lane k of b0..b3.
  const __m512 w01lo = _mm512_shuffle_f32x4(b0, b1, _MM_SHUFFLE(1, 0, 1, 0));
  const __m512 w23lo = _mm512_shuffle_f32x4(b2, b3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m512 w01hi = _mm512_shuffle_f32x4(b0, b1, _MM_SHUFFLE(3, 2, 3, 2));
  const __m512 w23hi = _mm512_shuffle_f32x4(b2, b3, _MM_SHUFFLE(3, 2, 3, 2));
  v[0] = _mm512_shuffle_f32x4(w01lo, w23lo, _MM_SHUFFLE(2, 0, 2, 0));
  v[1] = _mm512_shuffle_f32x4(w01lo, w23lo, _MM_SHUFFLE(3, 1, 3, 1));
  v[2] = _mm512_shuffle_f32x4(w01hi, w23hi, _MM_SHUFFLE(2, 0, 2, 0));
  v[3] = _mm512_shuffle_f32x4(w01hi, w23hi, _MM_SHUFFLE(3, 1, 3, 1));
}
#endif

// Uniform in [0, 1) from 23 bits (float) or 52 bits (double).
inline float ToFloat(uint32_t x) {
  const uint32_t bits = (x & 0x7fffffu) | 0x3f800000u;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f - 1.0f;
}
inline double ToDouble(uint32_t a, uint32_t b) {
  const uint64_t bits = ((static_cast<uint64_t>(a) << 32 | b) & 0xfffffffffffffull) | 0x3ff0000000000000ull;
  double d;
  std::memcpy(&d, &bits, sizeof(d));
  return d - 1.0;
}

// Two standard normals from two uniforms (Box-Muller).
template <typename Acc>
inline void BoxMuller(Acc u1, Acc u2, Acc* z0, Acc* z1) {
  const Acc r = std::sqrt(Acc(-2) * std::log(std::max(u1, std::numeric_limits<Acc>::min())));
  const Acc theta = Acc(2 * M_PI) * u2;
  *z0 = r * std::sin(theta);
  *z1 = r * std::cos(theta);
}

}  // namespace philox
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_PHILOX_RANDOM_H_

// The widest float vector this build's target has, for kernels written with
// explicit vectors (winograd_conv.cc, single_channel_conv.cc, CpuGemm's small
// path): __m512 with AVX-512, __m256 with AVX2 + FMA, else a 4-lane GCC
// vector; and four doubles (Double4). Loads and stores are unaligned; FMA is
// fused where the target has it.
// Thread safety: functions of their arguments.
#ifndef SLUICE_ENGINE_KERNELS_FLOAT_VEC_H_
#define SLUICE_ENGINE_KERNELS_FLOAT_VEC_H_

#include <cstdint>
#include <cstring>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace sluice {
namespace simd {

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
constexpr int kRegisters = 32;
inline Vec Splat(float x) { return _mm512_set1_ps(x); }
inline Vec Fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
// max(0, v), NaN kept (the second operand is returned when either is NaN).
inline Vec Max0(Vec v) { return _mm512_max_ps(_mm512_setzero_ps(), v); }
// std::max(acc, x) in each lane: x where acc < x, else acc (so a NaN in acc
// stays, a NaN in x is dropped; -0 and +0 keep acc's). maxps returns its second
// operand when either is NaN or both are zero.
inline Vec StdMax(Vec acc, Vec x) { return _mm512_max_ps(x, acc); }
#elif defined(__AVX2__) && defined(__FMA__)
using Vec = __m256;
constexpr int kLanes = 8;
constexpr int kRegisters = 16;
inline Vec Splat(float x) { return _mm256_set1_ps(x); }
inline Vec Fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec Max0(Vec v) { return _mm256_max_ps(_mm256_setzero_ps(), v); }
inline Vec StdMax(Vec acc, Vec x) { return _mm256_max_ps(x, acc); }
#else
typedef float Vec __attribute__((vector_size(16)));
constexpr int kLanes = 4;
constexpr int kRegisters = 16;
inline Vec Splat(float x) { return Vec{x, x, x, x}; }
inline Vec Fma(Vec a, Vec b, Vec c) { return a * b + c; }
inline Vec Max0(Vec v) { return v < 0.0f ? Vec{} : v; }
inline Vec StdMax(Vec acc, Vec x) { return acc < x ? x : acc; }
#endif

inline Vec Zero() { return Splat(0.0f); }
inline Vec Load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void Store(float* p, Vec v) { std::memcpy(p, &v, sizeof v); }
// The first `lanes` floats at p, zeros after them.
inline Vec LoadPartial(const float* p, int64_t lanes) {
  float buffer[kLanes] = {};
  std::memcpy(buffer, p, static_cast<size_t>(lanes) * sizeof(float));
  return Load(buffer);
}
inline void StorePartial(float* p, Vec v, int64_t lanes) {
  float buffer[kLanes];
  Store(buffer, v);
  std::memcpy(p, buffer, static_cast<size_t>(lanes) * sizeof(float));
}
// Asks for the cache lines of [p, p + floats) (addresses outside any
// allocation are fine: a prefetch never faults).
inline void PrefetchRun(const float* p, int64_t floats) {
  for (int64_t i = 0; i < floats; i += 64 / sizeof(float)) __builtin_prefetch(p + i, /*rw=*/0, /*locality=*/3);
}

// Four doubles (a GCC vector: AVX2's width, two SSE registers without it),
// for kernels that work on floats in double precision (batch_norm_ops.cc's
// sums, erfc_float.cc).
typedef double Double4 __attribute__((vector_size(32)));
inline Double4 Splat4(double x) { return Double4{x, x, x, x}; }
inline Double4 Load4(const double* p) {
  Double4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void Store4(double* p, Double4 v) { std::memcpy(p, &v, sizeof v); }
// Four floats, widened.
inline Double4 Load4(const float* p) {
  typedef float Float4 __attribute__((vector_size(16)));
  Float4 f;
  std::memcpy(&f, p, sizeof f);
  return __builtin_convertvector(f, Double4);
}
// Rounded to four floats.
inline void Store4(float* p, Double4 v) {
  typedef float Float4 __attribute__((vector_size(16)));
  const Float4 f = __builtin_convertvector(v, Float4);
  std::memcpy(p, &f, sizeof f);
}

}  // namespace simd
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_FLOAT_VEC_H_

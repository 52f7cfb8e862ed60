// See erfc_float.h.
#include "engine/kernels/erfc_float.h"

#include <cstring>

#include "engine/kernels/float_vec.h"

namespace sluice {
namespace {

using D4 = simd::Double4;
using simd::Splat4;
typedef uint64_t I4 __attribute__((vector_size(32)));  // bits; unsigned, so shifts are defined

inline I4 Bits(D4 v) {
  I4 i;
  std::memcpy(&i, &v, sizeof i);
  return i;
}
inline D4 FromBits(I4 i) {
  D4 v;
  std::memcpy(&v, &i, sizeof v);
  return v;
}

// Each step below works on kWays independent vectors at once: one vector's
// chain of 24 dependent multiply-adds (the two polynomials) would wait on
// its latency, about 45 cycles per 4 values. The loops over them are
// unrolled (as -O3 would), so the vectors stay in registers.
constexpr int kWays = 4;
using Block = D4[kWays];

// exp(y) for y in [-700, 700]: y = n ln2 + r, |r| <= ln2 / 2, exp(r) by its
// Taylor polynomial to r^11 (truncation under 1e-14), times 2^n through the
// exponent bits.
inline void Exp(Block& y) {
  constexpr double kInverseFactorials[12] = {1.0,        1.0,         0.5,          1.0 / 6,      1.0 / 24,
                                             1.0 / 120,  1.0 / 720,   1.0 / 5040,   1.0 / 40320,  1.0 / 362880,
                                             1.0 / 3628800, 1.0 / 39916800};
  const D4 shifter = Splat4(6755399441055744.0);  // 1.5 * 2^52: adding it rounds to an integer
  Block kd, r, p;
  #pragma GCC unroll 4
  for (int w = 0; w < kWays; ++w) {
    kd[w] = y[w] * Splat4(1.4426950408889634) + shifter;
    const D4 n = kd[w] - shifter;
    // ln 2 split so that n * ln2_hi is exact for |n| < 2^11.
    r[w] = (y[w] - n * Splat4(6.93147180369123816490e-01)) - n * Splat4(1.90821492927058770002e-10);
    p[w] = Splat4(kInverseFactorials[11]);
  }
  for (int i = 10; i >= 0; --i) {
    #pragma GCC unroll 4
    for (int w = 0; w < kWays; ++w) p[w] = p[w] * r[w] + Splat4(kInverseFactorials[i]);
  }
  #pragma GCC unroll 4
  for (int w = 0; w < kWays; ++w) {
    // n as an integer (mod 2^64): adding n << 52 to the bits of p adds n to
    // its exponent, wrapping as two's complement would.
    const I4 k = Bits(kd[w]) - Bits(shifter);
    y[w] = FromBits(Bits(p[w]) + (k << 52));
  }
}

// ln(erfc(x) / t) + x^2 as a polynomial in t = 1 / (1 + x / 2), x in [0, 10.1]
// (t^0 first; fitted as erfc_float.h says).
constexpr double kP[13] = {
    -1.2655050069394149,  0.99974961765933845, 0.37893021176384617, 0.046946387316223984, 0.13526580576461539,
    -1.0729088001310987,  2.6656877991492443,  -5.7592905166476509, 8.5478256855302757,   -7.8906842881558141,
    4.4039266186380219,   -1.3763058937663708, 0.18636237999504771};

// x[w] = erfc(x[w]).
inline void Erfc(Block& x) {
  const D4 zero = Splat4(0.0);
  Block a, t, p;
  #pragma GCC unroll 4
  for (int w = 0; w < kWays; ++w) {
    const D4 ax = x[w] < zero ? -x[w] : x[w];
    // erfc(11) is 1.4e-54, 0 in float; clamping keeps exp's argument in
    // range (an infinite x included). A NaN compares false and is put back
    // below.
    a[w] = ax < Splat4(11.0) ? ax : Splat4(11.0);
    t[w] = Splat4(1.0) / (Splat4(1.0) + Splat4(0.5) * a[w]);
    p[w] = Splat4(kP[12]);
  }
  for (int i = 11; i >= 0; --i) {
    #pragma GCC unroll 4
    for (int w = 0; w < kWays; ++w) p[w] = p[w] * t[w] + Splat4(kP[i]);
  }
  #pragma GCC unroll 4
  for (int w = 0; w < kWays; ++w) p[w] = p[w] - a[w] * a[w];
  Exp(p);
  #pragma GCC unroll 4
  for (int w = 0; w < kWays; ++w) {
    const D4 e = t[w] * p[w];
    const D4 r = x[w] < zero ? Splat4(2.0) - e : e;
    x[w] = x[w] != x[w] ? x[w] : r;
  }
}

// out[0, 4 * kWays) = erfc(in[0, 4 * kWays)).
inline void ErfcBlock(const float* in, float* out) {
  Block x;
  #pragma GCC unroll 4
  for (int w = 0; w < kWays; ++w) x[w] = simd::Load4(in + 4 * w);
  Erfc(x);
  #pragma GCC unroll 4
  for (int w = 0; w < kWays; ++w) simd::Store4(out + 4 * w, x[w]);
}

}  // namespace

void ErfcFloat(const float* in, float* out, int64_t n) {
  constexpr int64_t kBlock = 4 * kWays;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) ErfcBlock(in + i, out + i);
  if (i < n) {
    float buffer[kBlock] = {};
    std::memcpy(buffer, in + i, static_cast<size_t>(n - i) * sizeof(float));
    ErfcBlock(buffer, buffer);
    std::memcpy(out + i, buffer, static_cast<size_t>(n - i) * sizeof(float));
  }
}

}  // namespace sluice

// CpuGemm: packing, cache blocking, the 8 x 32 (AVX-512) or 6 x 16 (AVX2)
// micro-kernel and the split of C across threads. See cpu_gemm.h for the algorithm and its guarantees.
#include "engine/kernels/cpu_gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "engine/platform/logging.h"
#include "engine/kernels/cpu_gemm_small.h"
#include "engine/kernels/run_tasks.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define SLUICE_GEMM_AVX2 1
#if defined(__AVX512F__)
#define SLUICE_GEMM_AVX512 1
#endif
#endif

namespace sluice {
namespace {

// Register tile (micro-kernel) and cache blocks.
constexpr int kMr = kCpuGemmTileRows;
constexpr int kNr = kCpuGemmTileCols;
#if defined(SLUICE_GEMM_AVX512)
// KC x NR of B (32 KiB; 64 KiB with deep blocks) stays in L1/L2 while the
// micro-kernel sweeps the MC x KC block of A (128 or 256 KiB, L2); the KC x NC
// block of B (1 or 2 MiB) is shared through L3, and the micro-kernel
// prefetches its tile of C. Each call of the
// micro-kernel has a fixed cost besides its 16 x KC FMA cycles (starting and
// draining 16 accumulator chains, storing the tile), which a deeper KC spreads
// over more FMAs. Deep products (k >= kDeepK) take blocks of up to
// DeepKBlock(): kKcDeep on a Zen 4 EPYC (1 MiB L2, 32 KiB L1 per core), which
// also halves their passes over C: +2-3% of the peak at n = 1024 and 2048.
// Shallower ones keep kKc: with 512 everywhere, fashion_mlp's steps (k = 784
// and 512, B read in place) ran 8% slower. docs/PERFORMANCE.md, "GEMM
// blocking for AVX-512", "Session 20" and "Session 28".
constexpr int64_t kKc = 256;
constexpr int64_t kKcDeep = 512;
constexpr int64_t kDeepK = 1024;
constexpr int64_t kMc = 128;   // a multiple of kMr
constexpr int64_t kNc = 1024;  // a multiple of kNr
// A product with one block of A reads a row-major B in place, without packing
// it, when its blocks of k are at most kKc deep (see GemmBlock).
constexpr bool kReadBInPlace = true;
#else
// KC x NR floats of B (16 KiB) stay in L1 while the micro-kernel sweeps the MC
// x KC block of A (144 KiB, L2); the KC x NC block of B (2 MiB) is shared
// through L3.
constexpr int64_t kKc = 256;
constexpr int64_t kKcDeep = kKc;
constexpr int64_t kDeepK = 0;
constexpr int64_t kMc = 144;   // a multiple of kMr
constexpr int64_t kNc = 2048;  // a multiple of kNr
#if defined(SLUICE_GEMM_AVX2)
// The AVX2 kernel always packs row-major B (by the first tile that reads it),
// never reads it in place by every tile of a product with one block of A: on
// a Zen 5 running this kernel, fashion_cnn's fc1 forward product ran at 63-65
// GFLOP/s in place and 109-110 packed, the LSTM's h R ([32, 256] x [256,
// 1024]) at 52-53 and 85-88, fashion_mlp's forward products at 104-110 and
// 112-115 (docs/PERFORMANCE.md, "Session 33"; why in place costs this kernel
// so much more than the AVX-512 one was not established).
constexpr bool kReadBInPlace = false;
#else
// The portable kernel reads B in place as the AVX-512 one does: packed, it
// was no faster on that Zen 5 (an SSE2 build; fc1 forward slower).
constexpr bool kReadBInPlace = true;
#endif
#endif
// Below this much work per thread, a second thread costs more than it saves.
constexpr double kMinFlopsPerThread = 2.0 * 1024 * 1024;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The most a deep product's block of k holds on this machine. Intel's server
// cores with two 512-bit FMA units consume B twice as fast as Zen 4, and a
// 64 KiB panel, which overflows their 48 KiB L1, cost 2-4 points of the peak
// at n = 1024 and 2048 on one such Xeon: there deep products keep kKc, whose
// 32 KiB panel stays in L1. The rule by vendor is a heuristic from the two
// machines measured. Decided once per process, so every product (and
// PackGemmB's layout) uses the same blocks.
int64_t DeepKBlock() {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  static const int64_t depth = [] {
    __builtin_cpu_init();
    return __builtin_cpu_is("intel") ? kKc : kKcDeep;
  }();
  return depth;
#else
  return kKcDeep;
#endif
}

// The depth of the blocks of k: k in equal blocks of at most kKc (DeepKBlock()
// when k >= kDeepK; the last one may be shorter by less than the number of blocks),
// never a thin last block that would pass over C for a few steps of k. It
// depends on k alone, so every split of C across threads, and PackGemmB, use
// the same blocks (and C the same sums). (k = 0 has no blocks.)
int64_t KBlockDepth(int64_t k) {
  const int64_t most = k >= kDeepK ? DeepKBlock() : kKc;
  return k <= 0 ? kKc : CeilDiv(k, CeilDiv(k, most));
}

// op(X) as a strided view: element (r, c) is at p[r * rs + c * cs].
struct View {
  const float* p;
  int64_t rs;
  int64_t cs;
};

// The epilogue of the tile being stored (see GemmArgs::bias): `bias` points at
// the tile's first column (null: none). A null Epilogue* means none at all.
struct Epilogue {
  const float* bias = nullptr;
  bool relu = false;
};

// The scalar epilogue (edge tiles and the portable kernel): the same two
// roundings as the vector one, so every element matches it bitwise.
inline float ApplyEpilogue(float x, const Epilogue& e, int64_t j) {
  if (e.bias != nullptr) x += e.bias[j];
  if (e.relu && x < 0.0f) x = 0.0f;
  return x;
}

// A 64-byte aligned buffer that only grows; one pair per thread.
class PackBuffer {
 public:
  float* Get(int64_t floats) {
    if (floats > capacity_) {
      // 16 floats of slack: PackRowsTransposed<kMr, ...> stores 2 floats past a panel.
      const size_t bytes = static_cast<size_t>(CeilDiv((floats + 16) * sizeof(float), 64) * 64);
      data_.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
      // At most KC x NC floats (2 MiB) per buffer: only an exhausted machine fails here.
      CHECK(data_ != nullptr) << "out of memory for a " << bytes << "-byte GEMM packing buffer";
      capacity_ = floats;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  int64_t capacity_ = 0;
};

struct PackBuffers {
  PackBuffer a;
  PackBuffer b;
};

PackBuffers& ThreadPackBuffers() {
  thread_local PackBuffers buffers;
  return buffers;
}

// ---- Packing ----

#ifdef SLUICE_GEMM_AVX2
inline void Transpose8x8(__m256& r0, __m256& r1, __m256& r2, __m256& r3, __m256& r4, __m256& r5, __m256& r6,
                         __m256& r7) {
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1);
  const __m256 t1 = _mm256_unpackhi_ps(r0, r1);
  const __m256 t2 = _mm256_unpacklo_ps(r2, r3);
  const __m256 t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5);
  const __m256 t5 = _mm256_unpackhi_ps(r4, r5);
  const __m256 t6 = _mm256_unpacklo_ps(r6, r7);
  const __m256 t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r0 = _mm256_permute2f128_ps(s0, s4, 0x20);
  r1 = _mm256_permute2f128_ps(s1, s5, 0x20);
  r2 = _mm256_permute2f128_ps(s2, s6, 0x20);
  r3 = _mm256_permute2f128_ps(s3, s7, 0x20);
  r4 = _mm256_permute2f128_ps(s0, s4, 0x31);
  r5 = _mm256_permute2f128_ps(s1, s5, 0x31);
  r6 = _mm256_permute2f128_ps(s2, s6, 0x31);
  r7 = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// dst[p * kDstStride + r] = src[r * stride + p] for rows r < kRows <= 8 and p
// in [0, kc): 8 x 8 transposes through registers (rows past kRows are zero),
// then the tail. Rows kRows.. of a kDstStride < 8 panel are zero. With
// kDstStride < 8 each 8-float store spills 8 - kDstStride floats past its row,
// which the next store overwrites.
// REQUIRES (kDstStride < 8): dst has 8 - kDstStride floats of slack past
// kc * kDstStride.
template <int kRows, int kDstStride>
void PackRowsTransposed(const float* src, int64_t stride, int64_t kc, float* dst) {
  int64_t p = 0;
  for (; p + 8 <= kc; p += 8) {
    __m256 r[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) r[i] = i < kRows ? _mm256_loadu_ps(src + i * stride + p) : _mm256_setzero_ps();
    Transpose8x8(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
#pragma GCC unroll 8
    for (int q = 0; q < 8; ++q) _mm256_storeu_ps(dst + (p + q) * kDstStride, r[q]);
  }
  for (; p < kc; ++p) {
    for (int i = 0; i < kRows; ++i) dst[p * kDstStride + i] = src[i * stride + p];
    // Missing rows of a panel narrower than 8 are zero, as in the 8 x 8 part.
    for (int i = kRows; i < std::min(kDstStride, 8); ++i) dst[p * kDstStride + i] = 0.0f;
  }
}
#endif

// Packs op(A)[i0 : i0+mc, p0 : p0+kc] into CeilDiv(mc, kMr) panels of kc x kMr
// (panel row i, step p at p * kMr + i); rows past mc are zero.
void PackA(const View& a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* dst) {
  for (int64_t ir = 0; ir < mc; ir += kMr, dst += kc * kMr) {
    const int64_t rows = std::min<int64_t>(kMr, mc - ir);
    const float* base = a.p + (i0 + ir) * a.rs + p0 * a.cs;
    if (rows == kMr && a.rs == 1) {  // A stored transposed: a column of op(A) is contiguous
      for (int64_t p = 0; p < kc; ++p) std::memcpy(dst + p * kMr, base + p * a.cs, kMr * sizeof(float));
#ifdef SLUICE_GEMM_AVX2
    } else if (a.cs == 1) {  // row-major A: transposed through registers (missing rows load as zero)
      switch (rows) {
        case 1: PackRowsTransposed<1, kMr>(base, a.rs, kc, dst); break;
        case 2: PackRowsTransposed<2, kMr>(base, a.rs, kc, dst); break;
        case 3: PackRowsTransposed<3, kMr>(base, a.rs, kc, dst); break;
        case 4: PackRowsTransposed<4, kMr>(base, a.rs, kc, dst); break;
        case 5: PackRowsTransposed<5, kMr>(base, a.rs, kc, dst); break;
#if defined(SLUICE_GEMM_AVX512)
        case 6: PackRowsTransposed<6, kMr>(base, a.rs, kc, dst); break;
        case 7: PackRowsTransposed<7, kMr>(base, a.rs, kc, dst); break;
#endif
        default: PackRowsTransposed<kMr, kMr>(base, a.rs, kc, dst); break;
      }
#else
    } else if (rows == kMr && a.cs == 1) {  // row-major A: six row streams
      const float* r0 = base;
      const float* r1 = base + a.rs;
      const float* r2 = base + 2 * a.rs;
      const float* r3 = base + 3 * a.rs;
      const float* r4 = base + 4 * a.rs;
      const float* r5 = base + 5 * a.rs;
      for (int64_t p = 0; p < kc; ++p) {
        float* d = dst + p * kMr;
        d[0] = r0[p];
        d[1] = r1[p];
        d[2] = r2[p];
        d[3] = r3[p];
        d[4] = r4[p];
        d[5] = r5[p];
      }
#endif
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        for (int64_t i = 0; i < kMr; ++i) dst[p * kMr + i] = i < rows ? base[i * a.rs + p * a.cs] : 0.0f;
      }
    }
  }
}

// Packs op(B)[p0 : p0+kc, j0 : j0+nc] into CeilDiv(nc, kNr) panels of
// kc x kNr (step p, panel column j at p * kNr + j); columns past nc are zero.
void PackB(const View& b, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* dst) {
  int64_t jr = 0;
  if (b.cs == 1 && nc >= kNr) {
    // Row-major B: each row of the block is read once, front to back, and
    // dealt out to the full panels, with the row four ahead prefetched (B
    // usually comes from L3 here). In cpu-clock profiles of 2-thread 512^3
    // products PackB went from 4.6-4.8% of the samples (panel by panel, no
    // prefetch) to 3.2-3.6%. (Products now pack row-major B's full panels
    // as their first tiles read them, BBlock::fill; PackGemmB still comes here.)
    const int64_t full = nc / kNr;
    for (int64_t p = 0; p < kc; ++p) {
      const float* row = b.p + (p0 + p) * b.rs + j0;
      float* d = dst + p * kNr;
      if (p + 4 < kc) {  // the same columns of row p + 4, a line at a time
        const char* ahead = reinterpret_cast<const char*>(row + 4 * b.rs);
        const int64_t bytes = full * kNr * static_cast<int64_t>(sizeof(float));
        for (int64_t off = 0; off < bytes; off += 64) __builtin_prefetch(ahead + off, 0, 3);
      }
      for (int64_t q = 0; q < full; ++q) std::memcpy(d + q * kc * kNr, row + q * kNr, kNr * sizeof(float));
    }
    jr = full * kNr;
    dst += full * kc * kNr;
  }
  // What is left: every panel of a B stored transposed (or strided), or the
  // last partial panel of a row-major one.
  for (; jr < nc; jr += kNr, dst += kc * kNr) {
    const int64_t cols = std::min<int64_t>(kNr, nc - jr);
    const float* base = b.p + p0 * b.rs + (j0 + jr) * b.cs;
#ifdef SLUICE_GEMM_AVX2
    if (cols == kNr && b.rs == 1) {  // B stored transposed: transpose 8 x 8 blocks
      for (int q = 0; q < kNr; q += 8) PackRowsTransposed<8, kNr>(base + q * b.cs, b.cs, kc, dst + q);
      continue;
    }
#endif
    if (b.cs == 1) {  // row-major B, last partial panel: copy, then zero the rest
      for (int64_t p = 0; p < kc; ++p) {
        float* d = dst + p * kNr;
        const float* row = base + p * b.rs;
        for (int64_t j = 0; j < cols; ++j) d[j] = row[j];
        for (int64_t j = cols; j < kNr; ++j) d[j] = 0.0f;
      }
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        for (int64_t j = 0; j < kNr; ++j) dst[p * kNr + j] = j < cols ? base[p * b.rs + j * b.cs] : 0.0f;
      }
    }
  }
}

// ---- Micro-kernel: c[i * ldc + j] (+)= sum_p a[p * kMr + i] * b[p * ldb + j] ----
// (ldb is kNr for a packed panel, B's own row stride when B is read in place.)
// With `ep`, each stored element then goes through the epilogue. With kFillB,
// each row of B it reads is also stored at b_fill + p * kNr (64-byte aligned):
// the first tile of a panel packs it, in load and store slots the FMAs leave
// free, instead of a separate pass (PackB).

#if defined(SLUICE_GEMM_AVX512)
// 8 x 32: sixteen accumulators keep both FMA units busy through their latency,
// and batches of 32 or 128 rows fill whole tiles.
static_assert(kMr == 8, "the AVX-512 micro-kernel computes 8 rows");
template <bool kFillB>
void MicroKernel(int64_t kc, const float* __restrict a, const float* __restrict b, int64_t ldb,
                 float* __restrict b_fill, float* __restrict c, int64_t ldc, bool accumulate, const Epilogue* ep) {
  __m512 lo[kMr], hi[kMr];
  // The tile of C (8 rows of 128 bytes, each in two lines) is read or written
  // only after the loop over k: asking for it now hides its trip from L3 or
  // memory behind the FMAs (measured: 0.69 -> 0.79 of the peak at n = 2048 on
  // one thread).
#pragma GCC unroll 8
  for (int i = 0; i < kMr; ++i) {
    __builtin_prefetch(c + i * ldc, /*rw=*/1, /*locality=*/3);
    __builtin_prefetch(c + i * ldc + 16, /*rw=*/1, /*locality=*/3);
    lo[i] = hi[i] = _mm512_setzero_ps();
  }
#pragma GCC unroll 2
  for (int64_t p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_loadu_ps(b);
    const __m512 b1 = _mm512_loadu_ps(b + 16);
    if (kFillB) {
      _mm512_store_ps(b_fill, b0);
      _mm512_store_ps(b_fill + 16, b1);
      b_fill += kNr;
    }
#pragma GCC unroll 8
    for (int i = 0; i < kMr; ++i) {
      const __m512 av = _mm512_set1_ps(a[i]);
      lo[i] = _mm512_fmadd_ps(av, b0, lo[i]);
      hi[i] = _mm512_fmadd_ps(av, b1, hi[i]);
    }
    a += kMr;
    b += ldb;
  }
  __m512 bias_lo = _mm512_setzero_ps(), bias_hi = _mm512_setzero_ps();
  const bool add_bias = ep != nullptr && ep->bias != nullptr, relu = ep != nullptr && ep->relu;
  if (add_bias) {
    bias_lo = _mm512_loadu_ps(ep->bias);
    bias_hi = _mm512_loadu_ps(ep->bias + 16);
  }
#pragma GCC unroll 8
  for (int i = 0; i < kMr; ++i) {
    float* row = c + i * ldc;
    __m512 l = lo[i], h = hi[i];
    if (accumulate) {
      l = _mm512_add_ps(l, _mm512_loadu_ps(row));
      h = _mm512_add_ps(h, _mm512_loadu_ps(row + 16));
    }
    if (add_bias) {
      l = _mm512_add_ps(l, bias_lo);
      h = _mm512_add_ps(h, bias_hi);
    }
    if (relu) {  // max(0, x) returns its second operand for NaN: NaN stays NaN
      l = _mm512_max_ps(_mm512_setzero_ps(), l);
      h = _mm512_max_ps(_mm512_setzero_ps(), h);
    }
    _mm512_storeu_ps(row, l);
    _mm512_storeu_ps(row + 16, h);
  }
}
#elif defined(SLUICE_GEMM_AVX2)
template <bool kFillB>
void MicroKernel(int64_t kc, const float* __restrict a, const float* __restrict b, int64_t ldb,
                 float* __restrict b_fill, float* __restrict c, int64_t ldc, bool accumulate, const Epilogue* ep) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
  __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
  __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
  __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_loadu_ps(b);
    const __m256 b1 = _mm256_loadu_ps(b + 8);
    if (kFillB) {
      _mm256_store_ps(b_fill, b0);
      _mm256_store_ps(b_fill + 8, b1);
      b_fill += kNr;
    }
    __m256 av = _mm256_broadcast_ss(a + 0);
    c00 = _mm256_fmadd_ps(av, b0, c00);
    c01 = _mm256_fmadd_ps(av, b1, c01);
    av = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(av, b0, c10);
    c11 = _mm256_fmadd_ps(av, b1, c11);
    av = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(av, b0, c20);
    c21 = _mm256_fmadd_ps(av, b1, c21);
    av = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(av, b0, c30);
    c31 = _mm256_fmadd_ps(av, b1, c31);
    av = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(av, b0, c40);
    c41 = _mm256_fmadd_ps(av, b1, c41);
    av = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(av, b0, c50);
    c51 = _mm256_fmadd_ps(av, b1, c51);
    a += kMr;
    b += ldb;
  }
  __m256 bias_lo = _mm256_setzero_ps(), bias_hi = _mm256_setzero_ps();
  const bool add_bias = ep != nullptr && ep->bias != nullptr, relu = ep != nullptr && ep->relu;
  if (add_bias) {
    bias_lo = _mm256_loadu_ps(ep->bias);
    bias_hi = _mm256_loadu_ps(ep->bias + 8);
  }
  auto store = [&](float* row, __m256 lo, __m256 hi) {
    if (accumulate) {
      lo = _mm256_add_ps(lo, _mm256_loadu_ps(row));
      hi = _mm256_add_ps(hi, _mm256_loadu_ps(row + 8));
    }
    if (add_bias) {
      lo = _mm256_add_ps(lo, bias_lo);
      hi = _mm256_add_ps(hi, bias_hi);
    }
    if (relu) {  // max(0, x) returns its second operand for NaN: NaN stays NaN
      lo = _mm256_max_ps(_mm256_setzero_ps(), lo);
      hi = _mm256_max_ps(_mm256_setzero_ps(), hi);
    }
    _mm256_storeu_ps(row, lo);
    _mm256_storeu_ps(row + 8, hi);
  };
  store(c + 0 * ldc, c00, c01);
  store(c + 1 * ldc, c10, c11);
  store(c + 2 * ldc, c20, c21);
  store(c + 3 * ldc, c30, c31);
  store(c + 4 * ldc, c40, c41);
  store(c + 5 * ldc, c50, c51);
}
#else
template <bool kFillB>
void MicroKernel(int64_t kc, const float* __restrict a, const float* __restrict b, int64_t ldb,
                 float* __restrict b_fill, float* __restrict c, int64_t ldc, bool accumulate, const Epilogue* ep) {
  float acc[kMr][kNr] = {};
  if (kFillB) {
    for (int64_t p = 0; p < kc; ++p) std::memcpy(b_fill + p * kNr, b + p * ldb, kNr * sizeof(float));
  }
  for (int64_t p = 0; p < kc; ++p) {
    for (int i = 0; i < kMr; ++i) {
      const float av = a[p * kMr + i];
      for (int j = 0; j < kNr; ++j) acc[i][j] += av * b[p * ldb + j];
    }
  }
  for (int i = 0; i < kMr; ++i) {
    for (int j = 0; j < kNr; ++j) {
      const float x = accumulate ? c[i * ldc + j] + acc[i][j] : acc[i][j];
      c[i * ldc + j] = ep != nullptr ? ApplyEpilogue(x, *ep, j) : x;
    }
  }
}
#endif

// The KC x NC block of op(B) the micro-kernel reads: packed panels, or (row-major
// B whose block is used by one block of A only, so packing would not pay) B in
// place, with only a last partial panel packed.
// Or (`fill`) B read in place by the first block of A, whose first tile of
// each full panel packs the panel into `fill` for the blocks of A after it.
struct BBlock {
  const float* packed = nullptr;  // CeilDiv(nc, kNr) panels of kc x kNr
  const float* direct = nullptr;  // op(B)[p0, j0] when read in place
  int64_t ldb = 0;
  const float* edge = nullptr;    // the packed last partial panel (in place or filled)
  float* fill = nullptr;          // packed panels to fill (the partial last one is `edge`, among them)

  // The panel of columns [jr, jr + kNr) and its row stride.
  const float* Panel(int64_t jr, int64_t nc, int64_t kc, int64_t* stride) const {
    if (packed != nullptr) {
      *stride = kNr;
      return packed + (jr / kNr) * kc * kNr;
    }
    if (jr + kNr <= nc) {
      *stride = ldb;
      return direct + jr;
    }
    *stride = kNr;
    return edge;
  }

  // Where the panel at jr is to be packed as it is read; null: nowhere.
  float* FillPanel(int64_t jr, int64_t nc, int64_t kc) const {
    return fill != nullptr && jr + kNr <= nc ? fill + (jr / kNr) * kc * kNr : nullptr;
  }
};

// C[0 : mc, 0 : nc] (+)= packed A block * B block; edge tiles go through a
// scratch tile so the micro-kernel always computes a whole tile. With `ep`
// (the last block of k), the epilogue follows, its bias at this block's
// first column.
void MacroKernel(int64_t mc, int64_t nc, int64_t kc, const float* ap, const BBlock& bb, float* c, int64_t ldc,
                 bool accumulate, const Epilogue* ep) {
  alignas(64) float tile[kMr * kNr];
  const int64_t row_tiles = CeilDiv(mc, kMr);
  for (int64_t jr = 0; jr < nc; jr += kNr) {
    const int64_t cols = std::min<int64_t>(kNr, nc - jr);
    int64_t b_stride;
    const float* b_panel = bb.Panel(jr, nc, kc, &b_stride);
    float* b_fill = bb.FillPanel(jr, nc, kc);
    // B read in place (or filled): the rows of a panel are a row of B apart
    // (kilobytes; a new page each), which the hardware prefetchers do not
    // follow, so the first tile of every panel waited on each row in turn
    // (fashion_cnn's fc1, [128, 3136] x [3136, 1024]: 0.58 of the peak on one
    // thread). Ask for the next panel's rows, a share with each tile of this one.
    int64_t next_stride = 0;
    const float* next_panel = nullptr;
    if (bb.packed == nullptr && jr + 2 * kNr <= nc) next_panel = bb.Panel(jr + kNr, nc, kc, &next_stride);
    const int64_t prefetch_rows = CeilDiv(kc, row_tiles);
    int64_t next_row = 0;
    Epilogue tile_ep;
    if (ep != nullptr) {
      tile_ep.bias = ep->bias != nullptr ? ep->bias + jr : nullptr;
      tile_ep.relu = ep->relu;
    }
    const Epilogue* tep = ep != nullptr ? &tile_ep : nullptr;
    for (int64_t ir = 0; ir < mc; ir += kMr) {
      const int64_t rows = std::min<int64_t>(kMr, mc - ir);
      const float* a_panel = ap + (ir / kMr) * kc * kMr;
      if (next_panel != nullptr) {
        for (int64_t end = std::min(kc, next_row + prefetch_rows); next_row < end; ++next_row) {
          const float* row = next_panel + next_row * next_stride;
          __builtin_prefetch(row, /*rw=*/0, /*locality=*/3);
          __builtin_prefetch(row + kNr - 1, /*rw=*/0, /*locality=*/3);
        }
      }
      float* c_tile = c + ir * ldc + jr;
      const bool whole = rows == kMr && cols == kNr;
      // A whole tile is computed in C; an edge tile in the scratch tile, whose
      // columns past `cols` have no bias: its epilogue runs below, on the
      // columns that exist.
      float* out = whole ? c_tile : tile;
      const int64_t ldo = whole ? ldc : kNr;
      const bool acc = whole && accumulate;
      const Epilogue* oep = whole ? tep : nullptr;
      if (b_fill != nullptr) {  // the panel's first tile: pack it as it is read
        MicroKernel<true>(kc, a_panel, b_panel, b_stride, b_fill, out, ldo, acc, oep);
        b_panel = b_fill;
        b_stride = kNr;
        b_fill = nullptr;
      } else {
        MicroKernel<false>(kc, a_panel, b_panel, b_stride, nullptr, out, ldo, acc, oep);
      }
      if (whole) continue;
      for (int64_t i = 0; i < rows; ++i) {
        float* c_row = c_tile + i * ldc;
        const float* t_row = tile + i * kNr;
        if (tep == nullptr) {
          for (int64_t j = 0; j < cols; ++j) c_row[j] = accumulate ? c_row[j] + t_row[j] : t_row[j];
        } else {
          for (int64_t j = 0; j < cols; ++j) {
            c_row[j] = ApplyEpilogue(accumulate ? c_row[j] + t_row[j] : t_row[j], *tep, j);
          }
        }
      }
    }
  }
}

// The whole blocked algorithm on C[m0 : m1, n0 : n1], on this thread.
void GemmBlock(const GemmArgs& g, const View& a, const View& b, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  PackBuffers& buffers = ThreadPackBuffers();
  const int64_t kb = KBlockDepth(g.k);
  // Packing B pays for itself over several blocks of A; with one block (few
  // rows, e.g. a batch of 128) row-major B is read in place, unless its
  // blocks of k are deeper than kKc: a panel of 512 rows a row of B apart
  // does not stay in L1 between the tiles that read it, and packing it as
  // the first tile reads it (BBlock::fill) made fashion_cnn's fc1 forward
  // product ([128, 3136] x [3136, 1024]) 5-12% faster, while at kKc and below
  // (k = 784, 512) reading in place stays up to 3% ahead (docs/PERFORMANCE.md,
  // "Session 32"). That holds for the AVX-512 and portable kernels; the AVX2
  // one always packs (kReadBInPlace).
  const bool in_place_b = kReadBInPlace && g.packed_b == nullptr && b.cs == 1 && m1 - m0 <= kMc && kb <= kKc;
  const int64_t n_panels = CeilDiv(g.n, kNr);
  const bool has_epilogue = g.bias != nullptr || g.relu;
  Epilogue block_ep;
  block_ep.relu = g.relu;
  for (int64_t jc = n0; jc < n1; jc += kNc) {
    const int64_t nc = std::min(kNc, n1 - jc);
    for (int64_t pc = 0; pc < g.k; pc += kb) {
      const int64_t kc = std::min(kb, g.k - pc);
      BBlock bb;
      if (g.packed_b != nullptr) {  // PackGemmB's layout; jc is a multiple of kNr
        bb.packed = g.packed_b + pc * n_panels * kNr + (jc / kNr) * kc * kNr;
      } else if (in_place_b || (b.cs == 1 && nc >= kNr)) {
        // Row-major B read in place; unless in_place_b, the first block of A
        // packs its full panels as it reads them (BBlock::fill), into the
        // buffer whose last panel, if partial, is packed here.
        float* bp = in_place_b ? nullptr : buffers.b.Get(CeilDiv(nc, kNr) * kNr * kc);
        bb.direct = b.p + pc * b.rs + jc;
        bb.ldb = b.rs;
        const int64_t full = nc / kNr * kNr;
        if (full < nc) {
          float* edge = in_place_b ? buffers.b.Get(kNr * kc) : bp + (full / kNr) * kc * kNr;
          PackB(b, pc, kc, jc + full, nc - full, edge);
          bb.edge = edge;
        }
        bb.fill = bp;
      } else {
        float* bp = buffers.b.Get(CeilDiv(nc, kNr) * kNr * kc);
        PackB(b, pc, kc, jc, nc, bp);
        bb.packed = bp;
      }
      const bool accumulate = g.accumulate || pc > 0;
      // The epilogue goes with the last block of k, when C's sums are complete.
      const Epilogue* ep = has_epilogue && pc + kc == g.k ? &block_ep : nullptr;
      if (ep != nullptr) block_ep.bias = g.bias != nullptr ? g.bias + jc : nullptr;
      for (int64_t ic = m0; ic < m1; ic += kMc) {
        const int64_t mc = std::min(kMc, m1 - ic);
        float* ap = buffers.a.Get(CeilDiv(mc, kMr) * kMr * kc);
        PackA(a, ic, mc, pc, kc, ap);
        MacroKernel(mc, nc, kc, ap, bb, g.c + ic * g.ldc + jc, g.ldc, accumulate, ep);
        if (bb.fill != nullptr) {  // the later blocks of A read the panels this one filled
          const float* filled = bb.fill;
          bb = BBlock();
          bb.packed = filled;
        }
      }
    }
  }
}

// Splits C (m x n, in m_tiles x n_tiles tiles) into a tm x tn grid of
// `threads` blocks: the smallest largest block, then the least packing (each
// column block packs its rows of A, each row block its columns of B: tn * m +
// tm * n elements per step of k), then more column blocks. False if none fits.
bool ChooseGrid(int threads, int64_t m, int64_t n, int64_t m_tiles, int64_t n_tiles, int* tm, int* tn) {
  int64_t best = -1, best_packing = 0;
  for (int rows = 1; rows <= threads; ++rows) {
    if (threads % rows != 0) continue;
    const int cols = threads / rows;
    if (rows > m_tiles || cols > n_tiles) continue;
    const int64_t largest = CeilDiv(m_tiles, rows) * CeilDiv(n_tiles, cols);
    const int64_t packing = cols * m + rows * n;
    if (best < 0 || largest < best || (largest == best && packing < best_packing) ||
        (largest == best && packing == best_packing && cols > *tn)) {
      best = largest;
      best_packing = packing;
      *tm = rows;
      *tn = cols;
    }
  }
  return best >= 0;
}

}  // namespace

void CpuGemm(const GemmArgs& g, Eigen::ThreadPoolInterface* pool, int max_threads) {
  if (g.m <= 0 || g.n <= 0) return;
  if (g.k <= 0) {
    if (!g.accumulate) {
      for (int64_t i = 0; i < g.m; ++i) std::fill(g.c + i * g.ldc, g.c + i * g.ldc + g.n, 0.0f);
    }
    if (g.bias != nullptr || g.relu) {
      const Epilogue ep{g.bias, g.relu};
      for (int64_t i = 0; i < g.m; ++i) {
        float* row = g.c + i * g.ldc;
        for (int64_t j = 0; j < g.n; ++j) row[j] = ApplyEpilogue(row[j], ep, j);
      }
    }
    return;
  }
  // The small path sums each element in one chain over k, as the packed
  // path does only with a single block of k.
  static_assert(cpu_gemm_internal::kSmallMaxK <= kKc && (kDeepK == 0 || cpu_gemm_internal::kSmallMaxK < kDeepK),
                "the small path's k must fit in one block of k");
  if (cpu_gemm_internal::SmallGemm(g)) return;
  const View a = g.transpose_a ? View{g.a, 1, g.lda} : View{g.a, g.lda, 1};
  const View b = g.transpose_b ? View{g.b, 1, g.ldb} : View{g.b, g.ldb, 1};
  const int64_t m_tiles = CeilDiv(g.m, kMr);
  const int64_t n_tiles = CeilDiv(g.n, kNr);

  // Calls from one of the pool's own threads split too: RunTasks never waits
  // for a block that no thread has started.
  int threads = 1;
  if (pool != nullptr && max_threads > 1) {
    const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
    threads = static_cast<int>(std::min<double>(max_threads, std::max(1.0, flops / kMinFlopsPerThread)));
    threads = static_cast<int>(std::min<int64_t>(threads, m_tiles * n_tiles));
  }
  int tm = 1, tn = 1;
  while (threads > 1 && !ChooseGrid(threads, g.m, g.n, m_tiles, n_tiles, &tm, &tn)) --threads;
  if (threads <= 1) {
    GemmBlock(g, a, b, 0, g.m, 0, g.n);
    return;
  }
  auto run_block = [&](int64_t t) {
    const int64_t r = t / tn, s = t % tn;
    const int64_t m0 = (r * m_tiles / tm) * kMr, m1 = std::min(g.m, ((r + 1) * m_tiles / tm) * kMr);
    const int64_t n0 = (s * n_tiles / tn) * kNr, n1 = std::min(g.n, ((s + 1) * n_tiles / tn) * kNr);
    if (m0 < m1 && n0 < n1) GemmBlock(g, a, b, m0, m1, n0, n1);
  };
  RunTasks(pool, threads, run_block);
}

int64_t PackedGemmBFloats(int64_t k, int64_t n) { return k * CeilDiv(n, kNr) * kNr; }

// Layout: for each block of KBlockDepth(k) rows (pc), all CeilDiv(n, kNr)
// panels of columns, each kc x kNr: the block starts at pc * n_panels * kNr.
void PackGemmB(const float* b, int64_t ldb, bool transpose_b, int64_t k, int64_t n, float* dst) {
  const View view = transpose_b ? View{b, 1, ldb} : View{b, ldb, 1};
  const int64_t n_panels = CeilDiv(n, kNr);
  const int64_t kb = KBlockDepth(k);
  for (int64_t pc = 0; pc < k; pc += kb) {
    PackB(view, pc, std::min(kb, k - pc), 0, n, dst + pc * n_panels * kNr);
  }
}

const char* CpuGemmKernelName() {
#if defined(SLUICE_GEMM_AVX512)
  return "avx512";
#elif defined(SLUICE_GEMM_AVX2)
  return "avx2+fma";
#else
  return "portable";
#endif
}

}  // namespace sluice

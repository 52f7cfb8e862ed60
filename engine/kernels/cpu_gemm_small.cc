// See cpu_gemm_small.h.
#include "engine/kernels/cpu_gemm_small.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/kernels/float_vec.h"

namespace sluice {
namespace cpu_gemm_internal {
namespace {

constexpr int kMaxVectors = 4;

// Rows [i, i + R) of C, V vectors each, in registers: C[r, :] = sum over p,
// in order, of op(A)[r, p] * B[p, :] (B: op(B) copied k x (V vectors),
// zero-padded), then C's old value when accumulating, the bias, the Relu.
// R rows at once keep R * V chains of multiply-adds going (one row's chain
// waits on the FMA latency at every step); the loops over them are unrolled
// (as -O3 would) so that the accumulators stay in registers.
template <int V, int R>
void RowBlock(const GemmArgs& g, const float* b, int64_t i) {
  constexpr int64_t L = simd::kLanes;
  simd::Vec acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = simd::Zero();
  }
  for (int64_t p = 0; p < g.k; ++p) {
    simd::Vec row[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) row[v] = simd::Load(b + (p * V + v) * L);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const simd::Vec a = simd::Splat(g.transpose_a ? g.a[p * g.lda + i + r] : g.a[(i + r) * g.lda + p]);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[r][v] = simd::Fma(a, row[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    float* c = g.c + (i + r) * g.ldc;
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      const int64_t lanes = std::min<int64_t>(L, g.n - v * L);
      simd::Vec x = acc[r][v];
      // The micro-kernel's order: + C, + bias, then max(0, x) (NaN stays NaN).
      if (g.accumulate) x = x + simd::LoadPartial(c + v * L, lanes);
      if (g.bias != nullptr) x = x + simd::LoadPartial(g.bias + v * L, lanes);
      if (g.relu) x = simd::Max0(x);
      if (lanes == L) {
        simd::Store(c + v * L, x);
      } else {
        simd::StorePartial(c + v * L, x, lanes);
      }
    }
  }
}

// Four rows at a time up to two vectors (with eight rows of one vector GCC
// kept an accumulator on the stack: 9.6 against 6.9 us for an attention
// head's 32 products of 16 x 16 x 8, ops_bench BM_BatchMatMulSmall), two for
// wider rows.
template <int V>
void Rows(const GemmArgs& g, const float* b) {
  constexpr int R = V <= 2 ? 4 : 2;
  int64_t i = 0;
  for (; i + R <= g.m; i += R) RowBlock<V, R>(g, b, i);
  for (; i < g.m; ++i) RowBlock<V, 1>(g, b, i);
}

}  // namespace

bool SmallGemm(const GemmArgs& g) {
  constexpr int64_t L = simd::kLanes;
  if (!g.small_path || g.packed_b != nullptr || g.k > kSmallMaxK || g.n > kMaxVectors * L ||
      g.m * g.n * g.k > kSmallProduct) {
    return false;
  }
  const int vectors = static_cast<int>((g.n + L - 1) / L);
  const int64_t width = vectors * L;
  thread_local std::vector<float> copy;
  copy.resize(static_cast<size_t>(g.k * width));
  for (int64_t p = 0; p < g.k; ++p) {
    float* row = copy.data() + p * width;
    if (g.transpose_b) {
      for (int64_t j = 0; j < g.n; ++j) row[j] = g.b[j * g.ldb + p];
    } else {
      std::memcpy(row, g.b + p * g.ldb, static_cast<size_t>(g.n) * sizeof(float));
    }
    for (int64_t j = g.n; j < width; ++j) row[j] = 0.0f;
  }
  switch (vectors) {
    case 1:
      Rows<1>(g, copy.data());
      break;
    case 2:
      Rows<2>(g, copy.data());
      break;
    case 3:
      Rows<3>(g, copy.data());
      break;
    default:
      Rows<4>(g, copy.data());
      break;
  }
  return true;
}

}  // namespace cpu_gemm_internal
}  // namespace sluice

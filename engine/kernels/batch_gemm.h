// Batched matrix products for the CPU kernels (BatchMatMul, Einsum):
// out[b] = op(x[xi[b]]) op(y[yi[b]]) for every output batch b. Large matrices
// run one product at a time on the kernel's intra-op pool; many small ones run
// in parallel over the batch, each product on one thread. float32 uses
// CpuGemm (tiny products a plain loop, SmallGemm), other types Eigen's tensor
// contraction.
// Thread safety: pure functions of their arguments.
#ifndef SLUICE_ENGINE_KERNELS_BATCH_GEMM_H_
#define SLUICE_ENGINE_KERNELS_BATCH_GEMM_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "engine/kernels/cpu_gemm.h"
#include "engine/kernels/cwise_ops_common.h"
#include "engine/kernels/float_vec.h"

namespace sluice {
namespace batch_gemm {

template <typename T>
using Mat = Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor, Eigen::DenseIndex>, Eigen::Unaligned>;
template <typename T>
using CMat = Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor, Eigen::DenseIndex>, Eigen::Unaligned>;

// Matrix sizes of one batch: x stored xr x xc, y stored yr x yc, out m x n,
// inner dimension k.
struct BatchDims {
  int64_t xr, xc, yr, yc, m, n, k;
};

// Products this small (m * n * k multiply-adds, C at most kSmallVectors
// vectors wide) skip CpuGemm: packing both operands and padding C to the
// micro-kernel's tile cost more than the product (an attention head's
// 16 x 16 x 8 ran at 10 GFLOP/s).
constexpr int64_t kSmallProduct = 16384;
constexpr int kSmallVectors = 4;

// R rows of C from row i, V vectors each, in registers: C[r, :] = sum over
// p, in order, of op(A)[r, p] * B[p, :], where B is op(B) copied k x (V
// lanes), zero-padded. R rows at once keep R * V multiply-add chains going
// (one row's chain of k waits on the FMA latency at every step); the loops
// over them are unrolled (as -O3 would), so the accumulators stay in
// registers.
template <int V, int R>
void SmallRowBlock(const GemmArgs& g, const float* b, int64_t i) {
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
  const bool full = g.n == V * L;
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    float* c = g.c + (i + r) * g.ldc;
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      if (full) {
        simd::Store(c + v * L, acc[r][v]);
      } else {
        simd::StorePartial(c + v * L, acc[r][v], std::min<int64_t>(L, g.n - v * L));
      }
    }
  }
}

template <int V>
void SmallRows(const GemmArgs& g, const float* b) {
  constexpr int R = V == 1 ? 8 : V == 2 ? 4 : 2;
  int64_t i = 0;
  for (; i + R <= g.m; i += R) SmallRowBlock<V, R>(g, b, i);
  for (; i < g.m; ++i) SmallRowBlock<V, 1>(g, b, i);
}

// C = op(A) op(B) (no accumulation, bias or activation) for a small product
// whose C is at most kSmallVectors vectors wide. `scratch` holds op(B).
inline void SmallGemm(const GemmArgs& g, std::vector<float>* scratch) {
  constexpr int64_t L = simd::kLanes;
  if (g.m == 0 || g.n == 0) return;
  const int vectors = static_cast<int>((g.n + L - 1) / L);
  const int64_t width = vectors * L;
  scratch->resize(static_cast<size_t>(g.k * width));
  float* copy = scratch->data();
  for (int64_t p = 0; p < g.k; ++p) {
    float* row = copy + p * width;
    if (g.transpose_b) {
      for (int64_t j = 0; j < g.n; ++j) row[j] = g.b[j * g.ldb + p];
    } else {
      std::memcpy(row, g.b + p * g.ldb, static_cast<size_t>(g.n) * sizeof(float));
    }
    for (int64_t j = g.n; j < width; ++j) row[j] = 0.0f;
  }
  switch (vectors) {
    case 1: return SmallRows<1>(g, copy);
    case 2: return SmallRows<2>(g, copy);
    case 3: return SmallRows<3>(g, copy);
    default: return SmallRows<4>(g, copy);
  }
}

// out[b] = op(x[xi[b]]) op(y[yi[b]]) for every output batch b. A function of T
// alone (not of an op's broadcast mode), and float32 instantiates no Eigen
// contraction: both keep compile times down.
template <typename T>
void MultiplyBatches(OpKernelContext* ctx, const T* xp, const T* yp, T* op, const std::vector<int64_t>& xi,
                     const std::vector<int64_t>& yi, const BatchDims& d, bool adj_x, bool adj_y) {
  const int64_t batches = static_cast<int64_t>(xi.size());
  const int64_t xr = d.xr, xc = d.xc, yr = d.yr, yc = d.yc, m = d.m, n = d.n, k = d.k;
  if constexpr (std::is_same<T, float>::value) {
    // One GEMM per output batch: large ones each use the intra-op pool,
    // many small ones are spread over it a batch range at a time.
    std::vector<float> scratch;  // SmallGemm's, on the calling thread only
    auto gemm = [&](int64_t b, bool use_pool, std::vector<float>* small_scratch) {
      GemmArgs g;
      g.m = m;
      g.n = n;
      g.k = k;
      g.a = xp + xi[b] * xr * xc;
      g.lda = xc;
      g.transpose_a = adj_x;
      g.b = yp + yi[b] * yr * yc;
      g.ldb = yc;
      g.transpose_b = adj_y;
      g.c = op + b * m * n;
      g.ldc = n;
      if (m * n * k <= kSmallProduct && n <= kSmallVectors * simd::kLanes) {
        SmallGemm(g, small_scratch);
      } else if (use_pool) {
        CpuGemm(g, ctx->eigen_cpu_device());
      } else {
        CpuGemm(g, nullptr, 1);
      }
    };
    if (batches == 1 || m * n * k >= 64 * 64 * 64) {
      for (int64_t b = 0; b < batches; ++b) gemm(b, true, &scratch);
    } else {
      cwise::ParallelFor(ctx, batches, m * n * k, [&](int64_t lo, int64_t hi) {
        std::vector<float> range_scratch;
        for (int64_t b = lo; b < hi; ++b) gemm(b, false, &range_scratch);
      });
    }
  } else {
    const Eigen::array<Eigen::IndexPair<Eigen::DenseIndex>, 1> dims{
        Eigen::IndexPair<Eigen::DenseIndex>(adj_x ? 0 : 1, adj_y ? 1 : 0)};
    const int64_t xs = xr * xc, ys = yr * yc, os = m * n;
    if (batches == 1 || m * n * k >= 64 * 64 * 64) {
      for (int64_t b = 0; b < batches; ++b) {
        // Not float: Eigen's contraction on this thread (see Product in
        // conv_ops.cc for why not on the device's ThreadPoolDevice).
        Mat<T>(op + b * os, m, n) = CMat<T>(xp + xi[b] * xs, xr, xc).contract(CMat<T>(yp + yi[b] * ys, yr, yc), dims);
      }
      return;
    }
    cwise::ParallelFor(ctx, batches, m * n * k, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        Mat<T>(op + b * os, m, n) =
            CMat<T>(xp + xi[b] * xs, xr, xc).contract(CMat<T>(yp + yi[b] * ys, yr, yc), dims);
      }
    });
  }
}

}  // namespace batch_gemm
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_BATCH_GEMM_H_

// Batched matrix products for the CPU kernels (BatchMatMul, Einsum):
// out[b] = op(x[xi[b]]) op(y[yi[b]]) for every output batch b. Large matrices
// run one product at a time on the kernel's intra-op pool; many small ones run
// in parallel over the batch, each product on one thread. float32 uses
// CpuGemm, other types Eigen's tensor contraction.
// Thread safety: pure functions of their arguments.
#ifndef SLUICE_ENGINE_KERNELS_BATCH_GEMM_H_
#define SLUICE_ENGINE_KERNELS_BATCH_GEMM_H_

#include <cstdint>
#include <type_traits>
#include <vector>

#include "engine/kernels/cpu_gemm.h"
#include "engine/kernels/cwise_ops_common.h"

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
    auto gemm = [&](int64_t b, bool use_pool) {
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
      if (use_pool) {
        CpuGemm(g, ctx->eigen_cpu_device());
      } else {
        CpuGemm(g, nullptr, 1);
      }
    };
    if (batches == 1 || m * n * k >= 64 * 64 * 64) {
      for (int64_t b = 0; b < batches; ++b) gemm(b, true);
    } else {
      cwise::ParallelFor(ctx, batches, m * n * k, [&](int64_t lo, int64_t hi) {
        for (int64_t b = lo; b < hi; ++b) gemm(b, false);
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

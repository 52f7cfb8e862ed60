// CpuGemm: single-precision matrix multiply for the CPU kernels (MatMul,
// BatchMatMul, the Conv2D family): C = op(A) * op(B), or C += op(A) * op(B).
//
// It is a blocked GEMM in the GotoBLAS/BLIS layout (the loop order and the
// cache blocking are the published algorithm; the code is ours): op(B) is
// packed into KC x NR column panels that stay in L1/L3, op(A) into MC x KC row
// panels that stay in L2, and a register-blocked FMA micro-kernel computes
// each tile of C: 8 x 32 with AVX-512 when the build targets it, 6 x 16 with
// AVX2 + FMA, portable C++ otherwise. Transposed operands are handled by the packing, so every
// combination of transposes runs the same micro-kernel. A row-major B is packed by the first tile
// that reads each panel (the micro-kernel stores the rows it loads), not in a pass of its own;
// with a single block of A and shallow blocks of k, the AVX-512 and portable kernels read it in
// place instead (cpu_gemm.cc, GemmBlock).
//
// Small products (at most 16,384 multiply-adds, k <= 256, C at most four
// vectors wide) skip the packing and run on the calling thread, with bitwise
// the same results (cpu_gemm_small.h).
//
// Threads: the caller's thread plus up to max_threads - 1 tasks on `pool`;
// C is split into disjoint blocks of whole tiles, one per thread, so no two
// threads write the same element and the result does not depend on the
// thread count (each element is summed in the same order).
// Thread safety: concurrent calls are safe (packing buffers are per thread).
#ifndef SLUICE_ENGINE_KERNELS_CPU_GEMM_H_
#define SLUICE_ENGINE_KERNELS_CPU_GEMM_H_

#include <cstdint>

#define EIGEN_USE_THREADS
#include "unsupported/Eigen/CXX11/Tensor"
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace sluice {

struct GemmArgs {
  int64_t m = 0;  // rows of op(A) and C
  int64_t n = 0;  // columns of op(B) and C
  int64_t k = 0;  // columns of op(A), rows of op(B)
  // Row-major storage. A is m x k (k x m when transpose_a) with row stride lda;
  // B is k x n (n x k when transpose_b) with row stride ldb; C is m x n with
  // row stride ldc.
  const float* a = nullptr;
  int64_t lda = 0;
  bool transpose_a = false;
  const float* b = nullptr;
  int64_t ldb = 0;
  bool transpose_b = false;
  float* c = nullptr;
  int64_t ldc = 0;
  // false: C = op(A) op(B); true: C += op(A) op(B).
  bool accumulate = false;
  // When set, op(B) as PackGemmB laid it out (for this k and n); b, ldb and
  // transpose_b are then unused. Products that share one B (a convolution's
  // filter against every piece of its patches) pack it once.
  const float* packed_b = nullptr;
  // Optional epilogue, applied to each element of C as the micro-kernel stores
  // it for the last block of k (while the tile is still in registers), not as a
  // second pass over C: C[i, j] = act(sum + bias[j]), where sum is op(A) op(B)
  // (+ C when accumulating) and act is max(x, 0) when `relu` (NaN stays NaN),
  // else the identity. `bias` (n floats) may be null: no bias. The result is
  // bitwise what the plain product followed by BiasAdd and Relu gives.
  const float* bias = nullptr;
  bool relu = false;
  // Small products (cpu_gemm_small.h) skip packing, with bitwise the same
  // results; false forces the packed path (tests compare the two).
  bool small_path = true;
};

// The micro-kernel's tile of C: products whose m and n are not multiples of
// these compute (and discard) the padding, so callers that can choose between
// equivalent products (C or C^T) can compare the waste.
// 8 x 32 with AVX-512 (two 16-float registers per row, 16 accumulators of
// its 32 registers), 6 x 16 otherwise (12 of AVX2's 16).
#if defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__)
constexpr int kCpuGemmTileRows = 8;
constexpr int kCpuGemmTileCols = 32;
#else
constexpr int kCpuGemmTileRows = 6;
constexpr int kCpuGemmTileCols = 16;
#endif

// The share of a tiled m x n product's work that is not tile padding.
inline double CpuGemmTileUse(int64_t m, int64_t n) {
  const int64_t padded_m = (m + kCpuGemmTileRows - 1) / kCpuGemmTileRows * kCpuGemmTileRows;
  const int64_t padded_n = (n + kCpuGemmTileCols - 1) / kCpuGemmTileCols * kCpuGemmTileCols;
  return static_cast<double>(m) / static_cast<double>(padded_m) * static_cast<double>(n) /
         static_cast<double>(padded_n);
}

// Floats PackGemmB writes for a k x n op(B).
int64_t PackedGemmBFloats(int64_t k, int64_t n);

// Packs op(B) (k x n: B row-major with row stride ldb, k x n, or n x k when
// transpose_b) into dst, which holds PackedGemmBFloats(k, n) floats.
void PackGemmB(const float* b, int64_t ldb, bool transpose_b, int64_t k, int64_t n, float* dst);

// Computes the product described by `args`. k == 0 sets C to zero (or leaves
// it unchanged when accumulating), then applies the epilogue. `pool` may be null (then one thread).
// REQUIRES: m, n, k >= 0; leading dimensions at least the stored row lengths;
// C does not overlap A or B.
void CpuGemm(const GemmArgs& args, Eigen::ThreadPoolInterface* pool, int max_threads);

// The same on a kernel's Eigen device (its intra-op pool and thread count).
inline void CpuGemm(const GemmArgs& args, const Eigen::ThreadPoolDevice& device) {
  CpuGemm(args, device.getPool(), device.numThreads());
}

// The instruction set of the micro-kernel in this build ("avx512",
// "avx2+fma" or "portable"), for benchmark labels and tests.
const char* CpuGemmKernelName();

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_CPU_GEMM_H_

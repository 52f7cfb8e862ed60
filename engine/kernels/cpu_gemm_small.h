// CpuGemm's path for small products, inside CpuGemm (not for other callers):
// no packing, no tile padding. Packing both operands and padding C to the
// micro-kernel's 8 x 32 tile cost more than a product this small (an
// attention head's 16 x 16 x 8 ran at 10 GFLOP/s, an LSTM step's 8 x 16 x 64
// at about 8). Each element is the same chain of fused multiply-adds over k,
// from zero and in order, then the same accumulation and epilogue, as the
// micro-kernel's with a single block of k: the results are bitwise the
// packed path's (cpu_gemm_test checks it).
// Thread safety: concurrent calls are safe (the copy of B is per thread).
#ifndef SLUICE_ENGINE_KERNELS_CPU_GEMM_SMALL_H_
#define SLUICE_ENGINE_KERNELS_CPU_GEMM_SMALL_H_

#include <cstdint>

#include "engine/kernels/cpu_gemm.h"

namespace sluice {
namespace cpu_gemm_internal {

// Largest m * n * k the small path takes, and its deepest k (one block of k
// in the packed path, so both sum in one chain).
constexpr int64_t kSmallProduct = 16384;
constexpr int64_t kSmallMaxK = 256;

// Computes `g` on the calling thread if it is small (see above; at most 4
// vectors of C per row, B not prepacked) and returns true; else false.
// REQUIRES: g.m, g.n, g.k > 0.
bool SmallGemm(const GemmArgs& g);

}  // namespace cpu_gemm_internal
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_CPU_GEMM_SMALL_H_

// Launch functions for the GPU reductions (Sum, Mean, Prod, Max, Min, ArgMax,
// ArgMin). The glue (reduction_ops.cc) views the input as [A, R, B] (reduced
// dims contiguous) or folds several reduced groups one at a time, so each
// launch reduces the middle dim of a row-major [A, R, B] array:
//   * B == 1 (innermost, "row reduce"): a warp per row, a block per long row;
//   * B > 1 ("column reduce", A == 1 for the outermost dims): 32 columns per
//     block, 8 row-strided threads per column, combined in shared memory;
//   * few outputs and a long R (e.g. reduce all): R split over blocks into
//     `scratch` partials, then a second launch reduces the partials.
// All pointers are device pointers; functions enqueue on `stream` and return
// the first launch error. Instantiated for float and double.
// Thread safety: plain functions; callers order work with the stream.
#ifndef SLUICE_ENGINE_KERNELS_GPU_REDUCTION_KERNELS_H_
#define SLUICE_ENGINE_KERNELS_GPU_REDUCTION_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace sluice {
namespace gpu {

enum class ReduceKind { kSum, kProd, kMax, kMin };

// Elements of scratch LaunchReduce3 needs for this shape (0: none).
int64_t ReduceScratchElements(int64_t A, int64_t R, int64_t B);

// out[a, b] = (reduce_r in[a, r, b]) / divisor, for R >= 1 (divisor 1 except
// for Mean's last pass). `scratch` holds ReduceScratchElements(A, R, B) values.
template <typename T>
cudaError_t LaunchReduce3(cudaStream_t stream, ReduceKind kind, const T* in, T* out, int64_t A, int64_t R, int64_t B,
                          T divisor, T* scratch);

// out[i] = value for i in [0, n).
template <typename T>
cudaError_t LaunchFill(cudaStream_t stream, T* out, int64_t n, T value);

// out[a, b] = index r of the max (min) of in[a, r, b] (the first on ties, as
// the CPU kernel), for R >= 1. I is int64_t or int32_t.
template <typename T, typename I>
cudaError_t LaunchArgReduce(cudaStream_t stream, bool is_max, const T* in, I* out, int64_t A, int64_t R, int64_t B);

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_GPU_REDUCTION_KERNELS_H_

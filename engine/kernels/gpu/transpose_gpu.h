// The GPU Transpose's launch function (transpose_gpu.cu): plain C++, no
// Sluice types.
#ifndef SLUICE_ENGINE_KERNELS_GPU_TRANSPOSE_GPU_H_
#define SLUICE_ENGINE_KERNELS_GPU_TRANSPOSE_GPU_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace sluice {
namespace gpu {

constexpr int kMaxTransposeRank = 8;

// out[i] = in[sum_d coord_d(i) * in_strides[d]], where coord_d(i) are the
// row-major coordinates of i in out_dims: any permutation of the input's
// dims (in_strides[d] is the input stride of out's dim d). Elements of
// `elem_bytes` (1, 2, 4 or 8) bytes; rank in [1, kMaxTransposeRank];
// out_elements > 0. Enqueued on `stream`.
cudaError_t LaunchPermute(cudaStream_t stream, int elem_bytes, const void* in, void* out, int rank,
                          const int64_t* out_dims, const int64_t* in_strides, int64_t out_elements);

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_GPU_TRANSPOSE_GPU_H_

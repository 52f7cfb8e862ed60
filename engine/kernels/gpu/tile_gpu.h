// The Tile kernel's launch function (tile_gpu.cu): plain C++, no Sluice types.
#ifndef SLUICE_ENGINE_KERNELS_GPU_TILE_GPU_H_
#define SLUICE_ENGINE_KERNELS_GPU_TILE_GPU_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace sluice {
namespace gpu {

constexpr int kMaxTileRank = 8;

// out[i] = in[j] where, per dim d, j_d = i_d mod in_dims[d]; elements of
// `elem_bytes` (1, 2, 4 or 8) bytes; `rank` <= kMaxTileRank; out has
// `out_elements` > 0 elements of shape out_dims. Enqueued on `stream`.
cudaError_t LaunchTile(cudaStream_t stream, int elem_bytes, const void* in, void* out, int rank,
                       const int64_t* in_dims, const int64_t* out_dims, int64_t out_elements);

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_GPU_TILE_GPU_H_

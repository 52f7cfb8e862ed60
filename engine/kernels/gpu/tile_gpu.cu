// Tile on the GPU: one thread per output element (grid-stride), the input
// index rebuilt from the output index dim by dim.
#include "engine/kernels/gpu/tile_gpu.h"

#include "engine/kernels/gpu/launch_util.cuh"

namespace sluice {
namespace gpu {
namespace {

struct TileDims {
  int rank;
  int64_t in[kMaxTileRank];
  int64_t out[kMaxTileRank];
};

template <typename T>
__global__ void TileKernel(const T* __restrict__ in, T* __restrict__ out, TileDims d, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rest = i, src = 0, in_stride = 1;
    for (int k = d.rank - 1; k >= 0; --k) {
      const int64_t coord = rest % d.out[k];
      rest /= d.out[k];
      src += (coord % d.in[k]) * in_stride;
      in_stride *= d.in[k];
    }
    out[i] = in[src];
  }
}

template <typename T>
cudaError_t Launch(cudaStream_t stream, const void* in, void* out, const TileDims& d, int64_t n) {
  constexpr int kThreads = 256;
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 4096) blocks = 4096;
  TileKernel<T><<<static_cast<int>(blocks), kThreads, 0, stream>>>(static_cast<const T*>(in), static_cast<T*>(out), d, n);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchTile(cudaStream_t stream, int elem_bytes, const void* in, void* out, int rank,
                       const int64_t* in_dims, const int64_t* out_dims, int64_t out_elements) {
  if (rank < 0 || rank > kMaxTileRank || out_elements <= 0) return cudaErrorInvalidValue;
  TileDims d;
  d.rank = rank;
  for (int k = 0; k < rank; ++k) {
    if (in_dims[k] <= 0) return cudaErrorInvalidValue;
    d.in[k] = in_dims[k];
    d.out[k] = out_dims[k];
  }
  return cu::ByElementSize(elem_bytes, [&](auto bits) {
    return Launch<decltype(bits)>(stream, in, out, d, out_elements);
  });
}

}  // namespace gpu
}  // namespace sluice

// Any permutation of dims on the GPU: one thread per output element
// (grid-stride), the input offset rebuilt from the output index dim by dim.
// The 2-D and batched 2-D cases (NHWC <-> NCHW) take the tiled kernel of
// cudnn_util_kernels.cu instead (transpose_ops_gpu.cc picks).
#include "engine/kernels/gpu/transpose_gpu.h"

#include "engine/kernels/gpu/launch_util.cuh"

namespace sluice {
namespace gpu {
namespace {

struct PermuteDims {
  int rank;
  int64_t out[kMaxTransposeRank];
  int64_t in_stride[kMaxTransposeRank];
};

template <typename T>
__global__ void PermuteKernel(const T* __restrict__ in, T* __restrict__ out, PermuteDims d, int64_t n) {
  for (int64_t i = cu::GlobalThread(); i < n; i += cu::GlobalStride()) {
    int64_t rest = i, src = 0;
    for (int k = d.rank - 1; k >= 0; --k) {
      src += (rest % d.out[k]) * d.in_stride[k];
      rest /= d.out[k];
    }
    out[i] = in[src];
  }
}

template <typename T>
cudaError_t Launch(cudaStream_t stream, const void* in, void* out, const PermuteDims& d, int64_t n) {
  PermuteKernel<T><<<cu::BlocksFor(n), cu::kThreads, 0, stream>>>(static_cast<const T*>(in), static_cast<T*>(out), d,
                                                                 n);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchPermute(cudaStream_t stream, int elem_bytes, const void* in, void* out, int rank,
                          const int64_t* out_dims, const int64_t* in_strides, int64_t out_elements) {
  if (rank < 1 || rank > kMaxTransposeRank || out_elements <= 0) return cudaErrorInvalidValue;
  PermuteDims d;
  d.rank = rank;
  for (int k = 0; k < rank; ++k) {
    if (out_dims[k] <= 0) return cudaErrorInvalidValue;
    d.out[k] = out_dims[k];
    d.in_stride[k] = in_strides[k];
  }
  return cu::ByElementSize(elem_bytes, [&](auto bits) {
    return Launch<decltype(bits)>(stream, in, out, d, out_elements);
  });
}

}  // namespace gpu
}  // namespace sluice

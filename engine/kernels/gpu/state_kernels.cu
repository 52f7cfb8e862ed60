// CUDA kernels for the GPU state ops: an in-place add (AssignAdd), grid-stride
// over int64 element counts.
#include "engine/kernels/gpu/state_kernels.h"

#include <algorithm>

namespace sluice {
namespace gpu {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

template <typename T>
__global__ void AddInPlaceKernel(T* v, const T* d, int64_t n) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    v[i] += d[i];
  }
}

template <typename T>
cudaError_t Launch(cudaStream_t stream, T* v, const T* d, int64_t n) {
  if (n <= 0) return cudaSuccess;
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks);
  AddInPlaceKernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(v, d, n);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchAddInPlace(cudaStream_t stream, float* v, const float* d, int64_t n) {
  return Launch(stream, v, d, n);
}
cudaError_t LaunchAddInPlace(cudaStream_t stream, double* v, const double* d, int64_t n) {
  return Launch(stream, v, d, n);
}

}  // namespace gpu
}  // namespace sluice

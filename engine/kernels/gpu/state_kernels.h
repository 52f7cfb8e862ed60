// Launch functions of the CUDA kernels behind the GPU state ops (AssignAdd).
// Each enqueues on `stream` and returns the launch's error (cudaSuccess when
// n == 0: nothing is launched).
#ifndef SLUICE_ENGINE_KERNELS_GPU_STATE_KERNELS_H_
#define SLUICE_ENGINE_KERNELS_GPU_STATE_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace sluice {
namespace gpu {

// v[i] += d[i] for i in [0, n).
cudaError_t LaunchAddInPlace(cudaStream_t stream, float* v, const float* d, int64_t n);
cudaError_t LaunchAddInPlace(cudaStream_t stream, double* v, const double* d, int64_t n);

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_GPU_STATE_KERNELS_H_

// Launch function for the GPU Dropout op (engine/ops/nn_ops.cc): one kernel
// computes mask and output. The mask comes from Philox4x32-10 keyed by
// (key0, key1) (philox::KeyFromSeeds(seed, seed2) on the host) at counter
// (element block, uint32(step)), exactly the CPU kernel's stream, so the GPU
// draws the same masks as the CPU. `rate` and `step` are device pointers to
// one value each (read by the kernel); a rate outside [0, 1) makes every
// output and mask value NaN (the CPU kernel fails the step instead: the GPU
// cannot report it without waiting for the device).
// Instantiated for float and double.
// Thread safety: a plain function; callers order work with the stream.
#ifndef SLUICE_ENGINE_KERNELS_GPU_DROPOUT_KERNELS_H_
#define SLUICE_ENGINE_KERNELS_GPU_DROPOUT_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace sluice {
namespace gpu {

template <typename T>
cudaError_t LaunchDropout(cudaStream_t stream, uint32_t key0, uint32_t key1, const T* x, const T* rate,
                          const int64_t* step, T* out, T* mask, int64_t n);

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_GPU_DROPOUT_KERNELS_H_

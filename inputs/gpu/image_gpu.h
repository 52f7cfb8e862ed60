// The launch function of ImageToFloat's GPU kernel (image_gpu.cu): plain C++,
// no Sluice types, so the .cu file needs only CUDA's headers.
#ifndef SLUICE_INPUTS_GPU_IMAGE_GPU_H_
#define SLUICE_INPUTS_GPU_IMAGE_GPU_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace sluice {
namespace gpu {

// out[i] = float(in[i]) * scale for i < n (n > 0), enqueued on `stream`.
cudaError_t LaunchImageToFloat(cudaStream_t stream, const uint8_t* in, float scale, float* out, int64_t n);

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_INPUTS_GPU_IMAGE_GPU_H_

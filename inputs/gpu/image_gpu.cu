// ImageToFloat on the GPU: a grid-stride loop, four pixels a thread per
// iteration (one 4-byte load, one 16-byte store) where the buffers allow it.
#include "inputs/gpu/image_gpu.h"

#include "engine/kernels/gpu/launch_util.cuh"

namespace sluice {
namespace gpu {
namespace {

__global__ void ImageToFloatBy4(const uchar4* __restrict__ in, float scale, float4* __restrict__ out, int64_t quads) {
  for (int64_t i = cu::GlobalThread(); i < quads; i += cu::GlobalStride()) {
    const uchar4 p = in[i];
    out[i] = make_float4(p.x * scale, p.y * scale, p.z * scale, p.w * scale);
  }
}

__global__ void ImageToFloatBy1(const uint8_t* __restrict__ in, float scale, float* __restrict__ out, int64_t begin,
                                int64_t n) {
  for (int64_t i = begin + cu::GlobalThread(); i < n; i += cu::GlobalStride()) {
    out[i] = static_cast<float>(in[i]) * scale;
  }
}

}  // namespace

cudaError_t LaunchImageToFloat(cudaStream_t stream, const uint8_t* in, float scale, float* out, int64_t n) {
  if (n <= 0) return cudaErrorInvalidValue;
  int64_t done = 0;
  if (cu::Aligned4<uint8_t>(in) && cu::Aligned4<float>(out) && n >= 4) {
    const int64_t quads = n / 4;
    ImageToFloatBy4<<<cu::BlocksFor(quads), cu::kThreads, 0, stream>>>(reinterpret_cast<const uchar4*>(in), scale,
                                                                       reinterpret_cast<float4*>(out), quads);
    done = quads * 4;
  }
  if (done < n) ImageToFloatBy1<<<cu::BlocksFor(n - done), cu::kThreads, 0, stream>>>(in, scale, out, done, n);
  return cudaGetLastError();
}

}  // namespace gpu
}  // namespace sluice

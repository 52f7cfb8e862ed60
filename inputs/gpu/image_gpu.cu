// ImageToFloat on the GPU: a grid-stride loop, four pixels a thread per
// iteration (one 4-byte load, one 16-byte store) where the buffers allow it.
#include "inputs/gpu/image_gpu.h"

namespace sluice {
namespace gpu {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

__global__ void ImageToFloatBy4(const uchar4* __restrict__ in, float scale, float4* __restrict__ out, int64_t quads) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < quads;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uchar4 p = in[i];
    out[i] = make_float4(p.x * scale, p.y * scale, p.z * scale, p.w * scale);
  }
}

__global__ void ImageToFloatBy1(const uint8_t* __restrict__ in, float scale, float* __restrict__ out, int64_t begin,
                                int64_t n) {
  for (int64_t i = begin + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = static_cast<float>(in[i]) * scale;
  }
}

int BlocksFor(int64_t work) {
  int64_t b = (work + kThreads - 1) / kThreads;
  if (b > kMaxBlocks) b = kMaxBlocks;
  return b < 1 ? 1 : static_cast<int>(b);
}

}  // namespace

cudaError_t LaunchImageToFloat(cudaStream_t stream, const uint8_t* in, float scale, float* out, int64_t n) {
  if (n <= 0) return cudaErrorInvalidValue;
  const bool aligned = reinterpret_cast<uintptr_t>(in) % 4 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0;
  int64_t done = 0;
  if (aligned && n >= 4) {
    const int64_t quads = n / 4;
    ImageToFloatBy4<<<BlocksFor(quads), kThreads, 0, stream>>>(reinterpret_cast<const uchar4*>(in), scale,
                                                               reinterpret_cast<float4*>(out), quads);
    done = quads * 4;
  }
  if (done < n) ImageToFloatBy1<<<BlocksFor(n - done), kThreads, 0, stream>>>(in, scale, out, done, n);
  return cudaGetLastError();
}

}  // namespace gpu
}  // namespace sluice

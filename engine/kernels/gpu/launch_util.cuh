// Device-side helpers shared by the .cu files of engine/kernels/gpu: launch
// geometry for grid-stride loops, 4-wide packs for vector loads, and the
// float/double math overloads the functors use. Included only by .cu files.
#ifndef SLUICE_ENGINE_KERNELS_GPU_LAUNCH_UTIL_CUH_
#define SLUICE_ENGINE_KERNELS_GPU_LAUNCH_UTIL_CUH_

#include <cuda_runtime.h>

#include <cstdint>

namespace sluice {
namespace gpu {
namespace cu {

constexpr int kThreads = 256;
// Enough blocks to fill an H100/H200 (132 SMs x 8 blocks of 256) a couple of
// times over; larger inputs loop (grid-stride).
constexpr int64_t kMaxBlocks = 4096;

// Blocks for `work` items at kThreads per block. REQUIRES: work > 0.
inline int BlocksFor(int64_t work) {
  int64_t b = (work + kThreads - 1) / kThreads;
  if (b > kMaxBlocks) b = kMaxBlocks;
  if (b < 1) b = 1;
  return static_cast<int>(b);
}

// launch(U{}) with U the unsigned integer of `elem_bytes` bytes (1, 2, 4 or
// 8), for kernels that only move elements and so take any dtype as its bits;
// cudaErrorInvalidValue for another size.
template <typename Launch>
cudaError_t ByElementSize(int elem_bytes, Launch&& launch) {
  switch (elem_bytes) {
    case 1: return launch(uint8_t{});
    case 2: return launch(uint16_t{});
    case 4: return launch(uint32_t{});
    case 8: return launch(uint64_t{});
    default: return cudaErrorInvalidValue;
  }
}

// Whether `p` is aligned for a Pack<T> of 4.
template <typename T>
inline bool Aligned4(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % (4 * sizeof(T)) == 0;
}

// Four consecutive elements, loaded and stored as one (or two 16-byte) accesses.
template <typename T>
struct alignas(4 * sizeof(T) > 16 ? 16 : 4 * sizeof(T)) Pack4 {
  T v[4];
};

__device__ __forceinline__ int64_t GlobalThread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t GlobalStride() { return static_cast<int64_t>(blockDim.x) * gridDim.x; }

// Math overloads (float uses the single-precision functions).
__device__ __forceinline__ float Exp(float x) { return expf(x); }
__device__ __forceinline__ double Exp(double x) { return exp(x); }
__device__ __forceinline__ float Expm1(float x) { return expm1f(x); }
__device__ __forceinline__ double Expm1(double x) { return expm1(x); }
__device__ __forceinline__ float Log(float x) { return logf(x); }
__device__ __forceinline__ double Log(double x) { return log(x); }
__device__ __forceinline__ float Log1p(float x) { return log1pf(x); }
__device__ __forceinline__ double Log1p(double x) { return log1p(x); }
__device__ __forceinline__ float Sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double Sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float Rsqrt(float x) { return 1.0f / sqrtf(x); }
__device__ __forceinline__ double Rsqrt(double x) { return 1.0 / sqrt(x); }
__device__ __forceinline__ float Tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double Tanh(double x) { return tanh(x); }
__device__ __forceinline__ float Pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double Pow(double x, double y) { return pow(x, y); }
__device__ __forceinline__ float Abs(float x) { return fabsf(x); }
__device__ __forceinline__ double Abs(double x) { return fabs(x); }
__device__ __forceinline__ long long Abs(long long x) { return x < 0 ? -x : x; }
__device__ __forceinline__ long Abs(long x) { return x < 0 ? -x : x; }

}  // namespace cu
}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_GPU_LAUNCH_UTIL_CUH_

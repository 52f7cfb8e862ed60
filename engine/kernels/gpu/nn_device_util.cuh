// Device helpers shared by the nn family's .cu files (softmax/xent, reductions):
// warp-shuffle and block reductions, reduction functors, the accumulation type
// and launch-size helpers. Included only by .cu files (nvcc).
// Thread safety: pure device functions.
#ifndef SLUICE_ENGINE_KERNELS_GPU_NN_DEVICE_UTIL_CUH_
#define SLUICE_ENGINE_KERNELS_GPU_NN_DEVICE_UTIL_CUH_

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace sluice {
namespace gpu {
namespace nn {

constexpr unsigned kFullMask = 0xffffffffu;

struct SumOp {
  template <typename A>
  __device__ static A Identity() { return A(0); }
  template <typename A>
  __device__ static A Apply(A a, A b) { return a + b; }
};
struct ProdOp {
  template <typename A>
  __device__ static A Identity() { return A(1); }
  template <typename A>
  __device__ static A Apply(A a, A b) { return a * b; }
};
// Max/Min compare as the CPU kernels do (a < b ? b : a).
struct MaxOp {
  template <typename A>
  __device__ static A Identity() { return -INFINITY; }
  template <typename A>
  __device__ static A Apply(A a, A b) { return a < b ? b : a; }
};
struct MinOp {
  template <typename A>
  __device__ static A Identity() { return INFINITY; }
  template <typename A>
  __device__ static A Apply(A a, A b) { return b < a ? b : a; }
};

// Reduces `v` across the 32 lanes of a warp; every lane gets the result.
template <typename Op, typename A>
__device__ __forceinline__ A WarpReduce(A v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = Op::Apply(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

// Reduces `v` across a 1-D block (blockDim.x a multiple of 32, at most 1024);
// every thread gets the result. `scratch` is 32 shared values; the leading
// __syncthreads makes back-to-back calls on the same scratch safe.
template <typename Op, typename A>
__device__ __forceinline__ A BlockReduce(A v, A* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = WarpReduce<Op>(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x >> 5;
    A w = lane < warps ? scratch[lane] : Op::template Identity<A>();
    w = WarpReduce<Op>(w);
    if (lane == 0) scratch[0] = w;
  }
  __syncthreads();
  return scratch[0];
}

__device__ __forceinline__ float Exp(float x) { return expf(x); }
__device__ __forceinline__ double Exp(double x) { return exp(x); }
__device__ __forceinline__ float Log(float x) { return logf(x); }
__device__ __forceinline__ double Log(double x) { return log(x); }

// Blocks for `work` items of `per_block` each, capped (kernels grid-stride).
inline unsigned GridFor(int64_t work, int64_t per_block, int64_t cap = 65535) {
  int64_t blocks = (work + per_block - 1) / per_block;
  if (blocks < 1) blocks = 1;
  if (blocks > cap) blocks = cap;
  return static_cast<unsigned>(blocks);
}

}  // namespace nn
}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_GPU_NN_DEVICE_UTIL_CUH_

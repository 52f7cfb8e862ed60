// CUDA kernel for Dropout (dropout_kernels.h): a thread per Philox block of 4
// elements, grid-stride. Philox4x32-10 is written out here for device code
// (engine/kernels/philox_random.h is host-only C++), with the same constants,
// round function and counter layout, so the bits match the CPU's.
#include "engine/kernels/gpu/dropout_kernels.h"

#include <algorithm>
#include <limits>

namespace sluice {
namespace gpu {
namespace {

struct Block4 {
  uint32_t v[4];
};

__device__ __forceinline__ Block4 Philox4x32(uint32_t k0, uint32_t k1, Block4 c) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const uint32_t hi0 = __umulhi(kM0, c.v[0]), lo0 = kM0 * c.v[0];
    const uint32_t hi1 = __umulhi(kM1, c.v[2]), lo1 = kM1 * c.v[2];
    Block4 n;
    n.v[0] = hi1 ^ c.v[1] ^ k0;
    n.v[1] = lo1;
    n.v[2] = hi0 ^ c.v[3] ^ k1;
    n.v[3] = lo0;
    c = n;
    k0 += kW0;
    k1 += kW1;
  }
  return c;
}

// Uniform in [0, 1) from the low 23 bits (philox::ToFloat).
__device__ __forceinline__ float ToFloat(uint32_t x) { return __uint_as_float((x & 0x7fffffu) | 0x3f800000u) - 1.0f; }

template <typename T>
__global__ void DropoutKernel(uint32_t k0, uint32_t k1, const T* __restrict__ x, const T* __restrict__ rate_p,
                              const int64_t* __restrict__ step_p, T* __restrict__ out, T* __restrict__ mask,
                              int64_t n) {
  const T rate = *rate_p;
  const uint32_t run = static_cast<uint32_t>(*step_p);
  const bool valid = rate >= T(0) && rate < T(1);
  const T scale = T(1) / (T(1) - rate);
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const int64_t blocks = (n + 3) / 4;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks;
       b += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Block4 ctr;
    ctr.v[0] = static_cast<uint32_t>(b);
    ctr.v[1] = static_cast<uint32_t>(static_cast<uint64_t>(b) >> 32);
    ctr.v[2] = run;
    ctr.v[3] = 0;
    const Block4 bits = Philox4x32(k0, k1, ctr);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t i = b * 4 + j;
      if (i >= n) break;
      if (!valid) {
        out[i] = nan;
        mask[i] = nan;
        continue;
      }
      const bool keep = static_cast<T>(ToFloat(bits.v[j])) >= rate;
      mask[i] = keep ? T(1) : T(0);
      out[i] = keep ? x[i] * scale : T(0);
    }
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchDropout(cudaStream_t stream, uint32_t key0, uint32_t key1, const T* x, const T* rate,
                          const int64_t* step, T* out, T* mask, int64_t n) {
  if (n <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t blocks = (n + 3) / 4;
  const unsigned grid = static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((blocks + kThreads - 1) / kThreads, 8192)));
  DropoutKernel<T><<<grid, kThreads, 0, stream>>>(key0, key1, x, rate, step, out, mask, n);
  return cudaGetLastError();
}

template cudaError_t LaunchDropout<float>(cudaStream_t, uint32_t, uint32_t, const float*, const float*,
                                          const int64_t*, float*, float*, int64_t);
template cudaError_t LaunchDropout<double>(cudaStream_t, uint32_t, uint32_t, const double*, const double*,
                                           const int64_t*, double*, double*, int64_t);

}  // namespace gpu
}  // namespace sluice

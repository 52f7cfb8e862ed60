// BiasAdd and BiasAddGrad GPU kernels (bias_gpu.h).
// BiasAdd: a flat map (optionally with Relu after it, for the fused
// kernels); channels-last with channels % 4 == 0 uses 4-wide vector loads of
// x, bias and out.
// BiasAddGrad: channels-last is a column sum of a [rows, channels] matrix:
// blocks of 32 columns x 8 row lanes (each warp reads 32 consecutive floats
// of a row), each block summing one slice of the rows, lanes combined in
// shared memory; channels-first sums each channel's [outer, inner] slab with
// a block reduction. With several slices per channel, a second pass adds the
// partial sums in slice order (no atomics: results are deterministic).
#include <cstdint>

#include "engine/kernels/gpu/bias_gpu.h"
#include "engine/kernels/gpu/launch_util.cuh"

namespace sluice {
namespace gpu {
namespace {

using cu::BlocksFor;
using cu::kThreads;
using cu::Pack4;

// ---- BiasAdd ----

// kRelu: max(0, x + bias) (the fused kernels' epilogue; NaN stays NaN, as
// Relu's a < 0 ? 0 : a). x may be out (in place): each element is read and
// then written by the same thread.
template <typename T, bool kRelu>
__device__ inline T BiasOut(T a, T b) {
  const T v = a + b;
  return kRelu && v < T(0) ? T(0) : v;
}

template <typename T, typename Index, bool kRelu>
__global__ void __launch_bounds__(kThreads)
    BiasAddVec4Kernel(const T* x, const T* __restrict__ bias, T* out, Index nv, Index channels) {
  const Index stride = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index v = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; v < nv; v += stride) {
    const Index c = (v * 4) % channels;
    const Pack4<T> a = reinterpret_cast<const Pack4<T>*>(x)[v];
    const Pack4<T> b = *reinterpret_cast<const Pack4<T>*>(bias + c);
    Pack4<T> r;
#pragma unroll
    for (int k = 0; k < 4; ++k) r.v[k] = BiasOut<T, kRelu>(a.v[k], b.v[k]);
    reinterpret_cast<Pack4<T>*>(out)[v] = r;
  }
}

template <typename T, typename Index, bool kInner1, bool kRelu>
__global__ void __launch_bounds__(kThreads)
    BiasAddKernel(const T* x, const T* __restrict__ bias, T* out, Index n, Index channels, Index inner) {
  const Index stride = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const Index c = kInner1 ? i % channels : (i / inner) % channels;
    out[i] = BiasOut<T, kRelu>(x[i], bias[c]);
  }
}

template <typename T, typename Index, bool kRelu>
cudaError_t BiasAddTyped(cudaStream_t s, const T* x, const T* bias, T* out, Index n, Index channels, Index inner) {
  if (inner == 1 && channels % 4 == 0 && cu::Aligned4<T>(x) && cu::Aligned4<T>(bias) && cu::Aligned4<T>(out)) {
    BiasAddVec4Kernel<T, Index, kRelu><<<BlocksFor(n / 4), kThreads, 0, s>>>(x, bias, out, n / 4, channels);
  } else if (inner == 1) {
    BiasAddKernel<T, Index, true, kRelu><<<BlocksFor(n), kThreads, 0, s>>>(x, bias, out, n, channels, inner);
  } else {
    BiasAddKernel<T, Index, false, kRelu><<<BlocksFor(n), kThreads, 0, s>>>(x, bias, out, n, channels, inner);
  }
  return cudaGetLastError();
}

template <typename T, typename Index>
cudaError_t BiasAddTyped(cudaStream_t s, const T* x, const T* bias, T* out, Index n, Index channels, Index inner,
                         bool relu) {
  return relu ? BiasAddTyped<T, Index, true>(s, x, bias, out, n, channels, inner)
              : BiasAddTyped<T, Index, false>(s, x, bias, out, n, channels, inner);
}

template <typename T>
cudaError_t BiasAdd(cudaStream_t s, const void* x, const void* bias, void* out, int64_t outer, int64_t channels,
                    int64_t inner, bool relu) {
  const int64_t n = outer * channels * inner;
  if (n <= 0) return cudaSuccess;
  const T* xp = static_cast<const T*>(x);
  const T* bp = static_cast<const T*>(bias);
  T* op = static_cast<T*>(out);
  if (n <= INT32_MAX) {
    return BiasAddTyped<T, int32_t>(s, xp, bp, op, static_cast<int32_t>(n), static_cast<int32_t>(channels),
                                    static_cast<int32_t>(inner), relu);
  }
  return BiasAddTyped<T, int64_t>(s, xp, bp, op, n, channels, inner, relu);
}

// ---- BiasAddGrad ----

constexpr int kColLanes = 32;  // columns per block (one warp wide)
constexpr int kRowLanes = 8;   // row lanes per block

// partial[split, col] = sum of x[r, col] over the split's rows.
template <typename T>
__global__ void __launch_bounds__(kColLanes* kRowLanes)
    ColumnSumKernel(const T* __restrict__ x, T* __restrict__ partial, int64_t rows, int64_t cols,
                    int64_t rows_per_split) {
  __shared__ T lanes[kRowLanes][kColLanes + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColLanes + tx;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * rows_per_split;
  const int64_t r1 = r0 + rows_per_split < rows ? r0 + rows_per_split : rows;
  T s = T(0);
  if (col < cols) {
    const T* p = x + col;
    int64_t r = r0 + ty;
    // Two independent accumulators keep more loads in flight.
    T s2 = T(0);
    for (; r + kRowLanes < r1; r += 2 * kRowLanes) {
      s += p[r * cols];
      s2 += p[(r + kRowLanes) * cols];
    }
    if (r < r1) s += p[r * cols];
    s += s2;
  }
  lanes[ty][tx] = s;
  __syncthreads();
  if (ty == 0 && col < cols) {
#pragma unroll
    for (int k = 1; k < kRowLanes; ++k) s += lanes[k][tx];
    partial[static_cast<int64_t>(blockIdx.y) * cols + col] = s;
  }
}

// partial[split, c] = sum over the split's share of the [outer, inner] slab
// of channel c (blockIdx.x = c, blockIdx.y = split).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    ChannelSumKernel(const T* __restrict__ x, T* __restrict__ partial, int64_t outer, int64_t channels,
                     int64_t inner, int64_t per_split) {
  const int64_t c = blockIdx.x;
  const int64_t total = outer * inner;
  const int64_t j0 = static_cast<int64_t>(blockIdx.y) * per_split;
  const int64_t j1 = j0 + per_split < total ? j0 + per_split : total;
  T s = T(0);
  for (int64_t j = j0 + threadIdx.x; j < j1; j += blockDim.x) {
    const int64_t o = j / inner;
    const int64_t i = j - o * inner;
    s += x[(o * channels + c) * inner + i];
  }
  // Warp sums, then the first warp adds the warps' sums.
  __shared__ T warp_sums[kThreads / 32];
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < static_cast<int>(blockDim.x / 32) ? warp_sums[lane] : T(0);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
    if (lane == 0) partial[static_cast<int64_t>(blockIdx.y) * channels + c] = s;
  }
}

// out[c] = sum of partial[k, c] over k < splits, in order.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    SumSplitsKernel(const T* __restrict__ partial, T* __restrict__ out, int64_t splits, int64_t channels) {
  const int64_t stride = cu::GlobalStride();
  for (int64_t c = cu::GlobalThread(); c < channels; c += stride) {
    T s = T(0);
    for (int64_t k = 0; k < splits; ++k) s += partial[k * channels + c];
    out[c] = s;
  }
}

constexpr int64_t kMaxSplits = 1024;

int64_t Clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

template <typename T>
cudaError_t BiasAddGrad(cudaStream_t s, const BiasGradPlan& plan, const void* dyv, void* outv, void* tempv,
                        int64_t outer, int64_t channels, int64_t inner) {
  const T* dy = static_cast<const T*>(dyv);
  T* out = static_cast<T*>(outv);
  const int64_t splits = plan.splits;
  T* partial = splits > 1 ? static_cast<T*>(tempv) : out;
  if (splits > 1 && partial == nullptr) return cudaErrorInvalidValue;
  if (inner == 1) {
    const int64_t rows_per_split = (outer + splits - 1) / splits;
    dim3 grid(static_cast<unsigned>((channels + kColLanes - 1) / kColLanes), static_cast<unsigned>(splits));
    dim3 block(kColLanes, kRowLanes);
    ColumnSumKernel<T><<<grid, block, 0, s>>>(dy, partial, outer, channels, rows_per_split > 0 ? rows_per_split : 1);
  } else {
    const int64_t total = outer * inner;
    const int64_t per_split = (total + splits - 1) / splits;
    dim3 grid(static_cast<unsigned>(channels), static_cast<unsigned>(splits));
    ChannelSumKernel<T><<<grid, kThreads, 0, s>>>(dy, partial, outer, channels, inner, per_split > 0 ? per_split : 1);
  }
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess || splits == 1) return e;
  SumSplitsKernel<T><<<BlocksFor(channels), kThreads, 0, s>>>(partial, out, splits, channels);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchBiasAdd(cudaStream_t stream, ElemType type, const void* x, const void* bias, void* out,
                          int64_t outer, int64_t channels, int64_t inner, bool relu) {
  switch (type) {
    case ElemType::kFloat:
      return BiasAdd<float>(stream, x, bias, out, outer, channels, inner, relu);
    case ElemType::kDouble:
      return BiasAdd<double>(stream, x, bias, out, outer, channels, inner, relu);
    default:
      return cudaErrorInvalidValue;
  }
}

BiasGradPlan PlanBiasGrad(int64_t outer, int64_t channels, int64_t inner, int sm_count) {
  BiasGradPlan plan;
  const int64_t target_blocks = 2 * static_cast<int64_t>(sm_count > 0 ? sm_count : 1);
  if (channels <= 0) return plan;
  if (inner == 1) {
    const int64_t col_blocks = (channels + kColLanes - 1) / kColLanes;
    // At least 4 rows per row lane in a split.
    const int64_t max_splits = (outer + 4 * kRowLanes - 1) / (4 * kRowLanes);
    plan.splits = Clamp((target_blocks + col_blocks - 1) / col_blocks, 1, Clamp(max_splits, 1, kMaxSplits));
  } else {
    const int64_t total = outer * inner;
    // At least 4 elements per thread in a split.
    const int64_t max_splits = (total + 4 * kThreads - 1) / (4 * kThreads);
    plan.splits = Clamp((target_blocks + channels - 1) / channels, 1, Clamp(max_splits, 1, kMaxSplits));
  }
  return plan;
}

cudaError_t LaunchBiasAddGrad(cudaStream_t stream, ElemType type, const BiasGradPlan& plan, const void* dy,
                              void* out, void* temp, int64_t outer, int64_t channels, int64_t inner) {
  if (channels <= 0) return cudaSuccess;
  if (plan.splits < 1 || plan.splits > kMaxSplits) return cudaErrorInvalidValue;
  // Grid limits: gridDim.x up to 2^31 - 1, gridDim.y up to 65535.
  if (inner != 1 && channels > INT32_MAX) return cudaErrorInvalidValue;
  switch (type) {
    case ElemType::kFloat:
      return BiasAddGrad<float>(stream, plan, dy, out, temp, outer, channels, inner);
    case ElemType::kDouble:
      return BiasAddGrad<double>(stream, plan, dy, out, temp, outer, channels, inner);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace gpu
}  // namespace sluice

// CUDA kernels for the reductions (reduction_kernels.h): a row kernel (warp
// or block per output, over a contiguous run), a column kernel (32 outputs
// per block, rows strided over threadIdx.y) and an arg-reduce kernel, plus
// the plan that splits a long reduction over blocks into partials.
#include "engine/kernels/gpu/reduction_kernels.h"

#include <algorithm>

#include "engine/kernels/gpu/nn_device_util.cuh"

namespace sluice {
namespace gpu {
namespace {

using nn::BlockReduce;
using nn::GridFor;
using nn::MaxOp;
using nn::MinOp;
using nn::ProdOp;
using nn::SumOp;
using nn::WarpReduce;

constexpr int kRowThreads = 256;
constexpr int64_t kWarpRowMax = 1024;     // rows up to this long get a warp
constexpr int64_t kTargetBlocks = 1024;   // enough blocks to fill an H100/H200 several times
constexpr int64_t kRowChunk = 4096;       // elements per block when a row is split
constexpr int kColY = 8;                  // row-strided threads per column
constexpr int64_t kColChunk = 256;        // rows per block when columns are split

// Virtual row v = (a, p) covers in[a * R + p * chunk, a * R + min(R, (p + 1) * chunk));
// out[v] = reduce / divisor.
template <typename T, typename Op, bool kWarp>
__global__ void RowReduceKernel(const T* __restrict__ in, T* __restrict__ out, int64_t rows, int64_t R, int64_t P,
                                int64_t chunk, T divisor) {
  __shared__ T scratch[32];
  int64_t v, step;
  int lane, width;
  if (kWarp) {
    const int per_block = blockDim.x >> 5;
    v = static_cast<int64_t>(blockIdx.x) * per_block + (threadIdx.x >> 5);
    step = static_cast<int64_t>(gridDim.x) * per_block;
    lane = threadIdx.x & 31;
    width = 32;
  } else {
    v = blockIdx.x;
    step = gridDim.x;
    lane = threadIdx.x;
    width = blockDim.x;
  }
  const int64_t total = rows * P;
  for (; v < total; v += step) {
    const int64_t a = v / P, p = v - a * P;
    const int64_t first = p * chunk, last = min(R, first + chunk);
    const T* row = in + a * R;
    T acc = Op::template Identity<T>();
    for (int64_t i = first + lane; i < last; i += width) acc = Op::Apply(acc, row[i]);
    acc = kWarp ? WarpReduce<Op>(acc) : BlockReduce<Op>(acc, scratch);
    if (lane == 0) out[v] = acc / divisor;
  }
}

// Block (32, kColY): columns b = blockIdx.x * 32 + threadIdx.x of slab a, rows
// [p * chunk, min(R, (p + 1) * chunk)) with p = blockIdx.z; writes
// out[(a * P + p) * B + b] (P = gridDim.z).
template <typename T, typename Op>
__global__ void ColumnReduceKernel(const T* __restrict__ in, T* __restrict__ out, int64_t A, int64_t R, int64_t B,
                                   int64_t chunk, T divisor) {
  __shared__ T tile[kColY][33];
  const int64_t b = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  const int64_t P = gridDim.z, p = blockIdx.z;
  const int64_t first = p * chunk, last = min(R, first + chunk);
  for (int64_t a = blockIdx.y; a < A; a += gridDim.y) {
    T acc = Op::template Identity<T>();
    if (b < B) {
      const T* base = in + a * R * B + b;
      for (int64_t r = first + threadIdx.y; r < last; r += kColY) acc = Op::Apply(acc, base[r * B]);
    }
    tile[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0) {
#pragma unroll
      for (int k = 1; k < kColY; ++k) acc = Op::Apply(acc, tile[k][threadIdx.x]);
      if (b < B) out[(a * P + p) * B + b] = acc / divisor;
    }
    __syncthreads();
  }
}

template <typename T>
__global__ void FillKernel(T* __restrict__ out, int64_t n, T value) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = value;
  }
}

// How a row reduce of `rows` x R splits R over blocks.
int64_t RowParts(int64_t rows, int64_t R) {
  if (R < 2 * kRowChunk) return 1;
  const int64_t by_size = (R + kRowChunk - 1) / kRowChunk;
  const int64_t by_blocks = std::max<int64_t>(1, kTargetBlocks / std::max<int64_t>(rows, 1));
  return std::min(by_size, by_blocks);
}

// How a column reduce of A x R x B splits R over blocks.
int64_t ColumnParts(int64_t A, int64_t R, int64_t B) {
  if (R < 2 * kColChunk) return 1;
  const int64_t blocks = A * ((B + 31) / 32);
  if (blocks >= kTargetBlocks) return 1;
  const int64_t by_size = (R + kColChunk - 1) / kColChunk;
  return std::min<int64_t>(std::min(by_size, kTargetBlocks / blocks), 1024);
}

template <typename T, typename Op>
void LaunchRows(cudaStream_t stream, const T* in, T* out, int64_t rows, int64_t R, int64_t P, T divisor) {
  const int64_t chunk = (R + P - 1) / P;
  if (chunk <= kWarpRowMax) {
    RowReduceKernel<T, Op, true><<<GridFor(rows * P, kRowThreads / 32, 1 << 20), kRowThreads, 0, stream>>>(
        in, out, rows, R, P, chunk, divisor);
  } else {
    const int threads = chunk > 8 * kRowChunk ? 512 : kRowThreads;
    RowReduceKernel<T, Op, false><<<GridFor(rows * P, 1, 1 << 20), threads, 0, stream>>>(in, out, rows, R, P, chunk,
                                                                                          divisor);
  }
}

template <typename T, typename Op>
void LaunchColumns(cudaStream_t stream, const T* in, T* out, int64_t A, int64_t R, int64_t B, int64_t P, T divisor) {
  const int64_t chunk = (R + P - 1) / P;
  dim3 grid(static_cast<unsigned>((B + 31) / 32), static_cast<unsigned>(std::min<int64_t>(A, 65535)),
            static_cast<unsigned>(P));
  ColumnReduceKernel<T, Op><<<grid, dim3(32, kColY), 0, stream>>>(in, out, A, R, B, chunk, divisor);
}

template <typename T, typename Op>
cudaError_t Reduce3(cudaStream_t stream, const T* in, T* out, int64_t A, int64_t R, int64_t B, T divisor,
                    T* scratch) {
  if (A * B == 0 || R <= 0) return cudaSuccess;
  if (B == 1) {
    const int64_t P = RowParts(A, R);
    if (P == 1) {
      LaunchRows<T, Op>(stream, in, out, A, R, 1, divisor);
    } else {
      LaunchRows<T, Op>(stream, in, scratch, A, R, P, T(1));
      LaunchRows<T, Op>(stream, scratch, out, A, P, 1, divisor);
    }
  } else {
    if ((B + 31) / 32 > 0x7fffffff) return cudaErrorInvalidValue;
    const int64_t P = ColumnParts(A, R, B);
    if (P == 1) {
      LaunchColumns<T, Op>(stream, in, out, A, R, B, 1, divisor);
    } else {
      LaunchColumns<T, Op>(stream, in, scratch, A, R, B, P, T(1));
      LaunchColumns<T, Op>(stream, scratch, out, A, P, B, 1, divisor);
    }
  }
  return cudaGetLastError();
}

// Better-than for the arg reductions: strictly greater (less) value, or an
// equal value at a lower index (so the first index wins, as on the CPU).
template <bool kMax, typename T>
__device__ __forceinline__ bool Better(T v, int64_t i, T best_v, int64_t best_i) {
  return (kMax ? (best_v < v) : (v < best_v)) || (v == best_v && i < best_i);
}

// A warp per row of a [rows, R] array (B == 1).
template <typename T, typename I, bool kMax>
__global__ void ArgRowKernel(const T* __restrict__ in, I* __restrict__ out, int64_t rows, int64_t R) {
  const int per_block = blockDim.x >> 5;
  const int lane = threadIdx.x & 31;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * per_block + (threadIdx.x >> 5); row < rows;
       row += static_cast<int64_t>(gridDim.x) * per_block) {
    const T* p = in + row * R;
    int64_t best_i = lane < R ? lane : 0;
    T best_v = p[best_i];
    for (int64_t r = lane + 32; r < R; r += 32) {
      const T v = p[r];
      if (kMax ? (best_v < v) : (v < best_v)) {
        best_v = v;
        best_i = r;
      }
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
      const T v = __shfl_xor_sync(nn::kFullMask, best_v, offset);
      const int64_t i = __shfl_xor_sync(nn::kFullMask, best_i, offset);
      if (Better<kMax>(v, i, best_v, best_i)) {
        best_v = v;
        best_i = i;
      }
    }
    if (lane == 0) out[row] = static_cast<I>(best_i);
  }
}

// A thread per output (a, b) scanning r in order (B > 1: coalesced over b).
template <typename T, typename I, bool kMax>
__global__ void ArgColumnKernel(const T* __restrict__ in, I* __restrict__ out, int64_t A, int64_t R, int64_t B) {
  const int64_t n = A * B;
  for (int64_t w = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; w < n;
       w += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t a = w / B, b = w - a * B;
    const T* p = in + a * R * B + b;
    int64_t best = 0;
    T best_v = p[0];
    for (int64_t r = 1; r < R; ++r) {
      const T v = p[r * B];
      if (kMax ? (best_v < v) : (v < best_v)) {
        best_v = v;
        best = r;
      }
    }
    out[w] = static_cast<I>(best);
  }
}

template <typename T, typename I, bool kMax>
void ArgReduce(cudaStream_t stream, const T* in, I* out, int64_t A, int64_t R, int64_t B) {
  if (B == 1) {
    ArgRowKernel<T, I, kMax><<<GridFor(A, kRowThreads / 32, 1 << 20), kRowThreads, 0, stream>>>(in, out, A, R);
  } else {
    ArgColumnKernel<T, I, kMax><<<GridFor(A * B, 256, 1 << 20), 256, 0, stream>>>(in, out, A, R, B);
  }
}

}  // namespace

int64_t ReduceScratchElements(int64_t A, int64_t R, int64_t B) {
  if (A * B == 0 || R <= 0) return 0;
  if (B == 1) {
    const int64_t P = RowParts(A, R);
    return P == 1 ? 0 : A * P;
  }
  const int64_t P = ColumnParts(A, R, B);
  return P == 1 ? 0 : A * P * B;
}

template <typename T>
cudaError_t LaunchReduce3(cudaStream_t stream, ReduceKind kind, const T* in, T* out, int64_t A, int64_t R, int64_t B,
                          T divisor, T* scratch) {
  switch (kind) {
    case ReduceKind::kSum: return Reduce3<T, SumOp>(stream, in, out, A, R, B, divisor, scratch);
    case ReduceKind::kProd: return Reduce3<T, ProdOp>(stream, in, out, A, R, B, divisor, scratch);
    case ReduceKind::kMax: return Reduce3<T, MaxOp>(stream, in, out, A, R, B, divisor, scratch);
    case ReduceKind::kMin: return Reduce3<T, MinOp>(stream, in, out, A, R, B, divisor, scratch);
  }
  return cudaErrorInvalidValue;
}

template <typename T>
cudaError_t LaunchFill(cudaStream_t stream, T* out, int64_t n, T value) {
  if (n <= 0) return cudaSuccess;
  FillKernel<T><<<GridFor(n, 256, 1 << 16), 256, 0, stream>>>(out, n, value);
  return cudaGetLastError();
}

template <typename T, typename I>
cudaError_t LaunchArgReduce(cudaStream_t stream, bool is_max, const T* in, I* out, int64_t A, int64_t R, int64_t B) {
  if (A * B == 0 || R <= 0) return cudaSuccess;
  if (is_max) {
    ArgReduce<T, I, true>(stream, in, out, A, R, B);
  } else {
    ArgReduce<T, I, false>(stream, in, out, A, R, B);
  }
  return cudaGetLastError();
}

#define SLUICE_INSTANTIATE_REDUCE_(T)                                                                               \
  template cudaError_t LaunchReduce3<T>(cudaStream_t, ReduceKind, const T*, T*, int64_t, int64_t, int64_t, T, T*); \
  template cudaError_t LaunchFill<T>(cudaStream_t, T*, int64_t, T);                                                \
  template cudaError_t LaunchArgReduce<T, int64_t>(cudaStream_t, bool, const T*, int64_t*, int64_t, int64_t,      \
                                                   int64_t);                                                       \
  template cudaError_t LaunchArgReduce<T, int32_t>(cudaStream_t, bool, const T*, int32_t*, int64_t, int64_t, int64_t)
SLUICE_INSTANTIATE_REDUCE_(float);
SLUICE_INSTANTIATE_REDUCE_(double);
#undef SLUICE_INSTANTIATE_REDUCE_

}  // namespace gpu
}  // namespace sluice

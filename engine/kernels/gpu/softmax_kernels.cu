// CUDA kernels for Softmax, LogSoftmax and the softmax cross-entropies
// (softmax_kernels.h). One kernel does a whole row: max, sum of exp(x - max),
// then the outputs (and the row's loss) in a third pass over the row, which
// is still in L1/L2. Small rows get a warp each (8 rows per 256-thread
// block); long rows a block each. Grid-stride over rows.
#include "engine/kernels/gpu/softmax_kernels.h"

#include <limits>

#include "engine/kernels/gpu/nn_device_util.cuh"

namespace sluice {
namespace gpu {
namespace {

using nn::BlockReduce;
using nn::Exp;
using nn::Log;
using nn::MaxOp;
using nn::SumOp;
using nn::WarpReduce;

enum Mode { kSoftmax = 0, kLogSoftmax = 1, kDenseXent = 2, kSparseXent = 3 };

constexpr int kWarpRowThreads = 256;  // 8 rows per block in warp mode
constexpr int64_t kMaxWarpRowDepth = 1024;

template <bool kWarp, typename Op, typename A>
__device__ __forceinline__ A GroupReduce(A v, A* scratch) {
  if (kWarp) return WarpReduce<Op>(v);
  return BlockReduce<Op>(v, scratch);
}

template <typename T, typename L, int kMode, bool kWarp>
__global__ void __launch_bounds__(1024) RowSoftmaxKernel(const T* __restrict__ x, const T* __restrict__ dense,
                                                         const L* __restrict__ sparse, T* __restrict__ out,
                                                         T* __restrict__ loss, int64_t rows, int64_t depth) {
  __shared__ T scratch[32];
  int64_t row, row_step;
  int lane, width;
  if (kWarp) {
    const int rows_per_block = blockDim.x >> 5;
    row = static_cast<int64_t>(blockIdx.x) * rows_per_block + (threadIdx.x >> 5);
    row_step = static_cast<int64_t>(gridDim.x) * rows_per_block;
    lane = threadIdx.x & 31;
    width = 32;
  } else {
    row = blockIdx.x;
    row_step = gridDim.x;
    lane = threadIdx.x;
    width = blockDim.x;
  }
  for (; row < rows; row += row_step) {
    const T* xr = x + row * depth;
    T* outr = out + row * depth;
    T mx = MaxOp::Identity<T>();
    for (int64_t j = lane; j < depth; j += width) mx = MaxOp::Apply(mx, xr[j]);
    mx = GroupReduce<kWarp, MaxOp>(mx, scratch);
    T sum = 0;
    for (int64_t j = lane; j < depth; j += width) sum += Exp(xr[j] - mx);
    sum = GroupReduce<kWarp, SumOp>(sum, scratch);
    if (kMode == kSoftmax) {
      const T inv = T(1) / sum;
      for (int64_t j = lane; j < depth; j += width) outr[j] = Exp(xr[j] - mx) * inv;
    } else if (kMode == kLogSoftmax) {
      const T lse = Log(sum);
      for (int64_t j = lane; j < depth; j += width) outr[j] = (xr[j] - mx) - lse;
    } else if (kMode == kDenseXent) {
      const T lse = Log(sum), inv = T(1) / sum;
      const T* yr = dense + row * depth;
      T acc = 0;
      for (int64_t j = lane; j < depth; j += width) {
        const T shifted = xr[j] - mx, y = yr[j];
        acc += y * (lse - shifted);
        outr[j] = Exp(shifted) * inv - y;
      }
      acc = GroupReduce<kWarp, SumOp>(acc, scratch);
      if (lane == 0) loss[row] = acc;
    } else {  // kSparseXent
      const int64_t label = static_cast<int64_t>(sparse[row]);
      if (label < 0 || label >= depth) {
        const T nan = std::numeric_limits<T>::quiet_NaN();
        for (int64_t j = lane; j < depth; j += width) outr[j] = nan;
        if (lane == 0) loss[row] = nan;
        continue;  // uniform across the row's group: no reduction skipped by part of it
      }
      const T lse = Log(sum), inv = T(1) / sum;
      for (int64_t j = lane; j < depth; j += width) {
        outr[j] = Exp(xr[j] - mx) * inv - (j == label ? T(1) : T(0));
      }
      if (lane == 0) loss[row] = lse - (xr[label] - mx);
    }
  }
}

template <typename T, typename L, int kMode>
cudaError_t LaunchRows(cudaStream_t stream, const T* x, const T* dense, const L* sparse, T* out, T* loss,
                       int64_t rows, int64_t depth) {
  if (rows <= 0 || depth <= 0) return cudaSuccess;
  if (depth <= kMaxWarpRowDepth) {
    const unsigned grid = nn::GridFor(rows, kWarpRowThreads / 32, 1 << 20);
    RowSoftmaxKernel<T, L, kMode, true>
        <<<grid, kWarpRowThreads, 0, stream>>>(x, dense, sparse, out, loss, rows, depth);
  } else {
    const int threads = depth <= 4096 ? 256 : (depth <= 16384 ? 512 : 1024);
    const unsigned grid = nn::GridFor(rows, 1, 1 << 20);
    RowSoftmaxKernel<T, L, kMode, false><<<grid, threads, 0, stream>>>(x, dense, sparse, out, loss, rows, depth);
  }
  return cudaGetLastError();
}

}  // namespace

template <typename T>
cudaError_t LaunchSoftmax(cudaStream_t stream, const T* x, T* out, int64_t rows, int64_t depth, bool log) {
  if (log) return LaunchRows<T, int32_t, kLogSoftmax>(stream, x, nullptr, nullptr, out, nullptr, rows, depth);
  return LaunchRows<T, int32_t, kSoftmax>(stream, x, nullptr, nullptr, out, nullptr, rows, depth);
}

template <typename T>
cudaError_t LaunchSoftmaxXent(cudaStream_t stream, const T* x, const T* labels, T* loss, T* backprop, int64_t rows,
                              int64_t depth) {
  return LaunchRows<T, int32_t, kDenseXent>(stream, x, labels, nullptr, backprop, loss, rows, depth);
}

template <typename T, typename L>
cudaError_t LaunchSparseSoftmaxXent(cudaStream_t stream, const T* x, const L* labels, T* loss, T* backprop,
                                    int64_t rows, int64_t depth) {
  return LaunchRows<T, L, kSparseXent>(stream, x, nullptr, labels, backprop, loss, rows, depth);
}

#define SLUICE_INSTANTIATE_SOFTMAX_(T)                                                                           \
  template cudaError_t LaunchSoftmax<T>(cudaStream_t, const T*, T*, int64_t, int64_t, bool);                     \
  template cudaError_t LaunchSoftmaxXent<T>(cudaStream_t, const T*, const T*, T*, T*, int64_t, int64_t);         \
  template cudaError_t LaunchSparseSoftmaxXent<T, int32_t>(cudaStream_t, const T*, const int32_t*, T*, T*,       \
                                                           int64_t, int64_t);                                    \
  template cudaError_t LaunchSparseSoftmaxXent<T, int64_t>(cudaStream_t, const T*, const int64_t*, T*, T*,       \
                                                           int64_t, int64_t)
SLUICE_INSTANTIATE_SOFTMAX_(float);
SLUICE_INSTANTIATE_SOFTMAX_(double);
#undef SLUICE_INSTANTIATE_SOFTMAX_

}  // namespace gpu
}  // namespace sluice

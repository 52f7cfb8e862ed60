// Launch functions for the row-wise softmax family on the GPU: Softmax,
// LogSoftmax, SoftmaxCrossEntropyWithLogits (dense labels) and
// SparseSoftmaxCrossEntropyWithLogits (class indices). Each is ONE kernel
// launch over `rows` rows of `depth` values (row-major, device pointers),
// numerically stable (max-shifted) with warp-shuffle reductions: a warp per
// row for rows up to 1024 values, a block per row beyond.
// Each function enqueues on `stream` and returns the launch's error.
// Instantiated for float and double (labels int32 and int64).
// Thread safety: plain functions; callers order work with the stream.
#ifndef SLUICE_ENGINE_KERNELS_GPU_SOFTMAX_KERNELS_H_
#define SLUICE_ENGINE_KERNELS_GPU_SOFTMAX_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace sluice {
namespace gpu {

// out = softmax(x) per row (log_softmax when `log`).
template <typename T>
cudaError_t LaunchSoftmax(cudaStream_t stream, const T* x, T* out, int64_t rows, int64_t depth, bool log);

// loss[r] = sum_j labels[r,j] * (lse_r - (x[r,j] - max_r)),
// backprop[r,j] = softmax(x)[r,j] - labels[r,j].
template <typename T>
cudaError_t LaunchSoftmaxXent(cudaStream_t stream, const T* x, const T* labels, T* loss, T* backprop, int64_t rows,
                              int64_t depth);

// loss[r] = lse_r - (x[r,label_r] - max_r), backprop = softmax(x) - onehot(label).
// A label outside [0, depth) makes its row's loss and backprop NaN (the GPU
// cannot report an error without waiting for the device).
template <typename T, typename L>
cudaError_t LaunchSparseSoftmaxXent(cudaStream_t stream, const T* x, const L* labels, T* loss, T* backprop,
                                    int64_t rows, int64_t depth);

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_GPU_SOFTMAX_KERNELS_H_

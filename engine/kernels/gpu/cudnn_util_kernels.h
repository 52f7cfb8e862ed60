// Small CUDA kernels around the cuDNN convolutions (and the random inputs of
// their algorithm search) and the NHWC pooling kernels (engine/kernels/gpu/conv_ops_gpu.cc, pooling_ops_gpu.cc). Plain
// launch functions: each enqueues one kernel on `stream` and returns
// cudaGetLastError() of the launch (no synchronization). Pointers are device
// pointers; sizes are element counts (int64).
// Thread safety: stateless.
#ifndef SLUICE_ENGINE_KERNELS_GPU_CUDNN_UTIL_KERNELS_H_
#define SLUICE_ENGINE_KERNELS_GPU_CUDNN_UTIL_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace sluice {
namespace gpu {

// out[b, c, r] = in[b, r, c] for b < batch, r < rows, c < cols (a batched
// 2-D transpose: NHWC <-> NCHW with rows = H*W, cols = C, and the HWIO <->
// OHWI filter transposes with batch = 1).
cudaError_t LaunchTranspose(cudaStream_t stream, const float* in, int64_t batch, int64_t rows, int64_t cols,
                            float* out);
cudaError_t LaunchTranspose(cudaStream_t stream, const double* in, int64_t batch, int64_t rows, int64_t cols,
                            double* out);

// LaunchTranspose with the fused convolution's epilogue on the way:
// out[b, c, r] = in[b, r, c] + bias[r], then max(0, .) with `relu` (NaN stays
// NaN, as Relu's). An NCHW output ([n, channels, pixels]) becomes NHWC with
// its bias and Relu in the same pass over it.
cudaError_t LaunchTransposeBiasAdd(cudaStream_t stream, const float* in, int64_t batch, int64_t rows, int64_t cols,
                                   const float* bias, bool relu, float* out);
cudaError_t LaunchTransposeBiasAdd(cudaStream_t stream, const double* in, int64_t batch, int64_t rows, int64_t cols,
                                   const double* bias, bool relu, double* out);

// HWIO filter -> OIHW (the NCHW filter layout cuDNN calls KCRS), and back.
cudaError_t LaunchHwioToOihw(cudaStream_t stream, const float* in, int64_t h, int64_t w, int64_t i, int64_t o,
                             float* out);
cudaError_t LaunchHwioToOihw(cudaStream_t stream, const double* in, int64_t h, int64_t w, int64_t i, int64_t o,
                             double* out);
cudaError_t LaunchOihwToHwio(cudaStream_t stream, const float* in, int64_t h, int64_t w, int64_t i, int64_t o,
                             float* out);
cudaError_t LaunchOihwToHwio(cudaStream_t stream, const double* in, int64_t h, int64_t w, int64_t i, int64_t o,
                             double* out);

// The turned HWIO filter [h, w, i, o] that Conv2DBackpropInput computed as a
// forward convolution takes (conv_cudnn_shape.h), in cuDNN's layout for it:
// KCRS [i][o][h][w] (nchw) or KRSC [i][h][w][o], element (r, s) from the
// filter's (h-1-r, w-1-s) (conv_filter_flip.h).
cudaError_t LaunchFlipFilter(cudaStream_t stream, const float* in, int64_t h, int64_t w, int64_t i, int64_t o,
                             bool nchw, float* out);
cudaError_t LaunchFlipFilter(cudaStream_t stream, const double* in, int64_t h, int64_t w, int64_t i, int64_t o,
                             bool nchw, double* out);

// Copies `in` (N images of [rows, cols] pixels of `depth` values each, in
// NHWC or in NCHW with depth = 1 per plane: the caller passes N*C images) into
// `out` of [rows + extra_rows, cols + extra_cols] pixels, the extra rows and
// columns (at the bottom and right) zero.
cudaError_t LaunchPadBottomRight(cudaStream_t stream, const float* in, int64_t images, int64_t rows, int64_t cols,
                                 int64_t depth, int64_t extra_rows, int64_t extra_cols, float* out);
cudaError_t LaunchPadBottomRight(cudaStream_t stream, const double* in, int64_t images, int64_t rows, int64_t cols,
                                 int64_t depth, int64_t extra_rows, int64_t extra_cols, double* out);
// The adjoint: out (images x [rows, cols] x depth) = the top-left part of
// `in` ([rows + extra_rows, cols + extra_cols] pixels per image).
cudaError_t LaunchCropBottomRight(cudaStream_t stream, const double* in, int64_t images, int64_t rows, int64_t cols,
                                  int64_t depth, int64_t extra_rows, int64_t extra_cols, double* out);
cudaError_t LaunchCropBottomRight(cudaStream_t stream, const float* in, int64_t images, int64_t rows, int64_t cols,
                                  int64_t depth, int64_t extra_rows, int64_t extra_cols, float* out);

// out[i] = a pseudo-random value in [low, high] (uniform; the upper end only
// by rounding), a hash of (seed, i): the same for the same seed on every run
// and device.
cudaError_t LaunchFillUniform(cudaStream_t stream, float* out, int64_t n, uint64_t seed, double low, double high);
cudaError_t LaunchFillUniform(cudaStream_t stream, double* out, int64_t n, uint64_t seed, double low, double high);

// NHWC pooling geometry (TensorFlow's: window start o * stride - pad, clipped
// to the input; see engine/kernels/pooling_ops.cc).
struct PoolDims {
  int64_t batch, in_rows, in_cols, depth;
  int64_t out_rows, out_cols;
  int64_t k_rows, k_cols, stride_rows, stride_cols, pad_rows, pad_cols;
};

// MaxPool / AvgPool forward (average over the window's positions inside the
// input). out: [batch, out_rows, out_cols, depth].
cudaError_t LaunchMaxPool(cudaStream_t stream, const PoolDims& d, const float* in, float* out);
cudaError_t LaunchMaxPool(cudaStream_t stream, const PoolDims& d, const double* in, double* out);
cudaError_t LaunchAvgPool(cudaStream_t stream, const PoolDims& d, const float* in, float* out);
cudaError_t LaunchAvgPool(cudaStream_t stream, const PoolDims& d, const double* in, double* out);
// Whether no two pooling windows share an input position (stride >= size
// along both dimensions, as in 2x2 stride-2 pooling).
inline bool PoolWindowsDisjoint(const PoolDims& d) {
  return d.stride_rows >= d.k_rows && d.stride_cols >= d.k_cols;
}

// MaxPoolGrad: dx[p] = sum of dy over the windows whose first maximal
// position (row-major) is p; with `relu` (_FusedMaxPoolGrad: ReluGrad of that
// on the pool's input), zero where in[p] <= 0 (or NaN). Deterministic, no
// atomics. Overlapping windows: a gather, each dx element written once in the
// CPU kernel's summation order. Disjoint windows (PoolWindowsDisjoint): a
// scatter, one thread per window (each input element is read once; positions
// outside every window are zeroed first), and `window_grad`, when not null,
// receives each window's gradient after the mask ([batch, out_rows, out_cols,
// depth]: summed per channel it is the bias gradient). window_grad must be
// null unless the windows are disjoint (cudaErrorInvalidValue).
cudaError_t LaunchMaxPoolGrad(cudaStream_t stream, const PoolDims& d, const float* in, const float* dy, float* dx,
                              bool relu = false, float* window_grad = nullptr);
cudaError_t LaunchMaxPoolGrad(cudaStream_t stream, const PoolDims& d, const double* in, const double* dy,
                              double* dx, bool relu = false, double* window_grad = nullptr);
// AvgPoolGrad: dx[p] = sum over the windows covering p of dy / window count.
cudaError_t LaunchAvgPoolGrad(cudaStream_t stream, const PoolDims& d, const float* dy, float* dx);
cudaError_t LaunchAvgPoolGrad(cudaStream_t stream, const PoolDims& d, const double* dy, double* dx);

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_GPU_CUDNN_UTIL_KERNELS_H_

// Winograd convolutions for float32 5x5 and 3x3 filters at stride 1 (Lavin
// and Gray, "Fast Algorithms for Convolutional Neural Networks", 2015):
// F(2x2, 5x5) and F(4x4, 3x3) for Conv2D and Conv2DBackpropInput, F(5x5, 2x2)
// and F(3x3, 4x4) for Conv2DBackpropFilter. Each 2x2 block of a 5x5 filter's
// outputs costs 36 multiplications per (input, output) channel pair instead
// of 100, and each 4x4 block of a 3x3 filter's 36 instead of 144: 6x6 tiles of
// the input, the filter (or the output gradient) and the result are carried
// into a transformed domain where the convolution is an elementwise product,
// and the sum over channels there is 36 small matrix products. All share one
// input transform (the points 0, +-1, +-2 and infinity). The matrices are in
// winograd_conv.cc.
//
// Rounding: results differ from a direct convolution by rounding only, a few
// times more than im2col + GEMM (the transforms scale values by up to 5 on
// the way in and 16 on the way out); winograd_conv_test bounds the error
// against float64 references.
//
// Work is split into blocks of tiles run on the kernel's intra-op pool
// (ParallelForRanges); each thread keeps its transformed tiles in a
// thread-local buffer sized to stay in its L2 cache. The filter gradient sums
// per-range partial sums in range order, so for a given thread count it is
// deterministic.
//
// Thread safety: functions of their arguments; they may run concurrently.
#ifndef SLUICE_ENGINE_KERNELS_WINOGRAD_CONV_H_
#define SLUICE_ENGINE_KERNELS_WINOGRAD_CONV_H_

#include <cstdint>

#define EIGEN_USE_THREADS
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace sluice {
namespace winograd {

// A stride-1, dilation-1 convolution of an NHWC input [batch, in_rows,
// in_cols, in_channels] with a K x K HWIO filter [K, K, in_channels,
// out_channels] (K = filter: 5 or 3), giving [batch, out_rows, out_cols, out_channels]:
//   y[n, i, j, k] = sum_{a, b, c} x[n, i + a - pad_top, j + b - pad_left, c] * w[a, b, c, k]
// with x zero outside the input.
struct ConvDims {
  int filter = 5;  // the filter's side: 5 or 3 (a [filter, filter, in, out] HWIO filter)
  int64_t batch = 0, in_rows = 0, in_cols = 0, in_channels = 0;
  int64_t out_rows = 0, out_cols = 0, out_channels = 0;
  int64_t pad_top = 0, pad_left = 0;
};

// Whether the Winograd kernels take this convolution, and pay: enough
// channels on both sides for the 36 products to be matrix products (the
// transforms then cost little beside them), a 5x5 or 3x3 filter, padding its
// window can have (0 to filter - 1), and no empty dimension.
bool Worthwhile(const ConvDims& d);

// The threads to run on: `pool` null or threads <= 1 runs on the caller.
struct Threads {
  Eigen::ThreadPoolInterface* pool = nullptr;
  int count = 1;
};

// y = x convolved with w (HWIO), then + bias[k] (bias may be null), then
// max(0, .) when relu. REQUIRES: Worthwhile(d).
void Forward(const ConvDims& d, const float* x, const float* w, const float* bias, bool relu, float* y,
             const Threads& threads);

// dx (of x's shape) = the gradient of the forward convolution's input, given
// dy (of y's shape). REQUIRES: Worthwhile(d) and Worthwhile(BackpropDims(d)).
void BackpropInput(const ConvDims& d, const float* w, const float* dy, float* dx, const Threads& threads);

// The forward convolution that computes the input gradient: dy convolved
// with the filter turned 180 degrees and its channels swapped, padded by
// filter - 1 - pad.
ConvDims BackpropDims(const ConvDims& d);

// dw ([K, K, in_channels, out_channels]) = the gradient of the filter, given
// x and dy. REQUIRES: Worthwhile(d).
void BackpropFilter(const ConvDims& d, const float* x, const float* dy, float* dw, const Threads& threads);

// Calls of Forward, BackpropInput and BackpropFilter so far in this process
// (tests check that a kernel did take the Winograd path).
int64_t Runs();

// The label of the Winograd kernels (winograd_conv_ops.cc).
inline constexpr char kLabel[] = "winograd";

}  // namespace winograd
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_WINOGRAD_CONV_H_

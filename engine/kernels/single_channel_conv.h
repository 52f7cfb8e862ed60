// Direct float32 convolutions of a one-channel NHWC input at stride 1 (a
// first layer on grayscale images: fashion_cnn's 28x28x1 -> 5x5x32): the
// forward pass (with the fused bias and relu) and the filter gradient. With
// one input channel, im2col + GEMM multiplies a [pixels, taps] patch matrix
// (25 columns) that is written and read back from memory, and oneDNN's
// blocked kernels pad the channel to 16; here each image is copied once into
// a zero-padded plane and the taps are read from it straight into the
// register tiles: a row of output pixels x 2 vectors of output channels per
// tile for the forward pass, a group of taps x 2 vectors of channels for the
// filter gradient.
//
// Work is split by images over the kernel's intra-op pool. The filter
// gradient sums fixed chunks of images in chunk order, so its result does
// not depend on the thread count.
//
// Thread safety: functions of their arguments; they may run concurrently.
#ifndef SLUICE_ENGINE_KERNELS_SINGLE_CHANNEL_CONV_H_
#define SLUICE_ENGINE_KERNELS_SINGLE_CHANNEL_CONV_H_

#include "engine/kernels/conv_shape.h"

#define EIGEN_USE_THREADS
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace sluice {
namespace single_channel {

// One input channel, stride 1, output channels a multiple of 16, a filter of
// at most 11x11 and no empty dimension.
bool Applies(const ConvGeometry& g);

// y [batch, OH, OW, out] = x [batch, H, W, 1] convolved with w [KH, KW, 1,
// out], + bias (may be null), then max(0, .) when relu. REQUIRES: Applies(g).
void Forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, bool relu, float* y,
             Eigen::ThreadPoolInterface* pool, int threads);

// dw [KH, KW, 1, out] = the filter gradient, given x and dy [batch, OH, OW,
// out]. REQUIRES: Applies(g).
void BackpropFilter(const ConvGeometry& g, const float* x, const float* dy, float* dw,
                    Eigen::ThreadPoolInterface* pool, int threads);

}  // namespace single_channel
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_SINGLE_CHANNEL_CONV_H_

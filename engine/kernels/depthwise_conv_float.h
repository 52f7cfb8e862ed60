// Float depthwise convolutions with a channel multiplier of 1 (MobileNet's),
// written with explicit vectors (float_vec.h) for DepthwiseConv2dNative and
// its two backprops (depthwise_conv_ops.cc): NHWC input [batch, rows, cols,
// C], filter [k_rows, k_cols, C, 1], output channel c from input channel c.
// Each function covers a range of rows, so the caller splits work over
// threads; every output element is summed in one fixed order (taps in
// (ky, kx) order; for the filter, the output rows of one call in order, each
// row's columns in four interleaved chains (column mod 4) added at the end),
// so results do not depend on the split.
//   Forward:         output rows [first, last) of the flattened (batch, out row)
//                    range; interior pixels four at a time (four independent
//                    multiply-add chains per channel vector).
//   BackpropInput:   input-gradient rows [first, last) of (batch, in row), each
//                    element gathered from the outputs whose windows cover it.
//   BackpropFilter:  partial[tap * C + c], the filter gradient summed over
//                    output rows [first, last) (overwritten).
// Thread safety: functions of their arguments; calls on disjoint rows may run
// concurrently.
#ifndef SLUICE_ENGINE_KERNELS_DEPTHWISE_CONV_FLOAT_H_
#define SLUICE_ENGINE_KERNELS_DEPTHWISE_CONV_FLOAT_H_

#include <cstdint>

#include "engine/kernels/nn_util.h"

namespace sluice {
namespace depthwise {

// A depthwise convolution's sizes (any type or multiplier: the kernels'
// checked geometry extends it).
struct ConvDims {
  int64_t batch = 0, channels = 0;
  WindowDim rows, cols;  // in, k, stride, out, pad
};

void Forward(const ConvDims& g, const float* input, const float* filter, float* output, int64_t first, int64_t last);
void BackpropInput(const ConvDims& g, const float* out_backprop, const float* filter, float* input_backprop,
                   int64_t first, int64_t last);
void BackpropFilter(const ConvDims& g, const float* input, const float* out_backprop, float* partial, int64_t first,
                    int64_t last);

}  // namespace depthwise
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_DEPTHWISE_CONV_FLOAT_H_

// Host-side geometry and shape checks of Conv2D, Conv2DBackpropInput and
// Conv2DBackpropFilter (NHWC input, HWIO filter, SAME/VALID, dilation 1),
// shared by the CPU kernels (conv_ops.cc) and the cuDNN kernels
// (gpu/conv_ops_gpu.cc): one set of error messages. Device-neutral (no CUDA).
// The attrs are read with ReadWindowAttrs (nn_util.h).
// Thread safety: functions of their arguments and the kernel's inputs.
#ifndef SLUICE_ENGINE_KERNELS_CONV_SHAPE_H_
#define SLUICE_ENGINE_KERNELS_CONV_SHAPE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/framework/op_kernel.h"
#include "engine/kernels/nn_util.h"

namespace sluice {

struct ConvGeometry {
  int64_t batch = 0, in_rows = 0, in_cols = 0, in_depth = 0;
  int64_t filter_rows = 0, filter_cols = 0, out_depth = 0;
  WindowDim rows, cols;
  int64_t patch_size() const { return filter_rows * filter_cols * in_depth; }
  int64_t out_pixels() const { return rows.out * cols.out; }
  bool is_pointwise() const { return filter_rows == 1 && filter_cols == 1 && rows.stride == 1 && cols.stride == 1; }
  // Built by MakeConvGeometry: batch and out_depth come from different
  // inputs, so [batch, OH, OW, out_depth] may break TensorShape's rule (an
  // empty input with 2^40 images and an empty filter with 2^40 outputs).
  TensorShape out_shape;
  TensorShape filter_shape() const { return TensorShape({filter_rows, filter_cols, in_depth, out_depth}); }
};

// The geometry of an NHWC `input` convolved with an HWIO `filter`.
// REQUIRES: strides and padding checked by ReadWindowAttrs.
absl::Status MakeConvGeometry(const TensorShape& input, const TensorShape& filter, const std::vector<int64_t>& strides,
                              const std::string& padding, ConvGeometry* g);

// Conv2DBackpropInput: input 0 the input's shape (an int32 vector), input 1
// the filter, input 2 out_backprop (of the output's shape).
absl::Status ConvBackpropInputGeometry(OpKernelContext* ctx, const std::vector<int64_t>& strides,
                                       const std::string& padding, TensorShape* input_shape, ConvGeometry* g);

// Conv2DBackpropFilter: input 0 the input, input 1 the filter's shape (an
// int32 vector), input 2 out_backprop (of the output's shape).
absl::Status ConvBackpropFilterGeometry(OpKernelContext* ctx, const std::vector<int64_t>& strides,
                                        const std::string& padding, TensorShape* filter_shape, ConvGeometry* g);

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_CONV_SHAPE_H_

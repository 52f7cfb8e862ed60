// Host-side attrs, shape checks and output allocation of BiasAdd and
// BiasAddGrad (NHWC: channels last, any rank >= 2; NCHW: channels in
// dimension 1), shared by the CPU kernels (bias_op.cc) and the GPU kernels
// (gpu/bias_ops_gpu.cc): one set of error messages. Device-neutral (no CUDA).
// Thread safety: functions of their arguments and the kernel's context.
#ifndef SLUICE_ENGINE_KERNELS_BIAS_SHAPE_H_
#define SLUICE_ENGINE_KERNELS_BIAS_SHAPE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "engine/framework/op_kernel.h"

namespace sluice {

// The tensor viewed as [outer, channels, inner] for the node's data_format.
struct BiasLayout {
  int64_t outer = 1, channels = 1, inner = 1;
};

// True when the node's data_format attr is NCHW (NHWC when absent).
bool BiasIsNchw(OpKernelConstruction* ctx);

// BiasAdd: value (input 0) and bias (input 1, [channels]); allocates output 0
// of the value's shape.
absl::Status PrepareBiasAdd(OpKernelContext* ctx, bool nchw, BiasLayout* layout, Tensor** out);

// BiasAddGrad: out_backprop (input 0); allocates output 0, [channels].
absl::Status PrepareBiasAddGrad(OpKernelContext* ctx, bool nchw, BiasLayout* layout, Tensor** out);

}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_BIAS_SHAPE_H_

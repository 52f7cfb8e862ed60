// Launch functions of the BiasAdd / BiasAddGrad GPU kernels (bias_gpu.cu).
// Both see the data as [outer, channels, inner]: NHWC (and 2-D) is
// inner == 1, NCHW is outer = N, inner = H*W.
// Thread safety: the functions are stateless; they enqueue on `stream`.
#ifndef SLUICE_ENGINE_KERNELS_GPU_BIAS_GPU_H_
#define SLUICE_ENGINE_KERNELS_GPU_BIAS_GPU_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "engine/kernels/gpu/cwise_gpu.h"

namespace sluice {
namespace gpu {

// out[o, c, i] = x[o, c, i] + bias[c], then max(0, .) with `relu` (NaN
// stays NaN). `type`: kFloat or kDouble. x may be out (in place).
cudaError_t LaunchBiasAdd(cudaStream_t stream, ElemType type, const void* x, const void* bias, void* out,
                          int64_t outer, int64_t channels, int64_t inner, bool relu = false);

// How BiasAddGrad splits its reduction: `splits` partial sums per channel
// (in a temp of splits * channels elements when splits > 1), then one pass
// adds them up. Deterministic: the same shape always sums in the same order.
struct BiasGradPlan {
  int64_t splits = 1;
};
BiasGradPlan PlanBiasGrad(int64_t outer, int64_t channels, int64_t inner, int sm_count);

// out[c] = sum over o, i of dy[o, c, i]. `temp`: plan.splits * channels
// elements of `type` when plan.splits > 1 (else unused, may be null).
// REQUIRES: channels > 0.
cudaError_t LaunchBiasAddGrad(cudaStream_t stream, ElemType type, const BiasGradPlan& plan, const void* dy,
                              void* out, void* temp, int64_t outer, int64_t channels, int64_t inner);

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_GPU_BIAS_GPU_H_

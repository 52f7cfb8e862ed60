// Which of the algorithms cuDNN's timed search returns a convolution kernel
// may use (conv_ops_gpu.cc): the search reports every algorithm with its
// status, workspace, math type and time; a usable one succeeded, fits the
// workspace, does plain fp32/fp64 FMA math (no TF32 tensor cores, which round
// inputs to 10 mantissa bits), and, unless transforms are allowed (the
// "winograd" kernels), is not an FFT or Winograd transform, whose results
// drift from a direct sum by more than rounding. Header-only (cuDNN's
// structs and enums, no calls), so it is tested without a GPU.
#ifndef SLUICE_ENGINE_KERNELS_GPU_CUDNN_ALGORITHMS_H_
#define SLUICE_ENGINE_KERNELS_GPU_CUDNN_ALGORITHMS_H_

#include <cudnn.h>

#include <cstddef>

namespace sluice {
namespace gpu {

inline bool ReducedPrecision(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
inline bool ReducedPrecision(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
inline bool ReducedPrecision(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

// Perf: cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t.
template <typename Perf>
bool Usable(const Perf& perf, size_t workspace_limit, bool allow_transforms) {
  return perf.status == CUDNN_STATUS_SUCCESS && perf.memory <= workspace_limit && perf.time >= 0 &&
         perf.mathType != CUDNN_TENSOR_OP_MATH && perf.mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
         (allow_transforms || !ReducedPrecision(perf.algo));
}

// The index of the first usable entry of perfs[0..count) (cuDNN returns them
// fastest first), or -1.
template <typename Perf>
int FirstUsable(const Perf* perfs, int count, size_t workspace_limit, bool allow_transforms) {
  for (int i = 0; i < count; ++i) {
    if (Usable(perfs[i], workspace_limit, allow_transforms)) return i;
  }
  return -1;
}

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_GPU_CUDNN_ALGORITHMS_H_

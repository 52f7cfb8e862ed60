// Which of the algorithms cuDNN's timed search returns a convolution kernel
// may use (conv_ops_gpu.cc): the search reports every algorithm with its
// status, workspace, math type and time; a usable one succeeded, fits the
// workspace, does plain fp32/fp64 FMA math (no TF32 tensor cores, which round
// inputs to 10 mantissa bits), and, unless transforms are allowed (the
// "winograd" kernels), is not an FFT or Winograd transform, some of which
// drift from a direct sum by more than rounding. A "winograd" kernel keeps a
// transform only after checking its output against an exact algorithm's
// (PickAlgorithm). Header-only (cuDNN's structs and enums, no calls), so it
// is tested without a GPU.
#ifndef SLUICE_ENGINE_KERNELS_GPU_CUDNN_ALGORITHMS_H_
#define SLUICE_ENGINE_KERNELS_GPU_CUDNN_ALGORITHMS_H_

#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

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

// How far a transform's output may be from the fastest exact algorithm's, on
// the search's random inputs: the largest absolute difference over the exact
// output's root mean square. Direct sums in fp32 differ from each other by
// about 1e-6 of it. On an H200 (docs/PERFORMANCE.md, session 41), for
// fashion_cnn's conv2, cuDNN's FFT_TILING was 9.4e-6 off (kept) and its
// WINOGRAD_NONFUSED 3.5e-2 (forward), 4.7e-2 (input gradient) and 8.1e-2
// (filter gradient) off (dropped).
inline constexpr double kTransformTolerance = 1e-4;

// max |a[i] - b[i]| / rms(b) over n elements (0 when n == 0; infinity when
// they differ and b is all zeros; NaN anywhere gives NaN, which no tolerance
// accepts).
template <typename T>
double MaxDifferenceOverRms(const T* a, const T* b, size_t n) {
  double max_diff = 0, sum_sq = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    if (d != d) return d;  // NaN
    max_diff = std::max(max_diff, std::abs(d));
    sum_sq += static_cast<double>(b[i]) * static_cast<double>(b[i]);
  }
  if (max_diff == 0) return 0;
  const double rms = std::sqrt(sum_sq / static_cast<double>(n));
  return rms > 0 ? max_diff / rms : std::numeric_limits<double>::infinity();
}

// A transform PickAlgorithm ran against the exact algorithm.
struct TransformCheck {
  int index;     // into perfs
  double error;  // MaxDifferenceOverRms against the fastest exact entry
  bool kept;
};

// What PickAlgorithm chose, and the checks it made (for logs).
struct AlgorithmChoice {
  int index = -1;  // into perfs; -1: none usable
  std::vector<TransformCheck> checked;
};

// The entry a kernel uses: the fastest usable one (cuDNN lists them fastest
// first), where a transform (allowed) counts only once `error(transform,
// exact)` (its output against the fastest exact entry's on the same inputs,
// as MaxDifferenceOverRms) is within `tolerance`. So each transform faster
// than the fastest exact entry is checked in turn until one passes; else that
// exact entry. A transform with no exact entry to check it against is kept.
template <typename Perf, typename Error>
AlgorithmChoice PickAlgorithm(const Perf* perfs, int count, size_t workspace_limit, bool allow_transforms,
                              Error error, double tolerance = kTransformTolerance) {
  AlgorithmChoice c;
  const int exact = FirstUsable(perfs, count, workspace_limit, false);
  if (!allow_transforms) {
    c.index = exact;
    return c;
  }
  for (int i = 0; i < count; ++i) {
    if (!Usable(perfs[i], workspace_limit, true)) continue;
    if (!ReducedPrecision(perfs[i].algo) || exact < 0) {
      c.index = i;
      return c;
    }
    const double e = error(i, exact);
    const bool kept = e <= tolerance;  // false for NaN
    c.checked.push_back(TransformCheck{i, e, kept});
    if (kept) {
      c.index = i;
      return c;
    }
  }
  c.index = exact;
  return c;
}

}  // namespace gpu
}  // namespace sluice

#endif  // SLUICE_ENGINE_KERNELS_GPU_CUDNN_ALGORITHMS_H_

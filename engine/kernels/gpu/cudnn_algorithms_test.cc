// Which entries of cuDNN's search results the convolution kernels may use
// (cudnn_algorithms.h): exact kernels skip FFT and Winograd transforms,
// "winograd" kernels take them; failed, oversized and tensor-core entries are
// skipped by both. Runs without a GPU (cuDNN's structs only).
#include "engine/kernels/gpu/cudnn_algorithms.h"

#include "gtest/gtest.h"

namespace sluice {
namespace gpu {
namespace {

template <typename Perf, typename Algo>
Perf Entry(Algo algo, size_t memory = 0, cudnnStatus_t status = CUDNN_STATUS_SUCCESS,
           cudnnMathType_t math = CUDNN_FMA_MATH) {
  Perf p{};
  p.algo = algo;
  p.status = status;
  p.time = 0.5f;
  p.memory = memory;
  p.mathType = math;
  return p;
}

TEST(CudnnAlgorithms, TransformsOnlyWhenAllowed) {
  const auto fft = Entry<cudnnConvolutionFwdAlgoPerf_t>(CUDNN_CONVOLUTION_FWD_ALGO_FFT);
  const auto winograd = Entry<cudnnConvolutionBwdDataAlgoPerf_t>(CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED);
  const auto filter_fft = Entry<cudnnConvolutionBwdFilterAlgoPerf_t>(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING);
  const auto gemm = Entry<cudnnConvolutionFwdAlgoPerf_t>(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
  EXPECT_FALSE(Usable(fft, 0, false));
  EXPECT_TRUE(Usable(fft, 0, true));
  EXPECT_FALSE(Usable(winograd, 0, false));
  EXPECT_TRUE(Usable(winograd, 0, true));
  EXPECT_FALSE(Usable(filter_fft, 0, false));
  EXPECT_TRUE(Usable(gemm, 0, false));
  EXPECT_TRUE(Usable(gemm, 0, true));
}

TEST(CudnnAlgorithms, FailedOversizedAndTensorCoreEntriesAreNeverUsed) {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  const auto algo = CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
  for (bool transforms : {false, true}) {
    EXPECT_FALSE(Usable(Entry<Perf>(algo, 0, CUDNN_STATUS_NOT_SUPPORTED), 0, transforms));
    EXPECT_FALSE(Usable(Entry<Perf>(algo, 2048), 1024, transforms));
    EXPECT_TRUE(Usable(Entry<Perf>(algo, 1024), 1024, transforms));
    EXPECT_FALSE(Usable(Entry<Perf>(algo, 0, CUDNN_STATUS_SUCCESS, CUDNN_TENSOR_OP_MATH), 0, transforms));
    EXPECT_FALSE(
        Usable(Entry<Perf>(algo, 0, CUDNN_STATUS_SUCCESS, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION), 0, transforms));
    Perf untimed = Entry<Perf>(algo);
    untimed.time = -1;
    EXPECT_FALSE(Usable(untimed, 0, transforms));
  }
}

TEST(CudnnAlgorithms, FirstUsableSkipsToTheFastestAllowedEntry) {
  // cuDNN lists the fastest first: here a Winograd transform, then a failed
  // entry, then a direct GEMM.
  const cudnnConvolutionFwdAlgoPerf_t perfs[] = {
      Entry<cudnnConvolutionFwdAlgoPerf_t>(CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED),
      Entry<cudnnConvolutionFwdAlgoPerf_t>(CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, 0, CUDNN_STATUS_NOT_SUPPORTED),
      Entry<cudnnConvolutionFwdAlgoPerf_t>(CUDNN_CONVOLUTION_FWD_ALGO_GEMM),
  };
  EXPECT_EQ(FirstUsable(perfs, 3, 0, /*allow_transforms=*/true), 0);
  EXPECT_EQ(FirstUsable(perfs, 3, 0, /*allow_transforms=*/false), 2);
  EXPECT_EQ(FirstUsable(perfs, 2, 0, /*allow_transforms=*/false), -1);
  EXPECT_EQ(FirstUsable(perfs, 0, 0, /*allow_transforms=*/true), -1);
}

}  // namespace
}  // namespace gpu
}  // namespace sluice

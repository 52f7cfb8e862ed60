// Which entries of cuDNN's search results the convolution kernels may use
// (cudnn_algorithms.h): exact kernels skip FFT and Winograd transforms,
// "winograd" kernels take them, but keep one only when its error against an
// exact algorithm's output is small; failed, oversized and tensor-core entries
// are skipped by both. Runs without a GPU (cuDNN's structs only).
#include "engine/kernels/gpu/cudnn_algorithms.h"

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

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

TEST(CudnnAlgorithms, MaxDifferenceOverRmsIsTheLargestErrorOverTheExactOutputsScale) {
  const float exact[] = {3, -4, 0, 0};  // rms 2.5
  const float close[] = {3, -4.0005f, 0, 0.0001f};
  const float far[] = {3.5f, -4, 0, 0};
  EXPECT_EQ(MaxDifferenceOverRms(exact, exact, 4), 0);
  EXPECT_NEAR(MaxDifferenceOverRms(close, exact, 4), 0.0005 / 2.5, 1e-7);
  EXPECT_NEAR(MaxDifferenceOverRms(far, exact, 4), 0.5 / 2.5, 1e-12);
  const float zeros[] = {0, 0}, one[] = {0, 1}, nan[] = {0, std::nanf("")};
  EXPECT_EQ(MaxDifferenceOverRms(one, zeros, 2), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(MaxDifferenceOverRms(nan, zeros, 2)));
  EXPECT_EQ(MaxDifferenceOverRms(zeros, zeros, 0), 0);
}

// Two transforms are faster than the exact ALGO_1; each is checked against it
// in turn, fastest first, until one is accurate enough.
TEST(CudnnAlgorithms, TransformsAreCheckedFastestFirstUntilOneIsAccurate) {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  const Perf perfs[] = {
      Entry<Perf>(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED),
      Entry<Perf>(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING),
      Entry<Perf>(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1),
      Entry<Perf>(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT),  // slower than the exact one: never checked
  };
  std::vector<std::pair<int, int>> calls;
  auto errors = [&calls](std::vector<double> by_index) {
    return [&calls, by_index](int transform, int exact) {
      calls.emplace_back(transform, exact);
      return by_index[transform];
    };
  };
  const double low = kTransformTolerance / 2, high = kTransformTolerance * 10;
  // The fastest is off, the second is accurate: the second.
  AlgorithmChoice c = PickAlgorithm(perfs, 4, 0, true, errors({high, low, 0, 0}));
  EXPECT_EQ(c.index, 1);
  ASSERT_EQ(c.checked.size(), 2u);
  EXPECT_EQ(c.checked[0].index, 0);
  EXPECT_EQ(c.checked[0].error, high);
  EXPECT_FALSE(c.checked[0].kept);
  EXPECT_EQ(c.checked[1].index, 1);
  EXPECT_TRUE(c.checked[1].kept);
  EXPECT_EQ(calls, (std::vector<std::pair<int, int>>{{0, 2}, {1, 2}}));
  // The fastest is accurate: it, after one check.
  calls.clear();
  c = PickAlgorithm(perfs, 4, 0, true, errors({low, low, 0, 0}));
  EXPECT_EQ(c.index, 0);
  EXPECT_EQ(calls.size(), 1u);
  // Both off (NaN counts as off): the exact entry, never the slower transform.
  calls.clear();
  c = PickAlgorithm(perfs, 4, 0, true, errors({high, std::nan(""), 0, 0}));
  EXPECT_EQ(c.index, 2);
  EXPECT_EQ(c.checked.size(), 2u);
  EXPECT_EQ(calls, (std::vector<std::pair<int, int>>{{0, 2}, {1, 2}}));
  // A looser tolerance keeps the fastest.
  c = PickAlgorithm(perfs, 4, 0, true, errors({high, high, 0, 0}), /*tolerance=*/high * 2);
  EXPECT_EQ(c.index, 0);
  // Exact kernels, and an exact fastest entry, check nothing.
  calls.clear();
  EXPECT_EQ(PickAlgorithm(perfs, 4, 0, false, errors({1, 1, 1, 1})).index, 2);
  EXPECT_EQ(PickAlgorithm(perfs + 2, 2, 0, true, errors({1, 1})).index, 0);
  EXPECT_TRUE(calls.empty());
  // No exact entry to check against: the fastest transform stays.
  c = PickAlgorithm(perfs, 2, 0, true, errors({1, 1}));
  EXPECT_EQ(c.index, 0);
  EXPECT_TRUE(c.checked.empty());
  EXPECT_TRUE(calls.empty());
  EXPECT_EQ(PickAlgorithm(perfs, 0, 0, true, errors({})).index, -1);
}

}  // namespace
}  // namespace gpu
}  // namespace sluice

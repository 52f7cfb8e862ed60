// winograd_conv.h against float64 direct convolutions: the forward pass (with
// bias and relu), the input gradient and the filter gradient, for 5x5 and 3x3
// filters, at SAME and VALID paddings, odd sizes (partial 2x2 and 4x4 blocks)
// and channel counts that are not a multiple of the vector width; the same
// results on 1 and 2 threads.
#include "engine/kernels/winograd_conv.h"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace winograd {
namespace {

std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

size_t InputSize(const ConvDims& d) { return static_cast<size_t>(d.batch * d.in_rows * d.in_cols * d.in_channels); }
size_t OutputSize(const ConvDims& d) {
  return static_cast<size_t>(d.batch * d.out_rows * d.out_cols * d.out_channels);
}
size_t FilterSize(const ConvDims& d) {
  return static_cast<size_t>(d.filter * d.filter * d.in_channels * d.out_channels);
}

// The float64 forward convolution and both gradients (given dy).
struct Reference {
  std::vector<double> y, dx, dw;
};

Reference Direct(const ConvDims& d, const std::vector<float>& x, const std::vector<float>& w,
                 const std::vector<float>& dy) {
  Reference r;
  r.y.assign(OutputSize(d), 0.0);
  r.dx.assign(InputSize(d), 0.0);
  r.dw.assign(FilterSize(d), 0.0);
  for (int64_t n = 0; n < d.batch; ++n) {
    for (int64_t i = 0; i < d.out_rows; ++i) {
      for (int64_t j = 0; j < d.out_cols; ++j) {
        const int64_t o = ((n * d.out_rows + i) * d.out_cols + j) * d.out_channels;
        for (int a = 0; a < d.filter; ++a) {
          for (int b = 0; b < d.filter; ++b) {
            const int64_t y = i + a - d.pad_top, x_col = j + b - d.pad_left;
            if (y < 0 || y >= d.in_rows || x_col < 0 || x_col >= d.in_cols) continue;
            const int64_t in = ((n * d.in_rows + y) * d.in_cols + x_col) * d.in_channels;
            for (int64_t c = 0; c < d.in_channels; ++c) {
              const int64_t f = ((a * d.filter + b) * d.in_channels + c) * d.out_channels;
              for (int64_t k = 0; k < d.out_channels; ++k) {
                r.y[o + k] += static_cast<double>(x[in + c]) * w[f + k];
                r.dx[in + c] += static_cast<double>(dy[o + k]) * w[f + k];
                r.dw[f + k] += static_cast<double>(x[in + c]) * dy[o + k];
              }
            }
          }
        }
      }
    }
  }
  return r;
}

// The largest difference, as a fraction of the largest reference value.
double RelativeError(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  EXPECT_GT(scale, 0.5) << "a trivial case";
  return worst / scale;
}

ConvDims Dims(int64_t batch, int64_t rows, int64_t cols, int64_t in, int64_t out, bool same, int filter = 5) {
  ConvDims d;
  d.filter = filter;
  d.batch = batch;
  d.in_rows = rows;
  d.in_cols = cols;
  d.in_channels = in;
  d.out_channels = out;
  const int64_t pad = same ? (filter - 1) / 2 : 0;
  d.pad_top = d.pad_left = pad;
  d.out_rows = rows + 2 * pad - (filter - 1);
  d.out_cols = cols + 2 * pad - (filter - 1);
  return d;
}

}  // namespace

// For gtest's messages.
void PrintTo(const ConvDims& d, std::ostream* os) {
  *os << d.filter << "x" << d.filter << " [" << d.batch << ", " << d.in_rows << ", " << d.in_cols << ", " << d.in_channels << "] -> [" << d.batch
      << ", " << d.out_rows << ", " << d.out_cols << ", " << d.out_channels << "] pad " << d.pad_top << ","
      << d.pad_left;
}

namespace {

class WinogradConvTest : public ::testing::TestWithParam<ConvDims> {};

TEST_P(WinogradConvTest, MatchesTheDirectConvolution) {
  const ConvDims d = GetParam();
  ASSERT_TRUE(Worthwhile(d));
  ASSERT_TRUE(Worthwhile(BackpropDims(d)));
  const std::vector<float> x = Random(InputSize(d), 1), w = Random(FilterSize(d), 2), dy = Random(OutputSize(d), 3);
  const Reference want = Direct(d, x, w, dy);
  std::vector<float> y(OutputSize(d)), dx(InputSize(d)), dw(FilterSize(d));
  const int64_t runs = Runs();
  Forward(d, x.data(), w.data(), nullptr, false, y.data(), Threads());
  BackpropInput(d, w.data(), dy.data(), dx.data(), Threads());
  BackpropFilter(d, x.data(), dy.data(), dw.data(), Threads());
  EXPECT_EQ(Runs(), runs + 3);
  // Measured: 3e-6 (forward), 4e-6 (input), 1.2e-5 (filter) at fashion_cnn's
  // second layer; a direct float32 sum of the same length is near 1e-6.
  EXPECT_LT(RelativeError(y, want.y), 2e-5);
  EXPECT_LT(RelativeError(dx, want.dx), 2e-5);
  EXPECT_LT(RelativeError(dw, want.dw), 5e-5);
}

TEST_P(WinogradConvTest, BiasAndRelu) {
  const ConvDims d = GetParam();
  const std::vector<float> x = Random(InputSize(d), 4), w = Random(FilterSize(d), 5);
  const std::vector<float> bias = Random(static_cast<size_t>(d.out_channels), 6);
  std::vector<float> plain(OutputSize(d)), fused(OutputSize(d));
  Forward(d, x.data(), w.data(), nullptr, false, plain.data(), Threads());
  Forward(d, x.data(), w.data(), bias.data(), true, fused.data(), Threads());
  int64_t zeros = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    // The same two roundings as adding the bias and clamping afterwards.
    const float want = std::max(0.0f, plain[i] + bias[i % d.out_channels]);
    ASSERT_EQ(fused[i], want) << i;
    zeros += fused[i] == 0.0f;
  }
  EXPECT_GT(zeros, 0);
  EXPECT_LT(zeros, static_cast<int64_t>(plain.size()));
}

TEST_P(WinogradConvTest, TwoThreadsComputeWhatOneDoes) {
  const ConvDims d = GetParam();
  const std::vector<float> x = Random(InputSize(d), 7), w = Random(FilterSize(d), 8), dy = Random(OutputSize(d), 9);
  Eigen::ThreadPool pool(2);
  const Threads two{&pool, 2};
  std::vector<float> y1(OutputSize(d)), y2(OutputSize(d)), dx1(InputSize(d)), dx2(InputSize(d));
  Forward(d, x.data(), w.data(), nullptr, false, y1.data(), Threads());
  Forward(d, x.data(), w.data(), nullptr, false, y2.data(), two);
  EXPECT_EQ(y1, y2);  // every output block is computed by one thread, the same way
  BackpropInput(d, w.data(), dy.data(), dx1.data(), Threads());
  BackpropInput(d, w.data(), dy.data(), dx2.data(), two);
  EXPECT_EQ(dx1, dx2);
  // The filter gradient sums per-range partial sums: the same for a given
  // thread count, and within rounding of one thread's.
  std::vector<float> dw1(FilterSize(d)), dw2(FilterSize(d)), dw2_again(FilterSize(d));
  BackpropFilter(d, x.data(), dy.data(), dw1.data(), Threads());
  BackpropFilter(d, x.data(), dy.data(), dw2.data(), two);
  BackpropFilter(d, x.data(), dy.data(), dw2_again.data(), two);
  EXPECT_EQ(dw2, dw2_again);
  std::vector<double> dw1_wide(dw1.begin(), dw1.end());
  EXPECT_LT(RelativeError(dw2, dw1_wide), 5e-5);
}

INSTANTIATE_TEST_SUITE_P(Shapes, WinogradConvTest,
                         ::testing::Values(
                             // fashion_cnn's second layer, at batch 4
                             Dims(4, 14, 14, 32, 64, true),
                             // odd sizes: partial blocks at the bottom and right
                             Dims(2, 9, 7, 16, 20, true),
                             // VALID; channels that are not a multiple of 16 (nor of 8)
                             Dims(3, 11, 8, 21, 18, false),
                             // enough tiles for several blocks per thread
                             Dims(9, 16, 16, 16, 16, true),
                             // 3x3: configs/fashion_resnet.pbtxt's first residual block, at batch 2
                             Dims(2, 28, 28, 32, 32, true, 3),
                             // its widening layer, 32 -> 64 channels at 14x14
                             Dims(3, 14, 14, 32, 64, true, 3),
                             // odd sizes: partial 4x4 blocks (1, 2 and 3 rows or columns)
                             Dims(2, 9, 7, 16, 20, true, 3), Dims(1, 6, 11, 17, 16, true, 3),
                             // VALID; channels that are not a multiple of 16 (nor of 8)
                             Dims(3, 11, 8, 21, 18, false, 3),
                             Dims(9, 16, 16, 16, 16, true, 3)));

TEST(WinogradConv, WorthwhileOnlyForEnoughChannelsAndAWindowsPadding) {
  EXPECT_TRUE(Worthwhile(Dims(1, 14, 14, 16, 16, true)));
  EXPECT_FALSE(Worthwhile(Dims(1, 28, 28, 1, 32, true)));   // fashion_cnn's first layer
  EXPECT_FALSE(Worthwhile(Dims(1, 14, 14, 32, 8, true)));   // too few outputs
  EXPECT_FALSE(Worthwhile(Dims(0, 14, 14, 32, 32, true)));  // empty batch
  ConvDims wide = Dims(1, 14, 14, 32, 32, true);
  wide.pad_top = 5;  // more padding than a 5x5 window can have
  wide.out_rows += 3;
  EXPECT_FALSE(Worthwhile(wide));
  ConvDims short_bottom = Dims(1, 14, 14, 32, 32, true);
  short_bottom.out_rows = 20;  // the bottom padding would be 8
  EXPECT_FALSE(Worthwhile(short_bottom));
  // 3x3: padding 0 to 2 on each side.
  EXPECT_TRUE(Worthwhile(Dims(1, 14, 14, 16, 16, true, 3)));
  ConvDims three = Dims(1, 14, 14, 32, 32, false, 3);
  three.pad_top = 3;  // more than a 3x3 window can have
  three.out_rows += 3;
  EXPECT_FALSE(Worthwhile(three));
  for (int filter : {1, 2, 4, 7}) {
    ConvDims other = Dims(1, 14, 14, 32, 32, false, 3);
    other.filter = filter;
    other.out_rows = other.out_cols = 15 - filter;
    EXPECT_FALSE(Worthwhile(other)) << filter << "x" << filter;
  }
}

TEST(WinogradConv, BackpropDimsSwapTheSidesAndThePadding) {
  const ConvDims d = Dims(2, 14, 12, 32, 64, false);
  const ConvDims b = BackpropDims(d);
  EXPECT_EQ(b.in_rows, d.out_rows);
  EXPECT_EQ(b.in_cols, d.out_cols);
  EXPECT_EQ(b.out_rows, d.in_rows);
  EXPECT_EQ(b.out_cols, d.in_cols);
  EXPECT_EQ(b.in_channels, 64);
  EXPECT_EQ(b.out_channels, 32);
  EXPECT_EQ(b.pad_top, 4);
  EXPECT_EQ(b.pad_left, 4);
  EXPECT_TRUE(Worthwhile(b));
  const ConvDims b3 = BackpropDims(Dims(2, 14, 12, 32, 64, true, 3));
  EXPECT_EQ(b3.filter, 3);
  EXPECT_EQ(b3.pad_top, 1);
  EXPECT_EQ(b3.out_rows, 14);
  EXPECT_TRUE(Worthwhile(b3));
}

}  // namespace
}  // namespace winograd
}  // namespace sluice

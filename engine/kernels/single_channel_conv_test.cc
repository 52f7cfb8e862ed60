// single_channel_conv.h against float64 direct convolutions: the forward
// pass with bias and relu and the filter gradient, at SAME and VALID
// padding, odd sizes and filters (5x5, 3x3, 4x2), 16 to 48 output channels
// (whole and partial register tiles); bitwise the same results on 1 and 2
// threads.
#include "engine/kernels/single_channel_conv.h"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace single_channel {
namespace {

struct Case {
  int64_t batch, rows, cols, filter_rows, filter_cols, out;
  bool same;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.batch << "x" << c.rows << "x" << c.cols << "x1 * " << c.filter_rows << "x" << c.filter_cols << "x" << c.out
      << (c.same ? " SAME" : " VALID");
}

WindowDim Window(int64_t in, int64_t k, bool same) {
  WindowDim w;
  w.in = in;
  w.k = k;
  w.stride = 1;
  w.out = same ? in : in - k + 1;
  w.pad = same ? (k - 1) / 2 : 0;  // TensorFlow's SAME: the extra row or column goes after
  return w;
}

ConvGeometry GeometryOf(const Case& c) {
  ConvGeometry g;
  g.batch = c.batch;
  g.in_rows = c.rows;
  g.in_cols = c.cols;
  g.in_depth = 1;
  g.filter_rows = c.filter_rows;
  g.filter_cols = c.filter_cols;
  g.out_depth = c.out;
  g.rows = Window(c.rows, c.filter_rows, c.same);
  g.cols = Window(c.cols, c.filter_cols, c.same);
  return g;
}

std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

class SingleChannelConvTest : public ::testing::TestWithParam<Case> {};

TEST_P(SingleChannelConvTest, MatchesTheDirectConvolution) {
  const ConvGeometry g = GeometryOf(GetParam());
  ASSERT_TRUE(Applies(g));
  const int64_t k = g.out_depth, taps = g.filter_rows * g.filter_cols;
  const std::vector<float> x = Random(g.batch * g.in_rows * g.in_cols, 1), w = Random(taps * k, 2);
  const std::vector<float> bias = Random(k, 3), dy = Random(g.batch * g.out_pixels() * k, 4);
  std::vector<double> want_y(dy.size(), 0.0), want_dw(w.size(), 0.0);
  std::vector<double> dw_magnitude(w.size(), 0.0);  // the sum of |terms|: float32 rounding scales with it
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t i = 0; i < g.rows.out; ++i) {
      for (int64_t j = 0; j < g.cols.out; ++j) {
        const int64_t o = ((n * g.rows.out + i) * g.cols.out + j) * k;
        for (int64_t a = 0; a < g.filter_rows; ++a) {
          for (int64_t b = 0; b < g.filter_cols; ++b) {
            const int64_t y = i + a - g.rows.pad, xc = j + b - g.cols.pad;
            if (y < 0 || y >= g.in_rows || xc < 0 || xc >= g.in_cols) continue;
            const double xv = x[(n * g.in_rows + y) * g.in_cols + xc];
            for (int64_t c = 0; c < k; ++c) {
              want_y[o + c] += xv * w[(a * g.filter_cols + b) * k + c];
              want_dw[(a * g.filter_cols + b) * k + c] += xv * dy[o + c];
              dw_magnitude[(a * g.filter_cols + b) * k + c] += std::abs(xv * dy[o + c]);
            }
          }
        }
      }
    }
  }
  std::vector<float> y(dy.size()), dw(w.size());
  Forward(g, x.data(), w.data(), bias.data(), /*relu=*/true, y.data(), nullptr, 1);
  BackpropFilter(g, x.data(), dy.data(), dw.data(), nullptr, 1);
  int64_t clipped = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double want = std::max(0.0, want_y[i] + bias[i % k]);
    ASSERT_NEAR(y[i], want, 1e-5 * (1 + std::abs(want))) << "y at " << i;
    clipped += y[i] == 0.0f;
  }
  EXPECT_GT(clipped, 0);
  EXPECT_LT(clipped, static_cast<int64_t>(y.size()));
  for (size_t i = 0; i < dw.size(); ++i) {
    // Sums of up to 5 x 784 products, in float32 (measured: up to 2.2e-5
    // absolute against 1,000 of magnitude).
    ASSERT_NEAR(dw[i], want_dw[i], 1e-6 * (1 + dw_magnitude[i])) << "dw at " << i;
  }

  Eigen::ThreadPool pool(2);
  std::vector<float> y2(y.size()), dw2(dw.size());
  Forward(g, x.data(), w.data(), bias.data(), true, y2.data(), &pool, 2);
  BackpropFilter(g, x.data(), dy.data(), dw2.data(), &pool, 2);
  EXPECT_EQ(y, y2);
  EXPECT_EQ(dw, dw2);
}

INSTANTIATE_TEST_SUITE_P(Shapes, SingleChannelConvTest,
                         ::testing::Values(Case{5, 28, 28, 5, 5, 32, true},  // fashion_cnn's first layer
                                           Case{3, 9, 13, 3, 3, 48, true},   // a partial vector pair (48)
                                           Case{2, 10, 7, 4, 2, 16, true},   // even filter: padding after
                                           Case{20, 8, 11, 5, 5, 16, false}));  // VALID; more images than chunks

TEST(SingleChannelConv, AppliesToOneChannelAtStrideOneOnly) {
  ConvGeometry g = GeometryOf(Case{1, 28, 28, 5, 5, 32, true});
  EXPECT_TRUE(Applies(g));
  ConvGeometry two = g;
  two.in_depth = 2;
  EXPECT_FALSE(Applies(two));
  ConvGeometry strided = g;
  strided.rows.stride = 2;
  EXPECT_FALSE(Applies(strided));
  ConvGeometry odd_channels = g;
  odd_channels.out_depth = 20;
  EXPECT_FALSE(Applies(odd_channels));
  ConvGeometry wide = g;
  wide.filter_rows = 13;
  EXPECT_FALSE(Applies(wide));
  ConvGeometry empty = g;
  empty.batch = 0;
  EXPECT_FALSE(Applies(empty));
}

}  // namespace
}  // namespace single_channel
}  // namespace sluice

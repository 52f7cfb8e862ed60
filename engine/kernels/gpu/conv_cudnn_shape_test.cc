// The shapes the cuDNN kernels hand to cuDNN (conv_cudnn_shape.h), and the
// input gradient computed as a forward convolution of dy with the turned
// filter (InputGradientAsForward, FlippedFilterSource): checked on the host
// against the input gradient's definition, with plain loops in double, for
// the shapes of cudnn_ops_gpu_test (fashion_cnn's, TensorFlow's asymmetric
// SAME, VALID, 1x1, one channel), in both of cuDNN's filter layouts. Runs
// without a GPU.
#include "engine/kernels/gpu/conv_cudnn_shape.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/gpu/conv_filter_flip.h"
#include "gtest/gtest.h"

namespace sluice {
namespace gpu {
namespace {

ConvShape Shape(const TensorShape& input, const TensorShape& filter, int64_t stride, const std::string& padding) {
  ConvGeometry g;
  const absl::Status st = MakeConvGeometry(input, filter, {1, stride, stride, 1}, padding, &g);
  EXPECT_TRUE(st.ok()) << st;
  return ShapeOf(g);
}

std::vector<double> Random(int64_t n, std::mt19937* rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (double& x : v) x = u(*rng);
  return v;
}

// The input gradient by its definition (TensorFlow's padding: ph rows before
// the input): dx[n, u, v, c] = sum of dy[n, a, b, o] * w[i, j, c, o] over
// a * sh + i - ph = u, b * sw + j - pw = v. NHWC dx of [n, h, w, c].
std::vector<double> InputGradientByDefinition(const ConvShape& s, const std::vector<double>& w,
                                              const std::vector<double>& dy) {
  std::vector<double> dx(s.n * s.h * s.w * s.c, 0.0);
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t a = 0; a < s.oh; ++a) {
      for (int64_t b = 0; b < s.ow; ++b) {
        for (int64_t i = 0; i < s.kh; ++i) {
          for (int64_t j = 0; j < s.kw; ++j) {
            const int64_t u = a * s.sh + i - s.ph, v = b * s.sw + j - s.pw;
            if (u < 0 || u >= s.h || v < 0 || v >= s.w) continue;
            for (int64_t c = 0; c < s.c; ++c) {
              for (int64_t o = 0; o < s.o; ++o) {
                dx[((n * s.h + u) * s.w + v) * s.c + c] +=
                    dy[((n * s.oh + a) * s.ow + b) * s.o + o] * w[((i * s.kw + j) * s.c + c) * s.o + o];
              }
            }
          }
        }
      }
    }
  }
  return dx;
}

// The forward correlation of `f` (symmetric padding, no extra rows) with a
// filter in cuDNN's layout: KCRS (nchw) or KRSC. NHWC x and result.
std::vector<double> ForwardWithCudnnFilter(const ConvShape& f, const std::vector<double>& x,
                                           const std::vector<double>& filter, bool nchw) {
  std::vector<double> y(f.n * f.oh * f.ow * f.o, 0.0);
  for (int64_t n = 0; n < f.n; ++n) {
    for (int64_t a = 0; a < f.oh; ++a) {
      for (int64_t b = 0; b < f.ow; ++b) {
        for (int64_t k = 0; k < f.o; ++k) {
          double sum = 0;
          for (int64_t i = 0; i < f.kh; ++i) {
            for (int64_t j = 0; j < f.kw; ++j) {
              const int64_t r = a * f.sh + i - f.ph, col = b * f.sw + j - f.pw;
              if (r < 0 || r >= f.h || col < 0 || col >= f.w) continue;
              for (int64_t c = 0; c < f.c; ++c) {
                const int64_t wi = nchw ? ((k * f.c + c) * f.kh + i) * f.kw + j : ((k * f.kh + i) * f.kw + j) * f.c + c;
                sum += x[((n * f.h + r) * f.w + col) * f.c + c] * filter[wi];
              }
            }
          }
          y[((n * f.oh + a) * f.ow + b) * f.o + k] = sum;
        }
      }
    }
  }
  return y;
}

struct Case {
  std::string name;
  TensorShape input, filter;
  int64_t stride;
  std::string padding;
};

std::vector<Case> StrideOneCases() {
  return {
      {"fashion conv1", TensorShape({2, 28, 28, 1}), TensorShape({5, 5, 1, 32}), 1, "SAME"},
      {"fashion conv2", TensorShape({2, 14, 14, 32}), TensorShape({5, 5, 32, 64}), 1, "SAME"},
      {"asymmetric SAME rows", TensorShape({3, 7, 8, 3}), TensorShape({4, 3, 3, 5}), 1, "SAME"},
      {"even window both ways", TensorShape({2, 6, 5, 2}), TensorShape({2, 4, 2, 3}), 1, "SAME"},
      {"SAME window wider than the input", TensorShape({1, 3, 3, 2}), TensorShape({5, 6, 2, 3}), 1, "SAME"},
      {"1x1 filter", TensorShape({2, 5, 5, 8}), TensorShape({1, 1, 8, 16}), 1, "VALID"},
      {"one channel 7x7 VALID", TensorShape({3, 12, 11, 1}), TensorShape({7, 7, 1, 40}), 1, "VALID"},
      {"3x2 VALID", TensorShape({2, 9, 7, 4}), TensorShape({3, 2, 4, 6}), 1, "VALID"},
  };
}

TEST(ConvCudnnShape, TensorFlowsOddPaddingRowGoesAtTheBottom) {
  // A 4-row window over 7 rows, SAME: 3 rows of padding, 1 before, 2 after.
  const ConvShape s = Shape(TensorShape({3, 7, 8, 3}), TensorShape({4, 3, 3, 5}), 1, "SAME");
  EXPECT_EQ(s.ph, 1);
  EXPECT_EQ(s.eh, 1);
  EXPECT_EQ(s.padded_h(), 8);
  EXPECT_EQ(s.pw, 1);
  EXPECT_EQ(s.ew, 0);
  EXPECT_TRUE(s.asymmetric());
  EXPECT_EQ(s.oh, 7);
  EXPECT_EQ(s.ow, 8);
}

TEST(ConvCudnnShape, InputGradientAsForwardMatchesTheDefinition) {
  std::mt19937 rng(17);
  for (const Case& c : StrideOneCases()) {
    const ConvShape s = Shape(c.input, c.filter, c.stride, c.padding);
    const std::optional<ConvShape> f = InputGradientAsForward(s);
    ASSERT_TRUE(f.has_value()) << c.name;
    EXPECT_EQ(f->c, s.o) << c.name;
    EXPECT_EQ(f->o, s.c) << c.name;
    EXPECT_EQ(f->oh, s.padded_h()) << c.name;
    EXPECT_EQ(f->ow, s.padded_w()) << c.name;
    const std::vector<double> w = Random(s.kh * s.kw * s.c * s.o, &rng);
    const std::vector<double> dy = Random(s.n * s.oh * s.ow * s.o, &rng);
    const std::vector<double> expected = InputGradientByDefinition(s, w, dy);
    double scale = 0;
    for (double v : expected) scale = std::max(scale, std::abs(v));
    for (bool nchw : {false, true}) {
      std::vector<double> turned(w.size());
      for (int64_t i = 0; i < static_cast<int64_t>(turned.size()); ++i) {
        const int64_t src = FlippedFilterSource(i, s.kh, s.kw, s.c, s.o, nchw);
        ASSERT_GE(src, 0);
        ASSERT_LT(src, static_cast<int64_t>(w.size()));
        turned[i] = w[src];
      }
      const std::vector<double> padded = ForwardWithCudnnFilter(*f, dy, turned, nchw);
      // The forward output covers the padded input; dx is its top-left part.
      int64_t bad = 0;
      for (int64_t n = 0; n < s.n; ++n) {
        for (int64_t u = 0; u < s.h; ++u) {
          for (int64_t v = 0; v < s.w; ++v) {
            for (int64_t ch = 0; ch < s.c; ++ch) {
              const double got = padded[((n * f->oh + u) * f->ow + v) * f->o + ch];
              const double want = expected[((n * s.h + u) * s.w + v) * s.c + ch];
              if (std::abs(got - want) > 1e-12 * (1 + scale) && ++bad <= 3) {
                ADD_FAILURE() << c.name << (nchw ? " KCRS" : " KRSC") << ": dx[" << n << ", " << u << ", " << v
                              << ", " << ch << "] = " << got << ", by definition " << want;
              }
            }
          }
        }
      }
      EXPECT_EQ(bad, 0) << c.name << (nchw ? " KCRS" : " KRSC");
    }
  }
}

TEST(ConvCudnnShape, TheTurnedFilterIsAPermutation) {
  for (bool nchw : {false, true}) {
    const int64_t kh = 4, kw = 3, c = 2, o = 5, total = kh * kw * c * o;
    std::vector<int> hits(total, 0);
    for (int64_t i = 0; i < total; ++i) ++hits[FlippedFilterSource(i, kh, kw, c, o, nchw)];
    for (int64_t i = 0; i < total; ++i) EXPECT_EQ(hits[i], 1) << (nchw ? "KCRS " : "KRSC ") << i;
  }
}

TEST(ConvCudnnShape, OnlyStrideOneHasAForwardInputGradient) {
  EXPECT_FALSE(InputGradientAsForward(Shape(TensorShape({2, 9, 10, 3}), TensorShape({3, 3, 3, 4}), 2, "SAME")));
  EXPECT_FALSE(InputGradientAsForward(Shape(TensorShape({2, 11, 9, 4}), TensorShape({3, 2, 4, 6}), 2, "VALID")));
  EXPECT_TRUE(InputGradientAsForward(Shape(TensorShape({2, 11, 9, 4}), TensorShape({3, 2, 4, 6}), 1, "VALID")));
}

}  // namespace
}  // namespace gpu
}  // namespace sluice

// The max-pooling kernels (pooling_ops.cc) against a plain loop, bit for bit:
// MaxPool, MaxPoolGrad and _FusedMaxPoolGrad (the gradient only where the
// window's maximum is > 0, and its per-channel sum: float per image, then
// double across images), with random values and with values on a coarse grid
// (many ties: the first maximal position in the window wins), at channel
// counts that leave every block of vectors and a partial one. Built twice:
// pooling_exact_test natively (the AVX-512 paths on a machine that has them)
// and pooling_avx2_test with -mno-avx512f (8-lane MaxPool, the generic
// MaxPoolGrad loop); each links pooling_ops.cc alone and runs it through
// KernelRunner.
#include <cmath>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "engine/kernels/bench_kernel_runner.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

struct Pool {
  int64_t batch, rows, cols, channels, k, stride;
  bool same;
  bool ties;  // values on a grid of 0.5 in [-3, 3]
};

void PrintTo(const Pool& p, std::ostream* os) {
  *os << p.batch << "x" << p.rows << "x" << p.cols << "x" << p.channels << " window " << p.k << " stride " << p.stride
      << (p.same ? " SAME" : " VALID") << (p.ties ? " ties" : "");
}

std::map<std::string, AttrValue> Attrs(const Pool& p) {
  return {{"T", MakeAttr(DT_FLOAT)},
          {"ksize", MakeAttr(std::vector<int64_t>{1, p.k, p.k, 1})},
          {"strides", MakeAttr(std::vector<int64_t>{1, p.stride, p.stride, 1})},
          {"padding", MakeAttr(std::string(p.same ? "SAME" : "VALID"))}};
}

// Output size and leading padding of one spatial dimension (TensorFlow's rule).
void Dim(int64_t in, int64_t k, int64_t s, bool same, int64_t* out, int64_t* pad) {
  *out = same ? (in + s - 1) / s : (in - k) / s + 1;
  *pad = same ? std::max<int64_t>(0, ((*out - 1) * s + k - in) / 2) : 0;
}

// Calls fn(output index, input index) for every input position of every window, in row-major window order.
template <typename Fn>
void ForEachWindow(const Pool& p, Fn fn) {
  int64_t oh, ow, ph, pw;
  Dim(p.rows, p.k, p.stride, p.same, &oh, &ph);
  Dim(p.cols, p.k, p.stride, p.same, &ow, &pw);
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x)
        for (int64_t c = 0; c < p.channels; ++c) {
          const int64_t o = ((n * oh + y) * ow + x) * p.channels + c;
          for (int64_t i = 0; i < p.k; ++i)
            for (int64_t j = 0; j < p.k; ++j) {
              const int64_t r = y * p.stride - ph + i, q = x * p.stride - pw + j;
              if (r >= 0 && r < p.rows && q >= 0 && q < p.cols) fn(o, ((n * p.rows + r) * p.cols + q) * p.channels + c);
            }
        }
}

class PoolingExact : public ::testing::TestWithParam<Pool> {};

TEST_P(PoolingExact, MaxPoolAndItsGradientsMatchAPlainLoop) {
  const Pool p = GetParam();
  Tensor x = BenchRandom(TensorShape({p.batch, p.rows, p.cols, p.channels}), -3, 3);
  if (p.ties) {
    for (int64_t i = 0; i < x.NumElements(); ++i) x.data<float>()[i] = std::round(x.data<float>()[i] * 2) / 2;
  }
  KernelRunner pool(2, "MaxPool", Attrs(p), {x});
  ASSERT_TRUE(pool.status().ok()) << pool.status();
  std::vector<Tensor> y;
  ASSERT_TRUE(pool.Run(&y).ok());

  const float* xv = x.data<float>();
  std::vector<float> want(y[0].NumElements(), -std::numeric_limits<float>::infinity());
  std::vector<int64_t> argmax(want.size(), -1);
  ForEachWindow(p, [&](int64_t o, int64_t i) {
    if (argmax[o] < 0 || want[o] < xv[i]) {  // the first strictly larger value
      want[o] = xv[i];
      argmax[o] = i;
    }
  });
  for (size_t o = 0; o < want.size(); ++o) ASSERT_EQ(y[0].data<float>()[o], want[o]) << "output " << o;

  const Tensor dy = BenchRandom(y[0].shape(), -1, 1);
  KernelRunner grad(2, "MaxPoolGrad", Attrs(p), {x, y[0], dy});
  ASSERT_TRUE(grad.status().ok()) << grad.status();
  std::vector<Tensor> dx;
  ASSERT_TRUE(grad.Run(&dx).ok());
  std::vector<float> want_dx(x.NumElements(), 0.0f);
  for (size_t o = 0; o < argmax.size(); ++o) want_dx[argmax[o]] += dy.data<float>()[o];
  for (int64_t i = 0; i < x.NumElements(); ++i) ASSERT_EQ(dx[0].data<float>()[i], want_dx[i]) << "dx " << i;

  KernelRunner fused(2, "_FusedMaxPoolGrad", Attrs(p), {x, y[0], dy});
  ASSERT_TRUE(fused.status().ok()) << fused.status();
  std::vector<Tensor> fused_out;
  ASSERT_TRUE(fused.Run(&fused_out).ok());
  std::vector<float> want_fused(x.NumElements(), 0.0f);
  const int64_t per_image = static_cast<int64_t>(argmax.size()) / p.batch;
  std::vector<double> bias(p.channels, 0.0);
  for (int64_t n = 0; n < p.batch; ++n) {
    std::vector<float> image_sum(p.channels, 0.0f);
    for (int64_t o = n * per_image; o < (n + 1) * per_image; ++o) {
      const float g = want[o] > 0 ? dy.data<float>()[o] : 0.0f;
      image_sum[o % p.channels] += g;
      if (want[o] > 0) want_fused[argmax[o]] += g;
    }
    for (int64_t c = 0; c < p.channels; ++c) bias[c] += image_sum[c];
  }
  for (int64_t i = 0; i < x.NumElements(); ++i) ASSERT_EQ(fused_out[0].data<float>()[i], want_fused[i]) << "fused dx " << i;
  for (int64_t c = 0; c < p.channels; ++c) {
    ASSERT_EQ(fused_out[1].data<float>()[c], static_cast<float>(bias[c])) << "bias gradient " << c;
  }
}

// Channels: 100 = 64 + 32 + 4 and 88 = 64 + 16 + 8 (AVX-512: blocks of four,
// two and one vectors, then a partial one); 37 and 29 (8 lanes: 32 + 5 and
// 16 + 8 + 5); 3 (a partial vector only). Tiling 2x2 windows, overlapping
// 3x3 stride-2 SAME ones, 3x3 stride-1 ones.
INSTANTIATE_TEST_SUITE_P(Shapes, PoolingExact,
                         ::testing::Values(Pool{2, 6, 6, 100, 2, 2, false, false}, Pool{2, 6, 6, 100, 2, 2, false, true},
                                           Pool{1, 7, 7, 88, 3, 2, true, false}, Pool{1, 7, 7, 88, 3, 2, true, true},
                                           Pool{2, 6, 6, 37, 2, 2, false, false}, Pool{1, 7, 7, 29, 3, 2, true, true},
                                           Pool{2, 8, 8, 64, 2, 2, true, false}, Pool{3, 5, 4, 3, 3, 1, true, true}));

}  // namespace
}  // namespace sluice

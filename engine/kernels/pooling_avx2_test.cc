// The pooling kernels (pooling_ops.cc) compiled without AVX-512 (the
// pooling_avx2_test target's copts; on a machine whose -march=native build
// takes the AVX-512 paths): float MaxPool's 8-lane register path and
// MaxPoolGrad's generic loop, against a plain reference, bit for bit, at
// channel counts that leave whole and partial vectors. The AVX-512 paths are
// checked the same way by the op harness in the native build.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/kernels/bench_kernel_runner.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

struct Pool {
  int64_t batch, rows, cols, channels, k, stride;
  bool same;
};

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

class PoolingWithoutAvx512 : public ::testing::TestWithParam<Pool> {};

TEST_P(PoolingWithoutAvx512, MaxPoolAndItsGradientMatchAPlainLoop) {
  const Pool p = GetParam();
  const Tensor x = BenchRandom(TensorShape({p.batch, p.rows, p.cols, p.channels}), -3, 3);
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
}

// 37 channels: four 8-lane vectors and a partial one; 20: two and a partial;
// 64: two blocks of four; 3: a partial vector only. Overlapping SAME windows
// and tiling VALID ones.
INSTANTIATE_TEST_SUITE_P(Shapes, PoolingWithoutAvx512,
                         ::testing::Values(Pool{2, 6, 6, 37, 2, 2, false}, Pool{1, 7, 7, 20, 3, 2, true},
                                           Pool{2, 8, 8, 64, 2, 2, true}, Pool{3, 5, 4, 3, 3, 1, true}));

}  // namespace
}  // namespace sluice

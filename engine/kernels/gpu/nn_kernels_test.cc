// Direct tests of the nn family's launch functions (softmax_kernels.h,
// reduction_kernels.h, training_kernels.h, dropout_kernels.h) against plain
// host references, with no device or session around them: shapes that hit
// every launch path (warp/block rows, split reductions, column tiles), NaN
// rows for bad int64 labels, the CPU's Philox masks bit for bit, and a few
// timings. Prints "SKIP: no GPU" and passes without a GPU.
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "engine/kernels/gpu/dropout_kernels.h"
#include "engine/kernels/gpu/reduction_kernels.h"
#include "engine/kernels/gpu/softmax_kernels.h"
#include "engine/kernels/gpu/training_kernels.h"
#include "engine/kernels/philox_random.h"
#include "engine/runtime/gpu/gpu_test_util.h"
#include "gtest/gtest.h"

namespace sluice {
namespace gpu {
namespace {

#define CK(call) ASSERT_EQ((call), cudaSuccess) << #call

template <typename T>
struct Dev {
  T* p = nullptr;
  size_t n = 0;
  explicit Dev(size_t count) : n(count) { EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)), cudaSuccess); }
  Dev(const std::vector<T>& v) : Dev(v.size()) {
    EXPECT_EQ(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~Dev() { cudaFree(p); }
  std::vector<T> Get() const {
    std::vector<T> v(n);
    EXPECT_EQ(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
};

std::vector<float> Random(size_t n, float lo, float hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

void Near(double got, double want, double tol, const char* what, int64_t i) {
  ASSERT_LE(std::abs(got - want), tol * std::max(1.0, std::abs(want))) << what << " at " << i << ": got " << got
                                                                        << " want " << want;
}

TEST(NnKernels, SoftmaxAndXent) {
  SLUICE_SKIP_WITHOUT_GPU();
  for (int64_t depth : {1, 10, 33, 1000, 1025, 5000, 20000}) {
    for (int64_t rows : {1, 7, 300}) {
      const int64_t n = rows * depth;
      std::vector<float> x = Random(n, -8, 8, depth * 31 + rows);
      std::vector<float> y = Random(n, 0, 1, depth + rows);
      std::vector<int64_t> lab64(rows);
      std::vector<int32_t> lab32(rows);
      for (int64_t r = 0; r < rows; ++r) lab32[r] = static_cast<int32_t>(lab64[r] = (r * 7 + 3) % depth);
      if (rows > 1) lab64[1] = depth;  // out of range: NaN row
      Dev<float> dx(x), dy(y), out(n), logout(n), loss(rows), bp(n), sloss(rows), sbp(n), s32loss(rows), s32bp(n);
      Dev<int64_t> dl64(lab64);
      Dev<int32_t> dl32(lab32);
      CK(LaunchSoftmax<float>(0, dx.p, out.p, rows, depth, false));
      CK(LaunchSoftmax<float>(0, dx.p, logout.p, rows, depth, true));
      CK(LaunchSoftmaxXent<float>(0, dx.p, dy.p, loss.p, bp.p, rows, depth));
      CK((LaunchSparseSoftmaxXent<float, int64_t>(0, dx.p, dl64.p, sloss.p, sbp.p, rows, depth)));
      CK((LaunchSparseSoftmaxXent<float, int32_t>(0, dx.p, dl32.p, s32loss.p, s32bp.p, rows, depth)));
      CK(cudaDeviceSynchronize());
      auto o = out.Get(), lo = logout.Get(), l = loss.Get(), b = bp.Get(), sl = sloss.Get(), sb = sbp.Get(),
           sl32 = s32loss.Get(), sb32 = s32bp.Get();
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = &x[r * depth];
        double mx = xr[0];
        for (int64_t j = 0; j < depth; ++j) mx = std::max<double>(mx, xr[j]);
        double sum = 0;
        for (int64_t j = 0; j < depth; ++j) sum += std::exp(xr[j] - mx);
        const double lse = std::log(sum);
        double dl = 0;
        for (int64_t j = 0; j < depth; ++j) {
          const double p = std::exp(xr[j] - mx) / sum, yj = y[r * depth + j];
          dl += yj * (lse - (xr[j] - mx));
          Near(o[r * depth + j], p, 1e-5, "softmax", r * depth + j);
          Near(lo[r * depth + j], xr[j] - mx - lse, 1e-5, "log_softmax", r * depth + j);
          Near(b[r * depth + j], p - yj, 1e-5, "xent backprop", r * depth + j);
          Near(sb32[r * depth + j], p - (j == lab32[r] ? 1 : 0), 1e-5, "sparse32 backprop", r * depth + j);
          if (r != 1) Near(sb[r * depth + j], p - (j == lab64[r] ? 1 : 0), 1e-5, "sparse backprop", r * depth + j);
        }
        Near(l[r], dl, 1e-4, "xent loss", r);
        Near(sl32[r], lse - (xr[lab32[r]] - mx), 1e-5, "sparse32 loss", r);
        if (r == 1) {
          ASSERT_TRUE(std::isnan(sl[r])) << "bad label row loss";
          ASSERT_TRUE(std::isnan(sb[r * depth])) << "bad label row backprop";
        } else {
          Near(sl[r], lse - (xr[lab64[r]] - mx), 1e-5, "sparse loss", r);
        }
      }
    }
  }
}

double RefReduce(ReduceKind k, const std::vector<float>& in, int64_t a, int64_t R, int64_t B, int64_t b) {
  double acc = k == ReduceKind::kSum ? 0 : k == ReduceKind::kProd ? 1 : k == ReduceKind::kMax ? -INFINITY : INFINITY;
  for (int64_t r = 0; r < R; ++r) {
    const double v = in[(a * R + r) * B + b];
    if (k == ReduceKind::kSum) acc += v;
    if (k == ReduceKind::kProd) acc *= v;
    if (k == ReduceKind::kMax) acc = std::max(acc, v);
    if (k == ReduceKind::kMin) acc = std::min(acc, v);
  }
  return acc;
}

TEST(NnKernels, Reductions) {
  SLUICE_SKIP_WITHOUT_GPU();
  struct Shape {
    int64_t A, R, B;
  };
  for (Shape s : {Shape{1, 1 << 20, 1}, Shape{128, 10, 1}, Shape{1, 128, 10}, Shape{3, 50000, 1}, Shape{2, 3000, 5},
                  Shape{1, 100000, 3}, Shape{1000, 7, 33}, Shape{5, 1, 7}, Shape{1, 3, 1}, Shape{4, 2000, 1}}) {
    const int64_t n = s.A * s.R * s.B, outs = s.A * s.B;
    for (ReduceKind k : {ReduceKind::kSum, ReduceKind::kProd, ReduceKind::kMax, ReduceKind::kMin}) {
      // Prod over values near 1 so long products stay finite.
      std::vector<float> in = k == ReduceKind::kProd ? Random(n, 0.999f, 1.001f, n) : Random(n, -2, 2, n + 1);
      Dev<float> din(in), dout(outs);
      Dev<float> scratch(std::max<int64_t>(1, ReduceScratchElements(s.A, s.R, s.B)));
      const float divisor = k == ReduceKind::kSum ? static_cast<float>(s.R) : 1.0f;  // Sum tested as Mean
      CK(LaunchReduce3<float>(0, k, din.p, dout.p, s.A, s.R, s.B, divisor, scratch.p));
      CK(cudaDeviceSynchronize());
      auto got = dout.Get();
      for (int64_t a = 0; a < s.A; ++a) {
        for (int64_t b = 0; b < s.B; ++b) {
          // A float product of 10^6 values near 1 drifts ~1e-3 in any order.
          const double tol = k == ReduceKind::kProd ? 2e-3 : 1e-4;
          Near(got[a * s.B + b], RefReduce(k, in, a, s.R, s.B, b) / divisor, tol, "reduce", a * s.B + b);
        }
      }
    }
    std::vector<float> in = Random(n, -2, 2, n + 2);
    if (n > 4) in[n / 2] = in[n / 3] = 5;  // a tie: the first index wins
    Dev<float> din(in);
    Dev<int64_t> amax(outs);
    Dev<int32_t> amin(outs);
    CK((LaunchArgReduce<float, int64_t>(0, true, din.p, amax.p, s.A, s.R, s.B)));
    CK((LaunchArgReduce<float, int32_t>(0, false, din.p, amin.p, s.A, s.R, s.B)));
    CK(cudaDeviceSynchronize());
    auto gmax = amax.Get();
    auto gmin = amin.Get();
    for (int64_t a = 0; a < s.A; ++a) {
      for (int64_t b = 0; b < s.B; ++b) {
        int64_t bi = 0, si = 0;
        for (int64_t r = 1; r < s.R; ++r) {
          const float v = in[(a * s.R + r) * s.B + b];
          if (in[(a * s.R + bi) * s.B + b] < v) bi = r;
          if (v < in[(a * s.R + si) * s.B + b]) si = r;
        }
        ASSERT_EQ(gmax[a * s.B + b], bi) << "argmax " << s.A << "x" << s.R << "x" << s.B;
        ASSERT_EQ(gmin[a * s.B + b], si) << "argmin " << s.A << "x" << s.R << "x" << s.B;
      }
    }
  }
  std::vector<float> filled(5, 0);
  Dev<float> f(5);
  CK(LaunchFill<float>(0, f.p, 5, NAN));
  CK(cudaDeviceSynchronize());
  for (float v : f.Get()) ASSERT_TRUE(std::isnan(v));
}

TEST(NnKernels, TrainingOps) {
  SLUICE_SKIP_WITHOUT_GPU();
  const int64_t n = 100003;
  std::vector<float> var = Random(n, -1, 1, 1), s1 = Random(n, 0.1f, 1, 2), s2 = Random(n, 0.1f, 1, 3),
                     g = Random(n, -1, 1, 4);
  auto scalar = [](float v) { return std::vector<float>{v}; };
  Dev<float> lr(scalar(0.1f)), mom(scalar(0.9f)), b1p(scalar(0.81f)), b2p(scalar(0.998f)), b1(scalar(0.9f)),
      b2(scalar(0.999f)), eps(scalar(1e-7f)), rho(scalar(0.95f)), dg(g);
  for (int which = 0; which < 7; ++which) {
    Dev<float> dv(var), d1(s1), d2(s2);
    const bool nesterov = which == 2 || which == 4;
    switch (which) {
      case 0: CK(LaunchApplyGradientDescent<float>(0, dv.p, lr.p, dg.p, n)); break;
      case 1:
      case 2: CK(LaunchApplyMomentum<float>(0, dv.p, d1.p, lr.p, dg.p, mom.p, n, nesterov)); break;
      case 3:
      case 4:
        CK(LaunchApplyAdam<float>(0, dv.p, d1.p, d2.p, b1p.p, b2p.p, lr.p, b1.p, b2.p, eps.p, dg.p, n, nesterov));
        break;
      case 5: CK(LaunchApplyAdagrad<float>(0, dv.p, d1.p, lr.p, dg.p, n, true)); break;
      case 6: CK(LaunchApplyRMSProp<float>(0, dv.p, d1.p, d2.p, lr.p, rho.p, mom.p, eps.p, dg.p, n)); break;
    }
    CK(cudaDeviceSynchronize());
    auto v = dv.Get(), a1 = d1.Get(), a2 = d2.Get();
    for (int64_t i = 0; i < n; ++i) {
      double w = var[i], x1 = s1[i], x2 = s2[i];
      const double gi = g[i];
      switch (which) {
        case 0: w -= 0.1 * gi; break;
        case 1:
        case 2:
          x1 = x1 * 0.9f + gi;
          w -= nesterov ? gi * 0.1 + x1 * 0.9f * 0.1 : 0.1 * x1;
          break;
        case 3:
        case 4: {
          const double lr_t = 0.1 * std::sqrt(1 - 0.998f) / (1 - 0.81f);
          x1 += (gi - x1) * (1 - 0.9f);
          x2 += (gi * gi - x2) * (1 - 0.999f);
          w -= lr_t * (nesterov ? x1 * 0.9f + (1 - 0.9f) * gi : x1) / (std::sqrt(x2) + 1e-7f);
          break;
        }
        case 5:
          x1 += gi * gi;
          w -= 0.1 * gi / std::sqrt(x1);
          break;
        case 6:
          x1 = x1 * 0.95f + gi * gi * (1 - 0.95f);
          x2 = x2 * 0.9f + 0.1 * gi / std::sqrt(x1 + 1e-7f);
          w -= x2;
          break;
      }
      Near(v[i], w, 1e-4, "var", i);
      if (which > 0) Near(a1[i], x1, 1e-4, "slot 1", i);
      if (which >= 3 && which != 5) Near(a2[i], x2, 1e-4, "slot 2", i);
    }
  }
}

TEST(NnKernels, DropoutMatchesTheCpuStream) {
  SLUICE_SKIP_WITHOUT_GPU();
  const int64_t n = 1000003;
  const philox::Key key = philox::KeyFromSeeds(7, 11);
  std::vector<float> x = Random(n, -1, 1, 5);
  for (float rate : {0.0f, 0.3f, 0.5f}) {
    Dev<float> dx(x), r(std::vector<float>{rate}), out(n), mask(n);
    Dev<int64_t> step(std::vector<int64_t>{42});
    CK(LaunchDropout<float>(0, key.k0, key.k1, dx.p, r.p, step.p, out.p, mask.p, n));
    CK(cudaDeviceSynchronize());
    auto o = out.Get(), m = mask.Get();
    const float scale = 1.0f / (1.0f - rate);
    int64_t kept = 0;
    for (int64_t b = 0; b < (n + 3) / 4; ++b) {
      const philox::Block bits = philox::Generate(key, b, 42);
      for (int j = 0; j < 4 && b * 4 + j < n; ++j) {
        const int64_t i = b * 4 + j;
        const bool keep = philox::ToFloat(bits[j]) >= rate;
        ASSERT_EQ(m[i], keep ? 1.0f : 0.0f) << "mask at " << i;
        ASSERT_EQ(o[i], keep ? x[i] * scale : 0.0f) << "output at " << i;
        kept += keep;
      }
    }
    std::printf("dropout rate %.1f: kept %.4f\n", rate, static_cast<double>(kept) / n);
  }
  Dev<float> dx(x), r(std::vector<float>{1.0f}), out(n), mask(n);
  Dev<int64_t> step(std::vector<int64_t>{0});
  CK(LaunchDropout<float>(0, key.k0, key.k1, dx.p, r.p, step.p, out.p, mask.p, n));
  CK(cudaDeviceSynchronize());
  ASSERT_TRUE(std::isnan(out.Get()[0]));
}

// Timings of the per-step shapes (informative; not asserted).
TEST(NnKernels, Timings) {
  SLUICE_SKIP_WITHOUT_GPU();
  cudaStream_t stream;
  CK(cudaStreamCreate(&stream));
  cudaEvent_t start, stop;
  CK(cudaEventCreate(&start));
  CK(cudaEventCreate(&stop));
  auto time_us = [&](const char* what, auto&& launch) {
    for (int i = 0; i < 10; ++i) launch();
    CK(cudaEventRecord(start, stream));
    const int iters = 200;
    for (int i = 0; i < iters; ++i) launch();
    CK(cudaEventRecord(stop, stream));
    CK(cudaEventSynchronize(stop));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, start, stop));
    std::printf("%-40s %8.2f us\n", what, ms * 1000 / iters);
  };
  Dev<float> big(Random(1 << 24, -1, 1, 9)), out(1 << 24), scratch(1 << 20), l(1 << 16);
  Dev<int64_t> lab(std::vector<int64_t>(1 << 16, 3));
  time_us("sum [128,10] axis 0", [&] { LaunchReduce3<float>(stream, ReduceKind::kSum, big.p, out.p, 1, 128, 10, 1.f, scratch.p); });
  time_us("sum [128,10] axis 1", [&] { LaunchReduce3<float>(stream, ReduceKind::kSum, big.p, out.p, 128, 10, 1, 1.f, scratch.p); });
  time_us("sum [4096,1024] axis 0", [&] { LaunchReduce3<float>(stream, ReduceKind::kSum, big.p, out.p, 1, 4096, 1024, 1.f, scratch.p); });
  time_us("sum [4096,1024] axis 1", [&] { LaunchReduce3<float>(stream, ReduceKind::kSum, big.p, out.p, 4096, 1024, 1, 1.f, scratch.p); });
  time_us("sum all 16M", [&] { LaunchReduce3<float>(stream, ReduceKind::kSum, big.p, out.p, 1, 1 << 24, 1, 1.f, scratch.p); });
  time_us("sparse xent [128,10]", [&] { LaunchSparseSoftmaxXent<float, int64_t>(stream, big.p, lab.p, l.p, out.p, 128, 10); });
  time_us("sparse xent [4096,1000]", [&] { LaunchSparseSoftmaxXent<float, int64_t>(stream, big.p, lab.p, l.p, out.p, 4096, 1000); });
  time_us("momentum 4M", [&] { LaunchApplyMomentum<float>(stream, big.p, out.p, l.p, big.p + (1 << 22), l.p, 1 << 22, false); });
  CK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace gpu
}  // namespace sluice

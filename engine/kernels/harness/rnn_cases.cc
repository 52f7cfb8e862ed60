// Harness entries for LstmGates and LstmGatesGrad (engine/ops/rnn_ops.cc):
// outputs against a float64 step computed here, the gradient of h and c
// against finite differences, LstmGatesGrad against the same reference's
// derivatives, and shape errors.
#include <cmath>
#include <vector>

#include "engine/kernels/harness/op_harness.h"

namespace sluice {
namespace harness {
namespace {

double Sig(double v) { return 1 / (1 + std::exp(-v)); }

struct Step {
  std::vector<double> h, c, act;
};

Step Forward(const std::vector<double>& z, const std::vector<double>& c_prev, int64_t batch, int64_t n, double fb) {
  Step s;
  s.h.resize(batch * n);
  s.c.resize(batch * n);
  s.act.resize(batch * 4 * n);
  for (int64_t r = 0; r < batch; ++r) {
    for (int64_t u = 0; u < n; ++u) {
      const double* zr = &z[r * 4 * n];
      const double i = Sig(zr[u]), f = Sig(zr[n + u] + fb), g = std::tanh(zr[2 * n + u]), o = Sig(zr[3 * n + u]);
      const double c = f * c_prev[r * n + u] + i * g;
      s.c[r * n + u] = c;
      s.h[r * n + u] = o * std::tanh(c);
      double* ar = &s.act[r * 4 * n];
      ar[u] = i;
      ar[n + u] = f;
      ar[2 * n + u] = g;
      ar[3 * n + u] = o;
    }
  }
  return s;
}

const float kForgetBias = 0.75f;

std::vector<OpCase> GateCases(DataType dtype, Rng* rng) {
  std::vector<OpCase> cases;
  for (auto [batch, n] : {std::pair<int64_t, int64_t>{1, 1}, {3, 2}, {4, 5}, {0, 3}}) {
    Tensor z = RandomTensor(dtype, TensorShape({batch, 4 * n}), rng, -2, 2);
    Tensor c_prev = RandomTensor(dtype, TensorShape({batch, n}), rng, -1.5, 1.5);
    Step s = Forward(ToDoubles(z), ToDoubles(c_prev), batch, n, kForgetBias);
    OpCase c;
    c.description = "batch " + std::to_string(batch) + ", units " + std::to_string(n);
    c.inputs = {z, c_prev};
    c.attrs = {{"forget_bias", MakeAttr(kForgetBias)}};
    c.expected = {FromDoubles(dtype, TensorShape({batch, n}), s.h), FromDoubles(dtype, TensorShape({batch, n}), s.c),
                  FromDoubles(dtype, TensorShape({batch, 4 * n}), s.act)};
    c.check_gradient = dtype == DT_DOUBLE && batch > 0;
    c.grad_outputs = {0, 1};
    cases.push_back(c);
  }
  cases.push_back(ErrorCase("z not 4 x units", {RandomTensor(dtype, TensorShape({2, 6}), rng),
                                                RandomTensor(dtype, TensorShape({2, 2}), rng)},
                            {}, "4 * units"));
  cases.push_back(ErrorCase("batches differ", {RandomTensor(dtype, TensorShape({3, 8}), rng),
                                               RandomTensor(dtype, TensorShape({2, 2}), rng)},
                            {}, "batch"));
  return cases;
}

std::vector<OpCase> GateGradCases(DataType dtype, Rng* rng) {
  std::vector<OpCase> cases;
  for (auto [batch, n] : {std::pair<int64_t, int64_t>{2, 3}, {1, 4}}) {
    std::vector<double> z = ToDoubles(RandomTensor(DT_DOUBLE, TensorShape({batch, 4 * n}), rng, -2, 2));
    std::vector<double> c_prev = ToDoubles(RandomTensor(DT_DOUBLE, TensorShape({batch, n}), rng, -1.5, 1.5));
    std::vector<double> dh = ToDoubles(RandomTensor(DT_DOUBLE, TensorShape({batch, n}), rng));
    std::vector<double> dc = ToDoubles(RandomTensor(DT_DOUBLE, TensorShape({batch, n}), rng));
    Step s = Forward(z, c_prev, batch, n, 1.0);
    // The derivatives, written out: d/dz and d/dc_prev of <dh, h> + <dc, c>.
    std::vector<double> dz(batch * 4 * n), dcp(batch * n);
    for (int64_t r = 0; r < batch; ++r) {
      for (int64_t u = 0; u < n; ++u) {
        const double* a = &s.act[r * 4 * n];
        const double i = a[u], f = a[n + u], g = a[2 * n + u], o = a[3 * n + u];
        const double tc = std::tanh(s.c[r * n + u]);
        const double total_dc = dc[r * n + u] + dh[r * n + u] * o * (1 - tc * tc);
        dz[r * 4 * n + u] = total_dc * g * i * (1 - i);
        dz[r * 4 * n + n + u] = total_dc * c_prev[r * n + u] * f * (1 - f);
        dz[r * 4 * n + 2 * n + u] = total_dc * i * (1 - g * g);
        dz[r * 4 * n + 3 * n + u] = dh[r * n + u] * tc * o * (1 - o);
        dcp[r * n + u] = total_dc * f;
      }
    }
    const TensorShape state({batch, n}), gates({batch, 4 * n});
    OpCase c;
    c.description = "batch " + std::to_string(batch) + ", units " + std::to_string(n);
    c.inputs = {FromDoubles(dtype, state, c_prev), FromDoubles(dtype, state, s.c), FromDoubles(dtype, gates, s.act),
                FromDoubles(dtype, state, dh), FromDoubles(dtype, state, dc)};
    c.expected = {FromDoubles(dtype, gates, dz), FromDoubles(dtype, state, dcp)};
    if (dtype == DT_FLOAT) c.tolerance = 1e-4;  // inputs rounded to float before the kernel's math
    cases.push_back(c);
  }
  cases.push_back(ErrorCase("dh shape", {RandomTensor(dtype, TensorShape({2, 2}), rng),
                                         RandomTensor(dtype, TensorShape({2, 2}), rng),
                                         RandomTensor(dtype, TensorShape({2, 8}), rng),
                                         RandomTensor(dtype, TensorShape({2, 3}), rng),
                                         RandomTensor(dtype, TensorShape({2, 2}), rng)},
                            {}, "c_prev's shape"));
  return cases;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"LstmGates", {DT_FLOAT, DT_DOUBLE}, GateCases});
REGISTER_OP_HARNESS(OpHarnessEntry{"LstmGatesGrad", {DT_FLOAT, DT_DOUBLE}, GateGradCases});

}  // namespace
}  // namespace harness
}  // namespace sluice

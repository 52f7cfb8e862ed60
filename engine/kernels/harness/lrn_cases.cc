// Harness entries for LRN and LRNGrad: the default attrs, a small radius
// with other bias/alpha/beta, radius 0 and a radius past the depth, against
// a float64 reference (LRNGrad: the transposed Jacobian of LRN applied to
// the incoming gradient); bad shapes; finite-difference gradients of LRN.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/kernels/harness/op_harness.h"

namespace sluice {
namespace harness {
namespace {

struct LrnAttrs {
  int64_t radius;
  float bias, alpha, beta;
};
const LrnAttrs kAttrs[] = {{5, 1, 1, 0.5f}, {2, 2, 0.5f, 0.75f}, {0, 1, 0.3f, 0.5f}, {9, 1.5f, 0.2f, 1}};

AttrList Attrs(const LrnAttrs& a) {
  return {{"depth_radius", MakeAttr(a.radius)}, {"bias", MakeAttr(a.bias)}, {"alpha", MakeAttr(a.alpha)},
          {"beta", MakeAttr(a.beta)}};
}

std::string Describe(const LrnAttrs& a) {
  return "radius " + std::to_string(a.radius) + " bias " + std::to_string(a.bias) + " alpha " +
         std::to_string(a.alpha) + " beta " + std::to_string(a.beta);
}

// norm_j of each row (the attrs as the kernel reads them: floats).
std::vector<double> Norms(const std::vector<double>& x, int64_t row, int64_t depth, const LrnAttrs& a) {
  std::vector<double> norm(static_cast<size_t>(depth));
  for (int64_t j = 0; j < depth; ++j) {
    double sum = 0;
    for (int64_t k = std::max<int64_t>(0, j - a.radius); k < std::min<int64_t>(depth, j + a.radius + 1); ++k) {
      sum += x[row * depth + k] * x[row * depth + k];
    }
    norm[j] = static_cast<double>(a.bias) + static_cast<double>(a.alpha) * sum;
  }
  return norm;
}

const TensorShape kShape({2, 3, 2, 7});

double Tolerance(DataType dtype) { return dtype == DT_HALF || dtype == DT_BFLOAT16 ? 3e-2 : 0; }

REGISTER_OP_HARNESS(OpHarnessEntry{"LRN", FloatTypes(), [](DataType dtype, Rng* rng) {
  std::vector<OpCase> cases;
  for (const LrnAttrs& a : kAttrs) {
    Tensor x = RandomTensor(dtype, kShape, rng, -2, 2);
    const std::vector<double> v = ToDoubles(x);
    const int64_t depth = kShape.dim_size(3);
    std::vector<double> y(v.size());
    for (int64_t r = 0; r < kShape.num_elements() / depth; ++r) {
      const std::vector<double> norm = Norms(v, r, depth, a);
      for (int64_t j = 0; j < depth; ++j) y[r * depth + j] = v[r * depth + j] * std::pow(norm[j], -double(a.beta));
    }
    OpCase c;
    c.description = Describe(a);
    c.inputs = {x};
    c.attrs = Attrs(a);
    c.expected = {FromDoubles(dtype, kShape, y)};
    c.tolerance = Tolerance(dtype);
    c.check_gradient = dtype == DT_DOUBLE;
    cases.push_back(std::move(c));
  }
  cases.push_back(ErrorCase("3-D input", {RandomTensor(dtype, TensorShape({3, 2, 7}), rng)}, Attrs(kAttrs[0]), "4-D"));
  return cases;
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"LRNGrad", FloatTypes(), [](DataType dtype, Rng* rng) {
  std::vector<OpCase> cases;
  for (const LrnAttrs& a : kAttrs) {
    Tensor x = RandomTensor(dtype, kShape, rng, -2, 2), g = RandomTensor(dtype, kShape, rng, -1, 1);
    const std::vector<double> v = ToDoubles(x), gv = ToDoubles(g);
    const int64_t depth = kShape.dim_size(3);
    std::vector<double> y(v.size()), dx(v.size(), 0.0);
    for (int64_t r = 0; r < kShape.num_elements() / depth; ++r) {
      const std::vector<double> norm = Norms(v, r, depth, a);
      for (int64_t j = 0; j < depth; ++j) y[r * depth + j] = v[r * depth + j] * std::pow(norm[j], -double(a.beta));
      // dx_k = sum_j g_j d y_j / d x_k.
      for (int64_t j = 0; j < depth; ++j) {
        for (int64_t k = std::max<int64_t>(0, j - a.radius); k < std::min<int64_t>(depth, j + a.radius + 1); ++k) {
          double d = -2.0 * a.alpha * a.beta * v[r * depth + k] * y[r * depth + j] / norm[j];
          if (k == j) d += std::pow(norm[j], -double(a.beta));
          dx[r * depth + k] += gv[r * depth + j] * d;
        }
      }
    }
    OpCase c;
    c.description = Describe(a);
    // The output image as LRN makes it, in the dtype under test.
    c.inputs = {g, x, FromDoubles(dtype, kShape, y)};
    c.attrs = Attrs(a);
    c.expected = {FromDoubles(dtype, kShape, dx)};
    c.tolerance = dtype == DT_HALF || dtype == DT_BFLOAT16 ? 6e-2 : dtype == DT_FLOAT ? 1e-4 : 1e-9;
    cases.push_back(std::move(c));
  }
  cases.push_back(ErrorCase("shapes differ",
                            {RandomTensor(dtype, kShape, rng), RandomTensor(dtype, kShape, rng),
                             RandomTensor(dtype, TensorShape({2, 3, 2, 6}), rng)},
                            Attrs(kAttrs[0]), "one shape"));
  return cases;
}});

}  // namespace
}  // namespace harness
}  // namespace sluice

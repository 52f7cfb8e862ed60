// Harness entries for Cumsum and Cumprod: every combination of exclusive and
// reverse on several shapes and axes (negative, int64, an empty dim) against
// a float64 scan, bad axes, and finite-difference gradients in float64.
#include <string>
#include <vector>

#include "engine/kernels/harness/op_harness.h"

namespace sluice {
namespace harness {
namespace {

// The scan of `x` along `axis` in float64, in the kernel's order.
Tensor ScanRef(const Tensor& x, int axis, bool product, bool exclusive, bool reverse) {
  const std::vector<double> v = ToDoubles(x);
  std::vector<double> out(v.size());
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.dim_size(d);
  for (int d = axis + 1; d < x.dims(); ++d) inner *= x.dim_size(d);
  const int64_t n = x.dim_size(axis);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double running = product ? 1 : 0;
      for (int64_t step = 0; step < n; ++step) {
        const int64_t k = reverse ? n - 1 - step : step;
        const int64_t at = (o * n + k) * inner + i;
        if (exclusive) out[at] = running;
        running = product ? running * v[at] : running + v[at];
        if (!exclusive) out[at] = running;
      }
    }
  }
  return FromDoubles(x.dtype(), x.shape(), out);
}

std::vector<OpCase> ScanCases(DataType dtype, Rng* rng, bool product) {
  struct Layout {
    TensorShape shape;
    int64_t axis;
  };
  const std::vector<Layout> layouts = {{TensorShape({5}), 0},       {TensorShape({3, 4}), 1},
                                       {TensorShape({3, 4}), 0},    {TensorShape({2, 3, 4}), -2},
                                       {TensorShape({0, 3}), 1},    {TensorShape({2, 1, 3}), 2}};
  // Products stay away from zero (the gradient divides by x) and small.
  const double lo = product ? 0.5 : -3, hi = product ? 1.5 : 3;
  std::vector<OpCase> cases;
  int k = 0;
  for (const Layout& l : layouts) {
    for (int flags = 0; flags < 4; ++flags) {
      const bool exclusive = flags & 1, reverse = flags & 2;
      const bool int64_axis = k++ % 3 == 2;
      OpCase c;
      Tensor x = RandomTensor(dtype, l.shape, rng, DataTypeIsInteger(dtype) ? -3 : lo, DataTypeIsInteger(dtype) ? 3 : hi);
      c.description = l.shape.DebugString() + " axis " + std::to_string(l.axis) + (exclusive ? " exclusive" : "") +
                      (reverse ? " reverse" : "") + (int64_axis ? " int64 axis" : "");
      c.inputs = {x, int64_axis ? Tensor::Scalar<int64_t>(l.axis) : Tensor::Scalar<int32_t>(static_cast<int32_t>(l.axis))};
      c.attrs = {{"exclusive", MakeAttr(exclusive)}, {"reverse", MakeAttr(reverse)}};
      const int axis = static_cast<int>(l.axis < 0 ? l.axis + l.shape.dims() : l.axis);
      c.expected = {ScanRef(x, axis, product, exclusive, reverse)};
      c.check_gradient = dtype == DT_DOUBLE;
      c.grad_inputs = {0};
      cases.push_back(std::move(c));
    }
  }
  // A long axis, scanned in parallel rows.
  if (dtype == DT_FLOAT) {
    OpCase c;
    Tensor x = RandomTensor(dtype, TensorShape({64, 300, 3}), rng, product ? 0.99 : -1, product ? 1.01 : 1);
    c.description = "[64,300,3] axis 1";
    c.inputs = {x, Tensor::Scalar<int32_t>(1)};
    c.expected = {ScanRef(x, 1, product, false, false)};
    c.tolerance = 1e-4;
    cases.push_back(std::move(c));
  }
  cases.push_back(ErrorCase("axis out of range", {RandomTensor(dtype, TensorShape({2, 3}), rng), Tensor::Scalar<int32_t>(2)},
                            {}, "out of range"));
  cases.push_back(
      ErrorCase("scalar x", {RandomTensor(dtype, TensorShape({}), rng), Tensor::Scalar<int32_t>(0)}, {}, "scalar"));
  cases.push_back(ErrorCase("vector axis",
                            {RandomTensor(dtype, TensorShape({2, 3}), rng), Tensor::FromVector<int32_t>({0})}, {},
                            "scalar"));
  return cases;
}

std::vector<DataType> ScanTypes() {
  std::vector<DataType> types = FloatTypes();
  for (DataType t : {DT_INT8, DT_UINT8, DT_INT32, DT_INT64}) types.push_back(t);
  return types;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"Cumsum", ScanTypes(),
                                   [](DataType dtype, Rng* rng) { return ScanCases(dtype, rng, false); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"Cumprod", ScanTypes(),
                                   [](DataType dtype, Rng* rng) { return ScanCases(dtype, rng, true); }});

}  // namespace
}  // namespace harness
}  // namespace sluice

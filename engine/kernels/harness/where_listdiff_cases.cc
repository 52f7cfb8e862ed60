// Harness entries for Where (coordinates of nonzero elements) and ListDiff
// (x without the values in y): references that walk the inputs in order,
// zeros of every kind (-0 included), empty inputs, and bad shapes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/kernels/harness/op_harness.h"

namespace sluice {
namespace harness {
namespace {

Tensor WhereRef(const Tensor& x) {
  const std::vector<double> v = ToDoubles(x);
  std::vector<int64_t> coords;
  int64_t count = 0;
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    if (v[i] == 0) continue;  // -0 is zero; NaN is not
    ++count;
    int64_t flat = i;
    std::vector<int64_t> idx(x.dims());
    for (int d = x.dims() - 1; d >= 0; --d) {
      idx[d] = flat % x.dim_size(d);
      flat /= x.dim_size(d);
    }
    coords.insert(coords.end(), idx.begin(), idx.end());
  }
  return Tensor::FromVector<int64_t>(coords, TensorShape({count, x.dims()}));
}

REGISTER_OP_HARNESS(OpHarnessEntry{
    "Where",
    {DT_BOOL, DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16, DT_INT8, DT_INT32, DT_INT64, DT_UINT8},
    [](DataType dtype, Rng* rng) {
      std::vector<OpCase> cases;
      for (const TensorShape& shape : {TensorShape({}), TensorShape({7}), TensorShape({3, 4}), TensorShape({2, 0, 3}),
                                       TensorShape({2, 3, 2}), TensorShape({40, 50})}) {
        std::vector<double> v = ToDoubles(RandomTensor(DT_DOUBLE, shape, rng, -3, 3));
        // About half of the elements zero.
        for (double& e : v) e = (*rng)() % 2 == 0 ? 0 : std::round(e) == 0 ? 1 : std::round(e);
        OpCase c;
        c.description = shape.DebugString();
        c.inputs = {FromDoubles(dtype, shape, v)};
        c.expected = {WhereRef(c.inputs[0])};
        cases.push_back(std::move(c));
      }
      if (!DataTypeIsInteger(dtype) && dtype != DT_BOOL) {
        OpCase c;
        c.description = "-0 is zero, NaN is not";
        c.inputs = {FromDoubles(dtype, TensorShape({4}), {-0.0, std::nan(""), 0.0, 2})};
        c.expected = {Tensor::FromVector<int64_t>({1, 3}, TensorShape({2, 1}))};
        cases.push_back(std::move(c));
      }
      return cases;
    }});

// x's elements not in y, and their positions.
std::vector<Tensor> ListDiffRef(const Tensor& x, const Tensor& y, DataType idx_type) {
  std::vector<int64_t> kept;
  if (x.dtype() == DT_STRING) {
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      const tstring* ys = y.data<tstring>();
      if (std::find(ys, ys + y.NumElements(), x.data<tstring>()[i]) == ys + y.NumElements()) kept.push_back(i);
    }
  } else {
    const std::vector<double> xv = ToDoubles(x), yv = ToDoubles(y);
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      if (std::find(yv.begin(), yv.end(), xv[i]) == yv.end()) kept.push_back(i);
    }
  }
  const TensorShape shape({static_cast<int64_t>(kept.size())});
  Tensor out(x.dtype(), shape), idx(idx_type, shape);
  for (size_t j = 0; j < kept.size(); ++j) {
    if (x.dtype() == DT_STRING) {
      out.data<tstring>()[j] = x.data<tstring>()[kept[j]];
    } else {
      const int b = DataTypeSize(x.dtype());
      std::memcpy(static_cast<char*>(out.raw_data()) + j * b, static_cast<const char*>(x.raw_data()) + kept[j] * b, b);
    }
    if (idx_type == DT_INT64) {
      idx.data<int64_t>()[j] = kept[j];
    } else {
      idx.data<int32_t>()[j] = static_cast<int32_t>(kept[j]);
    }
  }
  return {out, idx};
}

Tensor SmallValues(DataType dtype, int64_t n, Rng* rng) {
  if (dtype == DT_STRING) {
    Tensor t(DT_STRING, TensorShape({n}));
    for (int64_t i = 0; i < n; ++i) t.data<tstring>()[i] = "w" + std::to_string((*rng)() % 6);
    return t;
  }
  return RandomTensor(dtype, TensorShape({n}), rng, 0, 5);  // whole numbers
}

REGISTER_OP_HARNESS(OpHarnessEntry{
    "ListDiff", {DT_INT32, DT_INT64, DT_FLOAT, DT_DOUBLE, DT_STRING}, [](DataType dtype, Rng* rng) {
      std::vector<OpCase> cases;
      const std::vector<std::pair<int64_t, int64_t>> sizes = {{8, 3}, {5, 0}, {0, 4}, {12, 12}, {1, 1}};
      int k = 0;
      for (const auto& [nx, ny] : sizes) {
        const DataType idx_type = k++ % 2 == 1 ? DT_INT64 : DT_INT32;
        OpCase c;
        c.description = "x of " + std::to_string(nx) + ", y of " + std::to_string(ny);
        Tensor x = SmallValues(dtype, nx, rng), y = SmallValues(dtype, ny, rng);
        if (dtype != DT_STRING) {  // whole numbers, for overlaps
          std::vector<double> xv = ToDoubles(x), yv = ToDoubles(y);
          for (double& e : xv) e = std::round(e);
          for (double& e : yv) e = std::round(e);
          x = FromDoubles(dtype, x.shape(), xv);
          y = FromDoubles(dtype, y.shape(), yv);
        }
        c.inputs = {x, y};
        c.attrs = {{"out_idx", MakeAttr(idx_type)}};
        c.expected = ListDiffRef(x, y, idx_type);
        cases.push_back(std::move(c));
      }
      if (dtype == DT_FLOAT) {
        OpCase c;
        c.description = "-0 matches 0";
        c.inputs = {FromDoubles(dtype, TensorShape({3}), {-0.0, 1, 2}), FromDoubles(dtype, TensorShape({1}), {0})};
        c.expected = {FromDoubles(dtype, TensorShape({2}), {1, 2}), Tensor::FromVector<int32_t>({1, 2})};
        cases.push_back(std::move(c));
      }
      cases.push_back(ErrorCase("matrix x", {SmallValues(dtype, 4, rng), SmallValues(dtype, 2, rng)}, {}, "vectors"));
      cases.back().inputs[0] = Tensor(dtype, TensorShape({2, 2}));
      return cases;
    }});

}  // namespace
}  // namespace harness
}  // namespace sluice

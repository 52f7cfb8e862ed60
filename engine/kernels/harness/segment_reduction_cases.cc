// Harness entries for SegmentSum, SegmentMean, SegmentMax, SegmentMin,
// UnsortedSegmentMax and UnsortedSegmentMin: empty segments (0 for sorted
// ids; the type's lowest or highest for unsorted Max and Min), dropped
// negative ids, ids over two leading dims, empty data, bad ids, against a
// float64 reference; finite-difference gradients in float64.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "engine/kernels/harness/op_harness.h"

namespace sluice {
namespace harness {
namespace {

enum class Kind { kSum, kMean, kMax, kMin };

// The lowest finite value of `dtype` (its highest is the negation, but for
// the integers).
double Lowest(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT: return std::numeric_limits<float>::lowest();
    case DT_HALF: return -65504.0;
    case DT_BFLOAT16: return -3.3895313892515355e38;
    case DT_INT32: return std::numeric_limits<int32_t>::lowest();
    case DT_INT64: return static_cast<double>(std::numeric_limits<int64_t>::lowest());
    default: return std::numeric_limits<double>::lowest();
  }
}

// `rows` rows of width `width`: rows i of data (flattened to [ids, width])
// reduced into rows ids[i]; negative ids dropped; empty rows `empty`.
std::vector<double> SegmentRef(const std::vector<double>& data, const std::vector<int64_t>& ids, int64_t rows,
                               int64_t width, Kind kind, double empty) {
  std::vector<double> acc(static_cast<size_t>(rows * width), 0.0);
  std::vector<int64_t> count(static_cast<size_t>(rows), 0);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t s = ids[i];
    if (s < 0) continue;
    for (int64_t j = 0; j < width; ++j) {
      double& a = acc[s * width + j];
      const double x = data[i * width + j];
      if (count[s] == 0) a = x;
      else if (kind == Kind::kMax) a = std::max(a, x);
      else if (kind == Kind::kMin) a = std::min(a, x);
      else a += x;
    }
    ++count[s];
  }
  for (int64_t s = 0; s < rows; ++s) {
    for (int64_t j = 0; j < width; ++j) {
      double& a = acc[s * width + j];
      if (count[s] == 0) a = empty;
      else if (kind == Kind::kMean) a /= static_cast<double>(count[s]);
    }
  }
  return acc;
}

// `values` in `dtype`, NaNs (empty unsorted segments) replaced by the type's
// lowest (Max) or highest (Min) value, written in the type itself (int64's
// highest is no double).
Tensor WithExtremes(DataType dtype, const TensorShape& shape, std::vector<double> values, Kind kind) {
  std::vector<size_t> empty;
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) {
      empty.push_back(i);
      values[i] = 0;
    }
  }
  Tensor t = FromDoubles(dtype, shape, values);
  for (size_t i : empty) {
    const bool max = kind == Kind::kMax;
    switch (dtype) {
      case DT_INT64:
        t.data<int64_t>()[i] = max ? std::numeric_limits<int64_t>::lowest() : std::numeric_limits<int64_t>::max();
        break;
      case DT_INT32:
        t.data<int32_t>()[i] = max ? std::numeric_limits<int32_t>::lowest() : std::numeric_limits<int32_t>::max();
        break;
      default: {
        Tensor one = FromDoubles(dtype, TensorShape({1}), {max ? Lowest(dtype) : -Lowest(dtype)});
        const int b = DataTypeSize(dtype);
        std::memcpy(static_cast<char*>(t.raw_data()) + i * b, one.raw_data(), b);
      }
    }
  }
  return t;
}

std::vector<OpCase> SortedCases(DataType dtype, Rng* rng, Kind kind) {
  struct Layout {
    TensorShape data;
    std::vector<int64_t> ids;
  };
  const std::vector<Layout> layouts = {{TensorShape({6, 3}), {0, 0, 1, 3, 3, 3}},  // segment 2 empty
                                       {TensorShape({5}), {0, 1, 1, 2, 4}},
                                       {TensorShape({4, 2, 2}), {1, 1, 2, 2}},     // segment 0 empty
                                       {TensorShape({0, 3}), {}}};
  std::vector<OpCase> cases;
  int k = 0;
  for (const Layout& l : layouts) {
    const DataType id_type = k++ % 2 == 1 ? DT_INT64 : DT_INT32;
    Tensor data = RandomTensor(dtype, l.data, rng, -5, 5);
    const int64_t rows = l.ids.empty() ? 0 : l.ids.back() + 1;
    const int64_t width = l.data.dim_size(0) == 0 ? 0 : l.data.num_elements() / l.data.dim_size(0);
    std::vector<int64_t> out_dims{rows};
    for (int d = 1; d < l.data.dims(); ++d) out_dims.push_back(l.data.dim_size(d));
    OpCase c;
    c.description = l.data.DebugString() + " into " + std::to_string(rows) + " segments";
    c.inputs = {data, IndexTensor(id_type, l.ids, TensorShape({static_cast<int64_t>(l.ids.size())}))};
    c.expected = {FromDoubles(dtype, TensorShape(out_dims), SegmentRef(ToDoubles(data), l.ids, rows, width, kind, 0))};
    if (kind == Kind::kMean && DataTypeIsInteger(dtype)) c.tolerance = 1;  // integer division truncates
    c.check_gradient = dtype == DT_DOUBLE;
    c.grad_inputs = {0};
    cases.push_back(std::move(c));
  }
  Tensor data = RandomTensor(dtype, TensorShape({3, 2}), rng);
  cases.push_back(ErrorCase("unsorted ids", {data, IndexTensor(DT_INT32, {1, 0, 2}, TensorShape({3}))}, {}, "sorted ascending"));
  cases.push_back(ErrorCase("negative id", {data, IndexTensor(DT_INT32, {-1, 0, 0}, TensorShape({3}))}, {}, "negative"));
  cases.push_back(ErrorCase("one id short", {data, IndexTensor(DT_INT32, {0, 1}, TensorShape({2}))}, {}, "one id per row"));
  // The last id + 1 rows: not past int64 (it overflowed).
  cases.push_back(ErrorCase("last id at the end of int64",
                            {RandomTensor(dtype, TensorShape({1}), rng),
                             IndexTensor(DT_INT64, {std::numeric_limits<int64_t>::max()}, TensorShape({1}))},
                            {}, "more output rows"));
  return cases;
}

std::vector<OpCase> UnsortedCases(DataType dtype, Rng* rng, Kind kind) {
  struct Layout {
    TensorShape data, ids_shape;
    std::vector<int64_t> ids;
    int64_t num;
  };
  const std::vector<Layout> layouts = {
      {TensorShape({6, 3}), TensorShape({6}), {2, 0, 2, 1, 1, 2}, 4},     // segment 3 empty
      {TensorShape({6, 3}), TensorShape({6}), {2, 0, 2, -1, 1, -1}, 3},   // negative ids dropped
      {TensorShape({2, 3, 2}), TensorShape({2, 3}), {0, 1, 0, 2, 2, 1}, 3},
      {TensorShape({0, 3}), TensorShape({0}), {}, 2}};
  std::vector<OpCase> cases;
  int k = 0;
  for (const Layout& l : layouts) {
    const DataType id_type = k++ % 2 == 1 ? DT_INT64 : DT_INT32;
    Tensor data = RandomTensor(dtype, l.data, rng, -5, 5);
    const int64_t width = l.ids_shape.num_elements() == 0 ? 0 : l.data.num_elements() / l.ids_shape.num_elements();
    std::vector<int64_t> out_dims{l.num};
    for (int d = l.ids_shape.dims(); d < l.data.dims(); ++d) out_dims.push_back(l.data.dim_size(d));
    int64_t out_width = 1;
    for (size_t d = 1; d < out_dims.size(); ++d) out_width *= out_dims[d];
    const double empty = std::nan("");  // the type's extreme (WithExtremes)
    std::vector<double> want = SegmentRef(ToDoubles(data), l.ids, l.num, out_width, kind, empty);
    if (width == 0) want.assign(static_cast<size_t>(l.num * out_width), empty);
    OpCase c;
    c.description = l.data.DebugString() + " by ids " + l.ids_shape.DebugString() + " into " + std::to_string(l.num);
    c.inputs = {data, IndexTensor(id_type, l.ids, l.ids_shape), Tensor::Scalar<int32_t>(static_cast<int32_t>(l.num))};
    c.expected = {WithExtremes(dtype, TensorShape(out_dims), want, kind)};
    // Not with an empty segment's extreme value in the weighted sum (the
    // rows of negative ids get zeros).
    c.check_gradient = dtype == DT_DOUBLE && l.num == 3;
    c.grad_inputs = {0};
    cases.push_back(std::move(c));
  }
  Tensor data = RandomTensor(dtype, TensorShape({3, 2}), rng);
  cases.push_back(ErrorCase("id past num_segments",
                            {data, IndexTensor(DT_INT32, {0, 3, 1}, TensorShape({3})), Tensor::Scalar<int32_t>(3)}, {},
                            "out of range"));
  cases.push_back(ErrorCase("ids not a prefix",
                            {data, IndexTensor(DT_INT32, {0, 1}, TensorShape({2})), Tensor::Scalar<int32_t>(3)}, {},
                            "must be a prefix"));
  return cases;
}

const std::vector<DataType> kTypes = {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16, DT_INT32, DT_INT64};

REGISTER_OP_HARNESS(OpHarnessEntry{"SegmentSum", kTypes,
                                   [](DataType t, Rng* rng) { return SortedCases(t, rng, Kind::kSum); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"SegmentMean", kTypes,
                                   [](DataType t, Rng* rng) { return SortedCases(t, rng, Kind::kMean); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"SegmentMax", kTypes,
                                   [](DataType t, Rng* rng) { return SortedCases(t, rng, Kind::kMax); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"SegmentMin", kTypes,
                                   [](DataType t, Rng* rng) { return SortedCases(t, rng, Kind::kMin); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"UnsortedSegmentMax", kTypes,
                                   [](DataType t, Rng* rng) { return UnsortedCases(t, rng, Kind::kMax); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"UnsortedSegmentMin", kTypes,
                                   [](DataType t, Rng* rng) { return UnsortedCases(t, rng, Kind::kMin); }});

}  // namespace
}  // namespace harness
}  // namespace sluice

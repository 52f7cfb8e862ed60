// Helpers for harness entries: random tensors, float64 conversions and
// broadcasting references.
#include "engine/kernels/harness/op_harness.h"

#include <cmath>

#include "engine/framework/shape_inference.h"

namespace sluice {
namespace harness {

std::vector<OpHarnessEntry>& Entries() {
  static auto* entries = new std::vector<OpHarnessEntry>;
  return *entries;
}

Tensor RandomTensor(DataType dtype, const TensorShape& shape, Rng* rng, double lo, double hi) {
  std::vector<double> values(shape.num_elements());
  std::uniform_real_distribution<double> real(lo, hi);
  for (double& v : values) {
    if (dtype == DT_BOOL) {
      v = (*rng)() % 2;
    } else if (DataTypeIsInteger(dtype)) {
      double a = std::ceil(lo), b = std::floor(hi);
      if (dtype == DT_UINT8 || dtype == DT_UINT16) a = std::max(a, 0.0);
      v = a + static_cast<double>((*rng)() % static_cast<uint64_t>(b - a + 1));
    } else {
      v = real(*rng);
    }
  }
  return FromDoubles(dtype, shape, values);
}

TensorShape RandomShape(Rng* rng, int rank, int64_t min_dim, int64_t max_dim) {
  TensorShape shape;
  for (int i = 0; i < rank; ++i) shape.AddDim(min_dim + static_cast<int64_t>((*rng)() % (max_dim - min_dim + 1)));
  return shape;
}

namespace {
template <typename T>
void CopyAsDoubles(const Tensor& t, std::vector<double>* out) {
  for (int64_t i = 0; i < t.NumElements(); ++i) (*out)[i] = static_cast<double>(t.data<T>()[i]);
}
}  // namespace

Tensor RandomValues(DataType dtype, const TensorShape& shape, Rng* rng) {
  if (dtype == DT_STRING) {
    Tensor t(DT_STRING, shape);
    for (int64_t i = 0; i < t.NumElements(); ++i) t.data<tstring>()[i] = "s" + std::to_string((*rng)() % 1000);
    return t;
  }
  return RandomTensor(dtype, shape, rng, -5, 5);
}

std::vector<int64_t> UnravelIndex(int64_t flat, const TensorShape& shape) {
  std::vector<int64_t> index(shape.dims());
  for (int d = shape.dims() - 1; d >= 0; --d) {
    index[d] = flat % shape.dim_size(d);
    flat /= shape.dim_size(d);
  }
  return index;
}

int64_t RavelIndex(const std::vector<int64_t>& index, const TensorShape& shape) {
  int64_t flat = 0;
  for (int d = 0; d < shape.dims(); ++d) flat = flat * shape.dim_size(d) + index[d];
  return flat;
}

Tensor IndexTensor(DataType dtype, const std::vector<int64_t>& values, const TensorShape& shape) {
  Tensor t(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DT_INT64) {
      t.data<int64_t>()[i] = values[i];
    } else {
      t.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    }
  }
  return t;
}

std::vector<double> ToDoubles(const Tensor& t) {
  std::vector<double> out(t.NumElements());
  switch (t.dtype()) {
    case DT_FLOAT: CopyAsDoubles<float>(t, &out); break;
    case DT_DOUBLE: CopyAsDoubles<double>(t, &out); break;
    case DT_HALF: CopyAsDoubles<half>(t, &out); break;
    case DT_BFLOAT16: CopyAsDoubles<bfloat16>(t, &out); break;
    case DT_INT8: CopyAsDoubles<int8_t>(t, &out); break;
    case DT_INT16: CopyAsDoubles<int16_t>(t, &out); break;
    case DT_INT32: CopyAsDoubles<int32_t>(t, &out); break;
    case DT_INT64: CopyAsDoubles<int64_t>(t, &out); break;
    case DT_UINT8: CopyAsDoubles<uint8_t>(t, &out); break;
    case DT_UINT16: CopyAsDoubles<uint16_t>(t, &out); break;
    case DT_BOOL: CopyAsDoubles<bool>(t, &out); break;
    case DT_COMPLEX64:
      for (int64_t i = 0; i < t.NumElements(); ++i) out[i] = t.data<complex64>()[i].real();
      break;
    default:
      break;
  }
  return out;
}

Tensor FromDoubles(DataType dtype, const TensorShape& shape, const std::vector<double>& values) {
  Tensor t(dtype, shape);
  const int64_t n = shape.num_elements();
  switch (dtype) {
    case DT_FLOAT: for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(values[i]); break;
    case DT_DOUBLE: for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = values[i]; break;
    case DT_HALF: for (int64_t i = 0; i < n; ++i) t.data<half>()[i] = static_cast<half>(values[i]); break;
    case DT_BFLOAT16: for (int64_t i = 0; i < n; ++i) t.data<bfloat16>()[i] = static_cast<bfloat16>(values[i]); break;
    case DT_INT8: for (int64_t i = 0; i < n; ++i) t.data<int8_t>()[i] = static_cast<int8_t>(std::llround(values[i])); break;
    case DT_INT16: for (int64_t i = 0; i < n; ++i) t.data<int16_t>()[i] = static_cast<int16_t>(std::llround(values[i])); break;
    case DT_INT32: for (int64_t i = 0; i < n; ++i) t.data<int32_t>()[i] = static_cast<int32_t>(std::llround(values[i])); break;
    case DT_INT64: for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = static_cast<int64_t>(std::llround(values[i])); break;
    case DT_UINT8: for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(std::llround(values[i])); break;
    case DT_UINT16: for (int64_t i = 0; i < n; ++i) t.data<uint16_t>()[i] = static_cast<uint16_t>(std::llround(values[i])); break;
    case DT_BOOL: for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = values[i] != 0; break;
    case DT_COMPLEX64:
      for (int64_t i = 0; i < n; ++i) t.data<complex64>()[i] = complex64(static_cast<float>(values[i]), 0.0f);
      break;
    default:
      break;
  }
  return t;
}

Tensor BroadcastBinaryReference(DataType out_dtype, const Tensor& x, const Tensor& y,
                                const std::function<double(double, double)>& fn) {
  auto shape = shape_fns::Broadcast(PartialShape::FromShape(x.shape()), PartialShape::FromShape(y.shape()));
  CHECK(shape.ok()) << "reference called on non-broadcastable shapes";
  TensorShape out_shape(shape->dims());
  std::vector<double> a = ToDoubles(x), b = ToDoubles(y);
  std::vector<double> out(out_shape.num_elements());
  const int rank = out_shape.dims();
  std::vector<int64_t> index(rank, 0);
  auto offset = [&](const TensorShape& s) {
    int64_t off = 0;
    for (int d = 0; d < s.dims(); ++d) {
      int od = rank - s.dims() + d;
      off = off * s.dim_size(d) + (s.dim_size(d) == 1 ? 0 : index[od]);
    }
    return off;
  };
  for (int64_t i = 0; i < out_shape.num_elements(); ++i) {
    out[i] = fn(a[offset(x.shape())], b[offset(y.shape())]);
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[d] < out_shape.dim_size(d)) break;
      index[d] = 0;
    }
  }
  return FromDoubles(out_dtype, out_shape, out);
}

Tensor UnaryReference(DataType out_dtype, const Tensor& x, const std::function<double(double)>& fn) {
  std::vector<double> a = ToDoubles(x);
  for (double& v : a) v = fn(v);
  return FromDoubles(out_dtype, x.shape(), a);
}

std::vector<std::pair<TensorShape, TensorShape>> BroadcastShapePairs(Rng* rng) {
  TensorShape r = RandomShape(rng, 2, 1, 5);
  return {
      {r, r},
      {TensorShape({2, 3}), TensorShape({2, 3})},
      {TensorShape({2, 1}), TensorShape({3})},
      {TensorShape({}), TensorShape({4})},
      {TensorShape({4, 1, 3}), TensorShape({2, 1})},
      {TensorShape({5}), TensorShape({})},
      {TensorShape({0, 3}), TensorShape({3})},
      {TensorShape({1, 0}), TensorShape({2, 1})},
  };
}

OpCase ErrorCase(std::string description, std::vector<Tensor> inputs, AttrList attrs, std::string substring,
                 absl::StatusCode code) {
  OpCase c;
  c.description = std::move(description);
  c.inputs = std::move(inputs);
  c.attrs = std::move(attrs);
  c.expected_error = code;
  c.error_substring = std::move(substring);
  return c;
}

const std::vector<DataType>& FloatTypes() {
  static const auto* types = new std::vector<DataType>{DT_HALF, DT_BFLOAT16, DT_FLOAT, DT_DOUBLE};
  return *types;
}

const std::vector<DataType>& RealNumberTypes() {
  static const auto* types = new std::vector<DataType>{DT_HALF,  DT_BFLOAT16, DT_FLOAT, DT_DOUBLE, DT_INT8,
                                                       DT_INT16, DT_INT32,    DT_INT64, DT_UINT8,  DT_UINT16};
  return *types;
}

}  // namespace harness
}  // namespace sluice

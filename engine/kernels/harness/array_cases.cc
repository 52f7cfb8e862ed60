// Harness entries for the array ops (engine/ops/array_ops*.cc), BroadcastTo,
// InvertPermutation, ConcatOffset, Unique, SparseToDense, ReverseV2 and
// MatrixBandPart included: values
// against index-mapping references (so every dtype, strings included, is
// checked the same way), bad-input errors, and finite-difference gradient
// checks in float64.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>

#include "engine/kernels/harness/op_harness.h"

namespace sluice {
namespace harness {
namespace {

using Index = std::vector<int64_t>;

const std::vector<DataType>& AllTypes() { return AllSupportedTypes(); }

const std::vector<DataType>& NumericTypes() {
  static const auto* types =
      new std::vector<DataType>{DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16, DT_INT32, DT_INT64, DT_COMPLEX64};
  return *types;
}

TensorShape S(std::initializer_list<int64_t> dims) { return TensorShape(dims); }


Tensor Ints(DataType dtype, const Index& values, std::optional<TensorShape> shape = std::nullopt) {
  TensorShape s = shape ? *shape : TensorShape({static_cast<int64_t>(values.size())});
  Tensor t(dtype, s);
  for (size_t i = 0; i < values.size(); ++i) {
    switch (dtype) {
      case DT_INT64: t.data<int64_t>()[i] = values[i]; break;
      case DT_UINT8: t.data<uint8_t>()[i] = static_cast<uint8_t>(values[i]); break;
      default: t.data<int32_t>()[i] = static_cast<int32_t>(values[i]); break;
    }
  }
  return t;
}
Tensor I32(const Index& v) { return Ints(DT_INT32, v); }
Tensor I64(const Index& v) { return Ints(DT_INT64, v); }
Tensor I32Scalar(int64_t v) { return Ints(DT_INT32, {v}, TensorShape()); }

Tensor Zeros(DataType dtype, const TensorShape& shape) {
  Tensor t(dtype, shape);
  if (dtype != DT_STRING && t.NumElements() > 0) std::memset(t.raw_data(), 0, t.TotalBytes());
  return t;
}

void CopyOne(const Tensor& src, int64_t si, const Tensor& dst, int64_t di) {
  if (src.dtype() == DT_STRING) {
    dst.data<tstring>()[di] = src.data<tstring>()[si];
    return;
  }
  const int b = DataTypeSize(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw_data()) + di * b, static_cast<const char*>(src.raw_data()) + si * b, b);
}


// out[i] = in[src_of(index of i)], or zero when src_of returns -1.
Tensor Remap(const Tensor& in, const TensorShape& out_shape, const std::function<int64_t(const Index&)>& src_of) {
  Tensor out = Zeros(in.dtype(), out_shape);
  for (int64_t i = 0; i < out_shape.num_elements(); ++i) {
    const int64_t s = src_of(UnravelIndex(i, out_shape));
    if (s >= 0) CopyOne(in, s, out, i);
  }
  return out;
}

// Concatenation of `inputs` along `axis` (reference).
Tensor ConcatRef(const std::vector<Tensor>& inputs, int axis) {
  std::vector<int64_t> dims(inputs[0].shape().dim_sizes().begin(), inputs[0].shape().dim_sizes().end());
  dims[axis] = 0;
  for (const Tensor& t : inputs) dims[axis] += t.dim_size(axis);
  TensorShape out_shape(dims);
  Tensor out = Zeros(inputs[0].dtype(), out_shape);
  for (int64_t i = 0; i < out_shape.num_elements(); ++i) {
    Index idx = UnravelIndex(i, out_shape);
    size_t k = 0;
    while (idx[axis] >= inputs[k].dim_size(axis)) idx[axis] -= inputs[k++].dim_size(axis);
    CopyOne(inputs[k], RavelIndex(idx, inputs[k].shape()), out, i);
  }
  return out;
}

// in[begin_d + i_d * stride_d] over an index space of `sizes`, reshaped to `out_shape`.
Tensor StridedRef(const Tensor& in, const Index& begin, const Index& stride, const Index& sizes,
                  const TensorShape& out_shape) {
  TensorShape space(sizes);
  Tensor out = Remap(in, space, [&](const Index& idx) {
    Index src(idx.size());
    for (size_t d = 0; d < idx.size(); ++d) src[d] = begin[d] + idx[d] * stride[d];
    return RavelIndex(src, in.shape());
  });
  return *out.Reshaped(out_shape);
}

OpCase Case(std::string description, std::vector<Tensor> inputs, AttrList attrs, std::vector<Tensor> expected,
            bool gradient) {
  OpCase c;
  c.description = std::move(description);
  c.inputs = std::move(inputs);
  c.attrs = std::move(attrs);
  c.expected = std::move(expected);
  for (const Tensor& t : c.inputs) c.check_gradient |= gradient && t.dtype() == DT_DOUBLE;
  return c;
}

// ---------------------------------------------------------------- shape ops

REGISTER_OP_HARNESS(OpHarnessEntry{"Fill", AllTypes(), [](DataType dt, Rng* rng) {
  Tensor v = RandomValues(dt, TensorShape(), rng);
  auto fill = [&](const TensorShape& s) { return Remap(v, s, [](const Index&) { return 0; }); };
  return std::vector<OpCase>{
      Case("[2,3]", {I32({2, 3}), v}, {}, {fill(S({2, 3}))}, false),
      Case("int64 [0,4]", {I64({0, 4}), v}, {}, {fill(S({0, 4}))}, false),
      Case("scalar", {I32({}), v}, {}, {fill(TensorShape())}, false),
      ErrorCase("negative dim", {I32({2, -3}), v}, {}, "is negative"),
      ErrorCase("overflow", {I64({int64_t{1} << 40, int64_t{1} << 40}), v}, {}, "overflows"),
      ErrorCase("non-scalar value", {I32({2}), RandomValues(dt, S({2}), rng)}, {}, "must be a scalar"),
  };
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"ZerosLike", AllTypes(), [](DataType dt, Rng* rng) {
  std::vector<OpCase> cases;
  for (TensorShape s : {S({2, 3}), S({}), S({0, 2})}) {
    cases.push_back(Case(s.DebugString(), {RandomValues(dt, s, rng)}, {}, {Zeros(dt, s)}, false));
  }
  return cases;
}});

REGISTER_OP_HARNESS(OpHarnessEntry{
    "OnesLike",
    {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16, DT_INT8, DT_INT16, DT_INT32, DT_INT64, DT_UINT8, DT_UINT16, DT_BOOL,
     DT_COMPLEX64},
    [](DataType dt, Rng* rng) {
      std::vector<OpCase> cases;
      for (TensorShape s : {S({2, 3}), S({}), S({0, 2})}) {
        cases.push_back(Case(s.DebugString(), {RandomValues(dt, s, rng)}, {},
                             {FromDoubles(dt, s, std::vector<double>(s.num_elements(), 1.0))}, false));
      }
      return cases;
    }});

REGISTER_OP_HARNESS(OpHarnessEntry{"Shape", AllTypes(), [](DataType dt, Rng* rng) {
  std::vector<OpCase> cases;
  for (TensorShape s : {S({2, 3}), S({}), S({0, 2, 1}), RandomShape(rng, 4, 0, 3)}) {
    Index dims(s.dim_sizes().begin(), s.dim_sizes().end());
    cases.push_back(Case(s.DebugString(), {RandomValues(dt, s, rng)}, {}, {I32(dims)}, false));
    cases.push_back(Case(s.DebugString() + " int64", {RandomValues(dt, s, rng)}, {{"out_type", MakeAttr(DT_INT64)}},
                         {I64(dims)}, false));
  }
  return cases;
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"ShapeN", AllTypes(), [](DataType dt, Rng* rng) {
  std::vector<OpCase> cases;
  const std::vector<std::vector<TensorShape>> lists = {
      {S({2, 3})}, {S({2, 3}), S({}), S({0, 2, 1})}, {RandomShape(rng, 4, 0, 3), RandomShape(rng, 2, 0, 3)}};
  for (const auto& shapes : lists) {
    std::vector<Tensor> inputs, want32, want64;
    std::string description;
    for (const TensorShape& s : shapes) {
      Index dims(s.dim_sizes().begin(), s.dim_sizes().end());
      inputs.push_back(RandomValues(dt, s, rng));
      want32.push_back(I32(dims));
      want64.push_back(I64(dims));
      description += s.DebugString();
    }
    cases.push_back(Case(description, inputs, {}, want32, false));
    cases.push_back(Case(description + " int64", inputs, {{"out_type", MakeAttr(DT_INT64)}}, want64, false));
  }
  return cases;
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"Rank", AllTypes(), [](DataType dt, Rng* rng) {
  std::vector<OpCase> cases;
  for (TensorShape s : {S({2, 3}), S({}), S({0, 2, 1})}) {
    cases.push_back(Case(s.DebugString(), {RandomValues(dt, s, rng)}, {}, {I32Scalar(s.dims())}, false));
  }
  return cases;
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"Size", AllTypes(), [](DataType dt, Rng* rng) {
  std::vector<OpCase> cases;
  for (TensorShape s : {S({2, 3}), S({}), S({0, 2, 1})}) {
    cases.push_back(Case(s.DebugString(), {RandomValues(dt, s, rng)}, {}, {I32Scalar(s.num_elements())}, false));
    cases.push_back(Case(s.DebugString() + " int64", {RandomValues(dt, s, rng)}, {{"out_type", MakeAttr(DT_INT64)}},
                         {Ints(DT_INT64, {s.num_elements()}, TensorShape())}, false));
  }
  return cases;
}});

// Same elements, new shape.
Tensor Reshaped(const Tensor& t, const TensorShape& s) { return *t.Clone().Reshaped(s); }

REGISTER_OP_HARNESS(OpHarnessEntry{"Reshape", AllTypes(), [](DataType dt, Rng* rng) {
  Tensor x = RandomValues(dt, S({2, 3, 4}), rng);
  Tensor e = RandomValues(dt, S({0, 3}), rng);
  Tensor s = RandomValues(dt, S({}), rng);
  return std::vector<OpCase>{
      Case("[2,3,4] -> [4,-1]", {x, I32({4, -1})}, {}, {Reshaped(x, S({4, 6}))}, true),
      Case("[2,3,4] -> [24] int64", {x, I64({24})}, {}, {Reshaped(x, S({24}))}, true),
      Case("[0,3] -> [3,0]", {e, I32({3, 0})}, {}, {Reshaped(e, S({3, 0}))}, false),
      Case("scalar -> [1,1]", {s, I32({1, 1})}, {}, {Reshaped(s, S({1, 1}))}, true),
      Case("[2,3,4] -> [-1,2,1,3]", {x, I32({-1, 2, 1, 3})}, {}, {Reshaped(x, S({4, 2, 1, 3}))}, true),
      ErrorCase("wrong count", {x, I32({5, 5})}, {}, "requested shape has 25"),
      ErrorCase("two -1", {x, I32({-1, -1})}, {}, "only one input size may be -1"),
      ErrorCase("negative", {x, I32({-2, 12})}, {}, "is negative"),
      ErrorCase("overflow", {x, I64({int64_t{1} << 31, int64_t{1} << 31, int64_t{1} << 31})}, {}, "overflows"),
      ErrorCase("-1 with zero", {e, I32({-1, 0})}, {}, "cannot infer the missing input size"),
  };
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"Squeeze", AllTypes(), [](DataType dt, Rng* rng) {
  Tensor x = RandomValues(dt, S({1, 3, 1, 2}), rng);
  Tensor x0 = RandomValues(dt, S({}), rng);
  auto dims = [](Index v) { return AttrList{{"squeeze_dims", MakeAttr(v)}}; };
  return std::vector<OpCase>{
      Case("all", {x}, {}, {Reshaped(x, S({3, 2}))}, true),
      Case("[0]", {x}, dims({0}), {Reshaped(x, S({3, 1, 2}))}, true),
      Case("[-2]", {x}, dims({-2}), {Reshaped(x, S({1, 3, 2}))}, true),
      Case("scalar", {x0}, {}, {x0}, false),
      ErrorCase("not 1", {x}, dims({1}), "can not squeeze dim[1]"),
      ErrorCase("out of range", {x}, dims({4}), "squeeze dimension 4 is out of range"),
  };
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"ExpandDims", AllTypes(), [](DataType dt, Rng* rng) {
  Tensor x = RandomValues(dt, S({2, 3}), rng);
  Tensor x0 = RandomValues(dt, S({}), rng);
  return std::vector<OpCase>{
      Case("0", {x, I32Scalar(0)}, {}, {Reshaped(x, S({1, 2, 3}))}, true),
      Case("-1", {x, I32Scalar(-1)}, {}, {Reshaped(x, S({2, 3, 1}))}, true),
      Case("1 int64", {x, Ints(DT_INT64, {1}, TensorShape())}, {}, {Reshaped(x, S({2, 1, 3}))}, true),
      Case("scalar", {x0, I32Scalar(0)}, {}, {Reshaped(x0, S({1}))}, false),
      ErrorCase("out of range", {x, I32Scalar(3)}, {}, "dim 3 is out of range"),
      // Issue 22: a rank-254 input has no room for another dim.
      ErrorCase("rank 255", {RandomValues(dt, TensorShape(Index(kMaxTensorRank, 1)), rng), I32Scalar(0)}, {}, "254"),
  };
}});

Tensor TransposeRef(const Tensor& x, const Index& perm) {
  std::vector<int64_t> dims;
  for (int64_t p : perm) dims.push_back(x.dim_size(static_cast<int>(p)));
  return Remap(x, TensorShape(dims), [&](const Index& out) {
    Index in(out.size());
    for (size_t i = 0; i < perm.size(); ++i) in[perm[i]] = out[i];
    return RavelIndex(in, x.shape());
  });
}

REGISTER_OP_HARNESS(OpHarnessEntry{"Transpose", AllTypes(), [](DataType dt, Rng* rng) {
  std::vector<OpCase> cases;
  const std::vector<std::pair<TensorShape, Index>> specs = {
      {S({2, 3}), {1, 0}}, {S({2, 3, 4}), {2, 0, 1}}, {S({2, 1, 3, 2}), {3, 1, 0, 2}}, {S({0, 3}), {1, 0}},
      {S({}), {}},         {S({3, 4}), {0, 1}},       {RandomShape(rng, 3, 1, 4), {1, 2, 0}},
      // No two neighbours stay neighbours: the GPU's gather, not its tiled
      // 2-D transpose (transpose_ops_gpu.cc); and NHWC <-> NCHW.
      {S({2, 3, 4}), {2, 1, 0}}, {S({2, 3, 4, 5}), {1, 3, 0, 2}}, {S({2, 3, 4, 5}), {0, 3, 1, 2}},
      {S({2, 5, 3, 4}), {0, 2, 3, 1}}};
  for (const auto& [shape, perm] : specs) {
    Tensor x = RandomValues(dt, shape, rng);
    cases.push_back(Case(shape.DebugString(), {x, I32(perm)}, {}, {TransposeRef(x, perm)}, shape.num_elements() > 0));
  }
  Tensor x = RandomValues(dt, S({2, 3, 4}), rng);
  cases.push_back(Case("int64 perm", {x, I64({1, 2, 0})}, {}, {TransposeRef(x, {1, 2, 0})}, true));
  cases.push_back(ErrorCase("duplicate", {x, I32({0, 0, 1})}, {}, "duplicated"));
  cases.push_back(ErrorCase("size", {x, I32({0, 1})}, {}, "transpose expects a vector of size 3"));
  cases.push_back(ErrorCase("range", {x, I32({0, 1, 3})}, {}, "3 is out of range [0 .. 3)"));
  // Issue 22, class 1: an empty tensor with a 2^62 dim transposes (its
  // row-major strides stay within int64).
  Tensor e = RandomValues(dt, S({0, int64_t{1} << 62}), rng);
  cases.push_back(Case("[0,2^62]", {e, I32({1, 0})}, {}, {Zeros(dt, S({int64_t{1} << 62, 0}))}, false));
  return cases;
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"StopGradient", AllTypes(), [](DataType dt, Rng* rng) {
  Tensor x = RandomValues(dt, S({2, 3}), rng);
  return std::vector<OpCase>{Case("[2,3]", {x}, {}, {x}, false)};
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"Range", {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}, [](DataType dt, Rng*) {
  auto sc = [&](double v) { return FromDoubles(dt, TensorShape(), {v}); };
  auto vec = [&](std::vector<double> v) { return FromDoubles(dt, TensorShape({static_cast<int64_t>(v.size())}), v); };
  std::vector<OpCase> cases = {
      Case("0..5", {sc(0), sc(5), sc(1)}, {}, {vec({0, 1, 2, 3, 4})}, false),
      Case("5..0 by -2", {sc(5), sc(0), sc(-2)}, {}, {vec({5, 3, 1})}, false),
      Case("empty", {sc(3), sc(3), sc(1)}, {}, {vec({})}, false),
      Case("-3..4 by 3", {sc(-3), sc(4), sc(3)}, {}, {vec({-3, 0, 3})}, false),
      ErrorCase("delta 0", {sc(0), sc(5), sc(0)}, {}, "delta != 0"),
      ErrorCase("wrong direction", {sc(5), sc(0), sc(1)}, {}, "requires start <= limit"),
  };
  if (dt == DT_FLOAT || dt == DT_DOUBLE) {
    cases.push_back(Case("fractional", {sc(1.5), sc(3), sc(0.5)}, {}, {vec({1.5, 2, 2.5})}, false));
  }
  // At the ends of the integer types: the count is exact (in double, the
  // int64 span below is 1024, not 1000) and no element overflows on the way.
  if (dt == DT_INT64) {
    const int64_t top = std::numeric_limits<int64_t>::max(), bottom = std::numeric_limits<int64_t>::min();
    std::vector<int64_t> up(1000);
    for (int64_t i = 0; i < 1000; ++i) up[i] = top - 1000 + i;
    const std::vector<int64_t> down = {bottom + 10, bottom + 6, bottom + 2};
    cases.push_back(Case("the last 1000 int64s", {Tensor::Scalar<int64_t>(top - 1000), Tensor::Scalar<int64_t>(top),
                                                  Tensor::Scalar<int64_t>(1)},
                         {}, {Tensor::FromVector<int64_t>(up)}, false));
    cases.push_back(Case("down to the smallest int64", {Tensor::Scalar<int64_t>(bottom + 10),
                                                        Tensor::Scalar<int64_t>(bottom), Tensor::Scalar<int64_t>(-4)},
                         {}, {Tensor::FromVector<int64_t>(down)}, false));
  }
  if (dt == DT_INT32) {
    const int32_t top = std::numeric_limits<int32_t>::max();
    cases.push_back(Case("the last int32s by 4", {Tensor::Scalar<int32_t>(top - 5), Tensor::Scalar<int32_t>(top),
                                                  Tensor::Scalar<int32_t>(4)},
                         {}, {Tensor::FromVector<int32_t>({top - 5, top - 1})}, false));
  }
  return cases;
}});

REGISTER_OP_HARNESS(OpHarnessEntry{
    "OneHot", {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL, DT_HALF, DT_UINT8, DT_STRING},
    [](DataType dt, Rng* rng) {
      Tensor on_off = RandomValues(dt, S({2}), rng);  // [off, on]
      if (dt == DT_BOOL) on_off = FromDoubles(DT_BOOL, S({2}), {0, 1});
      Tensor off = Remap(on_off, TensorShape(), [](const Index&) { return 0; });
      Tensor on = Remap(on_off, TensorShape(), [](const Index&) { return 1; });
      auto ref = [&](const Tensor& indices, int64_t depth, int axis) {
        const int a = axis < 0 ? indices.dims() : axis;
        std::vector<int64_t> dims(indices.shape().dim_sizes().begin(), indices.shape().dim_sizes().end());
        dims.insert(dims.begin() + a, depth);
        std::vector<double> iv = ToDoubles(indices);
        return Remap(on_off, TensorShape(dims), [&](const Index& out) {
          Index in = out;
          in.erase(in.begin() + a);
          return iv[RavelIndex(in, indices.shape())] == out[a] ? 1 : 0;
        });
      };
      Tensor i1 = Ints(DT_INT64, {0, 3, 1});
      Tensor i2 = Ints(DT_INT32, {2, 0, 1, 1, 0, 2}, S({2, 3}));
      Tensor i3 = Ints(DT_UINT8, {1, 0}, S({2}));
      Tensor empty = Ints(DT_INT64, {}, S({0}));
      auto axis = [](int64_t a) { return AttrList{{"axis", MakeAttr(a)}}; };
      return std::vector<OpCase>{
          Case("[3] depth 4", {i1, I32Scalar(4), on, off}, {}, {ref(i1, 4, -1)}, false),
          Case("[2,3] axis 0", {i2, I32Scalar(3), on, off}, axis(0), {ref(i2, 3, 0)}, false),
          Case("[2,3] axis 1", {i2, I32Scalar(3), on, off}, axis(1), {ref(i2, 3, 1)}, false),
          Case("uint8", {i3, I32Scalar(2), on, off}, {}, {ref(i3, 2, -1)}, false),
          Case("empty", {empty, I32Scalar(3), on, off}, {}, {ref(empty, 3, -1)}, false),
          ErrorCase("index >= depth", {i1, I32Scalar(3), on, off}, {}, "indices[1] = 3 is not in [0, 3)"),
          ErrorCase("negative depth", {i1, I32Scalar(-1), on, off}, {}, "depth must be non-negative"),
          ErrorCase("bad axis", {i1, I32Scalar(4), on, off}, axis(3), "expected axis to be -1 or between [0, 1]"),
      };
    }});

// --------------------------------------------------------- concat and split

std::vector<OpCase> ConcatCases(DataType dt, Rng* rng, bool v2) {
  auto make = [&](const std::vector<Tensor>& xs, Tensor axis) {
    std::vector<Tensor> in;
    if (!v2) in.push_back(axis);
    in.insert(in.end(), xs.begin(), xs.end());
    if (v2) in.push_back(axis);
    return in;
  };
  std::vector<OpCase> cases;
  {
    std::vector<Tensor> xs = {RandomValues(dt, S({2, 3}), rng), RandomValues(dt, S({2, 1}), rng), RandomValues(dt, S({2, 0}), rng)};
    cases.push_back(Case("axis 1", make(xs, I32Scalar(1)), {}, {ConcatRef(xs, 1)}, false));
    std::vector<Tensor> ys = {xs[0], xs[1]};
    cases.push_back(Case("axis -1", make(ys, I32Scalar(-1)), {}, {ConcatRef(ys, 1)}, false));
  }
  {
    std::vector<Tensor> xs = {RandomValues(dt, S({1, 3}), rng), RandomValues(dt, S({2, 3}), rng)};
    cases.push_back(Case("axis 0", make(xs, I32Scalar(0)), {}, {ConcatRef(xs, 0)}, false));
  }
  {
    std::vector<Tensor> xs = {RandomValues(dt, S({2, 1, 3}), rng), RandomValues(dt, S({2, 2, 3}), rng), RandomValues(dt, S({2, 3, 3}), rng)};
    Tensor axis = v2 ? Ints(DT_INT64, {1}, TensorShape()) : I32Scalar(1);
    cases.push_back(Case("rank 3 axis 1", make(xs, axis), {}, {ConcatRef(xs, 1)}, false));
  }
  if (dt == DT_DOUBLE) {
    for (OpCase& c : cases) c.check_gradient = c.description != "axis 1";  // axis 1 has an empty input
    std::vector<Tensor> xs = {RandomValues(dt, S({2, 3}), rng), RandomValues(dt, S({2, 1}), rng), RandomValues(dt, S({2, 0}), rng)};
    OpCase c = Case("axis 1 with empty, gradient", make(xs, I32Scalar(1)), {}, {ConcatRef(xs, 1)}, true);
    cases.push_back(c);
  }
  Tensor a = RandomValues(dt, S({2, 3}), rng);
  cases.push_back(ErrorCase("mismatched dims", make({a, RandomValues(dt, S({3, 3}), rng)}, I32Scalar(1)), {},
                            "dimensions of inputs should match"));
  cases.push_back(ErrorCase("mismatched ranks", make({a, RandomValues(dt, S({2, 3, 1}), rng)}, I32Scalar(0)), {},
                            "ranks of all input tensors should match"));
  cases.push_back(ErrorCase("axis out of range", make({a, a}, I32Scalar(2)), {}, "concat axis 2 is out of range"));
  cases.push_back(ErrorCase("scalars", make({RandomValues(dt, S({}), rng), RandomValues(dt, S({}), rng)}, I32Scalar(0)), {},
                            "can't concatenate scalars"));
  // Issue 22, class 1: empty inputs whose concatenated dim (2 * 2^62) would
  // overflow int64.
  Tensor huge = RandomValues(dt, S({0, int64_t{1} << 62}), rng);
  cases.push_back(ErrorCase("empty, summed dim overflows", make({huge, huge}, I32Scalar(1)), {}, "exceeds 2^62"));
  return cases;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"Concat", AllTypes(), [](DataType dt, Rng* rng) { return ConcatCases(dt, rng, false); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"ConcatV2", AllTypes(), [](DataType dt, Rng* rng) { return ConcatCases(dt, rng, true); }});

// Pieces of `x` along `axis` with `sizes`.
std::vector<Tensor> SplitRef(const Tensor& x, int axis, const Index& sizes) {
  std::vector<Tensor> out;
  int64_t offset = 0;
  for (int64_t size : sizes) {
    std::vector<int64_t> dims(x.shape().dim_sizes().begin(), x.shape().dim_sizes().end());
    dims[axis] = size;
    out.push_back(Remap(x, TensorShape(dims), [&](const Index& idx) {
      Index in = idx;
      in[axis] += offset;
      return RavelIndex(in, x.shape());
    }));
    offset += size;
  }
  return out;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"Split", AllTypes(), [](DataType dt, Rng* rng) {
  Tensor x = RandomValues(dt, S({4, 6}), rng);
  Tensor e = RandomValues(dt, S({0, 4}), rng);
  auto n = [](int64_t v) { return AttrList{{"num_split", MakeAttr(v)}}; };
  return std::vector<OpCase>{
      Case("axis 1 in 3", {I32Scalar(1), x}, n(3), SplitRef(x, 1, {2, 2, 2}), true),
      Case("axis 0 in 2", {I32Scalar(0), x}, n(2), SplitRef(x, 0, {2, 2}), true),
      Case("axis -1 in 1", {I32Scalar(-1), x}, n(1), SplitRef(x, 1, {6}), true),
      Case("empty", {I32Scalar(1), e}, n(2), SplitRef(e, 1, {2, 2}), false),
      ErrorCase("uneven", {I32Scalar(1), x}, n(4), "evenly divide"),
      ErrorCase("axis", {I32Scalar(2), x}, n(2), "split_dim 2 is out of range"),
  };
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"SplitV", AllTypes(), [](DataType dt, Rng* rng) {
  Tensor x = RandomValues(dt, S({4, 6}), rng);
  auto n = [](int64_t v) { return AttrList{{"num_split", MakeAttr(v)}}; };
  return std::vector<OpCase>{
      Case("axis 1 [1,-1,2]", {x, I64({1, -1, 2}), I32Scalar(1)}, n(3), SplitRef(x, 1, {1, 3, 2}), true),
      Case("axis 0 [0,4] int32", {x, I32({0, 4}), I32Scalar(0)}, n(2), SplitRef(x, 0, {0, 4}), true),
      Case("axis -2 [3,1]", {x, I64({3, 1}), I32Scalar(-2)}, n(2), SplitRef(x, 0, {3, 1}), true),
      ErrorCase("bad sum", {x, I64({1, 2}), I32Scalar(1)}, n(2), "determined shape must"),
      ErrorCase("two -1", {x, I64({-1, -1}), I32Scalar(1)}, n(2), "only be one -1"),
      ErrorCase("negative", {x, I64({-2, 8}), I32Scalar(1)}, n(2), "out of range"),
  };
}});

Tensor PackRef(const std::vector<Tensor>& xs, int axis) {
  std::vector<Tensor> expanded;
  for (const Tensor& x : xs) {
    std::vector<int64_t> dims(x.shape().dim_sizes().begin(), x.shape().dim_sizes().end());
    dims.insert(dims.begin() + axis, 1);
    expanded.push_back(Reshaped(x, TensorShape(dims)));
  }
  return ConcatRef(expanded, axis);
}

REGISTER_OP_HARNESS(OpHarnessEntry{"Pack", AllTypes(), [](DataType dt, Rng* rng) {
  std::vector<Tensor> xs = {RandomValues(dt, S({2, 3}), rng), RandomValues(dt, S({2, 3}), rng), RandomValues(dt, S({2, 3}), rng)};
  std::vector<Tensor> ss = {RandomValues(dt, S({}), rng), RandomValues(dt, S({}), rng)};
  std::vector<Tensor> es = {RandomValues(dt, S({0, 2}), rng), RandomValues(dt, S({0, 2}), rng)};
  auto axis = [](int64_t a) { return AttrList{{"axis", MakeAttr(a)}}; };
  return std::vector<OpCase>{
      Case("axis 0", xs, {}, {PackRef(xs, 0)}, true),
      Case("axis 1", xs, axis(1), {PackRef(xs, 1)}, true),
      Case("axis -1", xs, axis(-1), {PackRef(xs, 2)}, true),
      Case("scalars", ss, {}, {PackRef(ss, 0)}, true),
      Case("one input", {xs[0]}, axis(1), {PackRef({xs[0]}, 1)}, true),
      Case("empty", es, axis(1), {PackRef(es, 1)}, false),
      ErrorCase("mismatched", {xs[0], RandomValues(dt, S({3, 2}), rng)}, {}, "shapes of all inputs must match"),
      ErrorCase("axis", xs, axis(3), "axis 3 is out of range"),
      // Issue 22: packing rank-254 tensors would make a rank-255 one.
      ErrorCase("rank 255", {RandomValues(dt, TensorShape(Index(kMaxTensorRank, 1)), rng)}, {}, "254"),
  };
}});

std::vector<Tensor> UnpackRef(const Tensor& x, int axis) {
  std::vector<Tensor> out;
  std::vector<int64_t> dims(x.shape().dim_sizes().begin(), x.shape().dim_sizes().end());
  dims.erase(dims.begin() + axis);
  for (const Tensor& piece : SplitRef(x, axis, Index(x.dim_size(axis), 1))) out.push_back(Reshaped(piece, TensorShape(dims)));
  return out;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"Unpack", AllTypes(), [](DataType dt, Rng* rng) {
  Tensor x = RandomValues(dt, S({3, 2, 4}), rng);
  auto a = [](int64_t num, int64_t axis) { return AttrList{{"num", MakeAttr(num)}, {"axis", MakeAttr(axis)}}; };
  return std::vector<OpCase>{
      Case("axis 0", {x}, a(3, 0), UnpackRef(x, 0), true),
      Case("axis 1", {x}, a(2, 1), UnpackRef(x, 1), true),
      Case("axis -1", {x}, a(4, -1), UnpackRef(x, 2), true),
      Case("empty", {RandomValues(dt, S({2, 0}), rng)}, a(2, 0), UnpackRef(RandomValues(dt, S({2, 0}), rng), 0), false),
      ErrorCase("num", {x}, a(2, 0), "but num is 2"),
      ErrorCase("axis", {x}, a(3, 3), "axis 3 is out of range"),
  };
}});

// ------------------------------------------------------------------ slicing

REGISTER_OP_HARNESS(OpHarnessEntry{"Slice", AllTypes(), [](DataType dt, Rng* rng) {
  Tensor x = RandomValues(dt, S({4, 5, 6}), rng);
  Tensor x0 = RandomValues(dt, S({}), rng);
  return std::vector<OpCase>{
      Case("[1:3, :, 2:5]", {x, I32({1, 0, 2}), I32({2, -1, 3})}, {},
           {StridedRef(x, {1, 0, 2}, {1, 1, 1}, {2, 5, 3}, S({2, 5, 3}))}, true),
      Case("int64 all", {x, I64({0, 0, 0}), I64({-1, -1, -1})}, {}, {x}, true),
      Case("empty", {x, I32({4, 1, 0}), I32({0, 2, 6})}, {}, {Zeros(dt, S({0, 2, 6}))}, false),
      Case("scalar", {x0, I32({}), I32({})}, {}, {x0}, false),
      ErrorCase("past end", {x, I32({3, 0, 0}), I32({2, 1, 1})}, {}, "expected begin[0] in [0, 4]"),
      ErrorCase("negative begin", {x, I32({0, -1, 0}), I32({1, 1, 1})}, {}, "expected begin[1]"),
      ErrorCase("rank", {x, I32({0, 0}), I32({1, 1})}, {}, "expected begin and size"),
      // Issue 22, class 12: size -1 means dim - begin; with begin INT64_MIN
      // that difference overflows, so begin is checked first.
      ErrorCase("begin INT64_MIN, size -1", {x, I64({std::numeric_limits<int64_t>::min(), 0, 0}), I64({-1, 1, 1})}, {},
                "expected begin[0] in [0, 4]"),
  };
}});

struct SliceSpec {
  std::string name;
  TensorShape input;
  Index begin, end, strides;
  int64_t begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask;
  // The expected result as a strided walk over the input.
  Index ref_begin, ref_stride, ref_sizes;
  TensorShape out;
};

const std::vector<SliceSpec>& SliceSpecs() {
  static const auto* specs = new std::vector<SliceSpec>{
      {"x[1:4, 0:6:2]", S({5, 6}), {1, 0}, {4, 6}, {1, 2}, 0, 0, 0, 0, 0, {1, 0}, {1, 2}, {3, 3}, S({3, 3})},
      {"x[::-1, :]", S({5, 6}), {0, 0}, {0, 0}, {-1, 1}, 3, 3, 0, 0, 0, {4, 0}, {-1, 1}, {5, 6}, S({5, 6})},
      {"x[2, :]", S({5, 6}), {2, 0}, {3, 0}, {1, 1}, 0, 2, 0, 0, 1, {2, 0}, {1, 1}, {1, 6}, S({6})},
      {"x[-1]", S({5, 6}), {-1}, {0}, {1}, 0, 0, 0, 0, 1, {4, 0}, {1, 1}, {1, 6}, S({6})},
      {"x[..., newaxis, 1:3]", S({2, 3, 4}), {0, 0, 1}, {0, 0, 3}, {1, 1, 1}, 0, 0, 1, 2, 0,
       {0, 0, 1}, {1, 1, 1}, {2, 3, 2}, S({2, 3, 1, 2})},
      {"x[newaxis, 1]", S({3, 2}), {0, 1}, {0, 2}, {1, 1}, 0, 0, 0, 1, 2, {1, 0}, {1, 1}, {1, 2}, S({1, 2})},
      {"x[-4:-1]", S({6}), {-4}, {-1}, {1}, 0, 0, 0, 0, 0, {2}, {1}, {3}, S({3})},
      {"x[1:100:3]", S({5}), {1}, {100}, {3}, 0, 0, 0, 0, 0, {1}, {3}, {2}, S({2})},
      {"x[5:1:-2]", S({7}), {5}, {1}, {-2}, 0, 0, 0, 0, 0, {5}, {-2}, {2}, S({2})},
      {"x[3:1]", S({5}), {3}, {1}, {1}, 0, 0, 0, 0, 0, {0}, {1}, {0}, S({0})},
      {"x[..., 1]", S({2, 3, 4}), {0, 1}, {0, 2}, {1, 1}, 0, 0, 1, 0, 2, {0, 0, 1}, {1, 1, 1}, {2, 3, 1}, S({2, 3})},
      {"x[1:, ::-2]", S({3, 5}), {1, 0}, {0, 0}, {1, -2}, 2, 3, 0, 0, 0, {1, 4}, {1, -2}, {2, 3}, S({2, 3})},
      // Issue 22, class 7. TensorFlow's BuildDenseSpec counts an ellipsis bit
      // only inside the spec (bits 0 .. len-1); with none there it appends an
      // implicit ellipsis, whatever the mask says beyond. So on a [2,3] input
      // a length-1 spec with ellipsis_mask=2 (bit 1, past the spec) is x[1:2]
      // = x[1:2, ...] = [[x10, x11, x12]], shape [1,3]; with shrink bit 0 it
      // is x[1] = [x10, x11, x12], shape [3]; a far bit (2^40) is ignored the
      // same way: x[0:2:2] = x[0:1, :], shape [1,3]. (tf.strided_slice(x,
      // [1], [2], [1], ellipsis_mask=2) returns [[4, 5, 6]] for x =
      // [[1,2,3],[4,5,6]].)
      {"x[1:2], ellipsis bit 1 past the spec", S({2, 3}), {1}, {2}, {1}, 0, 0, 2, 0, 0, {1, 0}, {1, 1}, {1, 3},
       S({1, 3})},
      {"x[1], ellipsis bit 1 past the spec", S({2, 3}), {1}, {2}, {1}, 0, 0, 2, 0, 1, {1, 0}, {1, 1}, {1, 3}, S({3})},
      {"x[0:2:2], ellipsis bit 40", S({2, 3}), {0}, {2}, {2}, 0, 0, int64_t{1} << 40, 0, 0, {0, 0}, {2, 1}, {1, 3},
       S({1, 3})},
      // A stride far larger than the dim takes one element; stride * row
      // stride (2^62 * 6) must not be formed (class 12).
      {"x[0:5:2^62]", S({5, 6}), {0}, {5}, {int64_t{1} << 62}, 0, 0, 0, 0, 0, {0, 0}, {1, 1}, {1, 6}, S({1, 6})},
  };
  return *specs;
}

AttrList MaskAttrs(const SliceSpec& s) {
  return {{"begin_mask", MakeAttr(s.begin_mask)},
          {"end_mask", MakeAttr(s.end_mask)},
          {"ellipsis_mask", MakeAttr(s.ellipsis_mask)},
          {"new_axis_mask", MakeAttr(s.new_axis_mask)},
          {"shrink_axis_mask", MakeAttr(s.shrink_axis_mask)}};
}

REGISTER_OP_HARNESS(OpHarnessEntry{"StridedSlice", AllTypes(), [](DataType dt, Rng* rng) {
  std::vector<OpCase> cases;
  for (const SliceSpec& s : SliceSpecs()) {
    Tensor x = RandomValues(dt, s.input, rng);
    bool wide = false;  // a value that needs int64 (the 2^62 stride)
    for (const Index* v : {&s.begin, &s.end, &s.strides}) {
      for (int64_t x : *v) wide |= x != static_cast<int32_t>(x);
    }
    const DataType it = wide || cases.size() % 2 ? DT_INT64 : DT_INT32;
    cases.push_back(Case(s.name, {x, Ints(it, s.begin), Ints(it, s.end), Ints(it, s.strides)}, MaskAttrs(s),
                         {StridedRef(x, s.ref_begin, s.ref_stride, s.ref_sizes, s.out)}, s.out.num_elements() > 0));
  }
  Tensor x = RandomValues(dt, S({5, 6}), rng);
  cases.push_back(ErrorCase("stride 0", {x, I32({0}), I32({2}), I32({0})}, {}, "must be non-zero"));
  cases.push_back(ErrorCase("shrink out of bounds", {x, I32({5}), I32({6}), I32({1})},
                            {{"shrink_axis_mask", MakeAttr(int64_t{1})}}, "out of bounds"));
  cases.push_back(ErrorCase("two ellipses", {x, I32({0, 0}), I32({0, 0}), I32({1, 1})},
                            {{"ellipsis_mask", MakeAttr(int64_t{3})}}, "multiple ellipses"));
  cases.push_back(ErrorCase("too many dims", {x, I32({0, 0, 0}), I32({1, 1, 1}), I32({1, 1, 1})}, {},
                            "index out of range using input dim"));
  cases.push_back(ErrorCase("lengths", {x, I32({0, 0}), I32({1}), I32({1, 1})}, {}, "equal size"));
  return cases;
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"StridedSliceGrad", AllTypes(), [](DataType dt, Rng* rng) {
  std::vector<OpCase> cases;
  for (const SliceSpec& s : SliceSpecs()) {
    Tensor dy = RandomValues(dt, s.out, rng);
    // Expected: zeros with dy at the sliced positions.
    TensorShape space(s.ref_sizes);
    std::vector<int64_t> target(s.input.num_elements(), -1);
    for (int64_t i = 0; i < space.num_elements(); ++i) {
      Index idx = UnravelIndex(i, space);
      for (size_t d = 0; d < idx.size(); ++d) idx[d] = s.ref_begin[d] + idx[d] * s.ref_stride[d];
      target[RavelIndex(idx, s.input)] = i;
    }
    Tensor expected = Remap(dy, s.input, [&](const Index& idx) { return target[RavelIndex(idx, s.input)]; });
    Index shape(s.input.dim_sizes().begin(), s.input.dim_sizes().end());
    // int32 index inputs unless a value needs int64 (the 2^62 stride).
    bool wide = false;
    for (const Index* v : {&s.begin, &s.end, &s.strides}) {
      for (int64_t x : *v) wide |= x != static_cast<int32_t>(x);
    }
    const DataType it = wide ? DT_INT64 : DT_INT32;
    OpCase c = Case(s.name, {Ints(it, shape), Ints(it, s.begin), Ints(it, s.end), Ints(it, s.strides), dy}, MaskAttrs(s),
                    {expected},
                    false);
    c.check_gradient = dt == DT_DOUBLE && s.out.num_elements() > 0;
    cases.push_back(c);
  }
  const SliceSpec& s = SliceSpecs()[0];
  cases.push_back(ErrorCase("dy shape", {I32({5, 6}), I32(s.begin), I32(s.end), I32(s.strides), RandomValues(dt, S({2, 3}), rng)},
                            MaskAttrs(s), "shape of dy was [2,3] instead of [3,3]"));
  cases.push_back(ErrorCase("negative shape", {I32({-5, 6}), I32(s.begin), I32(s.end), I32(s.strides),
                                               RandomValues(dt, S({3, 3}), rng)},
                            MaskAttrs(s), "is negative"));
  return cases;
}});

Tensor TileRef(const Tensor& x, const Index& multiples) {
  std::vector<int64_t> dims;
  for (int d = 0; d < x.dims(); ++d) dims.push_back(x.dim_size(d) * multiples[d]);
  return Remap(x, TensorShape(dims), [&](const Index& out) {
    Index in(out.size());
    for (size_t d = 0; d < out.size(); ++d) in[d] = out[d] % x.dim_size(static_cast<int>(d));
    return RavelIndex(in, x.shape());
  });
}

REGISTER_OP_HARNESS(OpHarnessEntry{"Tile", AllTypes(), [](DataType dt, Rng* rng) {
  std::vector<OpCase> cases;
  const std::vector<std::pair<TensorShape, Index>> specs = {{S({2, 3}), {2, 1}}, {S({2, 3}), {1, 3}},
                                                            {S({3}), {0}},       {S({}), {}},
                                                            {S({2, 1, 3}), {2, 3, 2}}, {S({0, 2}), {3, 2}}};
  for (const auto& [shape, m] : specs) {
    Tensor x = RandomValues(dt, shape, rng);
    cases.push_back(Case(shape.DebugString() + " x " + std::to_string(m.size()), {x, I32(m)}, {}, {TileRef(x, m)},
                         shape.num_elements() > 0 && shape.dims() > 0 && m[0] > 0));
  }
  Tensor x = RandomValues(dt, S({2, 2}), rng);
  cases.push_back(Case("int64 multiples", {x, I64({2, 2})}, {}, {TileRef(x, {2, 2})}, true));
  cases.push_back(ErrorCase("negative", {x, I32({-1, 2})}, {}, "multiples[0] >= 0"));
  cases.push_back(ErrorCase("overflow", {x, I64({int64_t{1} << 40, int64_t{1} << 40})}, {}, "overflows"));
  cases.push_back(ErrorCase("length", {x, I32({2})}, {}, "vector of length 2"));
  return cases;
}});

Tensor PadRef(const Tensor& x, const Index& before, const Index& after) {
  std::vector<int64_t> dims;
  for (int d = 0; d < x.dims(); ++d) dims.push_back(x.dim_size(d) + before[d] + after[d]);
  return Remap(x, TensorShape(dims), [&](const Index& out) -> int64_t {
    Index in(out.size());
    for (size_t d = 0; d < out.size(); ++d) {
      in[d] = out[d] - before[d];
      if (in[d] < 0 || in[d] >= x.dim_size(static_cast<int>(d))) return -1;
    }
    return RavelIndex(in, x.shape());
  });
}

REGISTER_OP_HARNESS(OpHarnessEntry{"Pad", AllTypes(), [](DataType dt, Rng* rng) {
  Tensor x = RandomValues(dt, S({2, 3}), rng);
  Tensor y = RandomValues(dt, S({2, 0, 2}), rng);
  Tensor z = RandomValues(dt, S({3, 1, 2}), rng);
  Tensor x0 = RandomValues(dt, S({}), rng);
  return std::vector<OpCase>{
      Case("[2,3]", {x, Ints(DT_INT32, {1, 0, 2, 1}, S({2, 2}))}, {}, {PadRef(x, {1, 2}, {0, 1})}, true),
      Case("int64 rank 3", {z, Ints(DT_INT64, {0, 1, 2, 0, 1, 1}, S({3, 2}))}, {}, {PadRef(z, {0, 2, 1}, {1, 0, 1})},
           true),
      Case("empty input", {y, Ints(DT_INT32, {1, 1, 1, 0, 0, 0}, S({3, 2}))}, {}, {PadRef(y, {1, 1, 0}, {1, 0, 0})},
           false),
      Case("scalar", {x0, Ints(DT_INT32, {}, S({0, 2}))}, {}, {x0}, false),
      ErrorCase("negative", {x, Ints(DT_INT32, {1, 0, -1, 1}, S({2, 2}))}, {}, "paddings must be non-negative"),
      ErrorCase("shape", {x, Ints(DT_INT32, {1, 0}, S({1, 2}))}, {}, "paddings must be a matrix"),
      ErrorCase("overflow", {x, Ints(DT_INT64, {int64_t{1} << 40, 0, int64_t{1} << 40, 0}, S({2, 2}))}, {}, "overflows"),
  };
}});

// ------------------------------------------------------------------ indexing

Tensor GatherRef(const Tensor& params, const Tensor& indices, int axis) {
  std::vector<double> iv = ToDoubles(indices);
  std::vector<int64_t> dims(params.shape().dim_sizes().begin(), params.shape().dim_sizes().begin() + axis);
  dims.insert(dims.end(), indices.shape().dim_sizes().begin(), indices.shape().dim_sizes().end());
  dims.insert(dims.end(), params.shape().dim_sizes().begin() + axis + 1, params.shape().dim_sizes().end());
  return Remap(params, TensorShape(dims), [&](const Index& out) {
    Index in(out.begin(), out.begin() + axis);
    Index ii(out.begin() + axis, out.begin() + axis + indices.dims());
    in.push_back(static_cast<int64_t>(iv[RavelIndex(ii, indices.shape())]));
    in.insert(in.end(), out.begin() + axis + indices.dims(), out.end());
    return RavelIndex(in, params.shape());
  });
}

std::vector<OpCase> GatherCases(DataType dt, Rng* rng, bool v2) {
  std::vector<OpCase> cases;
  auto add = [&](const std::string& name, const Tensor& p, const Tensor& i, int64_t axis, bool grad) {
    std::vector<Tensor> in = {p, i};
    if (v2) in.push_back(I32Scalar(axis));
    const int a = static_cast<int>(axis < 0 ? axis + p.dims() : axis);
    cases.push_back(Case(name, in, {}, {GatherRef(p, i, a)}, grad));
  };
  Tensor p = RandomValues(dt, S({5, 3}), rng);
  add("[5,3] by [4] with repeats", p, I32({1, 4, 1, 0}), 0, true);
  add("[5,3] by [2,2] int64", p, Ints(DT_INT64, {3, 3, 0, 2}, S({2, 2})), 0, true);
  add("[5] by scalar", RandomValues(dt, S({5}), rng), I32Scalar(2), 0, true);
  add("empty indices", p, I32({}), 0, false);
  if (v2) {
    Tensor q = RandomValues(dt, S({3, 4, 2}), rng);
    add("axis 1", q, I32({3, 0, 3}), 1, true);
    add("axis -1 by [2,2]", q, Ints(DT_INT32, {1, 0, 1, 1}, S({2, 2})), -1, true);
    add("axis 2 int64", q, I64({0}), 2, true);
    cases.push_back(ErrorCase("axis out of range", {q, I32({0}), I32Scalar(3)}, {}, "axis 3 is out of range"));
  }
  std::vector<Tensor> bad = {p, I32({1, 5})};
  if (v2) bad.push_back(I32Scalar(0));
  cases.push_back(ErrorCase("index too large", bad, {}, "indices[1] = 5 is not in [0, 5)"));
  bad[1] = I64({-1});
  cases.push_back(ErrorCase("negative index", bad, {}, "indices[0] = -1 is not in [0, 5)"));
  return cases;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"Gather", AllTypes(), [](DataType dt, Rng* rng) { return GatherCases(dt, rng, false); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"GatherV2", AllTypes(), [](DataType dt, Rng* rng) { return GatherCases(dt, rng, true); }});

REGISTER_OP_HARNESS(OpHarnessEntry{"DynamicPartition", AllTypes(), [](DataType dt, Rng* rng) {
  auto ref = [](const Tensor& data, const Index& parts, const TensorShape& pshape, int n) {
    const int64_t inner = data.NumElements() / std::max<int64_t>(pshape.num_elements(), 1);
    std::vector<Tensor> out;
    for (int p = 0; p < n; ++p) {
      Index rows;
      for (size_t i = 0; i < parts.size(); ++i) {
        if (parts[i] == p) rows.push_back(static_cast<int64_t>(i));
      }
      std::vector<int64_t> dims{static_cast<int64_t>(rows.size())};
      for (int d = pshape.dims(); d < data.dims(); ++d) dims.push_back(data.dim_size(d));
      out.push_back(Remap(data, TensorShape(dims), [&](const Index& idx) {
        return rows[idx[0]] * inner + (inner == 1 ? 0 : RavelIndex(Index(idx.begin() + 1, idx.end()),
                                                              TensorShape(Index(dims.begin() + 1, dims.end()))));
      }));
    }
    return out;
  };
  auto np = [](int64_t n) { return AttrList{{"num_partitions", MakeAttr(n)}}; };
  Tensor a = RandomValues(dt, S({6, 2}), rng);
  Index pa = {0, 2, 1, 0, 2, 2};
  Tensor b = RandomValues(dt, S({2, 3}), rng);
  Index pb = {1, 1, 0, 1, 0, 1};
  Tensor e = RandomValues(dt, S({0, 2}), rng);
  return std::vector<OpCase>{
      Case("rows", {a, I32(pa)}, np(3), ref(a, pa, S({6}), 3), true),
      Case("elements", {b, Ints(DT_INT32, pb, S({2, 3}))}, np(2), ref(b, pb, S({2, 3}), 2), true),
      Case("empty partition", {a, I32(pa)}, np(4), ref(a, pa, S({6}), 4), true),
      Case("empty data", {e, I32({})}, np(2), ref(e, {}, S({0}), 2), false),
      ErrorCase("partition out of range", {a, I32({0, 3, 1, 0, 2, 2})}, np(3), "partitions[1] = 3 is not in [0, 3)"),
      ErrorCase("shape", {a, I32({0, 1})}, np(3), "must be a prefix of data shape"),
  };
}});

std::vector<OpCase> DynamicStitchCases(DataType dt, Rng* rng) {
  auto ref = [](const std::vector<Index>& indices, const std::vector<Tensor>& data, const Index& row_dims) {
    int64_t rows = 0;
    for (const Index& idx : indices) {
      for (int64_t v : idx) rows = std::max(rows, v + 1);
    }
    std::vector<int64_t> dims{rows};
    dims.insert(dims.end(), row_dims.begin(), row_dims.end());
    const int64_t inner = TensorShape(row_dims).num_elements();
    Tensor out = Zeros(data[0].dtype(), TensorShape(dims));
    for (size_t k = 0; k < indices.size(); ++k) {
      for (size_t j = 0; j < indices[k].size(); ++j) {
        for (int64_t e = 0; e < inner; ++e) CopyOne(data[k], j * inner + e, out, indices[k][j] * inner + e);
      }
    }
    return out;
  };
  auto n = [](int64_t v) { return AttrList{{"N", MakeAttr(v)}}; };
  Tensor d0 = RandomValues(dt, S({2, 3}), rng), d1 = RandomValues(dt, S({3, 3}), rng);
  Tensor s0 = RandomValues(dt, S({2}), rng), s1 = RandomValues(dt, S({1}), rng);
  Tensor m0 = RandomValues(dt, S({2, 2}), rng);
  return std::vector<OpCase>{
      Case("rows", {I32({0, 2}), I32({1, 4, 3}), d0, d1}, n(2), {ref({{0, 2}, {1, 4, 3}}, {d0, d1}, {3})}, true),
      Case("overlap: later wins", {I32({0, 1}), I32({1}), s0, s1}, n(2), {ref({{0, 1}, {1}}, {s0, s1}, {})}, false),
      Case("matrix indices", {Ints(DT_INT32, {3, 0, 2, 1}, S({2, 2})), m0}, n(1), {ref({{3, 0, 2, 1}}, {m0}, {})},
           true),
      ErrorCase("negative", {I32({0, -1}), s0}, n(1), "is negative"),
      ErrorCase("shape", {I32({0, 1}), I32({2}), d0, s1}, n(2), "does not match"),
      // Issue 22, class 1: no indices and empty data with a 2^62 row dim:
      // an empty [0, 2^62] result (the row size is formed without CHECKs).
      Case("empty rows of 2^62", {I32({}), RandomValues(dt, S({0, int64_t{1} << 62}), rng)}, n(1),
           {Zeros(dt, S({0, int64_t{1} << 62}))}, false),
  };
}
REGISTER_OP_HARNESS(OpHarnessEntry{"DynamicStitch", AllTypes(), DynamicStitchCases});
REGISTER_OP_HARNESS(OpHarnessEntry{"ParallelDynamicStitch", AllTypes(), DynamicStitchCases});

// SparseSegmentSum/Mean: out[ids[i]] += data[indices[i]] (Mean: / count);
// the Grad ops: out[indices[i]] += grad[ids[i]] (Mean: / count of ids[i]).
Tensor SparseSegmentRef(const Tensor& in, const Index& indices, const Index& ids, int64_t out_rows, bool mean,
                        bool grad) {
  std::vector<int64_t> dims(in.shape().dim_sizes().begin(), in.shape().dim_sizes().end());
  dims[0] = out_rows;
  const int64_t inner = TensorShape(Index(dims.begin() + 1, dims.end())).num_elements();
  std::vector<double> v = ToDoubles(in), out(out_rows * inner, 0.0);
  std::map<int64_t, int64_t> count;
  for (int64_t id : ids) ++count[id];
  for (size_t i = 0; i < ids.size(); ++i) {
    const double scale = mean ? 1.0 / count[ids[i]] : 1.0;
    const int64_t src = grad ? ids[i] : indices[i], dst = grad ? indices[i] : ids[i];
    for (int64_t e = 0; e < inner; ++e) out[dst * inner + e] += v[src * inner + e] * scale;
  }
  return FromDoubles(in.dtype(), TensorShape(dims), out);
}

std::vector<OpCase> SparseSegmentCases(DataType dt, Rng* rng, bool mean) {
  Tensor a = RandomValues(dt, S({5, 3}), rng), b = RandomValues(dt, S({4}), rng), c = RandomValues(dt, S({3, 2, 2}), rng);
  const Index ia = {0, 4, 1, 1, 3}, sa = {0, 0, 1, 3, 3};
  return {
      Case("rows, a gap segment", {a, I32(ia), I32(sa)}, {}, {SparseSegmentRef(a, ia, sa, 4, mean, false)}, true),
      Case("vector data, int64 ids", {b, I64({3, 2, 3}), I64({0, 1, 1})}, {},
           {SparseSegmentRef(b, {3, 2, 3}, {0, 1, 1}, 2, mean, false)}, true),
      Case("3-d data", {c, I32({2, 0}), I32({1, 1})}, {}, {SparseSegmentRef(c, {2, 0}, {1, 1}, 2, mean, false)}, true),
      Case("no rows", {a, I32({}), I32({})}, {}, {Zeros(dt, S({0, 3}))}, false),
      Case("empty rows, an id of 2^40", {RandomValues(dt, S({2, 0}), rng), I32({1}), I64({int64_t{1} << 40})}, {},
           {Zeros(dt, S({(int64_t{1} << 40) + 1, 0}))}, false),
      ErrorCase("unsorted ids", {a, I32({0, 1}), I32({1, 0})}, {}, "sorted"),
      ErrorCase("negative id", {a, I32({0}), I32({-1})}, {}, "sorted and non-negative"),
      ErrorCase("index out of range", {a, I32({5}), I32({0})}, {}, "indices[0] = 5 is not in [0, 5)"),
      ErrorCase("lengths differ", {a, I32({0, 1}), I32({0})}, {}, "one length"),
  };
}

std::vector<OpCase> SparseSegmentGradCases(DataType dt, Rng* rng, bool mean) {
  Tensor g = RandomValues(dt, S({4, 3}), rng);
  const Index ia = {0, 4, 1, 1, 3}, sa = {0, 0, 1, 3, 3};
  return {
      Case("rows", {g, I32(ia), I32(sa), I32Scalar(6)}, {}, {SparseSegmentRef(g, ia, sa, 6, mean, true)}, false),
      Case("int64 indices", {g, I64({2, 2}), I64({1, 2}), I32Scalar(3)}, {},
           {SparseSegmentRef(g, {2, 2}, {1, 2}, 3, mean, true)}, false),
      ErrorCase("id past the gradient", {g, I32({0}), I32({4}), I32Scalar(2)}, {}, "is not below"),
      ErrorCase("index past output_dim0", {g, I32({2}), I32({0}), I32Scalar(2)}, {}, "is not in [0, 2)"),
      ErrorCase("negative output_dim0", {g, I32({}), I32({}), I32Scalar(-1)}, {}, "negative"),
  };
}

REGISTER_OP_HARNESS(OpHarnessEntry{"SparseSegmentSum", {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16, DT_INT32, DT_INT64},
                                   [](DataType dt, Rng* rng) { return SparseSegmentCases(dt, rng, false); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"SparseSegmentMean", FloatTypes(),
                                   [](DataType dt, Rng* rng) { return SparseSegmentCases(dt, rng, true); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"SparseSegmentSumGrad", FloatTypes(),
                                   [](DataType dt, Rng* rng) { return SparseSegmentGradCases(dt, rng, false); }});
REGISTER_OP_HARNESS(OpHarnessEntry{"SparseSegmentMeanGrad", FloatTypes(),
                                   [](DataType dt, Rng* rng) { return SparseSegmentGradCases(dt, rng, true); }});

REGISTER_OP_HARNESS(OpHarnessEntry{"UnsortedSegmentSum", NumericTypes(), [](DataType dt, Rng* rng) {
  auto ref = [&](const Tensor& data, const Index& ids, int ids_rank, int64_t num) {
    std::vector<int64_t> dims{num};
    for (int d = ids_rank; d < data.dims(); ++d) dims.push_back(data.dim_size(d));
    const int64_t inner = TensorShape(Index(dims.begin() + 1, dims.end())).num_elements();
    std::vector<double> v = ToDoubles(data), out(num * inner, 0.0);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0) continue;
      for (int64_t e = 0; e < inner; ++e) out[ids[i] * inner + e] += v[i * inner + e];
    }
    return FromDoubles(dt, TensorShape(dims), out);
  };
  Tensor a = RandomValues(dt, S({5, 3}), rng);
  Tensor b = RandomValues(dt, S({2, 2, 3}), rng);
  return std::vector<OpCase>{
      Case("rows", {a, I32({0, 2, 0, 3, 2}), I32Scalar(4)}, {}, {ref(a, {0, 2, 0, 3, 2}, 1, 4)}, true),
      Case("matrix ids int64", {b, Ints(DT_INT64, {1, 1, 0, 2}, S({2, 2})), Ints(DT_INT64, {3}, TensorShape())}, {},
           {ref(b, {1, 1, 0, 2}, 2, 3)}, true),
      Case("negative ids dropped", {a, I32({0, -1, 1, -1, 1}), I32Scalar(2)}, {}, {ref(a, {0, -1, 1, -1, 1}, 1, 2)},
           true),
      Case("no segments", {RandomValues(dt, S({0, 3}), rng), I32({}), I32Scalar(0)}, {}, {Zeros(dt, S({0, 3}))}, false),
      ErrorCase("id too large", {a, I32({0, 4, 0, 0, 0}), I32Scalar(4)}, {}, "segment_ids[1] = 4 is out of range"),
      ErrorCase("shape", {a, I32({0, 1}), I32Scalar(4)}, {}, "must be a prefix of data shape"),
      ErrorCase("negative count", {a, I32({0, 0, 0, 0, 0}), I32Scalar(-1)}, {}, "must be non-negative"),
  };
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"_IndexedSlicesToDense", NumericTypes(), [](DataType dt, Rng* rng) {
  auto ref = [&](const Tensor& values, const Index& indices, const Index& shape) {
    const int64_t inner = TensorShape(Index(shape.begin() + 1, shape.end())).num_elements();
    std::vector<double> v = ToDoubles(values), out(TensorShape(shape).num_elements(), 0.0);
    for (size_t i = 0; i < indices.size(); ++i) {
      for (int64_t e = 0; e < inner; ++e) out[indices[i] * inner + e] += v[i * inner + e];
    }
    return FromDoubles(dt, TensorShape(shape), out);
  };
  Tensor v = RandomValues(dt, S({4, 3}), rng);
  Tensor w = RandomValues(dt, S({3}), rng);
  return std::vector<OpCase>{
      Case("rows with repeats", {v, I32({1, 5, 1, 0}), I32({6, 3})}, {}, {ref(v, {1, 5, 1, 0}, {6, 3})}, true),
      Case("vector int64", {w, I64({2, 0, 2}), I64({4})}, {}, {ref(w, {2, 0, 2}, {4})}, true),
      Case("no rows", {RandomValues(dt, S({0, 2}), rng), I32({}), I32({3, 2})}, {}, {ref(RandomValues(dt, S({0, 2}), rng), {}, {3, 2})},
           false),
      ErrorCase("index out of range", {v, I32({1, 6, 1, 0}), I32({6, 3})}, {}, "indices[1] = 6 is not in [0, 6)"),
      ErrorCase("shape mismatch", {v, I32({1, 5, 1, 0}), I32({6, 2})}, {}, "do not match dense_shape"),
      ErrorCase("negative shape", {v, I32({1, 5, 1, 0}), I32({-6, 3})}, {}, "is negative"),
  };
}});

// ------------------------------------------------- BroadcastTo and friends

// x broadcast to `dims` (numpy alignment: trailing dims, size 1 repeats).
Tensor BroadcastToRef(const Tensor& x, const Index& dims) {
  const int lead = static_cast<int>(dims.size()) - x.dims();
  return Remap(x, TensorShape(dims), [&](const Index& out) {
    Index in(x.dims());
    for (int d = 0; d < x.dims(); ++d) in[d] = x.dim_size(d) == 1 ? 0 : out[lead + d];
    return RavelIndex(in, x.shape());
  });
}

REGISTER_OP_HARNESS(OpHarnessEntry{"BroadcastTo", AllTypes(), [](DataType dt, Rng* rng) {
  std::vector<OpCase> cases;
  const std::vector<std::pair<TensorShape, Index>> specs = {
      {S({3}), {2, 3}},       {S({2, 1}), {2, 3}},     {S({}), {2, 2}},   {S({1, 3}), {2, 4, 3}},
      {S({2, 3}), {2, 3}},    {S({4, 1, 2}), {4, 3, 2}}, {S({1}), {0, 3}}, {S({0, 1}), {0, 4}},
      {S({}), {}},            {S({2, 1, 1}), {3, 2, 2, 1}}};
  int k = 0;
  for (const auto& [shape, dims] : specs) {
    Tensor x = RandomValues(dt, shape, rng);
    const bool int64 = (k++ % 2) == 1;
    cases.push_back(Case(shape.DebugString() + " to " + TensorShape(dims).DebugString() + (int64 ? " int64" : ""),
                         {x, int64 ? I64(dims) : I32(dims)}, {}, {BroadcastToRef(x, dims)},
                         TensorShape(dims).num_elements() > 0));
  }
  Tensor x = RandomValues(dt, S({2, 3}), rng);
  cases.push_back(ErrorCase("dim differs", {RandomValues(dt, S({2}), rng), I32({3})}, {}, "unable to broadcast"));
  cases.push_back(ErrorCase("inner dim differs", {x, I32({4, 2, 2})}, {}, "unable to broadcast"));
  cases.push_back(ErrorCase("rank too small", {x, I32({3})}, {}, "unable to broadcast"));
  cases.push_back(ErrorCase("negative", {RandomValues(dt, S({1}), rng), I32({-1, 1})}, {}, "negative"));
  cases.push_back(ErrorCase("shape matrix", {x, Ints(DT_INT32, {2, 3}, S({1, 2}))}, {}, "must be a vector"));
  return cases;
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"InvertPermutation", {DT_INT32, DT_INT64}, [](DataType dt, Rng* rng) {
  std::vector<OpCase> cases;
  for (int64_t n : {0, 1, 5, 17}) {
    Index perm(n);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), *rng);
    Index inverse(n);
    for (int64_t i = 0; i < n; ++i) inverse[perm[i]] = i;
    cases.push_back(Case("n=" + std::to_string(n), {Ints(dt, perm)}, {}, {Ints(dt, inverse)}, false));
  }
  cases.push_back(ErrorCase("out of range", {Ints(dt, {0, 3, 1})}, {}, "x[1] = 3 is not in [0, 3)"));
  cases.push_back(ErrorCase("negative", {Ints(dt, {0, -1, 1})}, {}, "is not in [0, 3)"));
  cases.push_back(ErrorCase("duplicate", {Ints(dt, {0, 2, 2})}, {}, "2 is duplicated"));
  cases.push_back(ErrorCase("matrix", {Ints(dt, {0, 1}, S({1, 2}))}, {}, "vector"));
  return cases;
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"ReverseV2", AllTypes(), [](DataType dt, Rng* rng) {
  std::vector<OpCase> cases;
  auto reverse = [](const Tensor& x, const Index& axes) {
    return Remap(x, x.shape(), [&](const Index& idx) {
      Index src = idx;
      for (int64_t a : axes) {
        const int d = static_cast<int>(a < 0 ? a + x.dims() : a);
        src[d] = x.dim_size(d) - 1 - idx[d];
      }
      return RavelIndex(src, x.shape());
    });
  };
  const std::vector<std::pair<TensorShape, Index>> layouts = {
      {S({5}), {0}},          {S({3, 4}), {1}},       {S({3, 4}), {0}},          {S({3, 4}), {0, 1}},
      {S({2, 3, 4}), {-2}},   {S({2, 3, 4}), {0, 2}}, {S({2, 3, 4}), {}},        {S({4, 0, 2}), {1}},
      {S({2, 1, 3, 2}), {1, 3}}};
  int k = 0;
  for (const auto& [shape, axes] : layouts) {
    Tensor x = RandomValues(dt, shape, rng);
    const bool int64 = k++ % 2 == 1;
    cases.push_back(Case(shape.DebugString() + " axes " + std::to_string(axes.size()) + (int64 ? " int64" : ""),
                         {x, Ints(int64 ? DT_INT64 : DT_INT32, axes)}, {}, {reverse(x, axes)}, true));
  }
  cases.push_back(ErrorCase("axis out of range", {RandomValues(dt, S({2, 3}), rng), I32({2})}, {}, "out of range"));
  cases.push_back(ErrorCase("repeated axis", {RandomValues(dt, S({2, 3}), rng), I32({1, -1})}, {}, "more than once"));
  cases.push_back(ErrorCase("scalar axis", {RandomValues(dt, S({2, 3}), rng), I32Scalar(0)}, {}, "vector"));
  return cases;
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"MatrixBandPart", AllTypes(), [](DataType dt, Rng* rng) {
  std::vector<OpCase> cases;
  auto band = [](const Tensor& x, int64_t lower, int64_t upper) {
    return Remap(x, x.shape(), [&](const Index& idx) -> int64_t {
      const int64_t i = idx[idx.size() - 2], j = idx[idx.size() - 1];
      const bool in = (lower < 0 || i - j <= lower) && (upper < 0 || j - i <= upper);
      return in ? RavelIndex(idx, x.shape()) : -1;
    });
  };
  const std::vector<std::tuple<TensorShape, int64_t, int64_t>> layouts = {
      {S({4, 4}), -1, 0}, {S({4, 4}), 0, -1}, {S({3, 5}), 1, 2},  {S({5, 3}), 0, 0},
      {S({2, 3, 4}), -1, -1}, {S({2, 4, 3}), 2, 0}, {S({0, 3}), 0, 1}, {S({2, 2, 3, 3}), 1, 1}};
  int k = 0;
  for (const auto& [shape, lower, upper] : layouts) {
    Tensor x = RandomValues(dt, shape, rng);
    const DataType index_type = k++ % 2 == 1 ? DT_INT64 : DT_INT32;
    cases.push_back(Case(shape.DebugString() + " lower " + std::to_string(lower) + " upper " + std::to_string(upper),
                         {x, Ints(index_type, {lower}, TensorShape()), Ints(index_type, {upper}, TensorShape())}, {},
                         {band(x, lower, upper)}, true));
  }
  cases.push_back(ErrorCase("vector input", {RandomValues(dt, S({3}), rng), I32Scalar(0), I32Scalar(0)}, {}, "at least a matrix"));
  cases.push_back(ErrorCase("num_lower too big", {RandomValues(dt, S({2, 3}), rng), I32Scalar(3), I32Scalar(0)}, {}, "num_lower"));
  cases.push_back(ErrorCase("num_upper too big", {RandomValues(dt, S({2, 3}), rng), I32Scalar(0), I32Scalar(4)}, {}, "num_upper"));
  cases.push_back(ErrorCase("vector bound", {RandomValues(dt, S({2, 3}), rng), I32({0, 1}), I32Scalar(0)}, {}, "scalar"));
  return cases;
}});

// dt is the shape vectors' type (attr shape_type).
REGISTER_OP_HARNESS(OpHarnessEntry{"ConcatOffset", {DT_INT32, DT_INT64}, [](DataType dt, Rng*) {
  auto c = [&](int32_t axis, std::vector<Index> shapes, std::vector<Index> offsets) {
    std::vector<Tensor> inputs = {Tensor::Scalar<int32_t>(axis)}, expected;
    for (const Index& s : shapes) inputs.push_back(Ints(dt, s));
    for (const Index& o : offsets) expected.push_back(Ints(dt, o));
    return Case("axis " + std::to_string(axis) + " N=" + std::to_string(shapes.size()), inputs, {}, expected, false);
  };
  return std::vector<OpCase>{
      c(1, {{2, 3, 4}, {2, 5, 4}, {2, 1, 4}}, {{0, 0, 0}, {0, 3, 0}, {0, 8, 0}}),
      c(-2, {{2, 3, 4}, {2, 5, 4}}, {{0, 0, 0}, {0, 3, 0}}),
      c(0, {{2, 7}, {0, 7}, {3, 7}}, {{0, 0}, {2, 0}, {2, 0}}),
      c(0, {{4}, {6}}, {{0}, {4}}),
      ErrorCase("other dim differs", {Tensor::Scalar<int32_t>(1), Ints(dt, {2, 3, 4}), Ints(dt, {2, 5, 5})}, {},
                "all dimensions except 1 must match"),
      ErrorCase("axis out of range", {Tensor::Scalar<int32_t>(3), Ints(dt, {2, 3, 4}), Ints(dt, {2, 5, 4})}, {},
                "out of range"),
      ErrorCase("ranks differ", {Tensor::Scalar<int32_t>(0), Ints(dt, {2, 3}), Ints(dt, {2, 3, 4})}, {},
                "shape 1 has 3 elements"),
      ErrorCase("concat_dim vector", {I32({0}), Ints(dt, {2, 3}), Ints(dt, {2, 3})}, {}, "must be a scalar"),
  };
}});

// ------------------------------------------------- Unique and SparseToDense

// A vector of `n` values drawn from a small set (so values repeat).
Tensor Repeating(DataType dt, int64_t n, Rng* rng) {
  if (dt == DT_STRING) {
    Tensor t(DT_STRING, S({n}));
    for (int64_t i = 0; i < n; ++i) t.data<tstring>()[i] = "s" + std::to_string((*rng)() % 4);
    return t;
  }
  std::vector<double> v(n);
  for (double& e : v) e = static_cast<double>((*rng)() % 4);
  return FromDoubles(dt, S({n}), v);
}

bool SameElement(const Tensor& t, int64_t a, int64_t b, const std::vector<double>& d) {
  if (t.dtype() == DT_STRING) return t.data<tstring>()[a] == t.data<tstring>()[b];
  if (t.dtype() == DT_COMPLEX64) return t.data<complex64>()[a] == t.data<complex64>()[b];
  return d[a] == d[b];  // -0 == 0; NaN differs from itself
}

REGISTER_OP_HARNESS(OpHarnessEntry{"Unique", AllTypes(), [](DataType dt, Rng* rng) {
  auto ref_case = [&](const std::string& name, const Tensor& x, DataType out_idx) {
    const int64_t n = x.NumElements();
    std::vector<double> d = dt == DT_STRING ? std::vector<double>(n) : ToDoubles(x);
    std::vector<int64_t> first, idx(n);
    for (int64_t i = 0; i < n; ++i) {
      size_t j = 0;
      while (j < first.size() && !SameElement(x, first[j], i, d)) ++j;
      if (j == first.size()) first.push_back(i);
      idx[i] = static_cast<int64_t>(j);
    }
    Tensor y = Remap(x, S({static_cast<int64_t>(first.size())}), [&](const Index& out) { return first[out[0]]; });
    return Case(name + " out_idx " + DataTypeString(out_idx), {x}, {{"out_idx", MakeAttr(out_idx)}},
                {y, Ints(out_idx, idx)}, false);
  };
  std::vector<OpCase> cases;
  int k = 0;
  for (int64_t n : {0, 1, 10, 50}) {
    cases.push_back(ref_case("n=" + std::to_string(n), Repeating(dt, n, rng), (k++ % 2) ? DT_INT64 : DT_INT32));
  }
  if (DataTypeIsFloating(dt)) {
    // -0 and 0 are one value; each NaN is its own.
    cases.push_back(ref_case("signed zeros and NaNs", FromDoubles(dt, S({5}), {0.0, -0.0, NAN, 1, NAN}), DT_INT32));
  }
  cases.push_back(ErrorCase("matrix", {RandomValues(dt, S({2, 2}), rng)}, {}, "vector"));
  return cases;
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"SparseToDense", AllTypes(), [](DataType dt, Rng* rng) {
  auto idx = [](bool int64, const Index& v, std::optional<TensorShape> shape = std::nullopt) {
    return Ints(int64 ? DT_INT64 : DT_INT32, v, shape);
  };
  // indices as an [n, ndims] list of rows (flattened), values per row or one.
  auto ref = [&](const Index& rows, int64_t ndims, const Index& shape, const Tensor& values, const Tensor& def) {
    Tensor out = Remap(def, TensorShape(shape), [](const Index&) { return int64_t{0}; });
    const int64_t n = ndims == 0 ? 0 : static_cast<int64_t>(rows.size()) / ndims;
    for (int64_t i = 0; i < n; ++i) {
      Index at(rows.begin() + i * ndims, rows.begin() + (i + 1) * ndims);
      CopyOne(values, values.dims() == 0 ? 0 : i, out, RavelIndex(at, TensorShape(shape)));
    }
    return out;
  };
  const Tensor def = RandomValues(dt, S({}), rng);
  const Tensor v3 = RandomValues(dt, S({3}), rng), v1 = RandomValues(dt, S({}), rng), v0 = RandomValues(dt, S({0}), rng);
  auto validate = [](bool v) { return AttrList{{"validate_indices", MakeAttr(v)}}; };
  std::vector<OpCase> cases = {
      Case("matrix indices", {idx(false, {0, 1, 1, 0, 2, 3}, S({3, 2})), idx(false, {3, 4}), v3, def}, {},
           {ref({0, 1, 1, 0, 2, 3}, 2, {3, 4}, v3, def)}, true),
      Case("vector indices int64", {idx(true, {0, 2, 5}), idx(true, {6}), v3, def}, {}, {ref({0, 2, 5}, 1, {6}, v3, def)},
           true),
      Case("scalar index", {idx(false, {3}, S({})), idx(false, {5}), v1, def}, {}, {ref({3}, 1, {5}, v1, def)}, true),
      Case("scalar value broadcast", {idx(true, {0, 0, 1, 1}, S({2, 2})), idx(true, {2, 2}), v1, def}, {},
           {ref({0, 0, 1, 1}, 2, {2, 2}, v1, def)}, true),
      Case("no indices", {idx(false, {}, S({0, 2})), idx(false, {2, 3}), v0, def}, {}, {ref({}, 2, {2, 3}, v0, def)},
           true),
      Case("unordered, not validated", {idx(false, {2, 0, 1}), idx(false, {4}), v3, def}, validate(false),
           {ref({2, 0, 1}, 1, {4}, v3, def)}, true),
      ErrorCase("out of bounds", {idx(false, {0, 1, 1, 4}, S({2, 2})), idx(false, {3, 4}), RandomValues(dt, S({2}), rng), def},
                {}, "sparse_indices[1] = [1,4] is out of bounds: need 0 <= index < [3,4]"),
      ErrorCase("negative index", {idx(true, {-1}), idx(true, {4}), v1, def}, validate(false), "out of bounds"),
      ErrorCase("repeated", {idx(false, {1, 1}), idx(false, {4}), RandomValues(dt, S({2}), rng), def}, {}, "is repeated"),
      ErrorCase("out of order", {idx(false, {2, 1}), idx(false, {4}), RandomValues(dt, S({2}), rng), def}, {}, "is out of order"),
      ErrorCase("values length", {idx(false, {0, 1}), idx(false, {4}), v3, def}, {}, "must be a scalar or a vector of 2"),
      ErrorCase("output_shape length", {idx(false, {0, 1}, S({1, 2})), idx(false, {4}), v1, def}, {},
                "output_shape has 1 elements but sparse_indices has 2 columns"),
      ErrorCase("default not scalar", {idx(false, {0}), idx(false, {4}), v1, RandomValues(dt, S({1}), rng)}, {},
                "default_value must be a scalar"),
  };
  for (OpCase& c : cases) c.grad_inputs = {2, 3};
  return cases;
}});

}  // namespace
}  // namespace harness
}  // namespace sluice

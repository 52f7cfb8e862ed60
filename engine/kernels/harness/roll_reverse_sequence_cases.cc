// Harness entries for Roll and ReverseSequence: every dtype (strings
// included) against index-mapping references, bad inputs, and
// finite-difference gradients in float64.
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "engine/kernels/harness/op_harness.h"

namespace sluice {
namespace harness {
namespace {

using Index = std::vector<int64_t>;

// out[i] = in[src_of(index of i)].
Tensor Remap(const Tensor& in, const std::function<int64_t(const Index&)>& src_of) {
  Tensor out(in.dtype(), in.shape());
  for (int64_t i = 0; i < in.NumElements(); ++i) {
    const int64_t s = src_of(UnravelIndex(i, in.shape()));
    if (in.dtype() == DT_STRING) {
      out.data<tstring>()[i] = in.data<tstring>()[s];
    } else {
      const int b = DataTypeSize(in.dtype());
      std::memcpy(static_cast<char*>(out.raw_data()) + i * b, static_cast<const char*>(in.raw_data()) + s * b, b);
    }
  }
  return out;
}


// A vector of `values`, or with `scalar` the one value as a scalar.
Tensor Indices(DataType dtype, const Index& values, bool scalar = false) {
  return IndexTensor(dtype, values, scalar ? TensorShape({}) : TensorShape({static_cast<int64_t>(values.size())}));
}

OpCase ValueCase(std::string description, std::vector<Tensor> inputs, AttrList attrs, Tensor expected) {
  OpCase c;
  c.description = std::move(description);
  c.check_gradient = inputs[0].dtype() == DT_DOUBLE;
  c.grad_inputs = {0};
  c.inputs = std::move(inputs);
  c.attrs = std::move(attrs);
  c.expected = {std::move(expected)};
  return c;
}

REGISTER_OP_HARNESS(OpHarnessEntry{"Roll", AllSupportedTypes(), [](DataType dt, Rng* rng) {
  struct Layout {
    TensorShape shape;
    Index shift, axis;
    bool scalar;
  };
  const std::vector<Layout> layouts = {
      {TensorShape({5}), {2}, {0}, true},           {TensorShape({5}), {-7}, {0}, false},
      {TensorShape({3, 4}), {1, -1}, {0, 1}, false}, {TensorShape({3, 4}), {5}, {1}, false},
      {TensorShape({2, 3, 4}), {1, 2}, {1, 1}, false},  // one axis twice: shifts add up
      {TensorShape({2, 3, 4}), {3, 1, 2}, {-1, 0, 1}, false},
      {TensorShape({4, 0, 2}), {1, 3}, {0, 1}, false},  {TensorShape({}), {}, {}, false}};
  std::vector<OpCase> cases;
  int k = 0;
  for (const Layout& l : layouts) {
    const DataType index_type = k++ % 2 == 1 ? DT_INT64 : DT_INT32;
    Tensor x = RandomValues(dt, l.shape, rng);
    Tensor expected = Remap(x, [&](const Index& idx) {
      Index src = idx;
      for (size_t j = 0; j < l.axis.size(); ++j) {
        const int d = static_cast<int>(l.axis[j] < 0 ? l.axis[j] + l.shape.dims() : l.axis[j]);
        const int64_t n = l.shape.dim_size(d);
        src[d] = ((src[d] - l.shift[j]) % n + n) % n;
      }
      return RavelIndex(src, l.shape);
    });
    cases.push_back(ValueCase(l.shape.DebugString() + " shifts " + std::to_string(l.shift.size()),
                              {x, Indices(index_type, l.shift, l.scalar), Indices(index_type, l.axis, l.scalar)},
                              {}, expected));
  }
  Tensor x = RandomValues(dt, TensorShape({2, 3}), rng);
  cases.push_back(ErrorCase("axis out of range", {x, Indices(DT_INT32, {1}), Indices(DT_INT32, {2})}, {},
                            "out of range"));
  cases.push_back(ErrorCase("lengths differ", {x, Indices(DT_INT32, {1, 2}), Indices(DT_INT32, {0})}, {},
                            "same length"));
  // The largest shifts reduce without overflow.
  cases.push_back(ValueCase("int64 extremes",
                            {x, Indices(DT_INT64, {INT64_MIN, INT64_MAX}), Indices(DT_INT64, {0, 1})}, {},
                            Remap(x, [&](const Index& idx) {
                              // INT64_MIN mod 2 = 0, INT64_MAX mod 3 = 1.
                              Index src = {idx[0], (idx[1] + 2) % 3};
                              return RavelIndex(src, TensorShape({2, 3}));
                            })));
  return cases;
}});

REGISTER_OP_HARNESS(OpHarnessEntry{"ReverseSequence", AllSupportedTypes(), [](DataType dt, Rng* rng) {
  struct Layout {
    TensorShape shape;
    int64_t seq_dim, batch_dim;
    Index lengths;
  };
  const std::vector<Layout> layouts = {
      {TensorShape({3, 5}), 1, 0, {5, 0, 2}},         {TensorShape({5, 3}), 0, 1, {1, 3, 5}},
      {TensorShape({2, 4, 3}), 1, 0, {4, 2}},         {TensorShape({4, 2, 3}), 0, 1, {3, 1}},
      {TensorShape({2, 3, 4, 2}), 2, 1, {4, 0, 3}},   {TensorShape({3, 2, 4}), 2, 0, {1, 4, 2}},
      {TensorShape({2, 0, 3}), 1, 0, {0, 0}}};
  std::vector<OpCase> cases;
  int k = 0;
  for (const Layout& l : layouts) {
    const DataType len_type = k++ % 2 == 1 ? DT_INT32 : DT_INT64;
    Tensor x = RandomValues(dt, l.shape, rng);
    Tensor expected = Remap(x, [&](const Index& idx) {
      Index src = idx;
      const int64_t len = l.lengths[idx[l.batch_dim]];
      if (idx[l.seq_dim] < len) src[l.seq_dim] = len - 1 - idx[l.seq_dim];
      return RavelIndex(src, l.shape);
    });
    AttrList attrs = {{"seq_dim", MakeAttr(l.seq_dim)}, {"batch_dim", MakeAttr(l.batch_dim)}};
    cases.push_back(ValueCase(l.shape.DebugString() + " seq_dim " + std::to_string(l.seq_dim) + " batch_dim " +
                                  std::to_string(l.batch_dim),
                              {x, Indices(len_type, l.lengths)}, attrs, expected));
  }
  Tensor x = RandomValues(dt, TensorShape({2, 3}), rng);
  AttrList attrs = {{"seq_dim", MakeAttr(int64_t{1})}, {"batch_dim", MakeAttr(int64_t{0})}};
  cases.push_back(ErrorCase("length past the dim", {x, Indices(DT_INT64, {1, 4})}, attrs, "is not in [0, 3]"));
  cases.push_back(ErrorCase("negative length", {x, Indices(DT_INT64, {-1, 2})}, attrs, "is not in [0, 3]"));
  cases.push_back(ErrorCase("wrong count", {x, Indices(DT_INT64, {1, 2, 3})}, attrs, "batch dim"));
  cases.push_back(ErrorCase("same dims", {x, Indices(DT_INT64, {1, 2})},
                            {{"seq_dim", MakeAttr(int64_t{0})}, {"batch_dim", MakeAttr(int64_t{0})}}, "two different"));
  return cases;
}});

}  // namespace
}  // namespace harness
}  // namespace sluice

// Harness entries for GatherNd and ScatterNd: index vectors of every length
// from 0 to the rank, int32 and int64 indices, repeated indices (ScatterNd
// adds them up), empty inputs, bad indices and shapes, and finite-difference
// gradients in float64 (GatherNd's is a ScatterNd, and the other way round).
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "engine/kernels/harness/op_harness.h"

namespace sluice {
namespace harness {
namespace {

using Index = std::vector<int64_t>;

// The slice offset (in elements) of index vector i, K = indices' last dim.
int64_t SliceStart(const Index& flat_indices, int64_t i, int64_t k, const TensorShape& shape) {
  int64_t offset = 0;
  for (int64_t j = 0; j < k; ++j) offset = offset * shape.dim_size(static_cast<int>(j)) + flat_indices[i * k + j];
  int64_t slice = 1;
  for (int d = static_cast<int>(k); d < shape.dims(); ++d) slice *= shape.dim_size(d);
  return offset * slice;
}

struct NdLayout {
  TensorShape shape;          // params' (GatherNd) or the output's (ScatterNd)
  TensorShape indices_shape;  // [..., K]
  Index indices;
};

const std::vector<NdLayout>& Layouts() {
  static const auto* layouts = new std::vector<NdLayout>{
      {TensorShape({4, 3}), TensorShape({3, 1}), {1, 3, 1}},               // rows, one repeated
      {TensorShape({4, 3}), TensorShape({2, 2}), {1, 2, 3, 0}},            // elements
      {TensorShape({2, 3, 4}), TensorShape({2, 2, 2}), {0, 1, 1, 2, 1, 0, 0, 1}},
      {TensorShape({2, 3}), TensorShape({3, 0}), {}},                      // K = 0: the whole tensor
      {TensorShape({4, 3}), TensorShape({0, 2}), {}},                      // no index vectors
      {TensorShape({5}), TensorShape({4, 1}), {4, 0, 4, 2}}};
  return *layouts;
}

// The number of index vectors: the elements of indices.shape[:-1].
int64_t Vectors(const NdLayout& l) {
  int64_t n = 1;
  for (int d = 0; d + 1 < l.indices_shape.dims(); ++d) n *= l.indices_shape.dim_size(d);
  return n;
}

int64_t SliceSize(const NdLayout& l) {
  int64_t s = 1;
  const int k = static_cast<int>(l.indices_shape.dim_size(l.indices_shape.dims() - 1));
  for (int d = k; d < l.shape.dims(); ++d) s *= l.shape.dim_size(d);
  return s;
}

TensorShape ResultShape(const NdLayout& l) {
  std::vector<int64_t> dims(l.indices_shape.dim_sizes().begin(), l.indices_shape.dim_sizes().end() - 1);
  const int k = static_cast<int>(l.indices_shape.dim_size(l.indices_shape.dims() - 1));
  for (int d = k; d < l.shape.dims(); ++d) dims.push_back(l.shape.dim_size(d));
  return TensorShape(dims);
}

REGISTER_OP_HARNESS(OpHarnessEntry{"GatherNd", AllSupportedTypes(), [](DataType dt, Rng* rng) {
  std::vector<OpCase> cases;
  int n = 0;
  for (const NdLayout& l : Layouts()) {
    const DataType index_type = n++ % 2 == 1 ? DT_INT64 : DT_INT32;
    Tensor params = RandomValues(dt, l.shape, rng);
    const TensorShape out_shape = ResultShape(l);
    Tensor expected(dt, out_shape);
    const int64_t k = l.indices_shape.dim_size(l.indices_shape.dims() - 1);
    const int64_t slice = SliceSize(l);
    for (int64_t i = 0; i < Vectors(l); ++i) {
      const int64_t src = SliceStart(l.indices, i, k, l.shape);
      for (int64_t j = 0; j < slice; ++j) {
        if (dt == DT_STRING) {
          expected.data<tstring>()[i * slice + j] = params.data<tstring>()[src + j];
        } else {
          const int b = DataTypeSize(dt);
          std::memcpy(static_cast<char*>(expected.raw_data()) + (i * slice + j) * b,
                      static_cast<const char*>(params.raw_data()) + (src + j) * b, b);
        }
      }
    }
    OpCase c;
    c.description = "params " + l.shape.DebugString() + " indices " + l.indices_shape.DebugString();
    c.inputs = {params, IndexTensor(index_type, l.indices, l.indices_shape)};
    c.expected = {expected};
    c.check_gradient = dt == DT_DOUBLE;
    c.grad_inputs = {0};
    cases.push_back(std::move(c));
  }
  Tensor params = RandomValues(dt, TensorShape({4, 3}), rng);
  cases.push_back(ErrorCase("index out of range", {params, IndexTensor(DT_INT32, {1, 4}, TensorShape({2, 1}))}, {},
                            "out of range"));
  cases.push_back(ErrorCase("negative index", {params, IndexTensor(DT_INT64, {0, -1}, TensorShape({1, 2}))}, {},
                            "out of range"));
  cases.push_back(ErrorCase("index vectors too long", {params, IndexTensor(DT_INT32, {0, 0, 0}, TensorShape({1, 3}))},
                            {}, "cannot index"));
  cases.push_back(ErrorCase("scalar indices", {params, IndexTensor(DT_INT32, {0}, TensorShape({}))}, {},
                            "at least a vector"));
  cases.push_back(ErrorCase("unknown policy", {params, IndexTensor(DT_INT32, {1}, TensorShape({1, 1}))},
                            {{"bad_indices_policy", MakeAttr("SKIP")}}, "bad_indices_policy"));
  // IGNORE: a row out of range reads as zeros (strings: empty).
  {
    Tensor want(dt, TensorShape({2, 3}));
    Tensor zero = dt == DT_STRING ? Tensor(DT_STRING, TensorShape({3})) : FromDoubles(dt, TensorShape({3}), {0, 0, 0});
    for (int64_t j = 0; j < 3; ++j) {
      if (dt == DT_STRING) {
        want.data<tstring>()[j] = params.data<tstring>()[6 + j];
        want.data<tstring>()[3 + j] = "";
      } else {
        const int b = DataTypeSize(dt);
        std::memcpy(static_cast<char*>(want.raw_data()) + j * b, static_cast<const char*>(params.raw_data()) + (6 + j) * b, b);
        std::memcpy(static_cast<char*>(want.raw_data()) + (3 + j) * b, static_cast<const char*>(zero.raw_data()) + j * b, b);
      }
    }
    OpCase c;
    c.description = "IGNORE policy";
    c.inputs = {params, IndexTensor(DT_INT32, {2, 9}, TensorShape({2, 1}))};
    c.attrs = {{"bad_indices_policy", MakeAttr("IGNORE")}};
    c.expected = {want};
    c.check_gradient = dt == DT_DOUBLE;  // the ignored row's gradient is dropped
    c.grad_inputs = {0};
    cases.push_back(std::move(c));
  }
  return cases;
}});

REGISTER_OP_HARNESS(OpHarnessEntry{
    "ScatterNd", {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16, DT_INT32, DT_INT64}, [](DataType dt, Rng* rng) {
      std::vector<OpCase> cases;
      int n = 0;
      for (const NdLayout& l : Layouts()) {
        const DataType index_type = n++ % 2 == 1 ? DT_INT64 : DT_INT32;
        const TensorShape updates_shape = ResultShape(l);
        Tensor updates = RandomTensor(dt, updates_shape, rng, -5, 5);
        const std::vector<double> u = ToDoubles(updates);
        std::vector<double> out(static_cast<size_t>(l.shape.num_elements()), 0.0);
        const int64_t k = l.indices_shape.dim_size(l.indices_shape.dims() - 1);
        const int64_t slice = SliceSize(l);
        for (int64_t i = 0; i < Vectors(l); ++i) {
          const int64_t dst = SliceStart(l.indices, i, k, l.shape);
          for (int64_t j = 0; j < slice; ++j) out[dst + j] += u[i * slice + j];
        }
        Index dims(l.shape.dim_sizes().begin(), l.shape.dim_sizes().end());
        OpCase c;
        c.description = "shape " + l.shape.DebugString() + " indices " + l.indices_shape.DebugString();
        c.inputs = {IndexTensor(index_type, l.indices, l.indices_shape), updates,
                    IndexTensor(index_type, dims, TensorShape({static_cast<int64_t>(dims.size())}))};
        c.expected = {FromDoubles(dt, l.shape, out)};
        c.check_gradient = dt == DT_DOUBLE;
        c.grad_inputs = {1};
        cases.push_back(std::move(c));
      }
      Tensor shape = IndexTensor(DT_INT32, {4, 3}, TensorShape({2}));
      cases.push_back(ErrorCase("index out of range",
                                {IndexTensor(DT_INT32, {5}, TensorShape({1, 1})), RandomTensor(dt, TensorShape({1, 3}), rng),
                                 shape},
                                {}, "out of range"));
      cases.push_back(ErrorCase("updates of the wrong shape",
                                {IndexTensor(DT_INT32, {1, 2}, TensorShape({2, 1})),
                                 RandomTensor(dt, TensorShape({2, 4}), rng), shape},
                                {}, "updates must have shape"));
      {
        // IGNORE: the update of row 7 (out of range) is dropped.
        OpCase c;
        c.description = "IGNORE policy";
        c.inputs = {IndexTensor(DT_INT32, {1, 7}, TensorShape({2, 1})),
                    FromDoubles(dt, TensorShape({2, 3}), {1, 2, 3, 4, 5, 6}), shape};
        c.attrs = {{"bad_indices_policy", MakeAttr("IGNORE")}};
        c.expected = {FromDoubles(dt, TensorShape({4, 3}), {0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 0, 0})};
        c.check_gradient = dt == DT_DOUBLE;  // the dropped update's gradient gathers zeros
        c.grad_inputs = {1};
        cases.push_back(std::move(c));
      }
      cases.push_back(ErrorCase("negative dim",
                                {IndexTensor(DT_INT32, {0}, TensorShape({1, 1})), RandomTensor(dt, TensorShape({1}), rng),
                                 IndexTensor(DT_INT32, {2, -1}, TensorShape({2}))},
                                {}, "shape"));
      return cases;
    }});

}  // namespace
}  // namespace harness
}  // namespace sluice

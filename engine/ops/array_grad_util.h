// Small graph-building helpers for the array ops' gradient functions
// (engine/ops/array_ops*.cc): typed index constants, Shape with a given
// out_type, and reading a Const input's value. Used while a GradientBuilder
// holds the graph; not thread-safe beyond that.
#ifndef SLUICE_ENGINE_OPS_ARRAY_GRAD_UTIL_H_
#define SLUICE_ENGINE_OPS_ARRAY_GRAD_UTIL_H_

#include <optional>
#include <string>
#include <vector>

#include "engine/graph/gradients.h"

namespace sluice {
namespace array_grad {

// A rank-1 (or rank-0 when `scalar`) int32/int64 constant.
inline Output IndexConst(GraphBuilder& b, const std::string& name, DataType dtype, const std::vector<int64_t>& values,
                         bool scalar = false) {
  TensorShape shape = scalar ? TensorShape() : TensorShape({static_cast<int64_t>(values.size())});
  Tensor t(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DT_INT64) {
      t.data<int64_t>()[i] = values[i];
    } else {
      t.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    }
  }
  return b.Const(name, t);
}

inline Output ShapeOf(GraphBuilder& b, Output x, DataType out_type = DT_INT32) {
  return b.Op("shape", "Shape", {x}, {{"out_type", MakeAttr(out_type)}});
}

// The value of `o` when its producer is a Const node.
inline std::optional<Tensor> ConstValue(Output o) {
  if (!o.valid() || o.node->type_string() != "Const") return std::nullopt;
  TensorProto proto;
  if (!GetNodeAttr(o.node->def(), "value", &proto).ok()) return std::nullopt;
  auto t = Tensor::FromProto(proto);
  if (!t.ok()) return std::nullopt;
  return std::move(t).value();
}

// The sparse gradient (IndexedSlices) of gathering rows g->input(1) of a
// tensor whose shape is `params_shape` (a vector of the indices' type):
// Gather's and GatherV2's on axis 0, and ResourceGather's, whose params are a
// variable behind a handle. Defined in array_ops_indexing.cc.
absl::Status GatherRowsGrad(GradientBuilder* g, Output params_shape);

}  // namespace array_grad
}  // namespace sluice

#endif  // SLUICE_ENGINE_OPS_ARRAY_GRAD_UTIL_H_

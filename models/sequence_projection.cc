// ProjectSequence: one product for every step's input, time-major.
#include "models/sequence_projection.h"

namespace sluice {

Output Int32VectorConst(GraphBuilder* b, const std::string& name, const std::vector<int32_t>& values) {
  return b->Const(name, Tensor::FromVector<int32_t>(values, TensorShape({static_cast<int64_t>(values.size())})));
}

ProjectedSequence ProjectSequence(GraphBuilder* b, Output x, Output kernel, Output bias, int64_t features,
                                  int64_t gates, int64_t units) {
  // [batch, time] from the input, as 1-element vectors.
  Output shape = b->Op("input_shape", "Shape", {x});
  Output batch = b->Op("batch", "Slice", {shape, Int32VectorConst(b, "batch_begin", {0}), Int32VectorConst(b, "one", {1})});
  Output time = b->Op("time", "Slice", {shape, Int32VectorConst(b, "time_begin", {1}), Int32VectorConst(b, "one", {1})});
  ProjectedSequence out;
  out.steps = b->Op("steps", "Reshape", {time, Int32VectorConst(b, "scalar", {})});
  // Every step's input projection at once: [batch * time, gates], then
  // time-major [time, batch, gates].
  Output flat = b->Op("flat_input", "Reshape", {x, Int32VectorConst(b, "flat_shape", {-1, static_cast<int32_t>(features)})});
  Output projected = b->Op("projected", "BiasAdd", {b->Op("input_product", "MatMul", {flat, kernel}), bias});
  Output per_step = b->Op(
      "per_step", "Reshape",
      {projected, b->Op("per_step_shape", "ConcatV2",
                        {batch, time, Int32VectorConst(b, "gates", {static_cast<int32_t>(gates)}), b->Scalar<int32_t>("axis", 0)})});
  out.time_major = b->Op("time_major", "Transpose", {per_step, Int32VectorConst(b, "swap", {1, 0, 2})});
  out.state_shape = b->Op("state_shape", "ConcatV2",
                          {batch, Int32VectorConst(b, "units", {static_cast<int32_t>(units)}), b->Scalar<int32_t>("axis", 0)});
  return out;
}

}  // namespace sluice

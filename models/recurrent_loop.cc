// ProjectSequence (one product for every step's input, time-major) and
// RunOverTime (the time loop).
#include "models/recurrent_loop.h"

#include "engine/graph/control_flow_builders.h"

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

absl::StatusOr<Output> RunOverTime(GraphBuilder* b, const ProjectedSequence& seq, DataType dtype,
                                   const TimeLoopOptions& options, const CellStep& step) {
  Output zeros = b->Op("zero_state", "Fill", {seq.state_shape, b->ScalarOfType("zero", dtype, 0.0)});
  std::vector<Output> initial = {b->Scalar<int32_t>("t0", 0)};
  for (int i = 0; i < options.num_states; ++i) initial.push_back(zeros);
  WhileLoopOptions loop_options;
  loop_options.name = "time_loop";
  loop_options.parallel_iterations = options.parallel_iterations;
  auto loop = BuildWhileLoop(
      b, initial,
      [&](GraphBuilder& cb, const std::vector<Output>& v) { return cb.Op("more_steps", "Less", {v[0], seq.steps}); },
      [&](GraphBuilder& bb, const std::vector<Output>& v) {
        const Output& t = v[0];
        std::vector<Output> states(v.begin() + 1, v.end());
        std::vector<Output> next = step(bb, bb.Op("step_input", "Gather", {seq.time_major, t}), states);
        if (next.size() != states.size()) return WhileBody{};
        WhileBody body;
        body.next = {bb.Op("t1", "Add", {t, bb.Scalar<int32_t>("step", 1)})};
        body.next.insert(body.next.end(), next.begin(), next.end());
        if (!options.last_only) body.per_iteration = {next[0]};
        return body;
      },
      loop_options);
  if (!loop.ok()) return loop.status();
  if (!b->ok()) return b->status();
  if (options.last_only) return loop->outputs[1];
  // [time, batch, units] -> [batch, time, units].
  return b->Op("outputs", "Transpose", {loop->stacked[0], Int32VectorConst(b, "swap_back", {1, 0, 2})});
}

}  // namespace sluice

// BuildLstm: input projection, time loop, gates.
#include "models/lstm_layer.h"

#include <vector>

#include "engine/graph/control_flow_builders.h"
#include "models/sequence_projection.h"

namespace sluice {

absl::StatusOr<Output> BuildLstm(GraphBuilder* b, Output x, const LstmWeights& weights, const LstmOptions& options) {
  const int64_t units = options.units, gates = 4 * options.units;
  ProjectedSequence seq = ProjectSequence(b, x, weights.kernel, weights.bias, options.features, gates, units);
  Output steps = seq.steps, time_major = seq.time_major;
  const DataType dtype = BaseType(x.dtype());
  Output zeros = b->Op("zero_state", "Fill", {seq.state_shape, b->ScalarOfType("zero", dtype, 0.0)});
  Output recurrent = weights.recurrent;
  const float forget_bias = options.forget_bias;
  const bool last_only = options.last_only;

  WhileLoopOptions loop_options;
  loop_options.name = "time_loop";
  loop_options.parallel_iterations = options.parallel_iterations;
  auto loop = BuildWhileLoop(
      b, {b->Scalar<int32_t>("t0", 0), zeros, zeros},
      [&](GraphBuilder& cb, const std::vector<Output>& v) { return cb.Op("more_steps", "Less", {v[0], steps}); },
      [&](GraphBuilder& bb, const std::vector<Output>& v) {
        const Output& t = v[0];
        const Output& h = v[1];
        const Output& c = v[2];
        Output z = bb.Op("z", "Add", {bb.Op("step_input", "Gather", {time_major, t}),
                                      bb.Op("recurrent_product", "MatMul", {h, recurrent})});
        Node* cell = bb.AddNode("cell", "LstmGates", {z, c}, {{"forget_bias", MakeAttr(forget_bias)}});
        if (cell == nullptr) return WhileBody{};
        Output h_next{cell, 0}, c_next{cell, 1};
        WhileBody body;
        body.next = {bb.Op("t1", "Add", {t, bb.Scalar<int32_t>("step", 1)}), h_next, c_next};
        if (!last_only) body.per_iteration = {h_next};
        return body;
      },
      loop_options);
  if (!loop.ok()) return loop.status();
  if (!b->ok()) return b->status();
  if (last_only) return loop->outputs[1];
  // [time, batch, units] -> [batch, time, units].
  return b->Op("outputs", "Transpose", {loop->stacked[0], Int32VectorConst(b, "swap_back", {1, 0, 2})});
}

}  // namespace sluice

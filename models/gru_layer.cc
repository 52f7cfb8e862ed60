// BuildGru: input projection, time loop, gates.
#include "models/gru_layer.h"

#include <vector>

#include "engine/graph/control_flow_builders.h"
#include "models/sequence_projection.h"

namespace sluice {

absl::StatusOr<Output> BuildGru(GraphBuilder* b, Output x, const GruWeights& weights, const GruOptions& options) {
  const int64_t units = options.units, gates = 3 * options.units;
  ProjectedSequence seq = ProjectSequence(b, x, weights.kernel, weights.bias, options.features, gates, units);
  const DataType dtype = BaseType(x.dtype());
  Output zeros = b->Op("zero_state", "Fill", {seq.state_shape, b->ScalarOfType("zero", dtype, 0.0)});
  const bool last_only = options.last_only;

  WhileLoopOptions loop_options;
  loop_options.name = "time_loop";
  loop_options.parallel_iterations = options.parallel_iterations;
  auto loop = BuildWhileLoop(
      b, {b->Scalar<int32_t>("t0", 0), zeros},
      [&](GraphBuilder& cb, const std::vector<Output>& v) { return cb.Op("more_steps", "Less", {v[0], seq.steps}); },
      [&](GraphBuilder& bb, const std::vector<Output>& v) {
        const Output& t = v[0];
        const Output& h = v[1];
        Output one = bb.Scalar<int32_t>("split_axis", 1);
        Node* xs = bb.AddNode("step_input", "Split", {one, bb.Op("step_row", "Gather", {seq.time_major, t})},
                              {{"num_split", MakeAttr(int64_t{3})}});
        Output hr = bb.Op("recurrent", "BiasAdd",
                          {bb.Op("recurrent_product", "MatMul", {h, weights.recurrent}), weights.recurrent_bias});
        Node* hs = bb.AddNode("recurrent_parts", "Split", {one, hr}, {{"num_split", MakeAttr(int64_t{3})}});
        if (xs == nullptr || hs == nullptr) return WhileBody{};
        Output r = bb.Op("reset", "Sigmoid", {bb.Op("reset_in", "Add", {Output{xs, 0}, Output{hs, 0}})});
        Output z = bb.Op("update", "Sigmoid", {bb.Op("update_in", "Add", {Output{xs, 1}, Output{hs, 1}})});
        Output n = bb.Op("candidate", "Tanh",
                         {bb.Op("candidate_in", "Add", {Output{xs, 2}, bb.Op("reset_recurrent", "Mul", {r, Output{hs, 2}})})});
        // h' = n + z (h - n)
        Output h_next = bb.Op("h", "Add", {n, bb.Op("kept", "Mul", {z, bb.Op("h_minus_n", "Sub", {h, n})})});
        WhileBody body;
        body.next = {bb.Op("t1", "Add", {t, bb.Scalar<int32_t>("step", 1)}), h_next};
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

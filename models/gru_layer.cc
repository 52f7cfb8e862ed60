// BuildGru: input projection, time loop, gates.
#include "models/gru_layer.h"

#include <vector>

#include "models/recurrent_loop.h"

namespace sluice {

absl::StatusOr<Output> BuildGru(GraphBuilder* b, Output x, const GruWeights& weights, const GruOptions& options) {
  ProjectedSequence seq =
      ProjectSequence(b, x, weights.kernel, weights.bias, options.features, 3 * options.units, options.units);
  TimeLoopOptions loop;
  loop.num_states = 1;  // h
  loop.last_only = options.last_only;
  loop.parallel_iterations = options.parallel_iterations;
  return RunOverTime(
      b, seq, BaseType(x.dtype()), loop,
      [&](GraphBuilder& bb, const Output& x_t, const std::vector<Output>& s) -> std::vector<Output> {
        const Output& h = s[0];
        Output one = bb.Scalar<int32_t>("split_axis", 1);
        Node* xs = bb.AddNode("step_parts", "Split", {one, x_t}, {{"num_split", MakeAttr(int64_t{3})}});
        Output hr = bb.Op("recurrent", "BiasAdd",
                          {bb.Op("recurrent_product", "MatMul", {h, weights.recurrent}), weights.recurrent_bias});
        Node* hs = bb.AddNode("recurrent_parts", "Split", {one, hr}, {{"num_split", MakeAttr(int64_t{3})}});
        if (xs == nullptr || hs == nullptr) return {};
        Output r = bb.Op("reset", "Sigmoid", {bb.Op("reset_in", "Add", {Output{xs, 0}, Output{hs, 0}})});
        Output z = bb.Op("update", "Sigmoid", {bb.Op("update_in", "Add", {Output{xs, 1}, Output{hs, 1}})});
        Output n = bb.Op("candidate", "Tanh",
                         {bb.Op("candidate_in", "Add", {Output{xs, 2}, bb.Op("reset_recurrent", "Mul", {r, Output{hs, 2}})})});
        // h' = n + z (h - n)
        return {bb.Op("h", "Add", {n, bb.Op("kept", "Mul", {z, bb.Op("h_minus_n", "Sub", {h, n})})})};
      });
}

}  // namespace sluice

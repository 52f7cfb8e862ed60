// BuildLstm: input projection, time loop, gates.
#include "models/lstm_layer.h"

#include <vector>

#include "models/recurrent_loop.h"

namespace sluice {

absl::StatusOr<Output> BuildLstm(GraphBuilder* b, Output x, const LstmWeights& weights, const LstmOptions& options) {
  ProjectedSequence seq =
      ProjectSequence(b, x, weights.kernel, weights.bias, options.features, 4 * options.units, options.units);
  TimeLoopOptions loop;
  loop.num_states = 2;  // h, c
  loop.last_only = options.last_only;
  loop.parallel_iterations = options.parallel_iterations;
  const Output recurrent = weights.recurrent;
  const float forget_bias = options.forget_bias;
  return RunOverTime(b, seq, BaseType(x.dtype()), loop,
                     [&](GraphBuilder& bb, const Output& x_t, const std::vector<Output>& s) -> std::vector<Output> {
                       Output z = bb.Op("z", "Add", {x_t, bb.Op("recurrent_product", "MatMul", {s[0], recurrent})});
                       Node* cell = bb.AddNode("cell", "LstmGates", {z, s[1]}, {{"forget_bias", MakeAttr(forget_bias)}});
                       if (cell == nullptr) return {};
                       return {Output{cell, 0}, Output{cell, 1}};
                     });
}

}  // namespace sluice

// The graph of an LSTM layer: the input projection for every time step as
// one matrix product, then an in-graph while_loop over the time steps
// (engine/graph/control_flow_builders.h) that adds the recurrent product and
// applies the gates. The number of steps is read from the input's shape at
// run time. Gates follow TensorFlow's LSTMCell (i, f, g, o order in the
// kernels' columns). Differentiable through the loop (while_gradient.h).
// Thread safety: mutates the graph; one caller at a time.
#ifndef SLUICE_MODELS_LSTM_LAYER_H_
#define SLUICE_MODELS_LSTM_LAYER_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "engine/graph/graph_builder.h"

namespace sluice {

struct LstmWeights {
  Output kernel;     // [features, 4 * units]
  Output recurrent;  // [units, 4 * units]
  Output bias;       // [4 * units]
};

struct LstmOptions {
  int64_t features = 0;
  int64_t units = 0;
  float forget_bias = 1.0f;
  // Output [batch, units] (the last h) instead of [batch, time, units].
  bool last_only = false;
  int parallel_iterations = 1;
};

// `x`: [batch, time, features] of a float type (the weights' type). The
// state starts at zero.
absl::StatusOr<Output> BuildLstm(GraphBuilder* b, Output x, const LstmWeights& weights, const LstmOptions& options);

}  // namespace sluice

#endif  // SLUICE_MODELS_LSTM_LAYER_H_

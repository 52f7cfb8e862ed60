// The graph of a GRU layer, the LSTM's lighter sibling: the input projection
// of every step as one product (recurrent_loop.h), then an in-graph
// while_loop over the time steps with one recurrent product per step. Gates
// in PyTorch's and cuDNN's form, columns in the order r, z, n:
//   r = sigmoid(x_r + h R_r + rb_r)       z = sigmoid(x_z + h R_z + rb_z)
//   n = tanh(x_n + r * (h R_n + rb_n))    h' = n + z * (h - n)
// where x_* includes the input bias and rb is the recurrent bias (the reset
// gate applied after the recurrent product, so a step needs one product).
// Differentiable through the loop (while_gradient.h); the step is made of
// ordinary ops, so their gradients need nothing GRU-specific.
// Thread safety: mutates the graph; one caller at a time.
#ifndef SLUICE_MODELS_GRU_LAYER_H_
#define SLUICE_MODELS_GRU_LAYER_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "engine/graph/graph_builder.h"

namespace sluice {

struct GruWeights {
  Output kernel;          // [features, 3 * units]
  Output recurrent;       // [units, 3 * units]
  Output bias;            // [3 * units], added to the input projection
  Output recurrent_bias;  // [3 * units], added to the recurrent product
};

struct GruOptions {
  int64_t features = 0;
  int64_t units = 0;
  // Output [batch, units] (the last h) instead of [batch, time, units].
  bool last_only = false;
  int parallel_iterations = 1;
};

// `x`: [batch, time, features] of a float type (the weights' type). The
// state starts at zero.
absl::StatusOr<Output> BuildGru(GraphBuilder* b, Output x, const GruWeights& weights, const GruOptions& options);

}  // namespace sluice

#endif  // SLUICE_MODELS_GRU_LAYER_H_

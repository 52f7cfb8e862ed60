// The part recurrent layers (lstm_layer.h, gru_layer.h) share before their
// time loop: the input projection of every step as one matrix product plus
// bias, laid out time-major so step t reads row t, and the run-time sizes
// (batch, number of steps) read from the input's shape.
// Thread safety: mutates the graph; one caller at a time.
#ifndef SLUICE_MODELS_SEQUENCE_PROJECTION_H_
#define SLUICE_MODELS_SEQUENCE_PROJECTION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "engine/graph/graph_builder.h"

namespace sluice {

struct ProjectedSequence {
  Output steps;        // int32 scalar: the input's time dimension
  Output state_shape;  // int32 [2]: [batch, units]
  Output time_major;   // [time, batch, gates]: x_t kernel + bias for every t
};

// `x`: [batch, time, features]; `kernel`: [features, gates]; `bias`: [gates].
ProjectedSequence ProjectSequence(GraphBuilder* b, Output x, Output kernel, Output bias, int64_t features,
                                  int64_t gates, int64_t units);

// An int32 vector constant.
Output Int32VectorConst(GraphBuilder* b, const std::string& name, const std::vector<int32_t>& values);

}  // namespace sluice

#endif  // SLUICE_MODELS_SEQUENCE_PROJECTION_H_

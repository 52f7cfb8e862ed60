// What recurrent layers (lstm_layer.h, gru_layer.h) share: the input
// projection of every step as one matrix product plus bias, laid out
// time-major so step t reads row t, with the run-time sizes (batch, number of
// steps) read from the input's shape; and the in-graph while_loop over the
// steps (engine/graph/control_flow_builders.h) that runs a cell's step.
// Thread safety: mutates the graph; one caller at a time.
#ifndef SLUICE_MODELS_RECURRENT_LOOP_H_
#define SLUICE_MODELS_RECURRENT_LOOP_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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

// One step of a cell: from the step's row of the projection ([batch, gates])
// and the states (h first), the next states (h first); empty after an error
// (the builder holds it).
using CellStep =
    std::function<std::vector<Output>(GraphBuilder& bb, const Output& x_t, const std::vector<Output>& states)>;

struct TimeLoopOptions {
  int num_states = 1;  // zero-initialized [batch, units] states (h, c, ...)
  bool last_only = false;
  int parallel_iterations = 1;
};

// Runs `step` over every time step of `seq`. Returns every step's h as
// [batch, time, units], or the last h ([batch, units]) with last_only.
absl::StatusOr<Output> RunOverTime(GraphBuilder* b, const ProjectedSequence& seq, DataType dtype,
                                   const TimeLoopOptions& options, const CellStep& step);

// An int32 vector constant.
Output Int32VectorConst(GraphBuilder* b, const std::string& name, const std::vector<int32_t>& values);

}  // namespace sluice

#endif  // SLUICE_MODELS_RECURRENT_LOOP_H_

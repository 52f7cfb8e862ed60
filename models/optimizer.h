// Optimizers as graph construction: gradients of the loss with respect to
// every trainable variable (engine/graph/gradients.h), optional clipping by
// global norm, slot variables, and one Apply* update per variable
// (SGD, Momentum/Nesterov, Adagrad, RMSProp, Adam); then global_step += 1.
// The learning rate comes from a scalar float placeholder fed each step.
// Thread safety: one builder per graph.
#ifndef SLUICE_MODELS_OPTIMIZER_H_
#define SLUICE_MODELS_OPTIMIZER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "configs/experiment.pb.h"
#include "engine/graph/graph_builder.h"
#include "models/model_builder.h"

namespace sluice {
namespace models {

struct TrainingOps {
  Node* train_op = nullptr;           // run once per step
  Node* global_step = nullptr;        // VariableV2 int64 scalar
  Output learning_rate;               // the placeholder to feed
  Output global_norm;                 // of the (unclipped) gradients
  std::vector<VariableInfo> slots;    // optimizer state, initialized with the model
  // Gradients by variable name (dense), for histogram summaries.
  std::vector<std::pair<std::string, Output>> gradients;
};

// The int64 scalar VariableV2 "global_step" (its initial value 0 in `info`).
Node* AddGlobalStep(GraphBuilder* b, VariableInfo* info);

// `global_step` is the node AddGlobalStep made; the step's train_op
// increments it after every update.
absl::Status BuildTrainingOps(const config::Optimizer& optimizer, const std::vector<VariableInfo>& variables,
                              Output loss, Node* global_step, const VariableInfo& global_step_info, GraphBuilder* b,
                              TrainingOps* out);

// Assigns every variable's (and slot's) initial value; returns the grouping
// NoOp named `name`.
Node* BuildInitOp(const std::vector<VariableInfo>& variables, GraphBuilder* b, const std::string& name = "init");

}  // namespace models
}  // namespace sluice

#endif  // SLUICE_MODELS_OPTIMIZER_H_

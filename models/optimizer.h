// Optimizers as graph construction: gradients of the loss with respect to
// every trainable variable (engine/graph/gradients.h), optional clipping by
// global norm, slot variables, and one Apply* update per variable
// (SGD, Momentum/Nesterov, Adagrad, RMSProp, Adam); then global_step += 1.
// A sparse gradient (IndexedSlices, from an embedding lookup) has its
// duplicate rows summed and updates only those rows of the variable and its
// slots (ScatterSub, SparseApply*; Adam is "lazy" on sparse gradients: see
// optimizer.cc), so a step costs nothing proportional to the table's size.
// The learning rate comes from a scalar float placeholder fed each step.
// Thread safety: one builder per graph.
#ifndef SLUICE_MODELS_OPTIMIZER_H_
#define SLUICE_MODELS_OPTIMIZER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "configs/experiment.pb.h"
#include "engine/graph/gradients.h"
#include "engine/graph/graph_builder.h"
#include "models/model_builder.h"

namespace sluice {
namespace models {

struct TrainingOps {
  Node* train_op = nullptr;           // run once per step
  Node* global_step = nullptr;        // VariableV2 int64 scalar
  Node* increment = nullptr;          // global_step += 1 after the updates (not with SyncReplicas)
  Output learning_rate;               // the placeholder to feed
  Output global_norm;                 // of the (unclipped) gradients
  std::vector<VariableInfo> slots;    // optimizer state, initialized with the model
  // Gradients by variable name (dense), for histogram summaries.
  std::vector<std::pair<std::string, Output>> gradients;
  // With SyncReplicas (null otherwise): the ops of synchronous replication.
  struct Sync {
    // Every worker's step (train_op is the same node): puts this worker's
    // gradients into the accumulators (tagged with its local step), then waits
    // for a token and makes it the local step. Output: the new local step.
    Node* worker_step = nullptr;
    // The chief's step: its own gradients in, then takes the average of
    // replicas_to_aggregate per variable, applies it, advances the global step
    // and releases total_replicas tokens (one its own). Output: the new step.
    Node* chief_step = nullptr;
    // The chief, after initializing or restoring: sets every accumulator's
    // step and drops the tokens left in the queue (by a previous incarnation).
    Node* chief_init = nullptr;
    // Every worker, before its first step: local step = global step.
    Node* local_init = nullptr;
    Node* local_step = nullptr;  // int64 variable on the worker
    std::vector<Node*> accumulators;
    std::vector<Node*> stale;  // AccumulatorNumStale of each accumulator
    Node* aggregated = nullptr;  // AccumulatorLastTaken of the first one
  } sync;
};

// Synchronous data-parallel training (OSDI §4.4, Figure 8; TensorFlow's
// SyncReplicasOptimizer): one ConditionalAccumulator per variable (colocated
// with it; a SparseConditionalAccumulator for a sparse gradient) and a token queue beside the global step (models/replication has
// their ops, which must be linked to run the graph).
struct SyncReplicas {
  int replicas_to_aggregate = 1;
  int total_replicas = 1;  // tokens released per step: one per worker
};

// The int64 scalar VariableV2 "global_step" (its initial value 0 in `info`).
Node* AddGlobalStep(GraphBuilder* b, VariableInfo* info);

// `global_step` is the node AddGlobalStep made; the step's train_op
// increments it after every update.
// With `sync`, train_op is out->sync.worker_step (see TrainingOps::Sync).
absl::Status BuildTrainingOps(const config::Optimizer& optimizer, const std::vector<VariableInfo>& variables,
                              Output loss, Node* global_step, const VariableInfo& global_step_info, GraphBuilder* b,
                              TrainingOps* out, const SyncReplicas* sync = nullptr);

// One update op per variable (Apply*, or the sparse update of a sparse
// gradient whose indices are distinct; creating the optimizer's slots under
// `root`), with names under `b`'s prefix.
absl::Status BuildApplyOps(const config::Optimizer& optimizer, const std::vector<VariableInfo>& variables,
                           const std::vector<Gradient>& gradients, Output learning_rate, Node* global_step,
                           GraphBuilder* root, GraphBuilder b, std::vector<VariableInfo>* slots,
                           std::vector<Node*>* updates);

// Assigns every variable's (and slot's) initial value; returns the grouping
// NoOp named `name`.
Node* BuildInitOp(const std::vector<VariableInfo>& variables, GraphBuilder* b, const std::string& name = "init");

}  // namespace models
}  // namespace sluice

#endif  // SLUICE_MODELS_OPTIMIZER_H_

// The whole training graph of an experiment (DESIGN.md): input pipelines ->
// model (a training tower, and an evaluation tower sharing its variables) ->
// loss -> gradients -> updates, plus the init op. Config problems (shape
// mismatches, bad raw nodes) come back located, like the loader's.
// Thread safety: pure construction.
#ifndef SLUICE_MODELS_TRAINING_GRAPH_H_
#define SLUICE_MODELS_TRAINING_GRAPH_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "configs/config_errors.h"
#include "configs/load.h"
#include "engine/framework/graph.pb.h"
#include "inputs/queue_runner.h"
#include "models/input_pipeline.h"

namespace sluice {
namespace models {

struct VariableSummary {
  std::string name;
  TensorShape shape;
  // false: optimizer slots, the global step, and the model's state that no
  // gradient trains (batch_norm's moving statistics)
  bool trainable = true;
  // A part of a variable split by rows (VariableInfo::logical): checkpoints
  // hold the whole `logical` (shape logical_shape), row r of it in part
  // r % num_parts at row r / num_parts. Whole variables: num_parts 1.
  std::string logical;
  int part = 0;
  int num_parts = 1;
  TensorShape logical_shape;
  bool slot = false;  // an optimizer slot or the global step
};

struct TrainingGraph {
  GraphDef graph;
  std::string init_op;          // target: assigns every variable's initial value
  std::string train_op;         // target: one step
  std::string loss;             // scalar float: the total training loss
  std::string learning_rate;    // placeholder to feed each step
  std::string global_step;      // int64 variable
  std::string global_norm;      // scalar float: gradient norm
  std::vector<std::pair<std::string, std::string>> train_metrics;  // (name, scalar tensor)
  std::vector<std::pair<std::string, std::string>> eval_metrics;
  std::string eval_loss;        // "" without an eval pipeline
  // The model's one loss is a sampled_softmax: eval_loss is a full softmax
  // cross-entropy, whose exp is the perplexity.
  bool eval_perplexity = false;
  InputPipeline train_input;
  InputPipeline eval_input;
  bool has_eval = false;
  std::vector<VariableSummary> variables;
  std::vector<std::pair<std::string, std::string>> gradients;  // (variable, gradient tensor)
  int64_t forward_flops_per_example = 0;
  int64_t parameters = 0;
  // Per-example elements of every layer's output (activations), for the
  // memory estimate.
  int64_t activation_elements_per_example = 0;

  // Replicated runs (ReplicaOptions::num_replicas > 1).
  // Fetched with every step: the global step after it ("": the loop counts).
  std::string step_tensor;
  // One bool per variable (IsVariableInitialized): a worker waits for the
  // chief to initialize or restore them.
  std::vector<std::string> ready;
  // Sync: the chief's step (train_op is every other worker's), what the chief
  // runs after initializing or restoring, what every worker runs before its
  // first step, and the worker-local variable that must stay on each worker.
  std::string chief_train_op;
  std::string chief_init_op;
  std::string local_init_op;
  std::string local_step;
  // Sync: each accumulator's count of stale gradients (int64 scalars).
  std::vector<std::string> stale_gradients;
  // Sync: how many gradients the last step averaged (int32 scalar).
  std::string aggregated_gradients;
};

// One worker's part of a between-graph replicated run (OSDI §4.4).
struct ReplicaOptions {
  int num_replicas = 1;    // the workers; 1: not replicated
  int replica_index = 0;   // this worker: reads training records i with i % num_replicas == replica_index
  bool sync = false;       // else async: each worker applies its own gradients
  int replicas_to_aggregate = 0;  // sync; 0: num_replicas
  // The training batch passes through a staging area
  // (PipelineOptions::stage_batches; TrainingGraph::train_input.stage_op).
  bool stage_batches = false;
};

// Builds the graph. Config errors go to `errors` (and the result is then
// incomplete); other failures are returned.
absl::Status BuildTrainingGraph(const config::LoadedExperiment& loaded, TrainingGraph* out,
                                config::ConfigErrors* errors, const ReplicaOptions& replica = {});

}  // namespace models
}  // namespace sluice

#endif  // SLUICE_MODELS_TRAINING_GRAPH_H_

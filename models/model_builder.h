// Compiling an experiment's model section into graph nodes: layers,
// initializers, losses and metrics (models/*.cc), from feature tensors to
// logits and a total loss. Static shapes are tracked per layer so a mismatch
// is reported against the layer, with both shapes, before any work starts.
// Thread safety: one builder per graph.
#ifndef SLUICE_MODELS_MODEL_BUILDER_H_
#define SLUICE_MODELS_MODEL_BUILDER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "configs/config_errors.h"
#include "configs/load.h"
#include "engine/framework/shape_inference.h"
#include "engine/graph/graph_builder.h"

namespace sluice {
namespace models {

// A tensor flowing between layers, with its static shape (batch dim unknown).
struct Feature {
  Output tensor;
  PartialShape shape;
  // Integer ids known to lie in [0, id_limit) (a text input's word ids); 0:
  // unknown. Tables indexed by them must have at least id_limit rows.
  int64_t id_limit = 0;
};

// A trainable variable created by the model.
struct VariableInfo {
  std::string name;   // the VariableV2 node's name
  Node* variable = nullptr;
  Output initial_value;  // what the init op assigns
  TensorShape shape;
  bool regularized = false;  // included in L2 regularization
  // False for state the model keeps but no gradient trains (a batch_norm
  // layer's moving mean and variance): checkpointed, not optimized.
  bool trainable = true;
  float l2_weight = 0;
  // One part of a variable split by rows modulo num_parts (an embedding
  // table with `partitions`): this variable holds rows part, part +
  // num_parts, ... of the whole variable `logical` (shape logical_shape),
  // row r at r / num_parts. Checkpoints hold the whole. A whole variable
  // has num_parts 1 and an empty `logical`.
  std::string logical;
  int part = 0;
  int num_parts = 1;
  TensorShape logical_shape;
};

// What a loss predicts, for export (models/inference_graph.h).
struct Prediction {
  // The logits or predictions layer (or feature) a loss reads, or
  // "<sampled softmax's name>/logits".
  std::string name;
  Output tensor;
  PartialShape shape;
  // Logits over classes (softmax cross-entropy, sampled softmax): their
  // probabilities and classes are exported too.
  bool classes = false;
  std::string what;  // "'logits'", for the export's summary
};

struct ModelOutputs {
  std::map<std::string, Feature> named;  // features, layers and raw nodes by name
  Output total_loss;                     // scalar float
  std::vector<std::pair<std::string, Output>> losses;   // per configured loss, for summaries
  std::vector<std::pair<std::string, Output>> metrics;  // scalar float per metric ("accuracy")
  // One per loss, in the config's order; a sampled softmax's only when not
  // training (its full logits are built in evaluation alone).
  std::vector<Prediction> predictions;
  std::vector<VariableInfo> variables;
  // Training towers: ops that must run once with every step besides the
  // gradient updates (a batch_norm layer's moving statistics).
  std::vector<Node*> update_ops;
  // Forward FLOPs per example (multiply-adds count 2), for the plan.
  int64_t forward_flops_per_example = 0;
  int64_t parameters() const;  // the trainable variables' elements
};

struct ModelOptions {
  // Graph-level seed; each random op gets (seed, a stable hash of its name).
  int64_t seed = 1;
  // Node-name prefix of this copy of the model ("" for training, "eval" for
  // the evaluation copy).
  std::string tower;
  // Dropout and other training-only behaviour.
  bool training = true;
  // Read the variables another tower created (by shared_name) instead of
  // creating new ones; `variables` then lists the shared ones.
  bool reuse_variables = false;
  // The int64 global step: dropout draws its mask and augment its flips and
  // shifts at this counter, so the draws are a function of (seed, step) and
  // resume exactly. Required when `training` and the model has dropout or
  // augment.
  Output global_step;
};

// This machine's physical memory in bytes; 0 when unknown. Sizes past it are
// config errors (a layer's weights here, the plan's estimate in `train`).
double MachineMemoryBytes();

// Builds the model on top of `features` (by name: "image", "label", ...).
// Config errors (shape mismatches, bad raw nodes) are appended to `errors`
// with the location of the layer; the returned status is the first
// graph-building error that is not a config error.
absl::Status BuildModel(const config::LoadedExperiment& loaded, const ModelOptions& options,
                        const std::map<std::string, Feature>& features, GraphBuilder* b, ModelOutputs* out,
                        config::ConfigErrors* errors);

}  // namespace models
}  // namespace sluice

#endif  // SLUICE_MODELS_MODEL_BUILDER_H_

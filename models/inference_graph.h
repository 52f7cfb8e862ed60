// The inference graph of an experiment, for export: a Placeholder for each
// feature the model reads (named after it: "image", "tokens", ... with the
// dtype and shape the input pipeline gives, batch dim unknown), the model in
// evaluation mode (dropout off, the full softmax of a sampled softmax), and
// an Identity named "outputs/<name>" for each exported tensor. By default
// those are each loss's predictions: a softmax cross-entropy's logits layer
// L gives outputs/L, outputs/L/probabilities (Softmax over the last axis)
// and outputs/L/classes (ArgMax over it, int64); a mean squared error's
// predictions P gives outputs/P; a sampled softmax S gives outputs/S/logits
// (inputs . weights^T + biases over all classes, [batch, ..., classes] like
// its inputs when their dims are known, else a row per position) and its
// probabilities and classes. Only what the outputs need is kept, so labels
// and losses are gone. Sluice's own LstmGates nodes are written as the
// TensorFlow ops they stand for (Split, Sigmoid, Tanh, Mul, Add); the
// layers' other ops are TensorFlow's (a raw `node {}` can still name one of
// Sluice's own ops). The model's variables are still VariableV2 nodes
// (FreezeVariables, below, turns them into constants).
// Thread safety: pure construction.
#ifndef SLUICE_MODELS_INFERENCE_GRAPH_H_
#define SLUICE_MODELS_INFERENCE_GRAPH_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "configs/config_errors.h"
#include "configs/load.h"
#include "engine/framework/graph.pb.h"
#include "engine/framework/shape_inference.h"
#include "engine/framework/tensor.h"
#include "models/training_graph.h"

namespace sluice {
namespace models {

// One end of the exported graph: a Placeholder (input) or an Identity
// (output) node named `node`, whose output 0 has this dtype and shape.
struct InferenceEndpoint {
  std::string node;
  DataType dtype = DT_FLOAT;
  PartialShape shape;
  std::string what;  // where it comes from, for the export's summary ("'fc2'")
};

struct InferenceGraph {
  GraphDef graph;
  std::vector<InferenceEndpoint> inputs;
  std::vector<InferenceEndpoint> outputs;
  // The model variables the outputs read (checkpoint names and parts, as in
  // TrainingGraph::variables): trainable ones, and state no gradient trains
  // (batch_norm's moving statistics) with trainable false.
  std::vector<VariableSummary> variables;
  // A text input's words in id order (InputPipeline::vocabulary); empty for
  // other inputs.
  std::vector<std::string> vocabulary;
};

struct InferenceOptions {
  // Names of layers, features or raw nodes to export instead of the losses'
  // predictions; empty: the default outputs (above).
  std::vector<std::string> outputs;
  // Write Sluice's LstmGates as TensorFlow's ops (ExpandLstmGates); false
  // keeps the one-node step, for graphs that only Sluice will run.
  bool tensorflow_ops = true;
};

// A vocabulary file's text: a word a line, a word's id its line's index.
std::string VocabularyFileText(const std::vector<std::string>& words);

// Builds the graph. Config errors go to `errors` (the result is then
// incomplete). InvalidArgument for what cannot be exported as asked: an
// unknown name in options.outputs (with the nearest valid name), outputs
// that read a stateful node (a raw node's random op, say), a model node
// named like an output. Nodes carry no device. Other failures are returned.
absl::Status BuildInferenceGraph(const config::LoadedExperiment& loaded, const InferenceOptions& options,
                                 InferenceGraph* out, config::ConfigErrors* errors);

// Rewrites each LstmGates node (Sluice's one-node LSTM step,
// engine/ops/rnn_ops.cc) as the TensorFlow ops it stands for: z split into
// i f g o along axis 1, c = sig(f + forget_bias) * c_prev + sig(i) * tanh(g)
// (node "<name>/c"), h = sig(o) * tanh(c). The node keeps its name and
// becomes h's Mul, so readers of output 0 read h; readers of output 1 are
// pointed at "<name>/c". Its constants wait on z's node, which puts them in
// z's loop frame when the step is a loop's body. InvalidArgument when
// something reads output 2 (the activations, which only a gradient needs)
// or a new node's name is taken.
absl::Status ExpandLstmGates(GraphDef* graph);

// Replaces each VariableV2 node of `graph` named in `values` by a Const of
// that value (the node keeps its name, so whatever read the variable reads
// the constant). InvalidArgument when a named node is missing or is not a
// VariableV2 of the value's dtype and shape, or when a VariableV2 is left
// without a value.
absl::Status FreezeVariables(const std::map<std::string, Tensor>& values, GraphDef* graph);

}  // namespace models
}  // namespace sluice

#endif  // SLUICE_MODELS_INFERENCE_GRAPH_H_

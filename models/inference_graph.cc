// Inference graph assembly and variable freezing (inference_graph.h).
#include "models/inference_graph.h"

#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/framework/node_def_util.h"
#include "engine/framework/op_def.h"
#include "engine/graph/graph_builder.h"
#include "engine/graph/subgraph.h"
#include "engine/platform/status_macros.h"
#include "models/model_builder.h"

namespace sluice {
namespace models {
namespace {

// The tensors to export, each to be named outputs/<name>.
absl::StatusOr<std::vector<Prediction>> ChooseOutputs(const InferenceOptions& options, const ModelOutputs& model,
                                                      const std::map<std::string, PipelineFeature>& features) {
  std::vector<Prediction> chosen;
  std::set<std::string> seen;
  if (!options.outputs.empty()) {
    std::vector<std::string> names;
    for (const auto& [name, f] : model.named) names.push_back(name);
    for (const std::string& name : options.outputs) {
      auto it = model.named.find(name);
      if (it == model.named.end() || !it->second.tensor.valid()) {
        const std::string guess = ClosestMatch(name, names);
        return absl::InvalidArgumentError(
            absl::StrCat("export output '", name, "' is not a layer, feature or node of the model",
                         guess.empty() ? absl::StrCat("; they are: ", absl::StrJoin(names, ", "))
                                       : absl::StrCat(" (did you mean '", guess, "'?)")));
      }
      if (!seen.insert(name).second) continue;
      chosen.push_back({name, it->second.tensor, it->second.shape, false,
                        features.count(name) ? absl::StrCat("feature '", name, "'") : absl::StrCat("'", name, "'")});
    }
    return chosen;
  }
  for (const Prediction& p : model.predictions) {
    if (seen.insert(p.name).second) {
      chosen.push_back(p);
      continue;
    }
    for (Prediction& x : chosen) {  // two losses read one layer: logits if either takes it as such
      if (x.name == p.name) x.classes |= p.classes;
    }
  }
  if (chosen.empty()) {
    return absl::InvalidArgumentError("the model's losses predict nothing to export; name the layers to export");
  }
  return chosen;
}

}  // namespace

absl::Status ExpandLstmGates(GraphDef* graph) {
  std::set<std::string> names;
  for (const NodeDef& n : graph->node()) names.insert(n.name());
  std::map<std::string, std::string> renamed;  // "node:1" -> "node/c"
  const int original = graph->node_size();
  for (int k = 0; k < original; ++k) {
    if (graph->node(k).op() != "LstmGates") continue;
    const NodeDef gates = graph->node(k);
    if (gates.input_size() < 2)
      return absl::InvalidArgumentError(absl::StrCat("LstmGates '", gates.name(), "' lacks inputs"));
    const std::string& n = gates.name();
    auto type = gates.attr().find("T");
    auto bias = gates.attr().find("forget_bias");
    if (type == gates.attr().end()) return absl::InvalidArgumentError(absl::StrCat("LstmGates '", n, "' has no T"));
    const DataType t = type->second.type();
    const double forget_bias = bias == gates.attr().end() ? 1.0 : bias->second.f();
    auto add = [&](const std::string& suffix, const std::string& op, std::vector<std::string> inputs,
                   AttrList attrs) -> absl::Status {
      const std::string name = absl::StrCat(n, "/", suffix);
      if (!names.insert(name).second) {
        return absl::InvalidArgumentError(absl::StrCat("cannot expand LstmGates '", n, "': node '", name, "' exists"));
      }
      NodeDef* node = graph->add_node();
      node->set_name(name);
      node->set_op(op);
      node->set_device(gates.device());
      for (std::string& in : inputs) node->add_input(std::move(in));
      for (auto& [key, value] : attrs) (*node->mutable_attr())[key] = std::move(value);
      return absl::OkStatus();
    };
    // The constants wait on z's node, and on what the node waited on: every
    // new node depends on them through the split.
    auto z = ParseTensorName(gates.input(0));
    if (!z.ok()) return z.status();
    std::vector<std::string> waits = {absl::StrCat("^", z->node)};
    for (const std::string& in : gates.input()) {
      if (!in.empty() && in[0] == '^') waits.push_back(in);
    }
    Tensor bias_value =
        t == DT_DOUBLE ? Tensor::Scalar<double>(forget_bias) : Tensor::Scalar<float>(static_cast<float>(forget_bias));
    const AttrList typed = {{"T", MakeAttr(t)}};
    absl::Status s = add("split_dim", "Const", waits,
                         {{"dtype", MakeAttr(DT_INT32)}, {"value", MakeAttr(Tensor::Scalar<int32_t>(1))}});
    if (s.ok()) {
      s = add("split", "Split", {n + "/split_dim", gates.input(0)}, {{"T", MakeAttr(t)}, {"num_split", MakeAttr(4)}});
    }
    if (s.ok()) s = add("forget_bias", "Const", waits, {{"dtype", MakeAttr(t)}, {"value", MakeAttr(bias_value)}});
    if (s.ok()) s = add("i", "Sigmoid", {n + "/split"}, typed);
    if (s.ok()) s = add("f_biased", "Add", {n + "/split:1", n + "/forget_bias"}, typed);
    if (s.ok()) s = add("f", "Sigmoid", {n + "/f_biased"}, typed);
    if (s.ok()) s = add("g", "Tanh", {n + "/split:2"}, typed);
    if (s.ok()) s = add("o", "Sigmoid", {n + "/split:3"}, typed);
    if (s.ok()) s = add("kept", "Mul", {n + "/f", gates.input(1)}, typed);
    if (s.ok()) s = add("added", "Mul", {n + "/i", n + "/g"}, typed);
    if (s.ok()) s = add("c", "Add", {n + "/kept", n + "/added"}, typed);
    if (s.ok()) s = add("tanh_c", "Tanh", {n + "/c"}, typed);
    if (!s.ok()) return s;
    NodeDef* h = graph->mutable_node(k);
    h->set_op("Mul");
    h->clear_input();
    h->add_input(n + "/o");
    h->add_input(n + "/tanh_c");
    for (const std::string& in : gates.input()) {
      if (!in.empty() && in[0] == '^') h->add_input(in);
    }
    h->mutable_attr()->clear();
    (*h->mutable_attr())["T"] = MakeAttr(t);
    renamed[n + ":1"] = n + "/c";
    renamed[n + ":2"] = "";
  }
  for (NodeDef& node : *graph->mutable_node()) {
    for (std::string& in : *node.mutable_input()) {
      auto it = renamed.find(in);
      if (it == renamed.end()) continue;
      if (it->second.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("node '", node.name(), "' reads the gate activations of ", in,
                                                       ", which only a gradient needs"));
      }
      in = it->second;
    }
  }
  return absl::OkStatus();
}

absl::Status BuildInferenceGraph(const config::LoadedExperiment& loaded, const InferenceOptions& options,
                                 InferenceGraph* out, config::ConfigErrors* errors) {
  const config::Experiment& e = loaded.experiment;
  // The features' dtypes and shapes are the training input's (an evaluation
  // input gives the same ones, and a text input's ids come from training's
  // vocabulary): its nodes are built only to learn them.
  GraphDef input_def;
  InputPipeline input;
  PipelineOptions po;
  po.scope = "input/export";
  po.seed = e.train().seed();
  // As training builds it: the training split of a text input (whose
  // vocabulary the ids are), and no counting of an evaluation's records.
  po.training = true;
  absl::Status s = BuildInputPipeline(e.input().train(), po, &input_def, &input);
  if (!s.ok()) {
    errors->Add(loaded.Where(e.input(), "train"), std::string(s.message()));
    return absl::OkStatus();
  }

  Graph graph;
  GraphBuilder b(&graph);
  std::map<std::string, Feature> features;
  for (const auto& [name, f] : input.features) {
    TensorShapeProto shape;
    f.shape.AsProto(&shape);
    Node* placeholder = b.AddNode(name, "Placeholder", {}, {{"dtype", MakeAttr(f.dtype)}, {"shape", MakeAttr(shape)}});
    if (placeholder == nullptr) return b.status();
    if (placeholder->name() != name) {
      return absl::InternalError(absl::StrCat("feature '", name, "' became node '", placeholder->name(), "'"));
    }
    features[name] = Feature{Output{placeholder, 0}, f.shape, f.id_limit};
  }
  ModelOptions mo;
  mo.seed = e.train().seed();
  mo.training = false;
  ModelOutputs model;
  s = BuildModel(loaded, mo, features, &b, &model, errors);
  if (!s.ok()) return s;
  if (!errors->empty()) return absl::OkStatus();
  auto chosen = ChooseOutputs(options, model, input.features);
  if (!chosen.ok()) return chosen.status();

  GraphBuilder ob = b.WithSubPrefix("outputs");
  std::vector<Node*> roots;
  auto add_output = [&](const std::string& name, const std::string& op, const std::vector<Output>& inputs,
                        const AttrList& attrs, const PartialShape& shape, const std::string& what) -> absl::Status {
    const std::string full = absl::StrCat("outputs/", name);
    if (graph.FindNode(full) != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("cannot name an exported output '", full,
                                                     "': the model has a node of that name (rename its layer)"));
    }
    Node* n = ob.AddNode(name, op, inputs, attrs);
    if (n == nullptr) return ob.status();
    roots.push_back(n);
    out->outputs.push_back({n->name(), n->output_type(0), shape, what});
    return absl::OkStatus();
  };
  for (const Prediction& x : *chosen) {
    s = add_output(x.name, "Identity", {x.tensor}, {}, x.shape, x.what);
    if (!s.ok()) return s;
    if (!x.classes) continue;
    s = add_output(absl::StrCat(x.name, "/probabilities"), "Softmax", {x.tensor}, {}, x.shape,
                   absl::StrCat("softmax of ", x.what));
    if (!s.ok()) return s;
    PartialShape classes_shape = PartialShape::Unknown();
    int32_t axis = -1;
    if (x.shape.rank_known() && x.shape.rank() >= 1) {
      axis = x.shape.rank() - 1;
      std::vector<int64_t> dims(x.shape.dims().begin(), x.shape.dims().end() - 1);
      classes_shape = PartialShape::FromDims(dims);
    }
    s = add_output(absl::StrCat(x.name, "/classes"), "ArgMax",
                   {x.tensor, ob.Scalar<int32_t>(absl::StrCat(x.name, "/classes_axis"), axis)},
                   {{"output_type", MakeAttr(DT_INT64)}}, classes_shape, absl::StrCat("argmax of ", x.what));
    if (!s.ok()) return s;
  }
  if (!b.ok()) return b.status();
  PruneForRoots(roots, &graph);
  for (Node* n : graph.nodes()) {
    // A variable is frozen, and TensorArrays and stacks live for one run (a
    // loop's outputs); anything else with state (a raw node's random op, a
    // queue) has no place in a function of the inputs.
    const std::string& op = n->type_string();
    const bool per_run = absl::StartsWith(op, "TensorArray") || absl::StartsWith(op, "Stack");
    if (n->IsStateful() && op != "VariableV2" && op != "Variable" && !per_run) {
      return absl::InvalidArgumentError(absl::StrCat("node '", n->name(), "' (", n->type_string(),
                                                     ") of the exported outputs keeps state; an export computes "
                                                     "its outputs from its inputs alone"));
    }
  }

  for (const auto& [name, f] : input.features) {
    if (graph.FindNode(name) == nullptr) continue;  // read only by losses and metrics
    std::string what = absl::StrCat("feature '", name, "' as the input pipeline gives it");
    if (name == "image" && f.dtype == DT_FLOAT) {
      absl::StrAppend(&what, e.input().train().scale_to_unit() ? ": pixels times 1/255" : ": pixels 0-255");
    }
    out->inputs.push_back({name, f.dtype, f.shape, what});
  }
  out->vocabulary = input.vocabulary;
  for (const VariableInfo& v : model.variables) {
    if (graph.FindNode(v.name) == nullptr) continue;
    out->variables.push_back({v.name, v.shape, v.trainable, v.logical, v.part, v.num_parts, v.logical_shape});
  }
  graph.ToGraphDef(&out->graph);
  // The graph runs wherever it is loaded: no device of this run's placement.
  for (NodeDef& node : *out->graph.mutable_node()) node.clear_device();
  if (!options.tensorflow_ops) return absl::OkStatus();
  SLUICE_RETURN_IF_ERROR(ExpandLstmGates(&out->graph));
  // The layers build TensorFlow's ops; a raw node may name one of Sluice's own.
  for (const NodeDef& node : out->graph.node()) {
    const OpDef* def = OpRegistry::Global()->LookUp(node.op());
    if (def != nullptr && def->sluice_only) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", node.name(), "' of the exported outputs is Sluice's own op ", node.op(),
          ", which TensorFlow does not have: the export would not load there (write that node with TensorFlow's ops, "
          "or export other outputs with --export_outputs)"));
    }
  }
  return absl::OkStatus();
}

std::string VocabularyFileText(const std::vector<std::string>& words) {
  return absl::StrCat(absl::StrJoin(words, "\n"), "\n");
}

absl::Status FreezeVariables(const std::map<std::string, Tensor>& values, GraphDef* graph) {
  std::set<std::string> frozen;
  for (NodeDef& node : *graph->mutable_node()) {
    const bool variable = node.op() == "VariableV2" || node.op() == "Variable";
    auto it = values.find(node.name());
    if (it == values.end()) {
      if (variable)
        return absl::InvalidArgumentError(absl::StrCat("variable '", node.name(), "' has no value to freeze"));
      continue;
    }
    if (!variable) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", node.name(), "' is a ", node.op(), ", not a variable; it cannot be frozen"));
    }
    const Tensor& value = it->second;
    auto dtype = node.attr().find("dtype");
    if (dtype == node.attr().end() || dtype->second.type() != value.dtype()) {
      return absl::InvalidArgumentError(
          absl::StrCat("variable '", node.name(), "' is not of the value's type ", DataTypeString(value.dtype())));
    }
    auto shape = node.attr().find("shape");
    if (shape != node.attr().end()) {
      auto declared = PartialShape::FromProto(shape->second.shape());
      if (!declared.ok() || !declared->IsCompatibleWith(value.shape())) {
        return absl::InvalidArgumentError(
            absl::StrCat("variable '", node.name(), "' does not have the value's shape ", value.shape().DebugString()));
      }
    }
    node.set_op("Const");
    node.mutable_attr()->clear();
    (*node.mutable_attr())["dtype"] = MakeAttr(value.dtype());
    (*node.mutable_attr())["value"] = MakeAttr(value);
    frozen.insert(node.name());
  }
  for (const auto& [name, value] : values) {
    if (!frozen.count(name))
      return absl::InvalidArgumentError(absl::StrCat("variable '", name, "' is not in the graph"));
  }
  return absl::OkStatus();
}

}  // namespace models
}  // namespace sluice

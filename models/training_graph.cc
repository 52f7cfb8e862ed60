// Training graph assembly.
#include "models/training_graph.h"

#include "absl/strings/str_cat.h"
#include "engine/graph/graph_constructor.h"
#include "models/model_builder.h"
#include "models/optimizer.h"

namespace sluice {
namespace models {
namespace {

absl::StatusOr<std::map<std::string, Feature>> Features(const InputPipeline& input, const Graph& graph) {
  std::map<std::string, Feature> features;
  for (const auto& [name, f] : input.features) {
    auto id = ParseTensorName(f.tensor);
    if (!id.ok()) return id.status();
    Node* node = graph.FindNode(id->node);
    if (node == nullptr) return absl::InternalError(absl::StrCat("input tensor '", f.tensor, "' is missing"));
    features[name] = Feature{Output{node, id->index}, f.shape, f.id_limit};
  }
  return features;
}

}  // namespace

absl::Status BuildTrainingGraph(const config::LoadedExperiment& loaded, TrainingGraph* out,
                                config::ConfigErrors* errors, const ReplicaOptions& replica) {
  const bool replicated = replica.num_replicas > 1;
  const config::Experiment& e = loaded.experiment;
  GraphDef input_def;
  PipelineOptions train_options;
  train_options.scope = "input/train";
  train_options.seed = e.train().seed();
  train_options.deterministic = e.train().deterministic();
  train_options.num_shards = std::max(1, replica.num_replicas);
  train_options.shard_index = replica.replica_index;
  train_options.stage_batches = replica.stage_batches;
  absl::Status s = BuildInputPipeline(e.input().train(), train_options, &input_def, &out->train_input);
  if (!s.ok()) {
    errors->Add(loaded.Where(e.input(), "train"), std::string(s.message()));
    return absl::OkStatus();
  }
  out->has_eval = e.input().has_eval();
  if (out->has_eval) {
    PipelineOptions eval_options;
    eval_options.scope = "input/eval";
    eval_options.seed = e.train().seed();
    eval_options.training = false;
    eval_options.vocabulary = out->train_input.vocabulary;  // text: the train input's ids
    s = BuildInputPipeline(e.input().eval(), eval_options, &input_def, &out->eval_input);
    if (!s.ok()) {
      errors->Add(loaded.Where(e.input(), "eval"), std::string(s.message()));
      return absl::OkStatus();
    }
  }
  GraphConstructorOptions gc;
  gc.infer_shapes = false;
  Graph graph;
  s = ConvertGraphDefToGraph(gc, input_def, &graph);
  if (!s.ok()) return absl::InternalError(absl::StrCat("building the input pipeline: ", s.message()));
  GraphBuilder b(&graph);

  auto train_features = Features(out->train_input, graph);
  if (!train_features.ok()) return train_features.status();
  VariableInfo step_info;
  Node* global_step = AddGlobalStep(&b, &step_info);
  if (global_step == nullptr) return b.status();
  ModelOptions mo;
  mo.seed = e.train().seed();
  mo.global_step = Output{global_step, 0};
  ModelOutputs train_model;
  s = BuildModel(loaded, mo, *train_features, &b, &train_model, errors);
  if (!s.ok()) return s;
  if (!errors->empty()) return absl::OkStatus();
  if (!train_model.total_loss.valid()) {
    errors->Add(loaded.Where(e, "model"), "the model has no loss");
    return absl::OkStatus();
  }
  out->loss = train_model.total_loss.name();
  for (const auto& [name, t] : train_model.metrics) out->train_metrics.push_back({name, t.name()});
  out->forward_flops_per_example = train_model.forward_flops_per_example;
  auto per_example = [](const PartialShape& shape) -> int64_t {
    if (!shape.rank_known()) return 0;
    int64_t n = 1;
    for (int i = 1; i < shape.rank(); ++i) n *= std::max<int64_t>(shape.dim(i), 1);
    return n;
  };
  for (const auto& [name, f] : train_model.named) {
    if (!out->train_input.features.count(name)) out->activation_elements_per_example += per_example(f.shape);
  }
  out->parameters = train_model.parameters();

  if (out->has_eval) {
    auto eval_features = Features(out->eval_input, graph);
    if (!eval_features.ok()) return eval_features.status();
    ModelOptions eo = mo;
    eo.tower = "eval";
    eo.training = false;
    eo.reuse_variables = true;
    ModelOutputs eval_model;
    s = BuildModel(loaded, eo, *eval_features, &b, &eval_model, errors);
    if (!s.ok()) return s;
    if (!errors->empty()) return absl::OkStatus();
    out->eval_loss = eval_model.total_loss.name();
    // exp(eval loss) is a perplexity when that loss is one sampled softmax's
    // full cross-entropy, unweighted and without L2 terms.
    bool regularized = false;
    for (const VariableInfo& v : train_model.variables) regularized |= v.regularized;
    out->eval_perplexity = e.model().loss_size() == 1 && e.model().loss(0).has_sampled_softmax() &&
                           e.model().loss(0).weight() == 1 && !regularized;
    for (const auto& [name, t] : eval_model.metrics) out->eval_metrics.push_back({name, t.name()});
  }

  TrainingOps ops;
  SyncReplicas sync;
  sync.total_replicas = std::max(1, replica.num_replicas);
  sync.replicas_to_aggregate = replica.replicas_to_aggregate > 0 ? replica.replicas_to_aggregate : sync.total_replicas;
  std::vector<VariableInfo> trained;
  for (const VariableInfo& v : train_model.variables) {
    if (v.trainable) trained.push_back(v);
  }
  s = BuildTrainingOps(e.optimizer(), trained, train_model.total_loss, global_step, step_info, &b, &ops,
                       replicated && replica.sync ? &sync : nullptr);
  if (!s.ok()) return s;
  // The model's own updates (batch_norm's moving statistics) run with every
  // step: of each worker, in sync replication the chief's too.
  for (Node* step_op : {ops.train_op, ops.sync.chief_step}) {
    if (step_op == nullptr) continue;
    for (Node* update : train_model.update_ops) graph.AddControlEdge(update, step_op);
  }
  std::vector<VariableInfo> all = train_model.variables;
  all.insert(all.end(), ops.slots.begin(), ops.slots.end());
  Node* init = BuildInitOp(all, &b);
  if (!b.ok()) return b.status();
  out->init_op = init->name();
  out->train_op = ops.train_op->name();
  out->learning_rate = ops.learning_rate.node->name();
  out->global_step = ops.global_step->name();
  out->global_norm = ops.global_norm.name();
  for (const auto& [v, g] : ops.gradients) out->gradients.push_back({v, g.name()});
  for (const auto* list : {&train_model.variables, &ops.slots}) {
    for (const VariableInfo& v : *list) {
      out->variables.push_back({v.name, v.shape, list == &train_model.variables && v.trainable, v.logical, v.part,
                                v.num_parts, v.logical_shape, list == &ops.slots});
    }
  }
  if (replicated) {
    GraphBuilder rb = b.WithSubPrefix("ready");
    for (const VariableInfo& v : all) {
      Output ready = rb.Op("is_initialized", "IsVariableInitialized", {Output{v.variable, 0}});
      if (ready.valid()) out->ready.push_back(ready.name());
    }
    if (replica.sync) {
      out->step_tensor = absl::StrCat(ops.sync.worker_step->name(), ":0");
      out->chief_train_op = ops.sync.chief_step->name();
      out->chief_init_op = ops.sync.chief_init->name();
      out->local_init_op = ops.sync.local_init->name();
      out->local_step = ops.sync.local_step->name();
      if (ops.sync.aggregated != nullptr) out->aggregated_gradients = ops.sync.aggregated->name();
      for (Node* n : ops.sync.stale) {
        if (n != nullptr) out->stale_gradients.push_back(n->name());
      }
    } else {
      // The increment after this worker's update: the global step then.
      out->step_tensor = absl::StrCat(ops.increment->name(), ":0");
    }
    if (!b.ok()) return b.status();
  }
  graph.ToGraphDef(&out->graph);
  return absl::OkStatus();
}

}  // namespace models
}  // namespace sluice

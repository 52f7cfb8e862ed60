// Optimizer graph construction.
#include "models/optimizer.h"

#include "absl/strings/str_cat.h"
#include "engine/graph/gradients.h"

namespace sluice {
namespace models {
namespace {

Tensor ShapeOf(const TensorShape& s) {
  std::vector<int32_t> d(s.dim_sizes().begin(), s.dim_sizes().end());
  return Tensor::FromVector<int32_t>(d);
}

// A slot variable shaped like `var`, filled with `value`.
Output Slot(GraphBuilder* b, const VariableInfo& var, const std::string& slot, float value,
            std::vector<VariableInfo>* slots) {
  GraphBuilder sb = b->WithSubPrefix(absl::StrCat(var.name, "/", slot));
  Node* node = sb.AddNode("var", "VariableV2", {}, {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(var.shape)}});
  if (node == nullptr) return Output();
  VariableInfo info;
  info.name = node->name();
  info.variable = node;
  info.shape = var.shape;
  info.initial_value = sb.Op("init", "Fill", {sb.Const("shape", ShapeOf(var.shape)), sb.Scalar<float>("value", value)});
  slots->push_back(info);
  return Output{node, 0};
}

}  // namespace

Node* AddGlobalStep(GraphBuilder* root, VariableInfo* info) {
  Node* step = root->AddNode("global_step", "VariableV2", {},
                             {{"dtype", MakeAttr(DT_INT64)}, {"shape", MakeAttr(TensorShape({}))}});
  if (step == nullptr) return nullptr;
  info->name = step->name();
  info->variable = step;
  info->initial_value = root->Const("global_step_init", Tensor::Scalar<int64_t>(0));
  return step;
}

absl::Status BuildApplyOps(const config::Optimizer& o, const std::vector<VariableInfo>& variables,
                           const std::vector<Output>& gradients, Output lr, Node* step, GraphBuilder* root,
                           GraphBuilder b, std::vector<VariableInfo>* slots, std::vector<Node*>* updates) {
  for (size_t i = 0; i < variables.size(); ++i) {
    const VariableInfo& v = variables[i];
    Output var{v.variable, 0};
    Output g = gradients[i];
    GraphBuilder ub = b.WithSubPrefix(v.name);
    Node* update = nullptr;
    switch (o.kind_case()) {
      case config::Optimizer::kSgd:
        update = ub.AddNode("apply", "ApplyGradientDescent", {var, lr, g});
        break;
      case config::Optimizer::kMomentum: {
        Output accum = Slot(root, v, "momentum", 0.0f, slots);
        update = ub.AddNode("apply", "ApplyMomentum",
                            {var, accum, lr, g, ub.Scalar<float>("momentum", o.momentum().momentum())},
                            {{"use_nesterov", MakeAttr(o.momentum().nesterov())}});
        break;
      }
      case config::Optimizer::kAdagrad: {
        Output accum = Slot(root, v, "accumulator", o.adagrad().initial_accumulator(), slots);
        update = ub.AddNode("apply", "ApplyAdagrad", {var, accum, lr, g});
        break;
      }
      case config::Optimizer::kRmsprop: {
        Output ms = Slot(root, v, "rms", 1.0f, slots);
        Output mom = Slot(root, v, "momentum", 0.0f, slots);
        update = ub.AddNode("apply", "ApplyRMSProp",
                            {var, ms, mom, lr, ub.Scalar<float>("decay", o.rmsprop().decay()),
                             ub.Scalar<float>("momentum", o.rmsprop().momentum()),
                             ub.Scalar<float>("epsilon", o.rmsprop().epsilon()), g});
        break;
      }
      case config::Optimizer::kAdam: {
        Output m = Slot(root, v, "m", 0.0f, slots);
        Output vv = Slot(root, v, "v", 0.0f, slots);
        // beta^t with t = global_step + 1.
        Output t = ub.Op("t", "Cast", {ub.Op("step_plus_one", "Add", {Output{step, 0}, ub.Scalar<int64_t>("one", 1)})},
                         {{"SrcT", MakeAttr(DT_INT64)}, {"DstT", MakeAttr(DT_FLOAT)}});
        Output beta1 = ub.Scalar<float>("beta1", o.adam().beta1());
        Output beta2 = ub.Scalar<float>("beta2", o.adam().beta2());
        update = ub.AddNode("apply", "ApplyAdam",
                            {var, m, vv, ub.Op("beta1_power", "Pow", {beta1, t}), ub.Op("beta2_power", "Pow", {beta2, t}),
                             lr, beta1, beta2, ub.Scalar<float>("epsilon", o.adam().epsilon()), g});
        break;
      }
      default:
        return absl::InvalidArgumentError("no optimizer configured");
    }
    if (update == nullptr) return ub.status();
    updates->push_back(update);
  }
  return absl::OkStatus();
}

namespace {

// The sync replication ops (see TrainingOps::Sync); `dense` are this
// worker's (clipped) gradients.
absl::Status BuildSyncOps(const config::Optimizer& o, const std::vector<VariableInfo>& variables,
                          const std::vector<Output>& dense, const SyncReplicas& sync, Node* step, GraphBuilder* root,
                          GraphBuilder b, TrainingOps* out) {
  GraphBuilder sb = b.WithSubPrefix("sync");
  TrainingOps::Sync& ops = out->sync;
  ops.local_step = sb.AddNode("local_step", "VariableV2", {},
                              {{"dtype", MakeAttr(DT_INT64)}, {"shape", MakeAttr(TensorShape({}))}});
  if (ops.local_step == nullptr) return sb.status();
  const Output local_step{ops.local_step, 0};
  const AttrValue with_step = MakeAttr(std::vector<std::string>{absl::StrCat("loc:@", step->name())});
  AttrValue scalar_shapes;
  TensorShape({}).AsProto(scalar_shapes.mutable_list()->add_shape());
  Node* queue = sb.AddNode("token_queue", "FIFOQueue", {},
                           {{"component_types", MakeAttr(std::vector<DataType>{DT_INT64})},
                            {"shapes", scalar_shapes},
                            {"capacity", MakeAttr(int64_t{-1})},
                            {"_class", with_step}});
  if (queue == nullptr) return sb.status();
  std::vector<Node*> applied;
  for (size_t i = 0; i < variables.size(); ++i) {
    GraphBuilder vb = sb.WithSubPrefix(variables[i].name);
    Node* acc = vb.AddNode("accumulator", "ConditionalAccumulator", {},
                           {{"dtype", MakeAttr(DT_FLOAT)},
                            {"shape", MakeAttr(variables[i].shape)},
                            {"_class", MakeAttr(std::vector<std::string>{
                                           absl::StrCat("loc:@", variables[i].variable->name())})}});
    if (acc == nullptr) return vb.status();
    ops.accumulators.push_back(acc);
    ops.stale.push_back(vb.AddNode("stale", "AccumulatorNumStale", {Output{acc, 0}}));
    if (ops.aggregated == nullptr) ops.aggregated = vb.AddNode("aggregated", "AccumulatorLastTaken", {Output{acc, 0}});
    Node* apply = vb.AddNode("apply_gradient", "AccumulatorApplyGradient", {Output{acc, 0}, local_step, dense[i]},
                             {{"dtype", MakeAttr(DT_FLOAT)}});
    if (apply == nullptr) return vb.status();
    applied.push_back(apply);
  }
  const AttrValue int64_component = MakeAttr(std::vector<DataType>{DT_INT64});
  // Every worker: its gradients in, then the next token; the worker's next
  // gradients are tagged with the global step read after the token (on ps 0,
  // so the read follows the dequeue), not with the token's value: a token
  // left over from before a recovery then only paces the worker, and never
  // tags its gradients with a step that is not the weights'.
  Output token = sb.WithControlDependencies(applied).Op("token", "QueueDequeue", {Output{queue, 0}},
                                                        {{"component_types", int64_component}});
  Output now = sb.WithControlDependencies({token.node}).Op("global_step_now", "Identity", {Output{step, 0}},
                                                           {{"_class", with_step}});
  ops.worker_step = sb.AddNode("worker_step", "Assign", {local_step, now});
  // The chief: the average of each variable's gradients, applied; the step
  // advanced; a token per worker.
  GraphBuilder after_own = sb.WithControlDependencies(applied);
  std::vector<Output> averaged;
  for (size_t i = 0; i < variables.size(); ++i) {
    averaged.push_back(after_own.WithSubPrefix(variables[i].name)
                           .Op("take_gradient", "AccumulatorTakeGradient",
                               {Output{ops.accumulators[i], 0},
                                sb.Scalar<int32_t>("replicas_to_aggregate", sync.replicas_to_aggregate)},
                               {{"dtype", MakeAttr(DT_FLOAT)}}));
  }
  if (!sb.ok()) return sb.status();
  std::vector<Node*> updates;
  absl::Status s = BuildApplyOps(o, variables, averaged, out->learning_rate, step, root, b, &out->slots, &updates);
  if (!s.ok()) return s;
  Node* increment = sb.WithControlDependencies(updates).AddNode("increment_step", "AssignAdd",
                                                                {Output{step, 0}, sb.Scalar<int64_t>("one", 1)});
  if (increment == nullptr) return sb.status();
  GraphBuilder at_step = sb.WithSubPrefix("release");
  Output count = at_step.Const("count", Tensor::FromVector<int32_t>({sync.total_replicas}));
  Output tokens = at_step.Op("tokens", "Fill", {count, Output{increment, 0}}, {{"_class", with_step}});
  if (count.valid()) (*count.node->mutable_def()->mutable_attr())["_class"] = with_step;
  Node* release = at_step.AddNode("enqueue", "QueueEnqueueMany", {Output{queue, 0}, tokens},
                                  {{"Tcomponents", int64_component}});
  if (release == nullptr) return at_step.status();
  Output own = sb.WithControlDependencies({release}).Op("chief_token", "QueueDequeue", {Output{queue, 0}},
                                                        {{"component_types", int64_component}});
  Output chief_now = sb.WithControlDependencies({own.node}).Op("chief_global_step_now", "Identity",
                                                               {Output{step, 0}}, {{"_class", with_step}});
  ops.chief_step = sb.AddNode("chief_step", "Assign", {local_step, chief_now});
  std::vector<Node*> set_steps;
  for (Node* acc : ops.accumulators) {
    set_steps.push_back(sb.AddNode("set_accumulator_step", "AccumulatorSetGlobalStep", {Output{acc, 0}, Output{step, 0}}));
  }
  ops.chief_init = sb.WithControlDependencies(set_steps).AddNode("chief_init", "NoOp", {});
  ops.local_init = sb.AddNode("local_init", "Assign", {local_step, Output{step, 0}});
  if (!sb.ok()) return sb.status();
  out->train_op = ops.worker_step;
  return absl::OkStatus();
}

}  // namespace

absl::Status BuildTrainingOps(const config::Optimizer& o, const std::vector<VariableInfo>& variables, Output loss,
                              Node* step, const VariableInfo& step_info, GraphBuilder* root, TrainingOps* out,
                              const SyncReplicas* sync) {
  GraphBuilder b = root->WithSubPrefix("train");
  out->learning_rate = b.Op("learning_rate", "Placeholder", {},
                            {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(TensorShape({}))}});
  if (!root->ok()) return root->status();
  out->global_step = step;
  out->slots.push_back(step_info);

  std::vector<Output> xs;
  for (const VariableInfo& v : variables) xs.push_back(Output{v.variable, 0});
  std::vector<Gradient> grads;
  absl::Status s = AddSymbolicGradients(root->graph(), {loss}, xs, {}, &grads, "gradients");
  if (!s.ok()) return s;
  std::vector<Output> dense(grads.size());
  GraphBuilder gb = root->WithSubPrefix("gradients");
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].present()) {
      return absl::InvalidArgumentError(
          absl::StrCat("variable '", variables[i].name, "' does not affect the loss; nothing would train it"));
    }
    dense[i] = DenseGradient(&gb, grads[i]);
  }
  // Global norm, and clipping when configured.
  GraphBuilder nb = b.WithSubPrefix("global_norm");
  std::vector<Output> squares;
  for (const Output& g : dense) squares.push_back(nb.Op("half_sq", "L2Loss", {g}));
  Output sum = squares.size() == 1 ? squares[0] : nb.Op("sum", "AddN", squares);
  out->global_norm = nb.Op("norm", "Sqrt", {nb.Op("twice", "Mul", {sum, nb.Scalar<float>("two", 2.0f)})});
  if (o.clip_global_norm() > 0) {
    GraphBuilder cb = b.WithSubPrefix("clip");
    Output clip = cb.Scalar<float>("clip_norm", o.clip_global_norm());
    Output scale = cb.Op("scale", "Div", {clip, cb.Op("max", "Maximum", {out->global_norm, clip})});
    for (Output& g : dense) g = cb.Op("clipped", "Mul", {g, scale});
  }
  for (size_t i = 0; i < variables.size(); ++i) out->gradients.push_back({variables[i].name, dense[i]});
  if (sync != nullptr) return BuildSyncOps(o, variables, dense, *sync, step, root, b, out);

  std::vector<Node*> updates;
  s = BuildApplyOps(o, variables, dense, out->learning_rate, step, root, b, &out->slots, &updates);
  if (!s.ok()) return s;
  GraphBuilder after = b.WithControlDependencies(updates);
  Node* increment = after.AddNode("increment_step", "AssignAdd", {Output{step, 0}, after.Scalar<int64_t>("one", 1)});
  if (increment == nullptr) return after.status();
  out->increment = increment;
  out->train_op = b.WithControlDependencies({increment}).AddNode("step", "NoOp", {});
  if (out->train_op == nullptr) return b.status();
  return b.status();
}

Node* BuildInitOp(const std::vector<VariableInfo>& variables, GraphBuilder* root, const std::string& name) {
  std::vector<Node*> assigns;
  GraphBuilder b = root->WithSubPrefix(name);
  for (const VariableInfo& v : variables) {
    Node* a = b.AddNode("assign", "Assign", {Output{v.variable, 0}, v.initial_value});
    if (a != nullptr) assigns.push_back(a);
  }
  return root->WithControlDependencies(assigns).AddNode(name, "NoOp", {});
}

}  // namespace models
}  // namespace sluice

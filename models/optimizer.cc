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

absl::Status BuildTrainingOps(const config::Optimizer& o, const std::vector<VariableInfo>& variables, Output loss,
                              Node* step, const VariableInfo& step_info, GraphBuilder* root, TrainingOps* out) {
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

  std::vector<Node*> updates;
  Output lr = out->learning_rate;
  for (size_t i = 0; i < variables.size(); ++i) {
    const VariableInfo& v = variables[i];
    Output var{v.variable, 0};
    Output g = dense[i];
    GraphBuilder ub = b.WithSubPrefix(v.name);
    Node* update = nullptr;
    switch (o.kind_case()) {
      case config::Optimizer::kSgd:
        update = ub.AddNode("apply", "ApplyGradientDescent", {var, lr, g});
        break;
      case config::Optimizer::kMomentum: {
        Output accum = Slot(root, v, "momentum", 0.0f, &out->slots);
        update = ub.AddNode("apply", "ApplyMomentum",
                            {var, accum, lr, g, ub.Scalar<float>("momentum", o.momentum().momentum())},
                            {{"use_nesterov", MakeAttr(o.momentum().nesterov())}});
        break;
      }
      case config::Optimizer::kAdagrad: {
        Output accum = Slot(root, v, "accumulator", o.adagrad().initial_accumulator(), &out->slots);
        update = ub.AddNode("apply", "ApplyAdagrad", {var, accum, lr, g});
        break;
      }
      case config::Optimizer::kRmsprop: {
        Output ms = Slot(root, v, "rms", 1.0f, &out->slots);
        Output mom = Slot(root, v, "momentum", 0.0f, &out->slots);
        update = ub.AddNode("apply", "ApplyRMSProp",
                            {var, ms, mom, lr, ub.Scalar<float>("decay", o.rmsprop().decay()),
                             ub.Scalar<float>("momentum", o.rmsprop().momentum()),
                             ub.Scalar<float>("epsilon", o.rmsprop().epsilon()), g});
        break;
      }
      case config::Optimizer::kAdam: {
        Output m = Slot(root, v, "m", 0.0f, &out->slots);
        Output vv = Slot(root, v, "v", 0.0f, &out->slots);
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
    updates.push_back(update);
  }
  GraphBuilder after = b.WithControlDependencies(updates);
  Node* increment = after.AddNode("increment_step", "AssignAdd", {Output{step, 0}, after.Scalar<int64_t>("one", 1)});
  if (increment == nullptr) return after.status();
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

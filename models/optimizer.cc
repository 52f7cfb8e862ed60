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
  if (var.num_parts > 1) {  // partitioned like its variable
    info.logical = absl::StrCat(var.logical, "/", slot, "/var");
    info.part = var.part;
    info.num_parts = var.num_parts;
    info.logical_shape = var.logical_shape;
  }
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

namespace {

// The sparse update of the rows `g.sparse.indices` (distinct, see
// SumDuplicates) of `v` by `g.sparse.values`: only those rows of the variable
// and of its slots are read and written.
//   SGD       ScatterSub(var, lr * g)
//   Momentum  SparseApplyMomentum;  Adagrad  SparseApplyAdagrad
//   RMSProp   TensorFlow's SparseApplyRMSProp rule on the rows: ms, mom, var
//             gathered, updated as ApplyRMSProp, scattered back
//   Adam      "lazy" Adam (tf.contrib.opt.LazyAdamOptimizer): m and v decay
//             and update on the touched rows only, with the step's
//             bias-corrected rate; untouched rows keep their m, v and value.
//             (TensorFlow's AdamOptimizer decays every row of m and v each
//             step, which costs the whole table per step.)
Node* SparseApply(const config::Optimizer& o, const VariableInfo& v, const IndexedSlices& g, Output lr, Node* step,
                  GraphBuilder* root, GraphBuilder& ub, std::vector<VariableInfo>* slots) {
  Output var{v.variable, 0};
  Output idx = g.indices, values = g.values;
  // Slot rows are gathered where the slot lives (on its ps task in a
  // cluster), so only the touched rows travel.
  auto gather = [&](const std::string& name, Output slot) {
    AttrValue where;
    where.mutable_list()->add_s(absl::StrCat("loc:@", slot.node->name()));
    return ub.Op(name, "Gather", {slot, idx}, {{"_class", where}});
  };
  switch (o.kind_case()) {
    case config::Optimizer::kSgd:
      return ub.AddNode("apply", "ScatterSub", {var, idx, ub.Op("scaled", "Mul", {lr, values})});
    case config::Optimizer::kMomentum: {
      Output accum = Slot(root, v, "momentum", 0.0f, slots);
      return ub.AddNode("apply", "SparseApplyMomentum",
                        {var, accum, lr, values, idx, ub.Scalar<float>("momentum", o.momentum().momentum())},
                        {{"use_nesterov", MakeAttr(o.momentum().nesterov())}});
    }
    case config::Optimizer::kAdagrad: {
      Output accum = Slot(root, v, "accumulator", o.adagrad().initial_accumulator(), slots);
      return ub.AddNode("apply", "SparseApplyAdagrad", {var, accum, lr, values, idx});
    }
    case config::Optimizer::kRmsprop: {
      Output ms = Slot(root, v, "rms", 1.0f, slots);
      Output mom = Slot(root, v, "momentum", 0.0f, slots);
      Output rho = ub.Scalar<float>("decay", o.rmsprop().decay());
      Output one = ub.Scalar<float>("one", 1.0f);
      // ms' = ms * rho + g^2 * (1 - rho); mom' = mom * momentum + lr * g / sqrt(ms' + eps); var -= mom'.
      Output g2 = ub.Op("grad_sq", "Mul", {values, values});
      Output ms_new = ub.Op("ms_new", "Add", {ub.Op("ms_decayed", "Mul", {gather("ms_rows", ms), rho}),
                                              ub.Op("ms_in", "Mul", {g2, ub.Op("one_minus_rho", "Sub", {one, rho})})});
      Output denom = ub.Op("denom", "Sqrt", {ub.Op("ms_eps", "Add", {ms_new, ub.Scalar<float>("epsilon", o.rmsprop().epsilon())})});
      Output mom_new = ub.Op("mom_new", "Add",
                             {ub.Op("mom_decayed", "Mul", {gather("mom_rows", mom), ub.Scalar<float>("momentum", o.rmsprop().momentum())}),
                              ub.Op("step", "RealDiv", {ub.Op("lr_g", "Mul", {lr, values}), denom})});
      Node* set_ms = ub.AddNode("update_ms", "ScatterUpdate", {ms, idx, ms_new});
      Node* set_mom = ub.AddNode("update_mom", "ScatterUpdate", {mom, idx, mom_new});
      if (set_ms == nullptr || set_mom == nullptr) return nullptr;
      return ub.WithControlDependencies({set_ms, set_mom}).AddNode("apply", "ScatterSub", {var, idx, mom_new});
    }
    case config::Optimizer::kAdam: {
      Output m = Slot(root, v, "m", 0.0f, slots);
      Output vv = Slot(root, v, "v", 0.0f, slots);
      Output t = ub.Op("t", "Cast", {ub.Op("step_plus_one", "Add", {Output{step, 0}, ub.Scalar<int64_t>("one_step", 1)})},
                       {{"SrcT", MakeAttr(DT_INT64)}, {"DstT", MakeAttr(DT_FLOAT)}});
      Output one = ub.Scalar<float>("one", 1.0f);
      Output beta1 = ub.Scalar<float>("beta1", o.adam().beta1());
      Output beta2 = ub.Scalar<float>("beta2", o.adam().beta2());
      // lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t), as ApplyAdam.
      Output lr_t = ub.Op("lr_t", "RealDiv",
                          {ub.Op("lr_sqrt", "Mul", {lr, ub.Op("sqrt_1_b2t", "Sqrt", {ub.Op("one_minus_b2t", "Sub",
                                                                                          {one, ub.Op("beta2_power", "Pow", {beta2, t})})})}),
                           ub.Op("one_minus_b1t", "Sub", {one, ub.Op("beta1_power", "Pow", {beta1, t})})});
      // m' = m + (g - m)(1 - beta1); v' = v + (g^2 - v)(1 - beta2).
      Output m_rows = gather("m_rows", m), v_rows = gather("v_rows", vv);
      Output m_new = ub.Op("m_new", "Add", {m_rows, ub.Op("m_step", "Mul", {ub.Op("g_minus_m", "Sub", {values, m_rows}),
                                                                             ub.Op("one_minus_b1", "Sub", {one, beta1})})});
      Output v_new = ub.Op("v_new", "Add",
                           {v_rows, ub.Op("v_step", "Mul", {ub.Op("g2_minus_v", "Sub", {ub.Op("grad_sq", "Mul", {values, values}), v_rows}),
                                                            ub.Op("one_minus_b2", "Sub", {one, beta2})})});
      Output update = ub.Op("update", "RealDiv",
                            {ub.Op("lr_m", "Mul", {lr_t, m_new}),
                             ub.Op("denom", "Add", {ub.Op("sqrt_v", "Sqrt", {v_new}), ub.Scalar<float>("epsilon", o.adam().epsilon())})});
      Node* set_m = ub.AddNode("update_m", "ScatterUpdate", {m, idx, m_new});
      Node* set_v = ub.AddNode("update_v", "ScatterUpdate", {vv, idx, v_new});
      if (set_m == nullptr || set_v == nullptr) return nullptr;
      return ub.WithControlDependencies({set_m, set_v}).AddNode("apply", "ScatterSub", {var, idx, update});
    }
    default:
      return nullptr;
  }
}

// One value row per distinct index (TensorFlow's
// _deduplicate_indexed_slices: Unique, then UnsortedSegmentSum), so a row
// looked up twice in a batch is updated once with its summed gradient, as
// the dense update would.
IndexedSlices SumDuplicates(GraphBuilder* b, const IndexedSlices& g) {
  Node* unique = b->AddNode("unique", "Unique", {g.indices});
  if (unique == nullptr) return g;
  IndexedSlices out;
  out.indices = Output{unique, 0};
  out.values = b->Op("summed", "UnsortedSegmentSum",
                     {g.values, Output{unique, 1}, b->Op("count", "Size", {out.indices})});
  out.dense_shape = g.dense_shape;
  return out;
}

}  // namespace

absl::Status BuildApplyOps(const config::Optimizer& o, const std::vector<VariableInfo>& variables,
                           const std::vector<Gradient>& gradients, Output lr, Node* step, GraphBuilder* root,
                           GraphBuilder b, std::vector<VariableInfo>* slots, std::vector<Node*>* updates) {
  for (size_t i = 0; i < variables.size(); ++i) {
    const VariableInfo& v = variables[i];
    Output var{v.variable, 0};
    GraphBuilder ub = b.WithSubPrefix(v.name);
    if (o.kind_case() == config::Optimizer::KIND_NOT_SET) return absl::InvalidArgumentError("no optimizer configured");
    if (gradients[i].is_sparse) {
      Node* update = SparseApply(o, v, gradients[i].sparse, lr, step, root, ub, slots);
      if (update == nullptr) return ub.ok() ? absl::InternalError("no sparse update for this optimizer") : ub.status();
      updates->push_back(update);
      continue;
    }
    Output g = gradients[i].dense;
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

// The sync replication ops (see TrainingOps::Sync); `grads` are this
// worker's (clipped) gradients. A sparse one (distinct rows) goes through a
// SparseConditionalAccumulator, and its average updates those rows only.
absl::Status BuildSyncOps(const config::Optimizer& o, const std::vector<VariableInfo>& variables,
                          const std::vector<Gradient>& grads, const SyncReplicas& sync, Node* step, GraphBuilder* root,
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
    const bool sparse = grads[i].is_sparse;
    Node* acc = vb.AddNode("accumulator", sparse ? "SparseConditionalAccumulator" : "ConditionalAccumulator", {},
                           {{"dtype", MakeAttr(DT_FLOAT)},
                            {"shape", MakeAttr(variables[i].shape)},
                            {"_class", MakeAttr(std::vector<std::string>{
                                           absl::StrCat("loc:@", variables[i].variable->name())})}});
    if (acc == nullptr) return vb.status();
    ops.accumulators.push_back(acc);
    ops.stale.push_back(vb.AddNode("stale", "AccumulatorNumStale", {Output{acc, 0}}));
    auto int64_of = [&vb](const std::string& name, Output x) {
      return x.dtype() == DT_INT64 ? x
                                   : vb.Op(name, "Cast", {x}, {{"SrcT", MakeAttr(x.dtype())}, {"DstT", MakeAttr(DT_INT64)}});
    };
    Node* apply =
        sparse ? vb.AddNode("apply_gradient", "SparseAccumulatorApplyGradient",
                            {Output{acc, 0}, local_step, int64_of("indices_int64", grads[i].sparse.indices),
                             grads[i].sparse.values, int64_of("shape_int64", grads[i].sparse.dense_shape)},
                            {{"dtype", MakeAttr(DT_FLOAT)}, {"has_known_shape", MakeAttr(true)}})
               : vb.AddNode("apply_gradient", "AccumulatorApplyGradient", {Output{acc, 0}, local_step, grads[i].dense},
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
  std::vector<Gradient> averaged_grads(variables.size());
  Output num_required = sb.Scalar<int32_t>("replicas_to_aggregate", sync.replicas_to_aggregate);
  for (size_t i = 0; i < variables.size(); ++i) {
    GraphBuilder tb = after_own.WithSubPrefix(variables[i].name);
    if (!grads[i].is_sparse) {
      averaged_grads[i].dense = tb.Op("take_gradient", "AccumulatorTakeGradient",
                                      {Output{ops.accumulators[i], 0}, num_required}, {{"dtype", MakeAttr(DT_FLOAT)}});
      continue;
    }
    Node* take = tb.AddNode("take_gradient", "SparseAccumulatorTakeGradient", {Output{ops.accumulators[i], 0}, num_required},
                            {{"dtype", MakeAttr(DT_FLOAT)}});
    if (take == nullptr) return tb.status();
    averaged_grads[i].is_sparse = true;
    averaged_grads[i].sparse = IndexedSlices{Output{take, 1}, Output{take, 0}, Output{take, 2}};
  }
  if (!sb.ok()) return sb.status();
  // How many gradients the chief's take averaged (for /metrics): read after
  // this step's take of the first variable's, not the previous step's.
  Node* first_take = averaged_grads[0].is_sparse ? averaged_grads[0].sparse.indices.node : averaged_grads[0].dense.node;
  ops.aggregated = sb.WithSubPrefix(variables[0].name)
                       .WithControlDependencies({first_take})
                       .AddNode("aggregated", "AccumulatorLastTaken", {Output{ops.accumulators[0], 0}});
  if (ops.aggregated == nullptr) return sb.status();
  std::vector<Node*> updates;
  absl::Status s = BuildApplyOps(o, variables, averaged_grads, out->learning_rate, step, root, b, &out->slots, &updates);
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
  // A chief restarted beside a live ps finds the tokens its previous
  // incarnation released and nobody took (its own, when it died between the
  // release and its dequeue): they go, or a replica would start a step ahead
  // of the restored global step.
  GraphBuilder drain = sb.WithSubPrefix("drain_tokens");
  Output queued = drain.Op("queued", "QueueSize", {Output{queue, 0}});
  set_steps.push_back(drain.AddNode("dequeue", "QueueDequeueMany", {Output{queue, 0}, queued},
                                    {{"component_types", int64_component}}));
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
  // Sparse gradients (embedding lookups) stay sparse, their duplicate rows
  // summed, and update only their rows (with sync replication through
  // sparse accumulators).
  std::vector<Output> dense(grads.size());
  std::vector<Gradient> applied(grads.size());
  GraphBuilder gb = root->WithSubPrefix("gradients");
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].present()) {
      return absl::InvalidArgumentError(
          absl::StrCat("variable '", variables[i].name, "' does not affect the loss; nothing would train it"));
    }
    if (grads[i].is_sparse) {
      GraphBuilder db = gb.WithSubPrefix(absl::StrCat(variables[i].name, "/deduplicate"));
      applied[i].is_sparse = true;
      applied[i].sparse = SumDuplicates(&db, grads[i].sparse);
    } else {
      applied[i].dense = DenseGradient(&gb, grads[i]);
    }
  }
  // Global norm, and clipping when configured (of a sparse gradient: its
  // summed rows, whose norm is the dense gradient's).
  auto tensor_of = [](Gradient& g) -> Output& { return g.is_sparse ? g.sparse.values : g.dense; };
  GraphBuilder nb = b.WithSubPrefix("global_norm");
  std::vector<Output> squares;
  for (Gradient& g : applied) squares.push_back(nb.Op("half_sq", "L2Loss", {tensor_of(g)}));
  Output sum = squares.size() == 1 ? squares[0] : nb.Op("sum", "AddN", squares);
  out->global_norm = nb.Op("norm", "Sqrt", {nb.Op("twice", "Mul", {sum, nb.Scalar<float>("two", 2.0f)})});
  if (o.clip_global_norm() > 0) {
    GraphBuilder cb = b.WithSubPrefix("clip");
    Output clip = cb.Scalar<float>("clip_norm", o.clip_global_norm());
    Output scale = cb.Op("scale", "Div", {clip, cb.Op("max", "Maximum", {out->global_norm, clip})});
    for (Gradient& g : applied) tensor_of(g) = cb.Op("clipped", "Mul", {tensor_of(g), scale});
  }
  // Histogram summaries read dense gradients: a sparse one is densified
  // only when a summary fetches it.
  for (size_t i = 0; i < applied.size(); ++i) {
    if (!applied[i].is_sparse) {
      dense[i] = applied[i].dense;
      continue;
    }
    GraphBuilder hb = gb.WithSubPrefix(absl::StrCat(variables[i].name, "/for_summaries"));
    dense[i] = DenseGradient(&hb, applied[i]);
  }
  for (size_t i = 0; i < variables.size(); ++i) out->gradients.push_back({variables[i].name, dense[i]});
  if (sync != nullptr) return BuildSyncOps(o, variables, applied, *sync, step, root, b, out);

  std::vector<Node*> updates;
  s = BuildApplyOps(o, variables, applied, out->learning_rate, step, root, b, &out->slots, &updates);
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

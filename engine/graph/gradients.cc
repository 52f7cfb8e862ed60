// AddSymbolicGradients: reverse-mode differentiation over the graph.
#include "engine/graph/gradients.h"

#include <deque>
#include <functional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "engine/graph/while_gradient.h"

namespace sluice {

GradientBuilder::GradientBuilder(const Node* node, std::vector<Output> inputs, std::vector<Output> grads,
                                 GraphBuilder builder)
    : node_(node),
      inputs_(std::move(inputs)),
      grads_(std::move(grads)),
      builder_(std::move(builder)),
      input_grads_(inputs_.size()) {}

Output GradientBuilder::grad(int i) {
  if (!grads_[i].valid()) grads_[i] = builder_.Op("zeros", "ZerosLike", {output(i)});
  return grads_[i];
}

AttrList GradientBuilder::ForwardAttrs(std::initializer_list<const char*> names) const {
  AttrList attrs;
  for (const char* name : names) {
    auto it = node_->def().attr().find(name);
    if (it != node_->def().attr().end()) attrs[name] = it->second;
  }
  return attrs;
}

void GradientBuilder::SetInputGrad(int i, Output grad) {
  input_grads_[i].dense = grad;
  input_grads_[i].is_sparse = false;
}

void GradientBuilder::SetInputGradSparse(int i, IndexedSlices grad) {
  input_grads_[i].sparse = grad;
  input_grads_[i].is_sparse = true;
}

Output DenseGradient(GraphBuilder* b, const Gradient& g) {
  if (!g.is_sparse) return g.dense;
  return b->Op("densify", "_IndexedSlicesToDense", {g.sparse.values, g.sparse.indices, g.sparse.dense_shape});
}

namespace {

// Sums the gradient contributions to one tensor.
Gradient Aggregate(GraphBuilder* b, const std::vector<Gradient>& parts) {
  std::vector<Gradient> present;
  for (const Gradient& g : parts) {
    if (g.present()) present.push_back(g);
  }
  if (present.empty()) return Gradient();
  if (present.size() == 1) return present[0];
  bool all_sparse = true;
  for (const Gradient& g : present) all_sparse &= g.is_sparse;
  if (all_sparse) {
    std::vector<Output> values, indices;
    for (const Gradient& g : present) {
      values.push_back(g.sparse.values);
      indices.push_back(g.sparse.indices);
    }
    Output axis = b->Scalar<int32_t>("axis", 0);
    values.push_back(axis);
    indices.push_back(axis);
    Gradient out;
    out.is_sparse = true;
    out.sparse.values = b->Op("concat_values", "ConcatV2", values);
    out.sparse.indices = b->Op("concat_indices", "ConcatV2", indices);
    out.sparse.dense_shape = present[0].sparse.dense_shape;
    return out;
  }
  std::vector<Output> dense;
  for (const Gradient& g : present) dense.push_back(DenseGradient(b, g));
  Gradient out;
  out.dense = b->Op("add_n", "AddN", dense);
  return out;
}

using TensorKey = std::pair<int, int>;  // (node id, output index)

bool CarriesGradient(const Node* node, int output) {
  const DataType t = BaseType(node->output_type(output));
  return DataTypeIsFloating(t) || t == DT_COMPLEX64;
}

}  // namespace

// TensorFlow's GATE_OP: when an op yields gradients for several inputs, none
// of them is released until all are computed. Without the gate, the update of
// a weight (fed by dW of a MatMul) can run while the same MatMul's dX still
// reads that weight in place, and dX then uses the updated weight: a wrong
// gradient that made SGD diverge. Each released gradient is an Identity with a
// control input from a NoOp that waits for all of them.
void GateGradients(GraphBuilder* b, const std::vector<const Edge*>& in_data,
                   const std::function<bool(const Node*)>& relevant, std::vector<Gradient>* grads) {
  std::vector<int> gated;
  for (size_t i = 0; i < grads->size(); ++i) {
    if (in_data[i] != nullptr && relevant(in_data[i]->src) && (*grads)[i].present()) gated.push_back(i);
  }
  if (gated.size() < 2) return;
  std::vector<Output> sources;
  for (int i : gated) {
    const Gradient& g = (*grads)[i];
    if (g.is_sparse) {
      sources.push_back(g.sparse.values);
      sources.push_back(g.sparse.indices);
    } else {
      sources.push_back(g.dense);
    }
  }
  std::vector<Node*> deps;
  for (const Output& o : sources) deps.push_back(o.node);
  Node* gate = b->WithControlDependencies(deps).AddNode("gate", "NoOp", {});
  if (gate == nullptr) return;
  GraphBuilder after = b->WithControlDependencies({gate});
  for (int i : gated) {
    Gradient& g = (*grads)[i];
    if (g.is_sparse) {
      g.sparse.values = after.Op("gated", "Identity", {g.sparse.values});
      g.sparse.indices = after.Op("gated", "Identity", {g.sparse.indices});
    } else {
      g.dense = after.Op("gated", "Identity", {g.dense});
    }
  }
}

absl::Status AddSymbolicGradients(Graph* graph, const std::vector<Output>& ys, const std::vector<Output>& xs,
                                  const std::vector<Output>& grad_ys, std::vector<Gradient>* grads,
                                  const std::string& name_prefix) {
  grads->assign(xs.size(), Gradient());
  if (ys.empty()) return absl::InvalidArgumentError("AddSymbolicGradients needs at least one y");
  if (!grad_ys.empty() && grad_ys.size() != ys.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("got ", grad_ys.size(), " grad_ys for ", ys.size(), " ys; pass one per y or none"));
  }
  for (const Output& o : ys) {
    if (!o.valid()) return absl::InvalidArgumentError("a y is null");
  }
  for (const Output& o : xs) {
    if (!o.valid()) return absl::InvalidArgumentError("an x is null");
  }
  GraphBuilder b(graph, name_prefix);
  const int n = graph->num_node_ids();

  // Nodes on some path from an x to a y.
  std::vector<bool> from_x(n, false), to_y(n, false);
  {
    std::deque<Node*> q;
    for (const Output& x : xs) {
      if (!from_x[x.node->id()]) {
        from_x[x.node->id()] = true;
        q.push_back(x.node);
      }
    }
    while (!q.empty()) {
      Node* node = q.front();
      q.pop_front();
      for (const Edge* e : node->out_edges()) {
        if (!e->IsControlEdge() && !from_x[e->dst->id()]) {
          from_x[e->dst->id()] = true;
          q.push_back(e->dst);
        }
      }
    }
    for (const Output& y : ys) {
      if (!to_y[y.node->id()]) {
        to_y[y.node->id()] = true;
        q.push_back(y.node);
      }
    }
    while (!q.empty()) {
      Node* node = q.front();
      q.pop_front();
      for (const Edge* e : node->in_edges()) {
        if (!e->IsControlEdge() && !to_y[e->src->id()]) {
          to_y[e->src->id()] = true;
          q.push_back(e->src);
        }
      }
    }
  }
  auto relevant = [&](const Node* node) { return from_x[node->id()] && to_y[node->id()]; };

  // Each while loop on a path is one unit: its gradient is built when all its
  // outputs' gradients are in (engine/graph/while_gradient.h).
  std::vector<LoopRegion> loops;
  std::vector<int> loop_of(n, -1);
  {
    absl::Status s = FindLoopRegions(*graph, relevant, &loops);
    if (!s.ok()) return s;
    for (size_t l = 0; l < loops.size(); ++l) {
      for (int id : loops[l].members) loop_of[id] = static_cast<int>(l);
    }
    for (const Output& o : xs) {
      if (loop_of[o.node->id()] >= 0) {
        return absl::UnimplementedError(absl::StrCat("x '", o.name(), "' is inside while loop '",
                                                     loops[loop_of[o.node->id()]].frame, "'"));
      }
    }
    for (const Output& o : ys) {
      // A loop's outputs (Exit values, stacked values) may be ys.
      const bool loop_output = o.node->IsExit() || o.node->type_string() == "TensorArrayGatherV3";
      if (loop_of[o.node->id()] >= 0 && !loop_output) {
        return absl::UnimplementedError(absl::StrCat("y '", o.name(), "' is inside while loop '",
                                                     loops[loop_of[o.node->id()]].frame, "'"));
      }
    }
  }

  // Contributions still expected per node (per loop for loop members):
  // relevant consumers plus ys.
  std::vector<int> pending(n, 0), loop_pending(loops.size(), 0);
  for (Node* node : graph->nodes()) {
    if (!relevant(node)) continue;
    const int loop = loop_of[node->id()];
    for (const Edge* e : node->out_edges()) {
      if (e->IsControlEdge() || !relevant(e->dst)) continue;
      if (loop < 0) {
        ++pending[node->id()];
      } else if (loop_of[e->dst->id()] != loop && CarriesGradient(node, e->src_output)) {
        // A loop's integer outputs (its trip count, read by the Range of a
        // stacked output) carry no gradient and are not waited for: the
        // Range feeds the loop again, and waiting would be a cycle.
        ++loop_pending[loop];
      }
    }
  }
  for (const Output& y : ys) {
    if (!relevant(y.node)) continue;
    if (loop_of[y.node->id()] >= 0) {
      if (CarriesGradient(y.node, y.index)) ++loop_pending[loop_of[y.node->id()]];
    } else {
      ++pending[y.node->id()];
    }
  }

  absl::flat_hash_map<TensorKey, std::vector<Gradient>> contributions;
  std::deque<Node*> ready;
  auto contribute = [&](Node* node, int index, Gradient g) {
    contributions[{node->id(), index}].push_back(std::move(g));
    const int loop = loop_of[node->id()];
    if (loop >= 0) {
      if (!CarriesGradient(node, index)) return;
      if (--loop_pending[loop] == 0) ready.push_back(loops[loop].loop_cond);
    } else if (--pending[node->id()] == 0) {
      ready.push_back(node);
    }
  };
  for (size_t i = 0; i < ys.size(); ++i) {
    const Output& y = ys[i];
    if (!relevant(y.node)) continue;
    Gradient g;
    if (!grad_ys.empty()) {
      if (BaseType(grad_ys[i].dtype()) != BaseType(y.dtype())) {
        return absl::InvalidArgumentError(absl::StrCat("grad_ys[", i, "] has type ", DataTypeString(grad_ys[i].dtype()),
                                                       " but y '", y.name(), "' is ", DataTypeString(y.dtype())));
      }
      g.dense = grad_ys[i];
    } else {
      g.dense = b.Op("ones", "OnesLike", {y});
    }
    contribute(y.node, y.index, g);
  }

  absl::flat_hash_map<TensorKey, Gradient> final_grads;
  while (!ready.empty()) {
    Node* node = ready.front();
    ready.pop_front();
    if (loop_of[node->id()] >= 0) {
      const LoopRegion& loop = loops[loop_of[node->id()]];
      GraphBuilder lb = b.WithSubPrefix(loop.frame);
      auto output_grad = [&](const Node* out, int index) {
        auto it = contributions.find({out->id(), index});
        return it == contributions.end() ? Gradient() : Aggregate(&lb, it->second);
      };
      std::vector<std::pair<const Edge*, Gradient>> input_grads;
      absl::Status s = AddWhileLoopGradient(graph, loop, output_grad, lb.prefix(), &input_grads);
      if (!s.ok()) return s;
      if (!lb.ok()) return lb.status();
      for (const auto& [e, g] : input_grads) {
        if (relevant(e->src) && relevant(e->dst)) contribute(e->src, e->src_output, g);
      }
      continue;
    }
    std::vector<Output> out_grads(node->num_outputs());
    GraphBuilder nb = b.WithSubPrefix(node->name());
    for (int i = 0; i < node->num_outputs(); ++i) {
      auto it = contributions.find({node->id(), i});
      if (it == contributions.end()) continue;
      Gradient sum = Aggregate(&nb, it->second);
      final_grads[{node->id(), i}] = sum;
      if (sum.present()) out_grads[i] = DenseGradient(&nb, sum);
    }
    if (!nb.ok()) return nb.status();
    // Which inputs lead back to an x?
    std::vector<const Edge*> in_data(node->num_inputs(), nullptr);
    bool any_relevant_input = false;
    for (const Edge* e : node->in_edges()) {
      if (e->IsControlEdge()) continue;
      in_data[e->dst_input] = e;
      any_relevant_input |= relevant(e->src);
    }
    if (!any_relevant_input) continue;
    if (node->IsControlFlow() && !node->IsSwitch() && !node->IsMerge()) {
      return absl::UnimplementedError(absl::StrCat(NodeContext(node->def()), "gradients through ", node->type_string(),
                                                   " outside a while loop built by BuildWhileLoop are not supported"));
    }
    std::vector<Gradient> input_grads(node->num_inputs());
    if (!node->op_def().not_differentiable) {
      if (!node->op_def().gradient) {
        return absl::InvalidArgumentError(absl::StrCat(NodeContext(node->def()), "no gradient is registered for op ",
                                                       node->type_string(), ", which lies between a y and an x"));
      }
      std::vector<Output> inputs(node->num_inputs());
      for (int i = 0; i < node->num_inputs(); ++i) {
        if (in_data[i] != nullptr) inputs[i] = Output{in_data[i]->src, in_data[i]->src_output};
      }
      GradientBuilder gb(node, std::move(inputs), std::move(out_grads), nb);
      absl::Status s = node->op_def().gradient(&gb);
      if (!s.ok()) return s;
      if (!gb.b().ok()) return gb.b().status();
      input_grads = gb.input_grads();
      GateGradients(&gb.b(), in_data, relevant, &input_grads);
      if (!gb.b().ok()) return gb.b().status();
    }
    for (int i = 0; i < node->num_inputs(); ++i) {
      const Edge* e = in_data[i];
      if (e == nullptr || !relevant(e->src)) continue;
      contribute(e->src, e->src_output, input_grads[i]);
    }
  }
  for (size_t j = 0; j < xs.size(); ++j) {
    auto it = final_grads.find({xs[j].node->id(), xs[j].index});
    if (it != final_grads.end()) (*grads)[j] = it->second;
  }
  return b.status();
}

}  // namespace sluice

// StackShapes: pushes and pops matched to their StackV2, for ShapeRefiner.
#include "engine/graph/shape_stacks.h"

#include <algorithm>
#include <string>
#include <utility>

namespace sluice {
namespace {

// The StackV2 whose handle reaches `n`'s input 0 through pass-through nodes,
// or null. The walk ends at anything else (a Merge of two handles, a fed
// handle, a function argument).
const Node* StackOfHandle(const Node* n) {
  for (int hops = 0; hops < 1000; ++hops) {
    const Edge* in = nullptr;
    for (const Edge* e : n->in_edges()) {
      if (!e->IsControlEdge() && e->dst_input == 0) in = e;
    }
    if (in == nullptr) return nullptr;
    const Node* src = in->src;
    const std::string& op = src->type_string();
    if (op == "StackV2") return src;
    if (!src->IsEnter() && !src->IsExit() && !src->IsSwitch() && op != "Identity" && op != "RefIdentity") {
      return nullptr;
    }
    n = src;
  }
  return nullptr;
}

const std::vector<const Node*> kNone;

}  // namespace

StackShapes::StackShapes(const Graph& graph) {
  // Most graphs have no stack: then nothing is allocated, and every lookup
  // below finds no entry.
  std::vector<std::pair<const Node*, const Node*>> pushes, pops;  // (node, its StackV2)
  for (const Node* n : graph.nodes()) {
    const std::string& op = n->type_string();
    if (op != "StackPushV2" && op != "StackPopV2") continue;
    const Node* stack = StackOfHandle(n);
    if (stack == nullptr) {
      if (op == "StackPushV2") return;  // it might push onto any stack: no pop gets a shape
      continue;
    }
    (op == "StackPushV2" ? pushes : pops).emplace_back(n, stack);
  }
  if (pushes.empty() || pops.empty()) return;
  const size_t ids = static_cast<size_t>(graph.num_node_ids());
  stack_of_.assign(ids, -1);
  pushes_.resize(ids);
  pops_.resize(ids);
  seen_.assign(ids, 0);
  widened_.resize(ids);
  total_.assign(ids, 0);
  for (const auto& [n, stack] : pushes) stack_of_[n->id()] = stack->id();
  for (const auto& [n, stack] : pops) stack_of_[n->id()] = stack->id();
  std::vector<std::vector<const Node*>> pushes_of_stack(ids);
  for (const auto& [push, stack] : pushes) {
    pushes_of_stack[stack->id()].push_back(push);
    ++total_[stack->id()];
  }
  for (const auto& [pop, stack] : pops) {
    pushes_[pop->id()] = pushes_of_stack[stack->id()];
    for (const Node* push : pushes_[pop->id()]) pops_[push->id()].push_back(pop);
  }
}

const std::vector<const Node*>& StackShapes::PushesBefore(const Node* pop) const {
  return pop->id() < static_cast<int>(pushes_.size()) ? pushes_[pop->id()] : kNone;
}

const std::vector<const Node*>& StackShapes::PopsAfter(const Node* push) const {
  return push->id() < static_cast<int>(pops_.size()) ? pops_[push->id()] : kNone;
}

void StackShapes::StartPass() {
  std::fill(seen_.begin(), seen_.end(), 0);
  std::fill(widened_.begin(), widened_.end(), PartialShape());
}

void StackShapes::Pushed(const Node* push, const PartialShape& elem) {
  if (PopsAfter(push).empty()) return;  // also every node of a graph without pops
  const int stack = stack_of_[push->id()];
  widened_[stack] = seen_[stack] == 0 ? elem : widened_[stack].Widen(elem);
  ++seen_[stack];
}

PartialShape StackShapes::PopShape(const Node* pop) const {
  if (PushesBefore(pop).empty()) return PartialShape::Unknown();
  const int stack = stack_of_[pop->id()];
  return seen_[stack] == total_[stack] ? widened_[stack] : PartialShape::Unknown();
}

}  // namespace sluice

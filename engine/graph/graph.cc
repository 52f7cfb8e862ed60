// Graph: nodes, edges and conversion back to GraphDef.
#include "engine/graph/graph.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/platform/logging.h"

namespace sluice {

const Edge* Node::input_edge(int i) const {
  for (const Edge* e : in_edges_) {
    if (e->dst_input == i) return e;
  }
  return nullptr;
}

Graph::Graph(const OpRegistry* registry) : registry_(registry) {}
Graph::~Graph() = default;

absl::StatusOr<Node*> Graph::AddNode(NodeDef def, bool internal) {
  absl::Status s = internal && !def.name().empty() && def.name()[0] == '_' ? ValidateNodeName(def.name().substr(1))
                                                                           : ValidateNodeName(def.name());
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(NodeContext(def), s.message()));
  if (by_name_.contains(def.name())) {
    return absl::InvalidArgumentError(absl::StrCat("duplicate node name '", def.name(), "'"));
  }
  auto op_def = registry_->LookUpOrError(def.op());
  if (!op_def.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("node '", def.name(), "': ", op_def.status().message()));
  }
  s = AddDefaultsAndValidateAttrs(**op_def, &def);
  if (!s.ok()) return s;
  auto node = std::make_unique<Node>();
  s = InOutTypesForNode(def, **op_def, &node->input_types_, &node->output_types_);
  if (!s.ok()) return s;
  for (DataType t : node->input_types_) {
    if (!DataTypeCanFlow(BaseType(t))) {
      return absl::InvalidArgumentError(absl::StrCat(NodeContext(def), "unsupported input type ", DataTypeString(t)));
    }
  }
  for (DataType t : node->output_types_) {
    if (!DataTypeCanFlow(BaseType(t))) {
      return absl::InvalidArgumentError(absl::StrCat(NodeContext(def), "unsupported output type ", DataTypeString(t)));
    }
  }
  node->id_ = static_cast<int>(nodes_.size());
  node->op_def_ = *op_def;
  const std::string& op = def.op();
  if (op == "Switch" || op == "RefSwitch") node->kind_ = Node::Kind::kSwitch;
  else if (op == "Merge" || op == "RefMerge") node->kind_ = Node::Kind::kMerge;
  else if (op == "Enter" || op == "RefEnter") node->kind_ = Node::Kind::kEnter;
  else if (op == "Exit" || op == "RefExit") node->kind_ = Node::Kind::kExit;
  else if (op == "NextIteration" || op == "RefNextIteration") node->kind_ = Node::Kind::kNextIteration;
  else if (op == "LoopCond") node->kind_ = Node::Kind::kLoopCond;
  node->assigned_device_ = def.device();
  node->def_ = std::move(def);
  Node* raw = node.get();
  by_name_[raw->name()] = raw;
  nodes_.push_back(std::move(node));
  ++num_nodes_;
  return raw;
}

absl::StatusOr<Node*> Graph::AddNodeLike(const Node& like, NodeDef def, bool internal) {
  CHECK(def.op() == like.type_string()) << "AddNodeLike: op '" << def.op() << "' of node '" << def.name()
                                        << "' is not the op of '" << like.name() << "'";
  absl::Status s = internal && !def.name().empty() && def.name()[0] == '_' ? ValidateNodeName(def.name().substr(1))
                                                                           : ValidateNodeName(def.name());
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(NodeContext(def), s.message()));
  auto [slot, inserted] = by_name_.try_emplace(def.name(), nullptr);
  if (!inserted) return absl::InvalidArgumentError(absl::StrCat("duplicate node name '", def.name(), "'"));
  auto node = std::make_unique<Node>();
  node->id_ = static_cast<int>(nodes_.size());
  node->op_def_ = like.op_def_;
  node->input_types_ = like.input_types_;
  node->output_types_ = like.output_types_;
  node->kind_ = like.kind_;
  node->assigned_device_ = def.device();
  node->def_ = std::move(def);
  slot->second = node.get();
  nodes_.push_back(std::move(node));
  ++num_nodes_;
  return slot->second;
}

void Graph::Reserve(int more_nodes, int more_edges) {
  nodes_.reserve(nodes_.size() + more_nodes);
  edges_.reserve(edges_.size() + more_edges);
  by_name_.reserve(by_name_.size() + more_nodes);
}

const Edge* Graph::AddEdge(Node* src, int src_output, Node* dst, int dst_input) {
  CHECK(src != nullptr && dst != nullptr);
  if (src_output == kControlSlot) {
    CHECK_EQ(dst_input, kControlSlot);
  } else {
    CHECK(src_output >= 0 && src_output < src->num_outputs());
    CHECK(dst_input >= 0 && dst_input < dst->num_inputs());
  }
  auto edge = std::make_unique<Edge>();
  edge->src = src;
  edge->src_output = src_output;
  edge->dst = dst;
  edge->dst_input = dst_input;
  edge->id = static_cast<int>(edges_.size());
  const Edge* raw = edge.get();
  src->out_edges_.push_back(raw);
  dst->in_edges_.push_back(raw);
  edges_.push_back(std::move(edge));
  return raw;
}

void Graph::RemoveEdge(const Edge* edge) {
  auto erase = [edge](std::vector<const Edge*>* v) { v->erase(std::remove(v->begin(), v->end(), edge), v->end()); };
  erase(&edge->src->out_edges_);
  erase(&edge->dst->in_edges_);
  edges_[edge->id].reset();
}

void Graph::RemoveNode(Node* node) {
  std::vector<const Edge*> doomed = node->in_edges_;
  doomed.insert(doomed.end(), node->out_edges_.begin(), node->out_edges_.end());
  for (const Edge* e : doomed) RemoveEdge(e);
  by_name_.erase(node->name());
  nodes_[node->id_].reset();
  --num_nodes_;
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(num_nodes_);
  for (const auto& n : nodes_) {
    if (n) out.push_back(n.get());
  }
  return out;
}

Node* Graph::FindNode(absl::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

void Graph::ToGraphDef(GraphDef* graph_def) const {
  graph_def->Clear();
  *graph_def->mutable_versions() = versions_;
  for (Node* node : nodes()) {
    NodeDef* def = graph_def->add_node();
    *def = node->def();
    def->clear_input();
    std::vector<const Edge*> data(node->num_inputs(), nullptr);
    std::vector<const Edge*> control;
    for (const Edge* e : node->in_edges()) {
      if (e->IsControlEdge()) control.push_back(e);
      else data[e->dst_input] = e;
    }
    for (const Edge* e : data) {
      if (e == nullptr) continue;
      def->add_input(e->src_output == 0 ? e->src->name() : absl::StrCat(e->src->name(), ":", e->src_output));
    }
    std::sort(control.begin(), control.end(), [](const Edge* a, const Edge* b) { return a->src->id() < b->src->id(); });
    for (const Edge* e : control) def->add_input(absl::StrCat("^", e->src->name()));
    if (!node->assigned_device().empty()) def->set_device(node->assigned_device());
  }
}

std::unique_ptr<Graph> Graph::Clone() const {
  auto copy = std::make_unique<Graph>(registry_);
  copy->versions_ = versions_;
  copy->nodes_.resize(nodes_.size());
  for (const auto& n : nodes_) {
    if (!n) continue;
    auto c = std::make_unique<Node>();
    c->id_ = n->id_;
    c->def_ = n->def_;
    c->op_def_ = n->op_def_;
    c->input_types_ = n->input_types_;
    c->output_types_ = n->output_types_;
    c->assigned_device_ = n->assigned_device_;
    c->kind_ = n->kind_;
    copy->by_name_[c->name()] = c.get();
    copy->nodes_[c->id_] = std::move(c);
  }
  copy->num_nodes_ = num_nodes_;
  for (const auto& e : edges_) {
    if (!e) continue;
    copy->AddEdge(copy->nodes_[e->src->id_].get(), e->src_output, copy->nodes_[e->dst->id_].get(), e->dst_input);
  }
  return copy;
}

}  // namespace sluice

// ContainerShapes: stack and TensorArray writers and readers matched to their
// container, for ShapeRefiner.
#include "engine/graph/shape_containers.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "engine/framework/node_def_util.h"

namespace sluice {
namespace {

enum class Kind { kNone, kStack, kTensorArray };

// What `n` does to a container through its input 0 (the handle).
struct Role {
  Kind kind = Kind::kNone;
  bool writer = false;
};

Role RoleOf(const Node* n) {
  const std::string& op = n->type_string();
  if (op == "StackPushV2") return {Kind::kStack, true};
  if (op == "StackPopV2") return {Kind::kStack, false};
  if (op == "TensorArrayWriteV3" || op == "TensorArrayScatterV3" || op == "TensorArraySplitV3") {
    return {Kind::kTensorArray, true};
  }
  if (op == "TensorArrayReadV3" || op == "TensorArrayGatherV3") return {Kind::kTensorArray, false};
  return {};
}

// The node whose handle output reaches `n`'s input 0 through pass-through
// nodes, or null. The walk ends at anything else (a Merge of two handles, a
// fed handle, a function argument), which the caller checks.
const Node* HandleSource(const Node* n) {
  for (int hops = 0; hops < 1000; ++hops) {
    const Edge* in = nullptr;
    for (const Edge* e : n->in_edges()) {
      if (!e->IsControlEdge() && e->dst_input == 0) in = e;
    }
    if (in == nullptr) return nullptr;
    const Node* src = in->src;
    const std::string& op = src->type_string();
    if (!src->IsEnter() && !src->IsExit() && !src->IsSwitch() && op != "Identity" && op != "RefIdentity") {
      return src;
    }
    n = src;
  }
  return nullptr;
}

// Gives containers their indices: a StackV2 or TensorArrayV3 node, and a
// TensorArray's gradient array per (array, source).
class ContainerIndex {
 public:
  // The container of `kind` that `n`'s handle names, or -1.
  int Of(const Node* n, Kind kind) { return OfHandleFrom(HandleSource(n), kind, 0); }
  int size() const { return static_cast<int>(keys_.size()); }

 private:
  int OfHandleFrom(const Node* src, Kind kind, int depth) {
    if (src == nullptr || depth > 16) return -1;
    const std::string& op = src->type_string();
    if (kind == Kind::kStack && op == "StackV2") return Intern(src->id(), "");
    if (kind != Kind::kTensorArray) return -1;
    if (op == "TensorArrayV3") return Intern(src->id(), "");
    if (op != "TensorArrayGradV3") return -1;
    std::string source;
    if (!GetNodeAttr(src->def(), "source", &source).ok()) return -1;
    const int array = OfHandleFrom(HandleSource(src), kind, depth + 1);
    if (array < 0) return -1;
    // A gradient array's key: its array's index (negated, below every node
    // id's key) and the source.
    return Intern(-1 - array, source);
  }
  int Intern(int key, const std::string& source) {
    auto [it, inserted] = keys_.emplace(std::make_pair(key, source), static_cast<int>(keys_.size()));
    return it->second;
  }
  std::map<std::pair<int, std::string>, int> keys_;
};

// The element shape `writer` writes, from its inputs' shapes.
PartialShape WrittenElement(const Node* writer, absl::Span<const PartialShape> inputs) {
  const std::string& op = writer->type_string();
  if (op == "StackPushV2" && inputs.size() > 1) return inputs[1];
  if (op == "TensorArrayWriteV3" && inputs.size() > 2) return inputs[2];
  // Rows of the value (Scatter), or pieces of rows of unknown count (Split).
  const int value = op == "TensorArrayScatterV3" ? 2 : op == "TensorArraySplitV3" ? 1 : -1;
  if (value < 0 || static_cast<int>(inputs.size()) <= value) return PartialShape::Unknown();
  const PartialShape& v = inputs[value];
  if (!v.rank_known() || v.rank() == 0) return PartialShape::Unknown();
  std::vector<int64_t> dims(v.dims().begin() + 1, v.dims().end());
  if (op == "TensorArraySplitV3") dims.insert(dims.begin(), kUnknownDim);
  return PartialShape::FromDims(dims);
}

const std::vector<const Node*> kNone;

}  // namespace

ContainerShapes::ContainerShapes(const Graph& graph) {
  // Most graphs have neither stacks nor TensorArrays: then nothing is
  // allocated, and every lookup below finds no entry.
  ContainerIndex index;
  std::vector<std::pair<const Node*, int>> writers, readers;  // (node, container)
  bool unresolved_writer[3] = {false, false, false};           // by Kind
  for (const Node* n : graph.nodes()) {
    const Role role = RoleOf(n);
    if (role.kind == Kind::kNone) continue;
    const int container = index.Of(n, role.kind);
    if (container < 0) {
      // It might write into any container of its kind: no reader of that
      // kind gets a shape.
      if (role.writer) unresolved_writer[static_cast<int>(role.kind)] = true;
      continue;
    }
    (role.writer ? writers : readers).emplace_back(n, container);
  }
  auto poisoned = [&](const Node* n) { return unresolved_writer[static_cast<int>(RoleOf(n).kind)]; };
  readers.erase(std::remove_if(readers.begin(), readers.end(), [&](const auto& r) { return poisoned(r.first); }),
                readers.end());
  if (writers.empty() || readers.empty()) return;
  const size_t ids = static_cast<size_t>(graph.num_node_ids());
  const size_t containers = static_cast<size_t>(index.size());
  container_of_.assign(ids, -1);
  writers_.resize(containers);
  readers_.resize(containers);
  seen_.assign(containers, 0);
  widened_.resize(containers);
  total_.assign(containers, 0);
  for (const auto& [n, container] : writers) {
    container_of_[n->id()] = container;
    writers_[container].push_back(n);
    ++total_[container];
  }
  for (const auto& [n, container] : readers) {
    container_of_[n->id()] = container;
    readers_[container].push_back(n);
  }
  is_reader_.assign(ids, false);
  for (const auto& [n, container] : readers) is_reader_[n->id()] = true;
}

const std::vector<const Node*>& ContainerShapes::WritersBefore(const Node* reader) const {
  const int id = reader->id();
  if (id >= static_cast<int>(container_of_.size()) || container_of_[id] < 0 || !is_reader_[id]) return kNone;
  return writers_[container_of_[id]];
}

const std::vector<const Node*>& ContainerShapes::ReadersAfter(const Node* writer) const {
  const int id = writer->id();
  if (id >= static_cast<int>(container_of_.size()) || container_of_[id] < 0 || is_reader_[id]) return kNone;
  return readers_[container_of_[id]];
}

void ContainerShapes::StartPass() {
  std::fill(seen_.begin(), seen_.end(), 0);
  std::fill(widened_.begin(), widened_.end(), PartialShape());
}

void ContainerShapes::Written(const Node* writer, absl::Span<const PartialShape> inputs) {
  if (ReadersAfter(writer).empty()) return;  // also every node of a graph without readers
  const int container = container_of_[writer->id()];
  const PartialShape elem = WrittenElement(writer, inputs);
  widened_[container] = seen_[container] == 0 ? elem : widened_[container].Widen(elem);
  ++seen_[container];
}

PartialShape ContainerShapes::ElementShape(const Node* reader) const {
  if (WritersBefore(reader).empty()) return PartialShape::Unknown();
  const int container = container_of_[reader->id()];
  return seen_[container] == total_[container] ? widened_[container] : PartialShape::Unknown();
}

}  // namespace sluice

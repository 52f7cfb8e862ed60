// AssignReplicaDevices (see replica_devices.h).
#include "models/replication/replica_devices.h"

#include <numeric>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "engine/framework/device_name.h"
#include "engine/graph/graph_constructor.h"
#include "engine/graph/placer.h"

namespace sluice {
namespace models {
namespace {

bool IsVariable(const Node* n) { return n->type_string() == "VariableV2" || n->type_string() == "Variable"; }

int64_t VariableBytes(const Node* n) {
  const AttrValue* shape = FindAttr(n->def(), "shape");
  const AttrValue* dtype = FindAttr(n->def(), "dtype");
  int64_t elements = 1;
  if (shape != nullptr) {
    for (const auto& d : shape->shape().dim()) elements *= std::max<int64_t>(d.size(), 1);
  }
  return elements * (dtype != nullptr ? std::max(1, DataTypeSize(static_cast<DataType>(dtype->type()))) : 4);
}

class Groups {
 public:
  explicit Groups(int n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  int Find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Union(int a, int b) {
    a = Find(a), b = Find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<int> parent_;
};

}  // namespace

absl::StatusOr<ReplicaDevices> AssignReplicaDevices(const ReplicaDeviceOptions& options, GraphDef* graph_def) {
  if (options.ps_tasks.empty()) return absl::InvalidArgumentError("replication needs at least one 'ps' task");
  GraphConstructorOptions construct;
  construct.infer_shapes = false;
  auto graph = GraphFromGraphDef(*graph_def, construct);
  if (!graph.ok()) return graph.status();
  const Graph& g = **graph;
  Groups groups(g.num_node_ids());
  absl::flat_hash_map<std::string, int> first_of_resource;
  for (const Node* n : g.nodes()) {
    for (const Edge* e : n->in_edges()) {
      if (!e->IsControlEdge() && IsRefType(n->input_type(e->dst_input))) groups.Union(e->src->id(), n->id());
    }
    if (const AttrValue* cls = FindAttr(n->def(), "_class")) {
      std::vector<std::string> entries(cls->list().s().begin(), cls->list().s().end());
      if (!cls->s().empty()) entries.push_back(cls->s());
      for (absl::string_view entry : entries) {
        if (!absl::ConsumePrefix(&entry, "loc:@")) continue;
        if (const Node* other = g.FindNode(std::string(entry))) groups.Union(other->id(), n->id());
      }
    }
    if (IsVariable(n)) {
      auto [it, fresh] = first_of_resource.emplace(SharedResourceKey(*n), n->id());
      if (!fresh) groups.Union(it->second, n->id());
    }
  }
  // Per group: a device a member names with a job, whether it holds a
  // variable (and stays on the worker), its bytes.
  struct Group {
    std::string pinned;
    std::string pinned_by;
    bool has_variable = false;
    bool worker_local = false;
    int part = -1;  // of a partitioned variable
    int64_t bytes = 0;
    std::string device;
  };
  absl::flat_hash_map<int, Group> by_root;
  std::vector<int> variable_roots;  // in graph order, each once
  std::set<std::string> counted;     // resources whose bytes are counted
  for (const Node* n : g.nodes()) {
    Group& group = by_root[groups.Find(n->id())];
    if (!n->requested_device().empty()) {
      auto parsed = ParseDeviceName(n->requested_device());
      if (!parsed.ok()) return absl::InvalidArgumentError(absl::StrCat("node '", n->name(), "': ", parsed.status().message()));
      if (parsed->has_job) {
        if (!group.pinned.empty() && group.pinned != n->requested_device()) {
          return absl::InvalidArgumentError(absl::StrCat("node '", n->name(), "' asks for device '", n->requested_device(),
                                                         "' but node '", group.pinned_by, "', which must share its device, asks for '",
                                                         group.pinned, "'"));
        }
        group.pinned = n->requested_device();
        group.pinned_by = n->name();
      }
    }
    if (IsVariable(n)) {
      if (!group.has_variable) variable_roots.push_back(groups.Find(n->id()));
      group.has_variable = true;
      if (counted.insert(SharedResourceKey(*n)).second) group.bytes += VariableBytes(n);
      for (const std::string& local : options.worker_local) group.worker_local |= n->name() == local;
      auto part = options.partition_of.find(n->name());
      if (part != options.partition_of.end() && group.part < 0) group.part = part->second;
    }
  }
  // The global step's group first.
  if (const Node* step = g.FindNode(options.global_step)) {
    const int root = groups.Find(step->id());
    auto it = std::find(variable_roots.begin(), variable_roots.end(), root);
    if (it != variable_roots.end()) std::rotate(variable_roots.begin(), it, it + 1);
  }
  ReplicaDevices result;
  result.bytes_per_ps.assign(options.ps_tasks.size(), 0);
  size_t next = 0;
  // The global step on ps 0; then the parts of partitioned variables: part
  // p on ps p mod #ps.
  if (const Node* step = g.FindNode(options.global_step)) {
    Group& group = by_root[groups.Find(step->id())];
    if (group.has_variable && group.pinned.empty() && !group.worker_local) {
      group.device = options.ps_tasks[0];
      result.bytes_per_ps[0] += group.bytes;
      next = 1;
    }
  }
  for (int root : variable_roots) {
    Group& group = by_root[root];
    if (group.part < 0 || !group.pinned.empty() || group.worker_local || !group.device.empty()) continue;
    const size_t ps = static_cast<size_t>(group.part) % options.ps_tasks.size();
    group.device = options.ps_tasks[ps];
    result.bytes_per_ps[ps] += group.bytes;
  }
  for (int root : variable_roots) {
    Group& group = by_root[root];
    if (!group.pinned.empty() || group.worker_local || !group.device.empty()) continue;
    size_t ps = 0;
    if (options.round_robin) {
      ps = next++ % options.ps_tasks.size();
    } else {
      for (size_t i = 1; i < options.ps_tasks.size(); ++i) {
        if (result.bytes_per_ps[i] < result.bytes_per_ps[ps]) ps = i;
      }
    }
    group.device = options.ps_tasks[ps];
    result.bytes_per_ps[ps] += group.bytes;
  }
  for (Node* n : g.nodes()) {
    const Group& group = by_root[groups.Find(n->id())];
    std::string device = group.device;
    if (!group.pinned.empty()) {
      device = n->requested_device().empty() || !absl::StartsWith(n->requested_device(), "/job:") ? group.pinned
                                                                                                 : n->requested_device();
    } else if (device.empty()) {
      device = options.worker_task;
      if (!n->requested_device().empty()) device = absl::StrCat(options.worker_task, n->requested_device());
    } else if (!n->requested_device().empty()) {
      device = absl::StrCat(device, n->requested_device());
    }
    if (IsVariable(n) && !group.device.empty()) result.variable_task[n->name()] = group.device;
    n->mutable_def()->set_device(device);
  }
  // Back into the GraphDef, by name.
  absl::flat_hash_map<std::string, std::string> device_of;
  for (const Node* n : g.nodes()) device_of[n->name()] = n->def().device();
  for (NodeDef& node : *graph_def->mutable_node()) {
    auto it = device_of.find(node.name());
    if (it != device_of.end()) node.set_device(it->second);
  }
  return result;
}

}  // namespace models
}  // namespace sluice

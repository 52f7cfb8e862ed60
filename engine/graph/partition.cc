// Partition: copies each node into its device's graph in id order, then walks
// every node's in-edges once: an edge within a device is copied, an edge
// across devices is routed through the Send/Recv pair of its (src, port,
// device[, cast]) or (src, device) for control edges, made on first use. The
// maps are only looked up, never iterated, so the result does not depend on
// hash order. O(N + E) node and edge insertions.
#include "engine/graph/partition.h"

#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "engine/framework/op_kernel.h"  // kOrdersItsInputCopiesAttr, kConsumerOrdersCopyAttr
#include "engine/graph/control_flow.h"
#include "engine/graph/recv_scheduling.h"

namespace sluice {
namespace {

std::string FrameLabel(const std::string& f) {
  return f.empty() ? std::string("the root frame") : absl::StrCat("frame '", f, "'");
}

// The size in bytes of output `port` of `n` as `dtype`, when known statically:
// a Const's value, or the "_output_shapes" attr; 0 otherwise.
int64_t KnownBytes(const Node& n, int port, DataType dtype) {
  const TensorShapeProto* shape = nullptr;
  if (n.type_string() == "Const") {
    const AttrValue* value = FindAttr(n.def(), "value");
    if (value != nullptr && value->has_tensor()) shape = &value->tensor().tensor_shape();
  } else {
    const AttrValue* shapes = FindAttr(n.def(), "_output_shapes");
    if (shapes != nullptr && shapes->has_list() && port < shapes->list().shape_size()) {
      shape = &shapes->list().shape(port);
    }
  }
  if (shape == nullptr || shape->unknown_rank()) return 0;
  int64_t elements = 1;
  for (const auto& dim : shape->dim()) {
    if (dim.size() < 0) return 0;
    elements *= dim.size();
  }
  return elements * DataTypeSize(dtype);
}

class Partitioner {
 public:
  Partitioner(const PartitionOptions& options, const Graph& graph, std::vector<std::unique_ptr<Graph>>* partitions,
              PartitionStats* stats)
      : options_(options), graph_(graph), partitions_(partitions), stats_(stats) {}

  absl::Status Run();

 private:
  const std::string& DeviceName(int d) const { return options_.device_names[d]; }
  // `base`, or `base` + "_1", "_2"... if a node of that name exists on `device`.
  std::string UniqueName(int device, std::string base) const;
  Graph* Part(int d) { return (*partitions_)[d].get(); }
  int DeviceOf(const Node* n) const { return options_.node_device[n->id()]; }
  std::string NodeOn(const Node* n) const {
    return absl::StrCat("node '", n->name(), "' (on ", DeviceName(DeviceOf(n)), ")");
  }

  absl::Status CheckOptions() const;
  absl::Status CopyNodes();
  absl::Status CheckCrossEdge(const Edge* e) const;
  // The node on the destination device that yields the value of (src, port)
  // (the Recv, or the Cast after it).
  absl::StatusOr<Node*> DataRecv(const Edge* e, int dst_device);
  // The Recv on `dst_device` that fires after `src` has run.
  absl::StatusOr<Node*> ControlRecv(const Node* src, int dst_device);
  // The NodeDefs of a _Send from `src_device` to `dst_device` and of its _Recv
  // with every attr but the name, tensor_name and the dtype set, made once per
  // pair of devices and copied for each pair of nodes.
  struct PairPrototype {
    NodeDef send;
    NodeDef recv;
  };
  const PairPrototype& Prototype(int src_device, int dst_device);
  // Adds `def`, made from Prototype(), to the partition of `device`: the first
  // _Send (or _Recv) of each dtype there is validated, the later ones are
  // added like it.
  absl::StatusOr<Node*> AddLike(int device, bool recv, DataType dtype, NodeDef def);
  // Adds a _Send of (input, port) on `src_device` and its _Recv on `dst_device`.
  // `consumer_orders_copy`: the _Recv gets kConsumerOrdersCopyAttr.
  absl::StatusOr<Node*> AddPair(const std::string& tensor_name, const std::string& base_name, Node* input, int port,
                                DataType dtype, int src_device, int dst_device, bool consumer_orders_copy = false);
  // Whether every consumer of (src, port) on `dst_device` has kOrdersItsInputCopiesAttr.
  bool ConsumersOrderTheirCopies(const Node* src, int port, int dst_device) const;
  absl::StatusOr<Node*> AddCast(int device, const std::string& base_name, Node* input, DataType from, DataType to);

  const PartitionOptions& options_;
  const Graph& graph_;
  std::vector<std::unique_ptr<Graph>>* partitions_;
  PartitionStats* stats_;
  std::vector<Node*> copy_;  // by original node id
  // Every name this pass makes contains "/_" and differs from the others it
  // makes (its last two components name the kind of node, the port and the
  // device, and it is made once per key), so only a node of the input graph
  // whose name contains "/_" can hold it; without one UniqueName looks nothing up.
  bool names_may_clash_ = false;
  std::vector<ControlFlowInfo> frames_;
  absl::flat_hash_map<std::tuple<int, int, int, bool>, Node*> data_recvs_;  // (src, port, dst dev, cast)
  absl::flat_hash_map<std::pair<int, int>, Node*> control_recvs_;           // (src, dst dev)
  std::vector<SendRecvLink> links_;
  std::vector<std::unique_ptr<PairPrototype>> prototypes_;  // by src device * devices + dst device
  absl::flat_hash_map<std::tuple<int, bool, DataType>, Node*> like_;  // (device, recv, dtype) -> first such node
};

absl::Status Partitioner::CheckOptions() const {
  const int num_devices = static_cast<int>(options_.device_names.size());
  if (options_.incarnations.size() != options_.device_names.size()) {
    return absl::InvalidArgumentError(absl::StrCat("partition: ", options_.device_names.size(), " device names but ",
                                                   options_.incarnations.size(), " incarnations"));
  }
  if (static_cast<int>(options_.node_device.size()) != graph_.num_node_ids()) {
    return absl::InvalidArgumentError(absl::StrCat("partition: node_device has ", options_.node_device.size(),
                                                   " entries for a graph of ", graph_.num_node_ids(), " node ids"));
  }
  for (int id = 0; id < graph_.num_node_ids(); ++id) {
    const Node* n = graph_.FindNodeId(id);
    if (n == nullptr) continue;
    const int d = options_.node_device[id];
    if (d < 0 || d >= num_devices) {
      return absl::InvalidArgumentError(absl::StrCat("partition: node '", n->name(), "' is placed on device index ",
                                                     d, ", but there are ", num_devices, " devices"));
    }
  }
  return absl::OkStatus();
}

std::string Partitioner::UniqueName(int device, std::string base) const {
  const Graph& g = *(*partitions_)[device];
  if (!names_may_clash_ || g.FindNode(base) == nullptr) return base;
  for (int i = 1;; ++i) {
    std::string name = absl::StrCat(base, "_", i);
    if (g.FindNode(name) == nullptr) return name;
  }
}

absl::Status Partitioner::CopyNodes() {
  copy_.assign(graph_.num_node_ids(), nullptr);
  std::vector<int> count(options_.device_names.size(), 0);
  for (int id = 0; id < graph_.num_node_ids(); ++id) {
    if (options_.node_device[id] >= 0) ++count[options_.node_device[id]];
  }
  for (int id = 0; id < graph_.num_node_ids(); ++id) {
    const Node* n = graph_.FindNodeId(id);
    if (n == nullptr) continue;
    const int d = DeviceOf(n);
    if (Part(d) == nullptr) {
      (*partitions_)[d] = std::make_unique<Graph>(graph_.op_registry());
      Part(d)->set_versions(graph_.versions());
      Part(d)->Reserve(count[d], count[d]);
    }
    names_may_clash_ |= n->name().find("/_") != std::string::npos;
    // The node's NodeDef without its inputs (the partition's edges say where
    // inputs come from), on its device.
    NodeDef def;
    def.set_name(n->name());
    def.set_op(n->type_string());
    def.set_device(DeviceName(d));
    *def.mutable_attr() = n->def().attr();
    // The node was validated when it entered `graph`; '_' names (feeds,
    // fetches) are Sluice's own.
    auto copy = Part(d)->AddNodeLike(*n, std::move(def), /*internal=*/true);
    if (!copy.ok()) return copy.status();
    copy_[id] = *copy;
  }
  return absl::OkStatus();
}

absl::Status Partitioner::CheckCrossEdge(const Edge* e) const {
  const Node* src = e->src;
  const Node* dst = e->dst;
  if (!e->IsControlEdge() && IsRefType(dst->input_type(e->dst_input))) {
    return absl::InvalidArgumentError(
        absl::StrCat("edge from ", NodeOn(src), " to input ", e->dst_input, " of ", NodeOn(dst),
                     " carries a reference (", DataTypeString(dst->input_type(e->dst_input)),
                     ") across devices; placement must put both nodes on one device"));
  }
  if (!frames_.empty()) {
    // The frame the value lives in: an Exit's output is in the enclosing frame.
    const ControlFlowInfo& info = frames_[src->id()];
    const std::string& frame = src->IsExit() ? info.parent_frame : info.frame_name;
    if (!frame.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("loops that span devices are not supported yet: ", NodeOn(src),
                                                     " in ", FrameLabel(frame), " has an edge to ", NodeOn(dst)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Node*> Partitioner::AddCast(int device, const std::string& base_name, Node* input, DataType from,
                                           DataType to) {
  NodeDef def;
  def.set_name(UniqueName(device, base_name));
  def.set_op("Cast");
  def.set_device(DeviceName(device));
  (*def.mutable_attr())["SrcT"] = MakeAttr(from);
  (*def.mutable_attr())["DstT"] = MakeAttr(to);
  // float -> bfloat16 cuts the mantissa (whitepaper §5.5); the way back is exact.
  (*def.mutable_attr())["Truncate"] = MakeAttr(true);
  auto cast = Part(device)->AddNode(std::move(def), /*internal=*/true);
  if (!cast.ok()) return cast.status();
  Part(device)->AddEdge(input, 0, *cast, 0);
  return *cast;
}

bool Partitioner::ConsumersOrderTheirCopies(const Node* src, int port, int dst_device) const {
  bool any = false;
  for (const Edge* e : src->out_edges()) {
    if (e->IsControlEdge() || e->src_output != port || DeviceOf(e->dst) != dst_device) continue;
    bool orders = false;
    if (!GetNodeAttr(e->dst->def(), kOrdersItsInputCopiesAttr, &orders).ok() || !orders) return false;
    any = true;
  }
  return any;
}

absl::StatusOr<Node*> Partitioner::AddPair(const std::string& tensor_name, const std::string& base_name, Node* input,
                                           int port, DataType dtype, int src_device, int dst_device,
                                           bool consumer_orders_copy) {
  const PairPrototype& proto = Prototype(src_device, dst_device);
  NodeDef send_def = proto.send;
  send_def.set_name(UniqueName(src_device, absl::StrCat(base_name, "/_send_to_", dst_device)));
  (*send_def.mutable_attr())["T"].set_type(dtype);
  (*send_def.mutable_attr())["tensor_name"].set_s(tensor_name);
  auto send = AddLike(src_device, /*recv=*/false, dtype, std::move(send_def));
  if (!send.ok()) return send.status();
  Part(src_device)->AddEdge(input, port, *send, 0);

  NodeDef recv_def = proto.recv;
  recv_def.set_name(UniqueName(dst_device, absl::StrCat(base_name, "/_recv_from_", src_device)));
  (*recv_def.mutable_attr())["tensor_type"].set_type(dtype);
  (*recv_def.mutable_attr())["tensor_name"].set_s(tensor_name);
  if (consumer_orders_copy) (*recv_def.mutable_attr())[kConsumerOrdersCopyAttr] = MakeAttr(true);
  auto recv = AddLike(dst_device, /*recv=*/true, dtype, std::move(recv_def));
  if (!recv.ok()) return recv.status();
  links_.push_back(SendRecvLink{src_device, (*send)->id(), dst_device, (*recv)->id()});
  return *recv;
}

const Partitioner::PairPrototype& Partitioner::Prototype(int src_device, int dst_device) {
  const size_t index = static_cast<size_t>(src_device) * options_.device_names.size() + dst_device;
  if (prototypes_.size() <= index) prototypes_.resize(options_.device_names.size() * options_.device_names.size());
  std::unique_ptr<PairPrototype>& proto = prototypes_[index];
  if (proto != nullptr) return *proto;
  proto = std::make_unique<PairPrototype>();
  auto common_attrs = [&](NodeDef* def) {
    (*def->mutable_attr())["tensor_name"] = MakeAttr("");
    (*def->mutable_attr())["send_device"] = MakeAttr(DeviceName(src_device));
    (*def->mutable_attr())["send_device_incarnation"] =
        MakeAttr(static_cast<int64_t>(options_.incarnations[src_device]));
    (*def->mutable_attr())["recv_device"] = MakeAttr(DeviceName(dst_device));
    (*def->mutable_attr())["client_terminated"] = MakeAttr(false);
  };
  proto->send.set_op("_Send");
  proto->send.set_device(DeviceName(src_device));
  (*proto->send.mutable_attr())["T"] = MakeAttr(DT_FLOAT);
  common_attrs(&proto->send);
  proto->recv.set_op("_Recv");
  proto->recv.set_device(DeviceName(dst_device));
  (*proto->recv.mutable_attr())["tensor_type"] = MakeAttr(DT_FLOAT);
  common_attrs(&proto->recv);
  return *proto;
}

absl::StatusOr<Node*> Partitioner::AddLike(int device, bool recv, DataType dtype, NodeDef def) {
  auto [it, first] = like_.try_emplace(std::make_tuple(device, recv, dtype), nullptr);
  if (!first) return Part(device)->AddNodeLike(*it->second, std::move(def), /*internal=*/true);
  auto node = Part(device)->AddNode(std::move(def), /*internal=*/true);
  if (!node.ok()) {
    like_.erase(it);
    return node.status();
  }
  it->second = *node;
  return *node;
}

absl::StatusOr<Node*> Partitioner::DataRecv(const Edge* e, int dst_device) {
  const Node* src = e->src;
  const int src_device = DeviceOf(src);
  const DataType dtype = BaseType(src->output_type(e->src_output));
  const bool cast = dtype == DT_FLOAT && options_.should_cast && options_.should_cast(e);
  auto key = std::make_tuple(src->id(), e->src_output, dst_device, cast);
  auto it = data_recvs_.find(key);
  if (it != data_recvs_.end()) return it->second;

  const std::string base_name = absl::StrCat(src->name(), "/_", e->src_output, cast ? "_bf16" : "");
  const std::string tensor_name =
      absl::StrCat("edge_", src->id(), "_", src->name(), ":", e->src_output, "_to_", dst_device, cast ? "_bf16" : "");
  Node* input = copy_[src->id()];
  int port = e->src_output;
  const DataType sent = cast ? DT_BFLOAT16 : dtype;
  if (cast) {
    auto to_bf16 = AddCast(src_device, absl::StrCat(base_name, "/_cast_to_", dst_device), input, DT_FLOAT,
                           DT_BFLOAT16);
    if (!to_bf16.ok()) return to_bf16.status();
    input = *to_bf16;
    port = 0;
  }
  auto recv = AddPair(tensor_name, base_name, input, port, sent, src_device, dst_device,
                      !cast && ConsumersOrderTheirCopies(src, e->src_output, dst_device));
  if (!recv.ok()) return recv.status();
  Node* value = *recv;
  if (cast) {
    auto to_float = AddCast(dst_device, absl::StrCat(base_name, "/_uncast_from_", src_device), value,
                            DT_BFLOAT16, DT_FLOAT);
    if (!to_float.ok()) return to_float.status();
    value = *to_float;
  }
  if (stats_ != nullptr) {
    ++stats_->send_recv_pairs;
    ++stats_->cross_edges[{src_device, dst_device}];
    stats_->cross_bytes[{src_device, dst_device}] += KnownBytes(*src, e->src_output, sent);
  }
  data_recvs_.emplace(key, value);
  return value;
}

absl::StatusOr<Node*> Partitioner::ControlRecv(const Node* src, int dst_device) {
  auto key = std::make_pair(src->id(), dst_device);
  auto it = control_recvs_.find(key);
  if (it != control_recvs_.end()) return it->second;
  const int src_device = DeviceOf(src);
  // A scalar that exists once src has run (and is dead when src is).
  NodeDef def;
  def.set_name(UniqueName(src_device, absl::StrCat(src->name(), "/_ctrl/_const_to_", dst_device)));
  def.set_op("Const");
  def.set_device(DeviceName(src_device));
  (*def.mutable_attr())["dtype"] = MakeAttr(DT_FLOAT);
  (*def.mutable_attr())["value"] = MakeAttr(Tensor::Scalar<float>(0));
  auto dummy = Part(src_device)->AddNode(std::move(def), /*internal=*/true);
  if (!dummy.ok()) return dummy.status();
  Part(src_device)->AddControlEdge(copy_[src->id()], *dummy);
  auto recv = AddPair(absl::StrCat("ctrl_", src->id(), "_", src->name(), "_to_", dst_device),
                      absl::StrCat(src->name(), "/_ctrl"), *dummy, 0, DT_FLOAT, src_device, dst_device);
  if (!recv.ok()) return recv.status();
  if (stats_ != nullptr) ++stats_->control_send_recv_pairs;
  control_recvs_.emplace(key, *recv);
  return *recv;
}

absl::Status Partitioner::Run() {
  absl::Status s = CheckOptions();
  if (!s.ok()) return s;
  partitions_->clear();
  partitions_->resize(options_.device_names.size());
  if (stats_ != nullptr) *stats_ = PartitionStats();
  // Frames only matter when the graph has loops.
  for (int id = 0; id < graph_.num_node_ids() && frames_.empty(); ++id) {
    const Node* n = graph_.FindNodeId(id);
    if (n != nullptr && n->IsEnter()) {
      s = BuildControlFlowInfo(graph_, &frames_);
      if (!s.ok()) return s;
    }
  }
  s = CopyNodes();
  if (!s.ok()) return s;
  for (int id = 0; id < graph_.num_node_ids(); ++id) {
    const Node* dst = graph_.FindNodeId(id);
    if (dst == nullptr) continue;
    const int dst_device = DeviceOf(dst);
    for (const Edge* e : dst->in_edges()) {
      if (DeviceOf(e->src) == dst_device) {
        Part(dst_device)->AddEdge(copy_[e->src->id()], e->src_output, copy_[id], e->dst_input);
        continue;
      }
      s = CheckCrossEdge(e);
      if (!s.ok()) return s;
      if (e->IsControlEdge()) {
        auto recv = ControlRecv(e->src, dst_device);
        if (!recv.ok()) return recv.status();
        Part(dst_device)->AddControlEdge(*recv, copy_[id]);
      } else {
        auto value = DataRecv(e, dst_device);
        if (!value.ok()) return value.status();
        Part(dst_device)->AddEdge(*value, 0, copy_[id], e->dst_input);
      }
    }
  }
  if (options_.schedule_recvs_alap && !links_.empty()) {
    std::vector<Graph*> graphs;
    for (auto& p : *partitions_) graphs.push_back(p.get());
    auto added = ScheduleRecvsAlap(graphs, links_);
    if (!added.ok()) return added.status();
    if (stats_ != nullptr) stats_->recvs_scheduled = *added;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Partition(const PartitionOptions& options, const Graph& graph,
                       std::vector<std::unique_ptr<Graph>>* partitions, PartitionStats* stats) {
  Partitioner partitioner(options, graph, partitions, stats);
  absl::Status s = partitioner.Run();
  if (!s.ok()) partitions->clear();
  return s;
}

}  // namespace sluice

// Partition: splits a placed graph into one graph per device (whitepaper
// §3.2.2, Figure 4). Every edge whose ends sit on different devices is cut
// and replaced by a _Send on the source device and a _Recv on the destination
// device, which meet in the step's rendezvous under a key both ends build
// from the same attrs. One pair carries a tensor to a device however many
// nodes there read it; a control edge crosses as a small Const sent to the
// other side, whose _Recv then holds the control edge. Recvs are then given a
// control input so that they start as late as possible (§5.2; see
// recv_scheduling.h), which bounds how long received tensors sit in memory.
//
// Ownership: Partition reads the input graph and returns new Graphs owned by
// the caller. Thread safety: a pure function of its arguments; the input
// graph is only read, so several partitions of one graph may run at once.
#ifndef SLUICE_ENGINE_GRAPH_PARTITION_H_
#define SLUICE_ENGINE_GRAPH_PARTITION_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "engine/graph/graph.h"

namespace sluice {

struct PartitionOptions {
  // Full device names, indexed like the placement; incarnations[i] goes into the Send/Recv attrs.
  std::vector<std::string> device_names;
  std::vector<uint64_t> incarnations;
  // Device index of each node, by node id (graph.num_node_ids() entries; -1 for removed ids).
  std::vector<int> node_device;
  // Lossy-transfer hook: for a cross-device DT_FLOAT data edge, return true to insert
  // Cast(float->bfloat16) before the Send and Cast(bfloat16->float) after the Recv, halving the
  // bytes sent. The casts have Truncate=true: the mantissa is cut on send, as the paper does, and
  // zero-filled on receipt. Asked once per edge; a
  // tensor whose consumers on one device answer differently crosses twice, once of each kind.
  // Edges of other types are never cast. Default: none.
  std::function<bool(const Edge*)> should_cast;
  // Recv nodes get a control input so they start as late as possible (whitepaper §5.2).
  bool schedule_recvs_alap = true;
};

struct PartitionStats {
  int send_recv_pairs = 0;  // data
  int control_send_recv_pairs = 0;
  // Per (src device, dst device): the number of tensors that cross per step (data Send/Recv
  // pairs; control pairs are counted above only).
  std::map<std::pair<int, int>, int64_t> cross_edges;
  // Per (src device, dst device): the bytes of those tensors whose size is statically known
  // (a Const's value, or the "_output_shapes" attr when fully defined), as sent (bfloat16 when
  // cast); tensors of unknown size add 0, so this is a lower bound.
  std::map<std::pair<int, int>, int64_t> cross_bytes;
  // Control edges added by Recv scheduling.
  int recvs_scheduled = 0;
};

// REQUIRES: node_device set for every node. Builds one Graph per device index into *partitions
// (partitions->size() == device_names.size(); nullptr for a device with no nodes). Each partition
// holds its nodes (same names, NodeDef.device = the full device name, assigned_device set) plus
// _Send/_Recv nodes:
//  - one _Send on the source device and one _Recv on the destination device PER (src node,
//    src_output, dst device), however many consumers;
//  - a control edge src@A -> dst@B becomes a scalar Const on A (with a control input from src)
//    feeding a _Send, and a _Recv on B with a control edge to dst; one pair per (src, B);
//  - tensor_name is unique per pair and identical on both sides; send_device,
//    send_device_incarnation and recv_device come from the options; client_terminated=false;
//    a Send's T is the base (non-ref) type of the value; a data _Recv (not cast) whose
//    consumers on its device all have kOrdersItsInputCopiesAttr true gets
//    kConsumerOrdersCopyAttr true (engine/framework/op_kernel.h);
//  - a cross-device edge into a reference input is InvalidArgument naming both nodes;
//  - a cross-device edge whose value lives in a loop frame (other than an Enter's input or an
//    Exit's output, which are in the enclosing frame) is InvalidArgument "loops that span
//    devices are not supported yet: ..." naming the node;
//  - the nodes it adds are named under their source node, e.g. "x/_0/_send_to_1" and
//    "x/_0/_recv_from_0" for x:0 sent from device 0 to 1, "x/_ctrl/..." for control edges
//    (with a "_N" suffix should a node of that name exist), so a partition without feeds
//    and fetches survives a round trip through GraphDef;
//  - client-terminated _Recv/_Send nodes (feeds and fetches) stay in their node's partition,
//    attrs unchanged.
// Note: a ref output (a variable) read on another device crosses by value, read when its _Send
// runs, so control inputs of the consumer do not order that read: placement should put reads
// that must follow an update (Identity(v) after ^assign) on the variable's device.
// Malformed options (sizes, device indices out of range) are InvalidArgument. `stats` may be null.
absl::Status Partition(const PartitionOptions& options, const Graph& graph,
                       std::vector<std::unique_ptr<Graph>>* partitions, PartitionStats* stats);

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_PARTITION_H_

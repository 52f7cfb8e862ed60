// Placement (whitepaper §3.2.1, §4.3): gives every node of a graph a device
// of a DeviceSet, honouring the constraints below, or says which constraints
// clash. Within the feasible set it takes the lowest device index (the simple
// placer, the default) or, given a cost model, simulates the step and puts
// each node where it would finish soonest.
//
// Constraints, per node:
//   - its requested device (NodeDef.device), a partial spec; "" means any;
//   - a kernel for the node's op and type attrs on the device's type
//     (KernelRegistry::HasKernel);
//   - `pinned`: an earlier assignment to keep.
// Colocation (union-find over nodes, §4.3); a group's feasible set is the
// intersection of its members' sets:
//   - a data edge whose destination input or source output is a ref type
//     (VariableV2 -> Assign / ApplyGradientDescent / Identity of the ref);
//   - a data edge into a DT_RESOURCE input (VarHandleOp -> ReadVariableOp /
//     AssignVariableOp / ResourceApply*: a handle is used where its resource
//     lives, as in TensorFlow);
//   - `_class` entries "loc:@<node>" (list(string), TensorFlow's form, or a
//     single string; entries without the "loc:@" prefix are ignored);
//   - stateful ops with a `shared_name` attr that name the same resource:
//     same op (Variable counts as VariableV2), same `container`, same
//     shared_name (a node's own name when its shared_name is empty);
//   - every node of one loop (BuildControlFlowInfo): a frame's nodes (its
//     Enters included), and a nested frame with its enclosing one, so a loop
//     is never split across devices.
//
// Choice within a group's feasible set, by default (the simple placer): a
// GPU when the set has one (so every op with a GPU kernel runs there and the
// rest, the input pipeline among them, stays on the CPU), else the lowest
// device index, except for
// an *unconstrained* node (no requested device, not pinned, not in a loop
// frame, alone in its colocation group) that has a data input: it takes the
// device of its first data input (lowest input port) when that device has a
// kernel for it and is not a CPU where a GPU is feasible, else the preferred
// device as above. So unconstrained chains
// follow their producers, and a layer pinned to CPU:1 drags along the nodes it
// is colocated with (ref and resource edges, _class, shared_name) but nothing else.
//
// With a cost model (PlacementOptions::cost_model; whitepaper §3.2.1) the
// choice comes from a simulated execution instead: nodes are visited in
// topological order, each device runs one node at a time, and each group
// goes, when its first member that has data inputs is reached, to the
// feasible device where that member would finish soonest: the latest of its
// inputs' finish times (plus the cost model's transfer time for an input on
// another device) and the device's free time, plus its own compute time.
// Ties go to the lower index. A member with no data inputs (a variable, a
// constant) waits: it goes where its group or, when alone, its first
// simulated consumer goes. Nodes outside the simulated step (`cost_roots`)
// and groups the simulation never decided fall back to the simple rule.
//
// allow_soft_placement: when a node's requested device matches no device of
// the set, or none with a kernel for the node, its device type and id are
// dropped from the request (job/replica/task stay) and placement goes on.
// Conflicts between members of a colocation group are errors either way.
//
// Errors are InvalidArgument naming the node (and the device, attr or both
// clashing constraints); on error the graph is left unchanged and, when
// given, *conflict says which node and constraints clash. The result does not
// depend on hash order: nodes are visited in id order.
// Cost: O((N + E) * (D/64 + alpha)), plus one kernel lookup per distinct
// (op, type attrs); the simulation adds O((N + E) * D).
// Thread safety: Place mutates `graph` only; the DeviceSet is read-only.
#ifndef SLUICE_ENGINE_GRAPH_PLACER_H_
#define SLUICE_ENGINE_GRAPH_PLACER_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "engine/framework/device_set.h"
#include "engine/graph/graph.h"

namespace sluice {

class CostModel;

struct PlacementOptions {
  const DeviceSet* devices = nullptr;
  // An unsatisfiable device type request falls back to a feasible device.
  bool allow_soft_placement = false;
  // Earlier assignments to keep (node name -> device index), e.g. from a
  // previous Extend. Names not in the graph are ignored.
  const absl::flat_hash_map<std::string, int>* pinned = nullptr;
  // Cost-model placement (see above); null: the simple placer. It must be
  // built from this graph (node ids index it).
  const CostModel* cost_model = nullptr;
  // The nodes whose step the cost model simulates, with everything they
  // depend on (a training step's train op and loss); empty: the whole graph.
  // A name not in the graph is InvalidArgument.
  std::vector<std::string> cost_roots;
  // When set, filled on success with each node's device index, indexed by
  // node id (-1 for ids of removed nodes).
  std::vector<int>* device_indices = nullptr;
};

// When placement fails on a conflict, which nodes and constraints clash (for
// located config errors). Constraint strings take these forms:
//   "device '<as requested>'"
//   "kernels for op '<op>' (<device types that have one>)"
//   "pinned to '<full device name>'"
//   "colocation with '<node>' (_class)"   (a _class naming no node)
// A node with several constraints lists them joined by " and ".
struct PlacementConflict {
  std::string node;        // the node whose constraint cannot be met
  std::string constraint;  // e.g. "device '/device:CPU:5'"
  std::string other_node;  // the node it is grouped with, "" if none
  std::string other_constraint;
  // How `node` joins the group that holds `other_node`: the first colocation
  // link on the path from `node` towards `other_node`, e.g.
  // "colocation with 'fc1/kernel' (_class)", "colocation with 'v' (ref edge)",
  // "colocation with 'v' (shared_name)", "colocation with 'x' (loop frame 'f')";
  // "" when other_node is "".
  std::string colocation;
};

// Assigns every node of `graph` a device: node->set_assigned_device(full name).
absl::Status Place(const PlacementOptions& options, Graph* graph, PlacementConflict* conflict = nullptr);

// The resource a stateful node with a shared_name attr names (its op family,
// container, and shared_name or else its own name), or "": nodes with the
// same key share one resource and so one device (an eval tower's variable
// and the training one).
std::string SharedResourceKey(const Node& node);

}  // namespace sluice

#endif  // SLUICE_ENGINE_GRAPH_PLACER_H_

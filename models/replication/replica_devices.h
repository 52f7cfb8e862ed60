// The device assignment of one replica of a between-graph replicated run
// (OSDI §4.4; TensorFlow's replica_device_setter): every worker builds the
// same training graph and runs it with its own variables-free part on its
// own task, while the variables live on the parameter-server tasks.
//
// Nodes that must share a device form groups: a node and the source of each
// of its ref inputs (Assign, Apply*, an accumulator's ops), `_class loc:@X`
// with X, and variables that name the same resource (the eval tower's
// shared variables). A group holding a variable goes to a ps task as a whole
// (a variable with its optimizer slots and their updates), the group of the
// global step to ps 0 first, the others to the ps task with the fewest bytes
// so far (TensorFlow's greedy load balancing) or round robin; the parts of a
// partitioned variable go one per ps task, round robin. Every other
// group runs on this worker. A node that names a job keeps its device (its
// group follows it); a device without a job ("/device:CPU:1") is on this
// worker.
//
// Thread safety: pure function.
#ifndef SLUICE_MODELS_REPLICATION_REPLICA_DEVICES_H_
#define SLUICE_MODELS_REPLICATION_REPLICA_DEVICES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/framework/graph.pb.h"

namespace sluice {
namespace models {

struct ReplicaDeviceOptions {
  // This worker: "/job:worker/replica:0/task:1".
  std::string worker_task;
  // The parameter servers, in task order (at least one).
  std::vector<std::string> ps_tasks;
  bool round_robin = false;  // default: fewest bytes first
  // Its group goes to ps 0 before any other.
  std::string global_step;
  // Variables that stay on this worker (a sync replica's local step).
  std::vector<std::string> worker_local;
  // Parts of partitioned variables (models/embedding_ops.h) by node name ->
  // part index: the group of part p goes to ps task p mod #ps, so a table's
  // parts spread over the ps tasks (placed right after the global step,
  // before the other groups are balanced).
  std::map<std::string, int> partition_of;
};

struct ReplicaDevices {
  // ps task of each variable the assignment placed.
  std::map<std::string, std::string> variable_task;
  // Variable bytes per ps task (options.ps_tasks order).
  std::vector<int64_t> bytes_per_ps;
};

// Sets the device of every node of `graph`. InvalidArgument when the graph
// does not construct or a group holds nodes pinned to two different jobs.
absl::StatusOr<ReplicaDevices> AssignReplicaDevices(const ReplicaDeviceOptions& options, GraphDef* graph);

}  // namespace models
}  // namespace sluice

#endif  // SLUICE_MODELS_REPLICATION_REPLICA_DEVICES_H_

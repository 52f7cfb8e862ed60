// DistributedSession: the Session the chief of a cluster trains with
// (DESIGN.md "Distribution"; whitepaper §3.3). It places the graph over every
// device of the cluster (this task's devices first: its CPU:0 is the client
// that feeds and fetches go through), and for each Run signature cuts the
// step's graph into one partition per device, merges them per task and
// registers one graph on each task. A step picks one step id, puts the feeds
// into this task's step rendezvous, runs every task's graph in parallel, takes
// the fetches (pulling from the task that produced each), and cleans the step
// up everywhere. The first error on any task aborts the step on every task and
// is returned with the task's name in front; the step still ends only after
// every task answered (or its call failed).
//
// Ownership: borrows the local Worker and the WorkerCache; both must outlive
// the session. Thread safety: like Session (Run may be called concurrently).
#ifndef SLUICE_ENGINE_DISTRIBUTED_DISTRIBUTED_SESSION_H_
#define SLUICE_ENGINE_DISTRIBUTED_DISTRIBUTED_SESSION_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/distributed/worker.h"
#include "engine/distributed/worker_interface.h"
#include "engine/runtime/session.h"

namespace sluice {
namespace distributed {

struct DistributedSessionOptions {
  // enable_cse, enable_constant_folding, enable_identity_removal,
  // fuse_bias_activation, fuse_batch_norm, onednn_kernels and
  // allow_soft_placement apply; the rest is the workers'.
  SessionOptions session;
  // This task's worker (the client side of feeds and fetches). Borrowed.
  Worker* local_worker = nullptr;
  // Every task's worker. Borrowed.
  WorkerCache* workers = nullptr;
  // Every device of the cluster as the tasks report them (GetStatus); this
  // task's devices first, its CPU:0 first of all.
  std::vector<DeviceAttributes> devices;
  // Float32 tensors that cross tasks travel as 16-bit values whose mantissa
  // is truncated (whitepaper §5.5); the receiver zero-fills it.
  bool lossy_transfer = false;
};

absl::StatusOr<std::unique_ptr<Session>> NewDistributedSession(DistributedSessionOptions options);

// Asks every task in `tasks` for its status (with `config_hash` to compare),
// retrying unreachable ones until `timeout`; returns every device of the
// cluster with `local_task`'s first. `progress` (may be null) hears which
// tasks it still waits for, every few seconds. A task with another config is
// FailedPrecondition naming it; a task still unreachable at the timeout is
// Unavailable naming it; Cancelled as soon as `cancelled` (may be empty) says so.
// With `require_peers_ready` (the chief), a task counts as answered only once it
// reports that it has reached every other task (GetStatusResponse.peers_ready),
// so every channel a step uses is connected.
absl::StatusOr<std::vector<DeviceAttributes>> ConnectToCluster(WorkerCache* workers,
                                                               const std::vector<std::string>& tasks,
                                                               const std::string& local_task,
                                                               const std::string& config_hash, absl::Duration timeout,
                                                               std::ostream* progress,
                                                               std::function<bool()> cancelled = nullptr,
                                                               bool require_peers_ready = false);

}  // namespace distributed
}  // namespace sluice

#endif  // SLUICE_ENGINE_DISTRIBUTED_DISTRIBUTED_SESSION_H_

// What `train` does as a task of a cluster (DESIGN.md "Distribution"): every
// task serves the gRPC worker service at its address; the chief (worker 0)
// also trains through a distributed session and, when it exits, tells every
// other task to stop; the other tasks serve until then.
//
// Ownership: a ClusterRuntime owns its worker, server and channels; the
// session made from it must be destroyed first. Thread safety: one thread
// drives a ClusterRuntime; the worker and server serve on gRPC's threads.
#ifndef SLUICE_CMD_TRAIN_CLUSTER_TASK_H_
#define SLUICE_CMD_TRAIN_CLUSTER_TASK_H_

#include <atomic>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "configs/experiment.pb.h"
#include "engine/distributed/grpc_worker_cache.h"
#include "engine/distributed/grpc_worker_service.h"
#include "engine/distributed/task_identity.h"
#include "engine/distributed/tcp_tensor_transport.h"
#include "engine/distributed/worker.h"
#include "engine/framework/device_set.h"
#include "engine/runtime/session.h"

namespace sluice {

// Copies, not pointers: the runtime outlives the trainer's locals (its
// Shutdown calls go out last, with the chief's exit code).
struct ClusterTaskOptions {
  distributed::ResolvedIdentity identity;
  config::Cluster cluster_config;
  std::string config_hash;
  int inter_op_threads = 1;
};

// The task name of this process ("/job:ps/replica:0/task:0").
std::string ThisTaskName(const distributed::ResolvedIdentity& identity);
// Every task of the cluster, this one first, then the rest in cluster order.
std::vector<std::string> ClusterTaskNames(const distributed::ResolvedIdentity& identity);
bool IsChief(const distributed::ResolvedIdentity& identity);

// The devices the chief places the training graph on before any task runs:
// this process's, then `cpu_devices` CPUs of every other task (every task
// runs the same config). Owns stand-ins for the other tasks' devices.
class ClusterDevices {
 public:
  // `with_other_workers` false: only this task's and the ps tasks' devices
  // (a replica of a between-graph replicated run runs nothing on other workers).
  ClusterDevices(const distributed::ResolvedIdentity& identity, int cpu_devices, bool with_other_workers = true);
  const DeviceSet& devices() const { return *devices_; }

 private:
  std::vector<std::unique_ptr<Device>> remote_;
  std::unique_ptr<DeviceSet> devices_;
};

class ClusterRuntime {
 public:
  // Starts this task's worker and its server at the task's address.
  // InvalidArgument for bad TLS files; Unavailable when the address cannot be
  // bound.
  static absl::StatusOr<std::unique_ptr<ClusterRuntime>> Start(const ClusterTaskOptions& options, std::ostream& err);
  // A chief tells every other task to stop (best effort, bounded).
  ~ClusterRuntime();

  // Waits until every task answers with the same config; returns the
  // cluster's devices, this task's first.
  // Cancelled as soon as `stop_signals` counts a signal; FailedPrecondition
  // as soon as a peer with another config called (or this task called one).
  absl::StatusOr<std::vector<distributed::DeviceAttributes>> Connect(std::ostream& progress,
                                                                     const std::atomic<int>* stop_signals);
  // A session over the cluster (the chief's).
  absl::StatusOr<std::unique_ptr<Session>> NewSession(std::vector<distributed::DeviceAttributes> devices,
                                                     const SessionOptions& session_options);
  // Serves until the chief says stop (returns the chief's exit code: 0 when
  // the run is done, 143 when the chief was stopped by a signal), a peer with
  // another config calls (2), or 30 s after a signal (143).
  // With `restart_after_freeze` (a replicated run's ps): a task that finds
  // it was frozen that long (SIGSTOP, a hung machine) returns
  // kRestartThisTask: its peers have given up on it and recover without it,
  // and the chief restores its variables once it is back.
  int ServeUntilShutdown(const std::atomic<int>* stop_signals, std::ostream& out, std::ostream& err,
                         absl::Duration restart_after_freeze = absl::InfiniteDuration());

  const std::string& task() const { return task_; }
  int port() const { return server_->port(); }
  // Why the chief stopped this task ("" before Shutdown), and the chief's
  // exit code, which this task exits with too (0 before Shutdown).
  std::string shutdown_reason() const;
  int shutdown_exit_code() const;
  // Whether the chief said stop; waits up to `timeout` for it.
  bool WaitForShutdown(absl::Duration timeout) { return shutdown_.WaitForNotificationWithTimeout(timeout); }
  // The chief's: what its Shutdown calls tell the other tasks as it exits
  // (RunTrainer sets the code, the one the chief exits with).
  void set_exit_reason(std::string reason) { exit_reason_ = std::move(reason); }
  void set_exit_code(int exit_code) { exit_code_ = exit_code; }
  // Health checks (a replicated run's workers): every `interval`, GetStatus
  // to every other task at once; peers_alive() is how many answered the last
  // round (a refusal for another config counts: the task is there). The
  // connections' keepalive is what fails a step; this feeds /metrics. With
  // `log`, a peer that has not answered for kPeerSilenceWarning gets one
  // warning line there (a sync step may wait for it without end), and a line
  // when it answers again. With `stop` (the chief's stop-signal count): a
  // peer that says it got a stop signal (GetStatus.stopping; a ps whose node
  // is being preempted) counts as one signal here, once, so the run stops at
  // its next step with a checkpoint instead of losing that peer under a step.
  void StartHealthChecks(absl::Duration interval, std::ostream* log = nullptr, std::atomic<int>* stop = nullptr);
  static constexpr absl::Duration kPeerSilenceWarning = absl::Seconds(5);
  int peers_alive() const { return peers_alive_.load(); }
  // The chief of a replicated run, once it has initialized or restored the
  // variables and set up the sync state: its GetStatus says so from now on.
  void SetReplicaReady() { worker_->set_replica_ready(); }
  // Another replica: the chief's incarnation when the chief says it is ready
  // (SetReplicaReady), 0 while it does not; the call's error when the chief
  // does not answer.
  absl::StatusOr<uint64_t> ChiefReadyIncarnation();
  // Another replica of a sync run (its steps wait for the chief's tokens, so
  // a chief that restarts from a checkpoint would leave them waiting): from
  // now on the health checks take the chief as lost when it answers with
  // another incarnation than `incarnation` (it restarted) or fails two rounds
  // in a row (it died). Then every step of this task is aborted with
  // Unavailable, in that round and every round after, so that the replica
  // recovers and rejoins the chief's new incarnation. Needs StartHealthChecks.
  void AbortStepsWhenChiefChanges(uint64_t incarnation) { watched_chief_.store(incarnation); }
  // Aborts every step of this task now (its waiting kernels end, its peers'
  // parts of the steps are told).
  void AbortSteps(const absl::Status& why) { worker_->steps()->CleanupAll(why); }
  // Why the watched chief was taken as lost ("" while it was not).
  std::string chief_lost() const;
  // A chief that restarts itself to recover leaves the other tasks running.
  void set_stop_peers_on_exit(bool stop) { stop_peers_on_exit_ = stop; }

 private:
  explicit ClusterRuntime(const ClusterTaskOptions& options);
  // GetStatus to the chief.
  absl::Status AskChief(const distributed::GetStatusRequest& request, distributed::GetStatusResponse* response);
  // Whether the chief answers GetStatus now.
  bool ChiefAlive();

  const ClusterTaskOptions options_;
  const std::string task_;
  absl::Notification shutdown_;
  mutable absl::Mutex mu_;
  std::string shutdown_reason_ ABSL_GUARDED_BY(mu_);
  std::string exit_reason_ = "the chief exited";
  int exit_code_ = 1;  // RunTrainer sets the code the chief exits with
  int shutdown_exit_code_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_peers_on_exit_ = true;
  // Set when a peer with another config called.
  std::string config_mismatch_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<distributed::Worker> worker_;
  std::unique_ptr<distributed::GrpcWorkerServer> server_;
  // RecvTensor over TCP beside gRPC (cluster.tensor_transport); null: gRPC only.
  std::unique_ptr<distributed::TcpTensorServer> tensor_server_;
  std::unique_ptr<distributed::GrpcWorkerCache> workers_;
  std::atomic<int> peers_alive_{0};
  // AbortStepsWhenChiefChanges's incarnation; 0: not watched.
  std::atomic<uint64_t> watched_chief_{0};
  std::string chief_lost_ ABSL_GUARDED_BY(mu_);
  absl::Notification stop_health_;
  std::thread health_;
};

}  // namespace sluice

#endif  // SLUICE_CMD_TRAIN_CLUSTER_TASK_H_

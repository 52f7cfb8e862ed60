// Worker: what one task of a cluster does for the others (DESIGN.md
// "Distribution"), behind the transport-neutral WorkerInterface. It keeps the
// graphs the chief registers (one executor per local device), runs a graph for
// a step with that step's rendezvous (so the step's Recvs pull tensors from
// other tasks), serves RecvTensor from the step rendezvous, and forgets a step
// when the chief cleans it up (aborting it first when the step failed
// elsewhere). The gRPC server (grpc_worker_service.h) serves a Worker; the
// chief also calls its own Worker directly.
//
// Ownership: borrows the DeviceMgr and the WorkerCache (set_worker_cache, which
// must be called before the first RunGraph); both must outlive the Worker.
// Thread safety: all methods may be called concurrently.
#ifndef SLUICE_ENGINE_DISTRIBUTED_WORKER_H_
#define SLUICE_ENGINE_DISTRIBUTED_WORKER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "engine/distributed/worker_interface.h"
#include "engine/distributed/worker_rendezvous.h"
#include "engine/framework/device.h"
#include "engine/runtime/partitioned_executor.h"
#include "engine/runtime/step_stats.h"
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace sluice {
namespace distributed {

struct WorkerOptions {
  // This task: "/job:ps/replica:0/task:0". Its devices' names start with it.
  std::string task;
  // Borrowed; null: DeviceMgr::Local().
  DeviceMgr* device_mgr = nullptr;
  // Threads running this task's executors (>= 1).
  int inter_op_threads = 1;
  // The hash of this task's resolved experiment; GetStatus refuses a caller
  // whose hash differs (empty on either side: not checked).
  std::string config_hash;
  // Called once, after the Shutdown call was answered, with its reason and
  // exit code.
  std::function<void(const std::string& reason, int exit_code)> on_shutdown;
  // Called when GetStatus refused a caller with another config hash, with
  // the caller's task as it names itself and the message it answered (unset:
  // the message goes to `log`).
  std::function<void(const std::string& caller_task, const std::string& message)> on_config_mismatch;
  // Where the worker reports what nobody else sees (a step that failed on this
  // task, a peer with another config); null: nowhere.
  std::ostream* log = nullptr;
};

// Step stats <-> their RunGraphResponse form (appended).
void StepStatsToProto(const std::vector<DeviceStepStats>& stats, RunGraphResponse* response);
void StepStatsFromProto(const RunGraphResponse& response, std::vector<DeviceStepStats>* stats);

class Worker : public WorkerInterface {
 public:
  explicit Worker(WorkerOptions options);
  ~Worker() override;

  void set_worker_cache(WorkerCache* workers);
  // Reported by GetStatus (peers_ready): this task has reached every other.
  void set_peers_ready() { peers_ready_.store(true); }
  // Reported by GetStatus (replica_ready): the chief of a replicated run is
  // ready for the other replicas' steps.
  void set_replica_ready() { replica_ready_.store(true); }
  // Reported by GetStatus (stopping): this task got a stop signal.
  void set_stopping() { stopping_.store(true); }
  // Reported by GetStatus (tensor_address): where this task's TCP tensor
  // transport listens ("host:port"; empty: none).
  void set_tensor_address(std::string address) {
    absl::MutexLock lock(&mu_);
    tensor_address_ = std::move(address);
  }

  void GetStatusAsync(const GetStatusRequest* request, GetStatusResponse* response, StatusCallback done) override;
  void RegisterGraphAsync(const RegisterGraphRequest* request, RegisterGraphResponse* response,
                          StatusCallback done) override;
  void DeregisterGraphAsync(const DeregisterGraphRequest* request, DeregisterGraphResponse* response,
                            StatusCallback done) override;
  void RunGraphAsync(const RunGraphRequest* request, RunGraphResponse* response, StatusCallback done,
                     CallCancellation* cancel) override;
  void RecvTensorAsync(const RecvTensorRequest* request, RecvTensorResult* response, StatusCallback done,
                       CallCancellation* cancel) override;
  void CleanupGraphAsync(const CleanupGraphRequest* request, CleanupGraphResponse* response,
                         StatusCallback done) override;
  void CleanupAllAsync(const CleanupAllRequest* request, CleanupAllResponse* response, StatusCallback done) override;
  void ShutdownAsync(const ShutdownRequest* request, ShutdownResponse* response, StatusCallback done) override;

  // The step rendezvous (the chief puts its feeds there and takes its fetches).
  StepRendezvousMgr* steps() { return steps_.get(); }
  const std::string& task() const { return options_.task; }
  DeviceMgr* device_mgr() const { return device_mgr_; }
  int num_registered_graphs() const;

 private:
  struct RegisteredGraph {
    std::string session_handle;
    std::unique_ptr<PartitionedExecutor> executor;
  };
  absl::StatusOr<std::shared_ptr<RegisteredGraph>> BuildGraph(const RegisterGraphRequest& request);
  void Log(const std::string& line);

  const WorkerOptions options_;
  DeviceMgr* const device_mgr_;
  std::unique_ptr<Eigen::ThreadPool> pool_;
  std::atomic<WorkerCache*> workers_{nullptr};
  // Forwards to workers_ (set later): the step manager is built first.
  class DeferredCache;
  std::unique_ptr<DeferredCache> deferred_cache_;
  std::unique_ptr<StepRendezvousMgr> steps_;
  std::atomic<bool> shut_down_{false};
  std::atomic<bool> peers_ready_{false};
  std::atomic<bool> replica_ready_{false};
  std::atomic<bool> stopping_{false};

  mutable absl::Mutex mu_;
  int64_t next_graph_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<std::string, std::shared_ptr<RegisteredGraph>> graphs_ ABSL_GUARDED_BY(mu_);
  std::string tensor_address_ ABSL_GUARDED_BY(mu_);
  absl::Mutex log_mu_;
  // RunGraph steps not yet answered (the destructor waits for them).
  absl::Mutex running_mu_;
  int running_steps_ ABSL_GUARDED_BY(running_mu_) = 0;
};

}  // namespace distributed
}  // namespace sluice

#endif  // SLUICE_ENGINE_DISTRIBUTED_WORKER_H_

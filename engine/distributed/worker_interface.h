// WorkerInterface: the calls one task makes on another (DESIGN.md
// "Distribution", example 6: transport-neutral distribution). The Worker of
// this process implements it directly (in-process calls, no copies); a gRPC
// client (grpc_remote_worker.h) implements it for a remote task; the gRPC
// server (grpc_worker_service.h) serves any WorkerInterface. Tests may use an
// in-process worker or a fake.
//
// Every call is asynchronous: `done` runs exactly once, on some thread, after
// the response is filled in (when the status is OK). Request and response
// objects are borrowed and must outlive `done`. Errors are absl::Status codes
// (the same numbers as gRPC's): the worker's own errors arrive with their code
// and message unchanged; a transport failure (unreachable task, cancelled
// call) arrives as Unavailable or Cancelled and names the task.
//
// Thread safety: implementations are safe for concurrent calls.
#ifndef SLUICE_ENGINE_DISTRIBUTED_WORKER_INTERFACE_H_
#define SLUICE_ENGINE_DISTRIBUTED_WORKER_INTERFACE_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "engine/distributed/worker.pb.h"
#include "engine/framework/tensor.h"

namespace sluice {
namespace distributed {

// Lets a caller cancel calls in flight (a step's pending RecvTensors when the
// step aborts). The transport registers how to cancel a call while it runs.
// Thread safety: all methods may be called concurrently.
class CallCancellation {
 public:
  // Runs every registered hook once (outside the lock) and every later
  // Register's hook at once. `reason` (the first one given) is what a call
  // cancelled here reports instead of a bare Cancelled.
  void StartCancel(absl::Status reason = absl::CancelledError("cancelled by its caller"));
  bool cancelled() const;
  // The first StartCancel's reason; OK while not cancelled.
  absl::Status reason() const;
  // Registers `hook`; returns a token for Deregister. When already cancelled,
  // runs `hook` now and returns -1.
  int64_t Register(std::function<void()> hook);
  // Removes a hook (a no-op when it ran or the token is -1).
  void Deregister(int64_t token);

 private:
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status reason_ ABSL_GUARDED_BY(mu_);
  int64_t next_token_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::pair<int64_t, std::function<void()>>> hooks_ ABSL_GUARDED_BY(mu_);
};

// What RecvTensor delivers: the tensor (its own aligned buffer) and whether
// the producer's value was dead (an untaken branch).
struct RecvTensorResult {
  Tensor value;
  bool is_dead = false;
  int64_t send_start_micros = 0;
};

class WorkerInterface {
 public:
  using StatusCallback = std::function<void(const absl::Status&)>;

  virtual ~WorkerInterface() = default;

  virtual void GetStatusAsync(const GetStatusRequest* request, GetStatusResponse* response, StatusCallback done) = 0;
  virtual void RegisterGraphAsync(const RegisterGraphRequest* request, RegisterGraphResponse* response,
                                  StatusCallback done) = 0;
  virtual void DeregisterGraphAsync(const DeregisterGraphRequest* request, DeregisterGraphResponse* response,
                                    StatusCallback done) = 0;
  // No deadline: a step waits as long as it takes. `cancel` may be null.
  virtual void RunGraphAsync(const RunGraphRequest* request, RunGraphResponse* response, StatusCallback done,
                             CallCancellation* cancel) = 0;
  // No deadline. `cancel` may be null.
  virtual void RecvTensorAsync(const RecvTensorRequest* request, RecvTensorResult* response, StatusCallback done,
                               CallCancellation* cancel) = 0;
  virtual void CleanupGraphAsync(const CleanupGraphRequest* request, CleanupGraphResponse* response,
                                 StatusCallback done) = 0;
  virtual void CleanupAllAsync(const CleanupAllRequest* request, CleanupAllResponse* response,
                               StatusCallback done) = 0;
  virtual void ShutdownAsync(const ShutdownRequest* request, ShutdownResponse* response, StatusCallback done) = 0;

  // Blocking forms.
  absl::Status GetStatus(const GetStatusRequest& request, GetStatusResponse* response);
  absl::Status RegisterGraph(const RegisterGraphRequest& request, RegisterGraphResponse* response);
  absl::Status DeregisterGraph(const DeregisterGraphRequest& request, DeregisterGraphResponse* response);
  absl::Status RunGraph(const RunGraphRequest& request, RunGraphResponse* response);
  absl::Status RecvTensor(const RecvTensorRequest& request, RecvTensorResult* response);
  absl::Status CleanupGraph(const CleanupGraphRequest& request, CleanupGraphResponse* response);
  absl::Status CleanupAll(const CleanupAllRequest& request, CleanupAllResponse* response);
  absl::Status Shutdown(const ShutdownRequest& request, ShutdownResponse* response);
};

// The workers of a cluster by task name ("/job:ps/replica:0/task:0").
// Thread safety: implementations are safe for concurrent use.
class WorkerCache {
 public:
  virtual ~WorkerCache() = default;
  // The worker of `task`, or null when the cluster has no such task. The
  // cache owns it; it lives as long as the cache.
  virtual WorkerInterface* GetWorker(const std::string& task) = 0;
};

// absl::Status <-> StatusProto.
void StatusToProto(const absl::Status& status, StatusProto* proto);
absl::Status StatusFromProto(const StatusProto& proto);

// "/job:<job>/replica:0/task:<index>".
std::string TaskName(const std::string& job, int index);
// The task part of a full device name ("/job:ps/replica:0/task:0" of
// "/job:ps/replica:0/task:0/device:CPU:1"); InvalidArgument when the name has
// no job, replica and task.
absl::StatusOr<std::string> TaskOfDevice(const std::string& device_name);

}  // namespace distributed
}  // namespace sluice

#endif  // SLUICE_ENGINE_DISTRIBUTED_WORKER_INTERFACE_H_

// FakeWorker (tests only): a WorkerInterface that records every request and
// answers with canned responses, for testing transports (the gRPC server and
// client) without a real worker.
//
// Answers come inline (done runs before the *Async call returns), except:
//   * RecvTensor of kPendingKey (or of a rendezvous key ending ";pending")
//     stays pending until the call's
//     CallCancellation fires, then fails with Cancelled;
//   * RecvTensor of kHeldKey, and GetStatus while hold_get_status is set,
//     stay pending until ReleaseHeld (they ignore cancellation), so a test can
//     make the worker answer after the transport gave up on the call.
// The destructor fails every call still pending with Cancelled.
//
// Thread safety: all methods may be called concurrently. Destroy it after
// the transport that calls it is shut down.
#ifndef SLUICE_ENGINE_DISTRIBUTED_FAKE_WORKER_H_
#define SLUICE_ENGINE_DISTRIBUTED_FAKE_WORKER_H_

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/distributed/worker_interface.h"

namespace sluice {
namespace distributed {

class FakeWorker final : public WorkerInterface {
 public:
  static constexpr char kPendingKey[] = "pending";
  static constexpr char kHeldKey[] = "held";

  FakeWorker() = default;
  ~FakeWorker() override;

  // Canned answers.
  void SetGetStatusResponse(const GetStatusResponse& response);
  void SetRegisterGraphResponse(const RegisterGraphResponse& response);
  void SetRunGraphResponse(const RunGraphResponse& response);
  // The RecvTensor answer for `key` (a key without one is NotFound).
  void SetTensor(const std::string& key, const RecvTensorResult& result);
  // While set, GetStatus calls are held (see above).
  std::atomic<bool> hold_get_status{false};

  // Every later call of `method` ("GetStatus", "RunGraph"...) fails with it.
  void SetError(const std::string& method, absl::Status status);

  // How many calls of `method` arrived.
  int calls(const std::string& method) const;
  // The last request of `method`, parsed into `request`; false when none.
  bool LastRequest(const std::string& method, google::protobuf::Message* request) const;

  // Waits until `n` calls are pending (kPendingKey, kHeldKey or held
  // GetStatus); false when `timeout` passes first.
  bool WaitForPending(int n, absl::Duration timeout) const;
  // Waits until `n` kPendingKey calls were cancelled through their
  // CallCancellation; false when `timeout` passes first.
  bool WaitForCancelled(int n, absl::Duration timeout) const;
  // Answers every held call (kHeldKey, held GetStatus) with `status`; a
  // RecvTensor also gets `result` when `status` is OK.
  void ReleaseHeld(const absl::Status& status, const RecvTensorResult& result = RecvTensorResult());

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
  void CleanupAllAsync(const CleanupAllRequest* request, CleanupAllResponse* response,
                       StatusCallback done) override;
  void ShutdownAsync(const ShutdownRequest* request, ShutdownResponse* response, StatusCallback done) override;

 private:
  struct Held {
    RecvTensorResult* recv_result = nullptr;  // null for GetStatus
    GetStatusResponse* status_response = nullptr;
    StatusCallback done;
  };
  struct Pending;

  // Records the call; returns the error to fail it with (OK: answer).
  absl::Status Record(const std::string& method, const google::protobuf::Message& request);

  mutable absl::Mutex mu_;
  GetStatusResponse get_status_response_ ABSL_GUARDED_BY(mu_);
  RegisterGraphResponse register_graph_response_ ABSL_GUARDED_BY(mu_);
  RunGraphResponse run_graph_response_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, RecvTensorResult> tensors_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Status> errors_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> calls_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> last_request_ ABSL_GUARDED_BY(mu_);
  std::vector<Held> held_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Pending>> pending_ ABSL_GUARDED_BY(mu_);
  int num_pending_ ABSL_GUARDED_BY(mu_) = 0;  // pending or held now
  int num_cancelled_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace distributed
}  // namespace sluice

#endif  // SLUICE_ENGINE_DISTRIBUTED_FAKE_WORKER_H_

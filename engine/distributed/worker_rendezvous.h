// WorkerRendezvous: one step's rendezvous on one task of a cluster (DESIGN.md
// "Distribution"). Send is always local. A Recv whose key names a source
// device of this task waits in the local table; one whose source device is on
// another task pulls the tensor from that task with RecvTensor (the key's
// first field names the source device, hence its task). StartAbort fails
// everything pending, locally and remotely (calls in flight are cancelled).
//
// StepRendezvousMgr: a task's rendezvous by step id. A RecvTensor for a step
// may arrive before that step's RunGraph does, so either creates it. A step
// that was cleaned up stays remembered (a bounded number of them): a late
// RunGraph or RecvTensor for it fails with Aborted instead of waiting forever.
//
// Ownership: the manager owns its rendezvous (shared with the calls using
// them); the worker cache is borrowed and must outlive both.
// Thread safety: all methods may be called concurrently.
#ifndef SLUICE_ENGINE_DISTRIBUTED_WORKER_RENDEZVOUS_H_
#define SLUICE_ENGINE_DISTRIBUTED_WORKER_RENDEZVOUS_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/distributed/worker_interface.h"
#include "engine/runtime/local_rendezvous.h"

namespace sluice {
namespace distributed {

class WorkerRendezvous : public Rendezvous {
 public:
  // `local_task`: "/job:ps/replica:0/task:0"; `workers` resolves other tasks.
  WorkerRendezvous(std::string local_task, int64_t step_id, WorkerCache* workers);
  ~WorkerRendezvous() override;

  absl::Status Send(const std::string& key, const Tensor& value, bool is_dead) override;
  void RecvAsync(const std::string& key, DoneCallback done) override;
  void StartAbort(const absl::Status& status) override;

  // Waits in the local table only (serving another task's RecvTensor).
  void RecvLocalAsync(const std::string& key, DoneCallback done);

  int64_t step_id() const { return step_id_; }
  // Runs `hook` once when the rendezvous is aborted (at once when it was
  // already); returns a token for RemoveAbortHook. The worker cancels the
  // step's waiting kernels (a Dequeue, an accumulator's take) this way when a
  // peer aborts the step.
  int64_t AddAbortHook(std::function<void()> hook) { return remote_calls_->Register(std::move(hook)); }
  void RemoveAbortHook(int64_t token) { remote_calls_->Deregister(token); }

 private:
  const std::string local_task_;
  const int64_t step_id_;
  WorkerCache* const workers_;
  LocalRendezvous local_;
  // Shared with calls in flight, which may finish after this rendezvous is gone.
  std::shared_ptr<CallCancellation> remote_calls_ = std::make_shared<CallCancellation>();
};

class StepRendezvousMgr {
 public:
  StepRendezvousMgr(std::string local_task, WorkerCache* workers);

  // The step's rendezvous, created when new; Aborted when the step was
  // cleaned up already; ResourceExhausted beyond kMaxLiveSteps live steps.
  absl::StatusOr<std::shared_ptr<WorkerRendezvous>> FindOrCreate(int64_t step_id);
  // Forgets the step; with a non-OK `abort`, first aborts its rendezvous with
  // it (pending Recvs of the step fail with it). Unknown steps are remembered
  // as cleaned too.
  void Cleanup(int64_t step_id, const absl::Status& abort);
  // Aborts and forgets every step.
  void CleanupAll(const absl::Status& abort);
  int num_steps() const;

 private:
  static constexpr size_t kRememberCleaned = 4096;
  // Steps alive at once (a client naming random step ids must not grow the
  // table without bound); more is ResourceExhausted.
  static constexpr size_t kMaxLiveSteps = 16384;
  const std::string local_task_;
  WorkerCache* const workers_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<int64_t, std::shared_ptr<WorkerRendezvous>> steps_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<int64_t> cleaned_ ABSL_GUARDED_BY(mu_);
  std::deque<int64_t> cleaned_order_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distributed
}  // namespace sluice

#endif  // SLUICE_ENGINE_DISTRIBUTED_WORKER_RENDEZVOUS_H_

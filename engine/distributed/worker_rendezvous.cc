// WorkerRendezvous and StepRendezvousMgr (see worker_rendezvous.h).
#include "engine/distributed/worker_rendezvous.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace sluice {
namespace distributed {

WorkerRendezvous::WorkerRendezvous(std::string local_task, int64_t step_id, WorkerCache* workers)
    : local_task_(std::move(local_task)), step_id_(step_id), workers_(workers) {}

WorkerRendezvous::~WorkerRendezvous() {
  remote_calls_->StartCancel(absl::CancelledError(absl::StrCat("step ", step_id_, " ended on ", local_task_)));
}

absl::Status WorkerRendezvous::Send(const std::string& key, const Tensor& value, bool is_dead) {
  return local_.Send(key, value, is_dead);
}

void WorkerRendezvous::RecvLocalAsync(const std::string& key, DoneCallback done) { local_.RecvAsync(key, std::move(done)); }

void WorkerRendezvous::RecvAsync(const std::string& key, DoneCallback done) {
  const size_t end = key.find(';');
  auto task = TaskOfDevice(key.substr(0, end));
  if (end == std::string::npos || !task.ok()) {
    done(absl::InvalidArgumentError(absl::StrCat("rendezvous key '", key, "' does not start with a full device name")),
         Tensor(), false);
    return;
  }
  if (*task == local_task_) {
    local_.RecvAsync(key, std::move(done));
    return;
  }
  WorkerInterface* worker = workers_ != nullptr ? workers_->GetWorker(*task) : nullptr;
  if (worker == nullptr) {
    done(absl::InvalidArgumentError(
             absl::StrCat("rendezvous key '", key, "' names task ", *task, ", which is not in this cluster")),
         Tensor(), false);
    return;
  }
  struct Call {
    RecvTensorRequest request;
    RecvTensorResult result;
  };
  auto call = std::make_shared<Call>();
  call->request.set_step_id(step_id_);
  call->request.set_rendezvous_key(key);
  std::shared_ptr<CallCancellation> cancellation = remote_calls_;
  worker->RecvTensorAsync(
      &call->request, &call->result,
      // `cancellation` rides along: the transport deregisters from it when the
      // call completes, which may be after this rendezvous is gone.
      [call, cancellation, task = *task, done = std::move(done)](const absl::Status& s) {
        if (!s.ok() && s.code() == absl::StatusCode::kCancelled && cancellation->cancelled()) {
          // Cancelled here because the step aborted: report why it aborted.
          done(cancellation->reason(), Tensor(), false);
          return;
        }
        if (!s.ok()) {
          // Name the task the failure came from, unless the message does.
          done(absl::StrContains(s.message(), task)
                   ? s
                   : absl::Status(s.code(), absl::StrCat("task ", task, ": ", s.message())),
               Tensor(), false);
          return;
        }
        done(absl::OkStatus(), call->result.value, call->result.is_dead);
      },
      cancellation.get());
}

void WorkerRendezvous::StartAbort(const absl::Status& status) {
  local_.StartAbort(status);
  remote_calls_->StartCancel(status);
}

StepRendezvousMgr::StepRendezvousMgr(std::string local_task, WorkerCache* workers)
    : local_task_(std::move(local_task)), workers_(workers) {}

absl::StatusOr<std::shared_ptr<WorkerRendezvous>> StepRendezvousMgr::FindOrCreate(int64_t step_id) {
  absl::MutexLock lock(&mu_);
  auto it = steps_.find(step_id);
  if (it != steps_.end()) return it->second;
  if (cleaned_.contains(step_id)) {
    return absl::AbortedError(absl::StrCat("step ", step_id, " was already cleaned up or aborted on ", local_task_));
  }
  if (steps_.size() >= kMaxLiveSteps) {
    return absl::ResourceExhaustedError(absl::StrCat(local_task_, " already has ", steps_.size(),
                                                     " steps in flight; refusing step ", step_id));
  }
  auto rendezvous = std::make_shared<WorkerRendezvous>(local_task_, step_id, workers_);
  steps_.emplace(step_id, rendezvous);
  return rendezvous;
}

void StepRendezvousMgr::Cleanup(int64_t step_id, const absl::Status& abort) {
  std::shared_ptr<WorkerRendezvous> rendezvous;
  {
    absl::MutexLock lock(&mu_);
    auto it = steps_.find(step_id);
    if (it != steps_.end()) {
      rendezvous = std::move(it->second);
      steps_.erase(it);
    }
    if (cleaned_.insert(step_id).second) {
      cleaned_order_.push_back(step_id);
      if (cleaned_order_.size() > kRememberCleaned) {
        cleaned_.erase(cleaned_order_.front());
        cleaned_order_.pop_front();
      }
    }
  }
  // Outside the lock: aborting runs the step's pending callbacks.
  if (rendezvous != nullptr) {
    rendezvous->StartAbort(abort.ok() ? absl::CancelledError(absl::StrCat("step ", step_id, " was cleaned up"))
                                      : abort);
  }
}

void StepRendezvousMgr::CleanupAll(const absl::Status& abort) {
  std::vector<int64_t> ids;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, r] : steps_) ids.push_back(id);
  }
  for (int64_t id : ids) Cleanup(id, abort);
}

int StepRendezvousMgr::num_steps() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(steps_.size());
}

}  // namespace distributed
}  // namespace sluice

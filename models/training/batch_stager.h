// BatchStager: runs an input pipeline's stage op (models/input_pipeline.h,
// InputPipeline::stage_op) in a Session::Run of its own on a thread of its
// own, so that the next training batch is dequeued, and copied to the GPU
// when the model runs on one, while the step on the batch staged before it
// runs. The training loop stages the first batch before its first step, then
// starts one staging Run beside each step's Run and waits for it after:
//
//   BatchStager stager(session, input.stage_op);
//   status = stager.StageNow();           // batch 1
//   loop: stager.Start();                 // batch k + 1 ...
//         session->Run(step k);           // ... while step k unstages batch k
//         status = stager.Wait();         // OutOfRange: batch k was the last
//
// Ownership: borrows the session, which must outlive the stager.
// Thread safety: one caller thread (the loop's); at most one Run in flight.
#ifndef SLUICE_MODELS_TRAINING_BATCH_STAGER_H_
#define SLUICE_MODELS_TRAINING_BATCH_STAGER_H_

#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "engine/runtime/session.h"

namespace sluice {
namespace training {

class BatchStager {
 public:
  BatchStager(Session* session, std::string stage_op);
  // Waits for a Run in flight, then ends the thread.
  ~BatchStager();

  // Runs the stage op on the caller's thread. REQUIRES: no Run in flight.
  absl::Status StageNow();
  // Starts a Run of the stage op on the stager's thread and returns at once.
  // REQUIRES: no Run in flight (Wait since the last Start).
  void Start();
  // Waits for the Run that the last Start began and returns its status; OK
  // when no Start came since the last Wait.
  absl::Status Wait();

 private:
  void Serve();
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return requested_ || exiting_; }
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !requested_; }

  Session* const session_;
  const std::string stage_op_;
  absl::Mutex mu_;
  bool requested_ ABSL_GUARDED_BY(mu_) = false;  // a Run asked for and not yet finished
  bool exiting_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status result_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // started by the first Start
};

}  // namespace training
}  // namespace sluice

#endif  // SLUICE_MODELS_TRAINING_BATCH_STAGER_H_

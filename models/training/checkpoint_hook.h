// CheckpointHook: periodic checkpoints while training and the final one at the end, with a
// checkpoint::Saver (checkpoint/saver.h) whose nodes are already in the session and which
// already restored or initialized the run. After each step at which Saver::ShouldSave says so it
// saves (a periodic save snapshots now and writes in the background; a failed one is a warning, the
// run goes on). At the end (also when preempted) it saves the last step when any step ran,
// waits for the write, and prints "saved <dir>", or "error: final checkpoint: ..." and
// fails the run with the save's status.
//
// Listeners (e.g. the metrics hook) hear when a save starts and when the final one commits.
//
// Ownership: borrows the saver, the listeners and the streams; they must outlive the hook.
// Thread safety: the loop's thread only.
#ifndef SLUICE_MODELS_TRAINING_CHECKPOINT_HOOK_H_
#define SLUICE_MODELS_TRAINING_CHECKPOINT_HOOK_H_

#include <cstdint>
#include <ostream>
#include <vector>

#include "checkpoint/saver.h"
#include "models/training/hook.h"

namespace sluice {
namespace training {

class CheckpointListener {
 public:
  virtual ~CheckpointListener() = default;
  // A save of `step` starts. A periodic one (!final) is written in the background: it is
  // complete when <run_dir>/checkpoints/ckpt-<step> appears. The final one is waited for.
  virtual void BeforeSave(int64_t step, bool final) = 0;
  // The final save of `step` committed.
  virtual void AfterFinalSave(int64_t step) = 0;
};

class CheckpointHook : public TrainingHook {
 public:
  CheckpointHook(checkpoint::Saver* saver, std::vector<CheckpointListener*> listeners, std::ostream* out,
                 std::ostream* err)
      : saver_(saver), listeners_(std::move(listeners)), out_(out), err_(err) {}

  absl::Status Begin(Session* session, const LoopStart& start) override;
  absl::Status AfterStep(const StepInfo& step, const StepResult& result, LoopControl* control) override;
  absl::Status End(Session* session, const LoopEnd& end) override;

 private:
  checkpoint::Saver* const saver_;
  const std::vector<CheckpointListener*> listeners_;
  std::ostream* const out_;
  std::ostream* const err_;
  Session* session_ = nullptr;
};

}  // namespace training
}  // namespace sluice

#endif  // SLUICE_MODELS_TRAINING_CHECKPOINT_HOOK_H_

// CheckpointHook: periodic checkpoints while training and the final one at the end, with a
// checkpoint::Saver (checkpoint/saver.h) whose nodes are already in the session and which
// already restored or initialized the run. After each step at which Saver::ShouldSave says so it
// saves (a periodic save snapshots now and writes in the background; a failed one is a warning, the
// run goes on). At the end (also when preempted) it saves the last step when any step ran,
// waits for the write, and prints "saved <dir>", or "error: final checkpoint: ..." and
// fails the run with the save's status.
//
// Listeners (the metrics and summary hooks) hear when a save starts, when each save commits
// (with its time), and when the final one commits.
//
// Ownership: borrows the saver, the listeners and the streams; they must outlive the hook. The
// hook is the saver's commit callback while it lives; its destructor waits for a pending write.
// Thread safety: the loop's thread only, but for AfterCommit (below).
#ifndef SLUICE_MODELS_TRAINING_CHECKPOINT_HOOK_H_
#define SLUICE_MODELS_TRAINING_CHECKPOINT_HOOK_H_

#include <cstdint>
#include <ostream>
#include <vector>

#include "absl/time/time.h"
#include "checkpoint/saver.h"
#include "models/training/hook.h"

namespace sluice {
namespace training {

class CheckpointListener {
 public:
  virtual ~CheckpointListener() = default;
  // A save of `step` starts. A periodic one (!final) is written in the background; the final
  // one is waited for.
  virtual void BeforeSave(int64_t step, bool final) {}
  // A save of `step` committed, `seconds` after it started, at `finished`: on the saver's
  // writer thread for a periodic save (an override must be thread-safe). A failed save never
  // commits.
  virtual void AfterCommit(int64_t step, double seconds, absl::Time finished) {}
  // The final save of `step` committed.
  virtual void AfterFinalSave(int64_t step) {}
};

class CheckpointHook : public TrainingHook {
 public:
  CheckpointHook(checkpoint::Saver* saver, std::vector<CheckpointListener*> listeners, std::ostream* out,
                 std::ostream* err);
  ~CheckpointHook() override;

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

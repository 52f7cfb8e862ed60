// StopSignalHook: SIGTERM / SIGINT stop the run cleanly (DESIGN.md: finish the step,
// checkpoint, exit 143). The process's signal handler only counts signals into an atomic
// (cmd/train/main.cc); before each step this hook reads the count and, when it is non-zero,
// asks the loop to stop with StopKind::kPreempt, so the step in flight finishes, the
// checkpoint hook saves, no final evaluation runs, and the caller exits 143. At the end it
// prints "stopped by signal at step N; resume by running the same command".
//
// Ownership: borrows `signals` and `out`, which must outlive the hook.
// Thread safety: the loop's thread only; `signals` may be written from anywhere.
#ifndef SLUICE_MODELS_TRAINING_STOP_SIGNAL_HOOK_H_
#define SLUICE_MODELS_TRAINING_STOP_SIGNAL_HOOK_H_

#include <atomic>
#include <ostream>

#include "models/training/hook.h"

namespace sluice {
namespace training {

class StopSignalHook : public TrainingHook {
 public:
  StopSignalHook(const std::atomic<int>* signals, std::ostream* out) : signals_(signals), out_(out) {}

  void BeforeStep(const StepInfo& step, StepArgs* args, LoopControl* control) override;
  absl::Status End(Session* session, const LoopEnd& end) override;

  // This hook stopped the loop.
  bool stopped() const { return stopped_; }

 private:
  const std::atomic<int>* const signals_;
  std::ostream* const out_;
  bool stopped_ = false;
};

}  // namespace training
}  // namespace sluice

#endif  // SLUICE_MODELS_TRAINING_STOP_SIGNAL_HOOK_H_

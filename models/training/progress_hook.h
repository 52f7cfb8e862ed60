// ProgressHook: the progress line a person watches (monitoring/progress.h), and the end of
// the run's report. On a terminal the line is redrawn in place at most every 250 ms (and at
// the last step); otherwise one line every `log_every_steps` steps (and at the last step).
// At the end it prints, for comparing runs, "last step N loss X" with the loss at full
// precision (%.9g) when any step ran, and says when the training input ended early. A global
// step that goes back (an async replica whose chief restored an older checkpoint) gets a
// warning line.
//
// Ownership: borrows `out`, which must outlive the hook.
// Thread safety: the loop's thread only.
#ifndef SLUICE_MODELS_TRAINING_PROGRESS_HOOK_H_
#define SLUICE_MODELS_TRAINING_PROGRESS_HOOK_H_

#include <cstdint>
#include <memory>
#include <ostream>

#include "absl/time/time.h"
#include "models/training/hook.h"
#include "monitoring/progress.h"

namespace sluice {
namespace training {

struct ProgressHookOptions {
  bool tty = false;             // redraw one line in place ("\r", "\033[K")
  int64_t log_every_steps = 1;  // without a tty; must be > 0
  // Also a line "loss at step N: X" (full precision) after every step, for
  // comparing runs step by step (train --print_losses).
  bool print_losses = false;
};

class ProgressHook : public TrainingHook {
 public:
  ProgressHook(const ProgressHookOptions& options, std::ostream* out) : options_(options), out_(out) {}

  absl::Status Begin(Session* session, const LoopStart& start) override;
  absl::Status AfterStep(const StepInfo& step, const StepResult& result, LoopControl* control) override;
  absl::Status End(Session* session, const LoopEnd& end) override;

 private:
  const ProgressHookOptions options_;
  std::ostream* const out_;
  std::unique_ptr<ProgressTracker> progress_;
  absl::Time last_print_ = absl::InfinitePast();
  double step_seconds_ = 0;  // Session::Run time of this loop's steps
  int64_t steps_ = 0;
};

}  // namespace training
}  // namespace sluice

#endif  // SLUICE_MODELS_TRAINING_PROGRESS_HOOK_H_

// ProgressHook (see progress_hook.h).
#include "models/training/progress_hook.h"

#include "absl/strings/str_format.h"

namespace sluice {
namespace training {

absl::Status ProgressHook::Begin(Session* session, const LoopStart& start) {
  progress_ = std::make_unique<ProgressTracker>(start.last_step);
  step_seconds_ = 0;
  steps_ = 0;
  last_print_ = absl::InfinitePast();
  return absl::OkStatus();
}

absl::Status ProgressHook::AfterStep(const StepInfo& step, const StepResult& result, LoopControl* control) {
  const absl::Time now = result.end_time;
  if (step.step <= step.previous_step) {
    // Async replicas: the chief restarted and restored an older checkpoint;
    // the global steps since are trained again.
    *out_ << EndProgressLine() << "warning: the global step went back from " << step.previous_step << " to "
          << step.step << ": the chief restored an older checkpoint, and the steps after it are trained again\n";
  }
  progress_->OnStep(step.step, step.examples, result.loss, step.learning_rate, result.active_time);
  step_seconds_ += result.seconds;
  ++steps_;
  if (options_.print_losses) *out_ << EndProgressLine() << absl::StrFormat("loss at step %d: %.9g\n", step.step, result.loss);
  const bool last = step.step >= step.last_step;
  const bool print = options_.tty ? (now - last_print_ > absl::Milliseconds(250) || last)
                                  : (CrossedMultiple(step.previous_step, step.step, options_.log_every_steps) || last);
  if (print) {
    *out_ << (options_.tty ? "\r" : "") << progress_->ToString() << (options_.tty ? "\033[K" : "\n");
    out_->flush();
    if (options_.tty) MarkProgressLineOpen();
    last_print_ = now;
  }
  return absl::OkStatus();
}

absl::Status ProgressHook::End(Session* session, const LoopEnd& end) {
  *out_ << EndProgressLine();
  // Full precision, for comparing runs (exact resume, determinism).
  if (end.steps_run > 0) *out_ << absl::StrFormat("last step %d loss %.9g\n", end.step, end.last_loss);
  if (end.reason == LoopStop::kInputEnded) {
    *out_ << "the training input ended at step " << end.step << " (input.train.epochs)\n";
  }
  if (steps_ > 0) {
    *out_ << absl::StrFormat("mean step time %.3f ms over %d steps\n", 1e3 * step_seconds_ / static_cast<double>(steps_),
                             steps_);
  }

  out_->flush();
  return absl::OkStatus();
}

}  // namespace training
}  // namespace sluice

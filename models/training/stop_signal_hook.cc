// StopSignalHook (see stop_signal_hook.h).
#include "models/training/stop_signal_hook.h"

namespace sluice {
namespace training {

void StopSignalHook::BeforeStep(const StepInfo& step, StepArgs* args, LoopControl* control) {
  if (signals_->load() > 0 && !control->stop_requested()) {
    control->RequestStop(StopKind::kPreempt);
    stopped_ = true;
  }
}

absl::Status StopSignalHook::End(Session* session, const LoopEnd& end) {
  if (stopped_ && end.preempted()) {
    *out_ << "stopped by signal at step " << end.step << "; resume by running the same command\n";
    out_->flush();
  }
  return absl::OkStatus();
}

}  // namespace training
}  // namespace sluice

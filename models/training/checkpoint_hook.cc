// CheckpointHook (see checkpoint_hook.h).
#include "models/training/checkpoint_hook.h"

#include "absl/strings/str_cat.h"
#include "monitoring/progress.h"

namespace sluice {
namespace training {

CheckpointHook::CheckpointHook(checkpoint::Saver* saver, std::vector<CheckpointListener*> listeners, std::ostream* out,
                               std::ostream* err)
    : saver_(saver), listeners_(std::move(listeners)), out_(out), err_(err) {
  saver_->set_on_committed([this](int64_t step, double seconds, double finished) {
    for (CheckpointListener* l : listeners_) l->AfterCommit(step, seconds, absl::UnixEpoch() + absl::Seconds(finished));
  });
}

CheckpointHook::~CheckpointHook() {
  // A periodic write still running (a run that failed before End) calls back into this hook.
  absl::Status pending = saver_->Wait();
  if (!pending.ok()) *err_ << EndProgressLine() << "warning: " << pending.message() << "\n";
  saver_->set_on_committed(nullptr);
}

absl::Status CheckpointHook::Begin(Session* session, const LoopStart& start) {
  session_ = session;
  return absl::OkStatus();
}

absl::Status CheckpointHook::AfterStep(const StepInfo& step, const StepResult& result, LoopControl* control) {
  if (!saver_->ShouldSave(step.previous_step, step.step)) return absl::OkStatus();
  for (CheckpointListener* l : listeners_) l->BeforeSave(step.step, /*final=*/false);
  // The error names its step: this one's, or an earlier background write's.
  absl::Status s = saver_->Save(session_, step.step);
  if (!s.ok()) *err_ << EndProgressLine() << "warning: " << s.message() << "\n";
  return absl::OkStatus();
}

absl::Status CheckpointHook::End(Session* session, const LoopEnd& end) {
  for (CheckpointListener* l : listeners_) l->BeforeSave(end.step, /*final=*/true);
  // A periodic save still being written: its failure is a warning (the final
  // save below stands for it), and a failed write of this very step is
  // written again.
  if (absl::Status pending = saver_->Wait(); !pending.ok()) *err_ << EndProgressLine() << "warning: " << pending.message() << "\n";
  // Nothing to save when no step ran since the restore.
  absl::Status s = end.steps_run > 0 ? saver_->Save(session, end.step) : absl::OkStatus();
  if (s.ok()) s = saver_->Wait();
  if (!s.ok()) {
    *err_ << EndProgressLine() << "error: final checkpoint: " << s.message() << "\n";
    return absl::Status(s.code(), absl::StrCat("final checkpoint: ", s.message()));
  }
  for (CheckpointListener* l : listeners_) l->AfterFinalSave(end.step);
  if (saver_->last_checkpoint().empty()) {
    *out_ << "no checkpoint saved: no step ran\n";  // stopped before the first step of a fresh run
  } else if (end.steps_run == 0) {
    *out_ << "no step ran: the newest checkpoint is " << saver_->last_checkpoint() << "\n";  // a finished run again
  } else {
    *out_ << "saved " << saver_->last_checkpoint() << "\n";
  }
  out_->flush();
  return absl::OkStatus();
}

}  // namespace training
}  // namespace sluice

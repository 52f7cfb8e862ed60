// TrainingHook: what the training loop (training_loop.h) calls around its steps, in the spirit
// of TensorFlow's SessionRunHook. A hook is one concern of a run: checkpoints, summaries,
// metrics, evaluation, the progress line, stop signals, step traces, the input pipeline.
// Hooks see the loop only through `Session` (engine/runtime/session.h), so a distributed
// session can take the local one's place without touching any hook.
//
// The loop calls, for the hooks in the order they were given:
//   Begin(session, start)       once, after the variables are restored or initialized
//   [with a staged input (TrainingLoopOptions::stage_op): Session::Run(stage op), the first batch]
//   per step:
//     BeforeStep(info, args, control)   add fetches / ask for step stats / request a stop;
//                                       when a hook requests a stop here, the step does not run
//     Session::Run(train step + every hook's fetches)
//       [beside it, but for the last step: Session::Run(stage op), the next batch; waited for]
//     AfterStep(info, result, control)  the hook's own fetched values; may request a stop
//   End(session, end)            once, when the loop stopped normally (last step, input ended,
//                                 a requested stop): final work that still runs the graph
//                                 (final checkpoint, final evaluation) and the end-of-run report
//   Close(end)                   once for every hook whose Begin succeeded, whatever happened:
//                                 release what Begin acquired (threads, files, servers)
// A non-OK status from Begin or AfterStep stops the loop at once (no End; Close still runs);
// a non-OK status from End becomes the run's status but the later hooks' End still run.
// Hooks print their own reports (each is given its streams). A failure of Begin or AfterStep
// is reported by the loop's caller: the returned status carries enough context for one line
// ("evaluation at step 40: ..."). A failure of End is printed by its hook, since the end of
// the run goes on after it (e.g. "error: final checkpoint: ..." and then the final evaluation).
//
// Ownership: the loop borrows its hooks; a hook borrows the Session from Begin to Close.
// Thread safety: all calls come from the loop's thread, one at a time.
#ifndef SLUICE_MODELS_TRAINING_HOOK_H_
#define SLUICE_MODELS_TRAINING_HOOK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "engine/framework/tensor.h"
#include "engine/runtime/session.h"

namespace sluice {
namespace training {

// How a hook asks the loop to stop.
enum class StopKind {
  kFinish,   // stop early but end like a completed run: final checkpoint, final evaluation
  kPreempt,  // save and leave: the run will be resumed (final checkpoint, no evaluation)
};

// Why the loop stopped.
enum class LoopStop {
  kLastStep,         // the global step reached the last step
  kInputEnded,       // the train step said OutOfRange: the training input has no more examples
  kRequested,        // a hook requested a stop (LoopEnd::stop_kind says how)
  kBeginFailed,      // a hook's Begin failed (LoopEnd::status)
  kStepFailed,       // Session::Run of a step failed (LoopEnd::status); step is the one before it
  kAfterStepFailed,  // the step's loss is not finite, or a hook's AfterStep failed (LoopEnd::status)
};

// Where the loop starts.
struct LoopStart {
  int64_t step = 0;       // the global step the session holds (restored or 0)
  int64_t last_step = 0;  // the loop stops when the global step reaches it
  bool resumed = false;   // the variables came from a checkpoint
};

// The step being run.
struct StepInfo {
  int64_t step = 0;          // the global step at the end of this step (a fresh run's first: 1)
  // The global step before this step: step - 1, unless other replicas of a
  // replicated run advanced it too (then `step` is known only after the step;
  // BeforeStep sees previous_step + 1).
  int64_t previous_step = 0;
  int64_t last_step = 0;     // as in LoopStart
  double learning_rate = 0;  // fed to this step
  int64_t examples = 0;      // examples this step consumes (the batch size)
};

// What one hook adds to a step.
struct StepArgs {
  std::vector<std::string> fetches;  // extra tensors to fetch with the step
  bool collect_step_stats = false;   // ask the session for per-node step stats
  bool step_stats_device_time = false;  // ... with device time (RunOptions::step_stats_device_time)
};

// A step that ran. `fetched` holds this hook's fetches only, in the order BeforeStep gave them.
struct StepResult {
  double loss = 0;
  double seconds = 0;     // wall time of Session::Run (and of the wait for the staging Run beside it)
  absl::Time end_time;    // when it returned
  // end_time less the time hooks spent on other work since the loop began
  // (LoopControl::AddPause: evaluations): the clock that steps/s and
  // examples/s are measured on, so that an evaluation does not read as slow
  // training.
  absl::Time active_time;
  std::vector<Tensor> fetched;
  // The step's metadata; step_stats is filled only when step_stats_collected.
  const RunMetadata* metadata = nullptr;
  bool step_stats_collected = false;
};

// Whether the steps (previous, step] contain a multiple of `every` (> 0): what
// "every N steps" means when a replicated run's global step may jump.
inline bool CrossedMultiple(int64_t previous, int64_t step, int64_t every) {
  return every > 0 && step > previous && (step / every) > (previous / every);
}

// Lets a hook stop the loop. The first request wins.
class LoopControl {
 public:
  void RequestStop(StopKind kind = StopKind::kFinish) {
    if (!stop_requested_) kind_ = kind;
    stop_requested_ = true;
  }
  bool stop_requested() const { return stop_requested_; }
  StopKind stop_kind() const { return kind_; }
  // `d` of this hook's AfterStep was not training (an evaluation): left out
  // of the later steps' active_time.
  void AddPause(absl::Duration d) { paused_ += d; }
  absl::Duration paused() const { return paused_; }

 private:
  bool stop_requested_ = false;
  StopKind kind_ = StopKind::kFinish;
  absl::Duration paused_;
};

// How the loop ended, as End and Close see it (and the loop's caller).
struct LoopEnd {
  LoopStop reason = LoopStop::kLastStep;
  StopKind stop_kind = StopKind::kFinish;  // with kRequested
  int64_t step = 0;       // the global step at the end
  int64_t last_step = 0;
  int64_t steps_run = 0;  // steps this loop ran
  double last_loss = 0;   // the loss of its last step (when steps_run > 0)
  // The failure of Begin, the step or AfterStep; or, after End, the last failure of an End.
  absl::Status status;
  bool ended = false;  // End ran (the loop stopped normally)

  bool preempted() const { return reason == LoopStop::kRequested && stop_kind == StopKind::kPreempt; }
  // Completed: stopped normally, not preempted, and nothing failed (also in End).
  bool succeeded() const { return ended && !preempted() && status.ok(); }
};

class TrainingHook {
 public:
  virtual ~TrainingHook() = default;

  // The session holds the restored or initialized variables. An error stops the run.
  virtual absl::Status Begin(Session* session, const LoopStart& start) { return absl::OkStatus(); }
  virtual void BeforeStep(const StepInfo& step, StepArgs* args, LoopControl* control) {}
  virtual absl::Status AfterStep(const StepInfo& step, const StepResult& result, LoopControl* control) {
    return absl::OkStatus();
  }
  // The loop stopped normally; `end.status` holds the failures of the earlier hooks' End.
  virtual absl::Status End(Session* session, const LoopEnd& end) { return absl::OkStatus(); }
  virtual void Close(const LoopEnd& end) {}
  // Asked when a step ends with OutOfRange (its input queue closed): why the
  // input ended, if it failed (a reader's or a parser's error); OK when it
  // simply ran out. A failure makes the step a failed one (kStepFailed with
  // this status), not the normal end of the input.
  virtual absl::Status InputFailure() const { return absl::OkStatus(); }
};

}  // namespace training
}  // namespace sluice

#endif  // SLUICE_MODELS_TRAINING_HOOK_H_

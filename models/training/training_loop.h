// RunTrainingLoop: runs training steps on a Session until the global step reaches the last
// step, the training input ends, a hook asks to stop, or something fails, calling its hooks
// (hook.h) around every step. The same loop runs in a single process, a distributed chief
// and a worker: it knows the session only through the Session interface.
//
// One step is one Session::Run that feeds the learning rate, fetches the loss (first) and
// every hook's fetches, and runs the train op. A step whose loss is not finite fails the run.
// With a stage op, a second Run beside each step stages the next step's batch.
// The loop prints nothing: hooks report, and the caller reads the returned LoopEnd.
//
//   std::vector<TrainingHook*> hooks = {&progress, &summaries, &checkpoints, &eval, ...};
//   LoopEnd end = RunTrainingLoop(session, options, {step, last_step, resumed}, hooks);
//
// Ownership: borrows the session and the hooks for the call.
// Thread safety: one call at a time per session and hook set.
#ifndef SLUICE_MODELS_TRAINING_TRAINING_LOOP_H_
#define SLUICE_MODELS_TRAINING_TRAINING_LOOP_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/runtime/session.h"
#include "models/training/hook.h"

namespace sluice {
namespace training {

struct TrainingLoopOptions {
  std::string loss;      // scalar float tensor fetched every step
  std::string train_op;  // target run every step
  // Placeholder fed with learning_rate(global step before the step), as a float scalar;
  // "" feeds nothing (StepInfo::learning_rate is then 0).
  std::string learning_rate_feed;
  std::function<double(int64_t step)> learning_rate;
  int64_t examples_per_step = 0;  // the batch size, for StepInfo::examples
  // An int64 scalar fetched with every step: the global step after it. A
  // replica of a replicated run sets it, since other workers advance the
  // global step too; "" counts this loop's steps.
  std::string step_tensor;
  // Set while the train step's Session::Run is in flight (null: not told),
  // for a watchdog that abandons a step stuck on a lost peer after a stop
  // signal.
  std::atomic<bool>* in_step = nullptr;
  // Asked when a step fails: true when it was abandoned because a stop
  // signal came while it waited; the loop then ends as preempted after the
  // last completed step (so its End hooks checkpoint that step).
  std::function<bool()> abandoned_for_stop;
  // The training input's stage op (models/input_pipeline.h), "" for none:
  // the loop stages the first batch before its first step and the next one
  // beside every step (batch_stager.h). A staging Run that finds the input
  // at its end ends the loop after the step it ran beside, whose batch was
  // staged before.
  std::string stage_op;
};

// Runs the loop from `start` (see hook.h for the order of the hooks' calls). Never fails
// by itself: the returned LoopEnd says how the loop ended and carries any failure.
LoopEnd RunTrainingLoop(Session* session, const TrainingLoopOptions& options, const LoopStart& start,
                        const std::vector<TrainingHook*>& hooks);

}  // namespace training
}  // namespace sluice

#endif  // SLUICE_MODELS_TRAINING_TRAINING_LOOP_H_

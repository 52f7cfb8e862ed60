// The training loop (see training_loop.h).
#include "models/training/training_loop.h"

#include <cmath>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "models/training/batch_stager.h"

namespace sluice {
namespace training {
namespace {

// Runs Close on the first `begun` hooks.
void CloseHooks(const std::vector<TrainingHook*>& hooks, size_t begun, const LoopEnd& end) {
  for (size_t i = 0; i < begun; ++i) hooks[i]->Close(end);
}

// `s`, or when it is OutOfRange and a hook knows the input failed (a runner's
// parse error closed the queue), that failure instead.
absl::Status ExplainOutOfRange(const std::vector<TrainingHook*>& hooks, absl::Status s) {
  if (!absl::IsOutOfRange(s)) return s;
  for (const TrainingHook* hook : hooks) {
    absl::Status input = hook->InputFailure();
    if (!input.ok()) return input;
  }
  return s;
}

}  // namespace

LoopEnd RunTrainingLoop(Session* session, const TrainingLoopOptions& options, const LoopStart& start,
                        const std::vector<TrainingHook*>& hooks) {
  LoopEnd end;
  end.step = start.step;
  end.last_step = start.last_step;
  for (size_t i = 0; i < hooks.size(); ++i) {
    absl::Status s = hooks[i]->Begin(session, start);
    if (!s.ok()) {
      end.reason = LoopStop::kBeginFailed;
      end.status = s;
      CloseHooks(hooks, i, end);
      return end;
    }
  }

  bool failed = false;
  // Ends the loop after a failed Run of the stage op: as the input's end
  // (OutOfRange) unless a hook knows the input failed, else as a failure.
  auto end_for_staging = [&hooks, &end, &failed](const absl::Status& s) {
    const absl::Status why =
        absl::IsOutOfRange(s) ? ExplainOutOfRange(hooks, s)
                              : absl::Status(s.code(), absl::StrCat("staging the next batch: ", s.message()));
    if (absl::IsOutOfRange(why)) {
      end.reason = LoopStop::kInputEnded;
      return;
    }
    end.reason = LoopStop::kStepFailed;
    end.status = why;
    failed = true;
  };
  int64_t step = start.step;
  LoopControl control;
  std::vector<StepArgs> args(hooks.size());
  std::vector<size_t> first_fetch(hooks.size());
  std::vector<Tensor> fetched;
  end.reason = LoopStop::kLastStep;
  std::unique_ptr<BatchStager> stager;
  if (!options.stage_op.empty() && step < start.last_step) {
    stager = std::make_unique<BatchStager>(session, options.stage_op);
    const absl::Status staged = stager->StageNow();
    if (!staged.ok()) end_for_staging(staged);
  }
  while (end.reason == LoopStop::kLastStep && !failed && step < start.last_step) {
    StepInfo info;
    info.step = step + 1;
    info.previous_step = step;
    info.last_step = start.last_step;
    info.learning_rate = options.learning_rate ? options.learning_rate(step) : 0;
    info.examples = options.examples_per_step;
    for (size_t i = 0; i < hooks.size(); ++i) {
      args[i] = StepArgs();
      hooks[i]->BeforeStep(info, &args[i], &control);
    }
    if (control.stop_requested()) break;

    std::vector<std::string> fetches = {options.loss};
    const bool fetch_step = !options.step_tensor.empty();
    if (fetch_step) fetches.push_back(options.step_tensor);
    RunOptions run_options;
    for (size_t i = 0; i < hooks.size(); ++i) {
      first_fetch[i] = fetches.size();
      fetches.insert(fetches.end(), args[i].fetches.begin(), args[i].fetches.end());
      run_options.collect_step_stats = run_options.collect_step_stats || args[i].collect_step_stats;
      run_options.step_stats_device_time = run_options.step_stats_device_time || args[i].step_stats_device_time;
    }
    std::vector<std::pair<std::string, Tensor>> feeds;
    if (!options.learning_rate_feed.empty()) {
      feeds.push_back({options.learning_rate_feed, Tensor::Scalar<float>(static_cast<float>(info.learning_rate))});
    }
    RunMetadata metadata;
    const absl::Time step_start = absl::Now();
    if (options.in_step != nullptr) options.in_step->store(true);
    // The next step's batch, unless this step is the last.
    const bool stage_next = stager != nullptr && info.step < start.last_step;
    if (stage_next) stager->Start();
    absl::Status s = ExplainOutOfRange(
        hooks, session->Run(run_options, feeds, fetches, {options.train_op}, &fetched, &metadata));
    if (options.in_step != nullptr) options.in_step->store(false);
    const absl::Status staged = stage_next ? stager->Wait() : absl::OkStatus();
    if (absl::IsOutOfRange(s)) {
      end.reason = LoopStop::kInputEnded;
      break;
    }
    if (s.ok() && fetched.size() != fetches.size()) {
      s = absl::InternalError(absl::StrCat("the session returned ", fetched.size(), " tensors for ", fetches.size(),
                                           " fetches"));
    }
    if (!s.ok() && options.abandoned_for_stop && options.abandoned_for_stop()) {
      control.RequestStop(StopKind::kPreempt);
      break;
    }
    if (!s.ok()) {
      end.reason = LoopStop::kStepFailed;
      end.status = s;
      // A histogram summary of NaN or infinite values (a weight or gradient):
      // the training diverged, as a non-finite loss says below.
      if (absl::StrContains(s.message(), " in summary histogram for: ")) {
        end.status = absl::Status(s.code(), absl::StrCat(s.message(), "; the training diverged: lower the learning rate "
                                                                     "or clip gradients (optimizer.clip_global_norm)"));
      }
      failed = true;
      break;
    }
    if (fetch_step) {
      const Tensor& global = fetched[1];
      if (global.dtype() != DT_INT64 || global.NumElements() != 1) {
        end.reason = LoopStop::kStepFailed;
        end.status = absl::InternalError(absl::StrCat("step tensor '", options.step_tensor, "' is not an int64 scalar"));
        failed = true;
        break;
      }
      info.step = global.data<int64_t>()[0];
    }
    step = info.step;
    end.step = step;
    ++end.steps_run;
    const double loss = fetched[0].NumElements() == 1 && fetched[0].dtype() == DT_FLOAT ? fetched[0].scalar<float>()
                                                                                         : NAN;
    end.last_loss = loss;
    if (!std::isfinite(loss)) {
      std::ostringstream message;  // as a stream prints it: nan, -nan, inf
      message << "the loss is " << loss << " at step " << step
              << "; lower the learning rate or clip gradients (optimizer.clip_global_norm)";
      end.reason = LoopStop::kAfterStepFailed;
      end.status = absl::InvalidArgumentError(message.str());
      failed = true;
      break;
    }
    StepResult result;
    result.loss = loss;
    result.end_time = absl::Now();
    result.active_time = result.end_time - control.paused();
    result.seconds = absl::ToDoubleSeconds(result.end_time - step_start);
    result.metadata = &metadata;
    result.step_stats_collected = run_options.collect_step_stats;
    for (size_t i = 0; i < hooks.size() && !failed; ++i) {
      result.fetched.assign(fetched.begin() + first_fetch[i], fetched.begin() + first_fetch[i] + args[i].fetches.size());
      s = hooks[i]->AfterStep(info, result, &control);
      if (!s.ok()) {
        end.reason = LoopStop::kAfterStepFailed;
        end.status = s;
        failed = true;
      }
    }
    if (failed || control.stop_requested()) break;
    if (!staged.ok()) {
      end_for_staging(staged);
      break;
    }
  }
  if (control.stop_requested() && !failed) {
    end.reason = LoopStop::kRequested;
    end.stop_kind = control.stop_kind();
  }

  if (!failed) {
    end.ended = true;
    for (TrainingHook* hook : hooks) {
      absl::Status s = hook->End(session, end);
      if (!s.ok()) end.status = s;
    }
  }
  CloseHooks(hooks, hooks.size(), end);
  return end;
}

}  // namespace training
}  // namespace sluice

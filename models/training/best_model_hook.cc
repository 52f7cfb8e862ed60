// BestModelHook (see best_model_hook.h).
#include "models/training/best_model_hook.h"

#include <cmath>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "checkpoint/checkpoint_state.h"
#include "checkpoint/store_format.h"
#include "engine/platform/status_macros.h"
#include "monitoring/progress.h"

namespace sluice {
namespace training {

absl::Status BestModelHook::Begin(Session* session, const LoopStart& start) {
  session_ = session;
  best_.reset();
  error_.clear();
  since_best_ = 0;
  stop_ = false;
  stop_line_.clear();
  stopped_before_ = false;
  if (saver_ == nullptr || !saver_->best().has_value()) return absl::OkStatus();
  const checkpoint::BestCheckpoint recorded = *saver_->best();
  // Another metric's best (the config changed under --allow-drift), or one past the step
  // restored (a newer checkpoint did not verify): this run starts its own.
  if (recorded.metric() != options_.metric || recorded.step() > start.step) return absl::OkStatus();
  best_ = Judged{recorded.step(), recorded.value()};
  since_best_ = CountEvaluations(recorded.step(), start.step);
  stop_ = stopped_before_ =
      options_.patience > 0 && since_best_ >= options_.patience && start.step < start.last_step;
  return absl::OkStatus();
}

int BestModelHook::CountEvaluations(int64_t after, int64_t upto) const {
  if (options_.results_file.empty()) return 0;
  auto text = ReadFileToString(options_.env, options_.results_file, kMaxResultsBytes);
  if (!text.ok()) return 0;
  std::set<int64_t> steps;
  for (int64_t step : EvaluatedSteps(*text)) {
    if (step > after && step <= upto) steps.insert(step);
  }
  return static_cast<int>(steps.size());
}

void BestModelHook::OnEval(int64_t step, const EvalValues& values) {
  for (const auto& [name, value] : values) {
    if (name == options_.metric) {
      Judge(step, value);
      return;
    }
  }
  error_ = absl::StrCat("the evaluation at step ", step, " has no value '", options_.metric, "'");
}

bool BestModelHook::Improves(double value) const {
  if (!std::isfinite(value)) return false;
  if (!best_) return true;
  return options_.higher_is_better ? value > best_->value + options_.min_delta
                                   : value < best_->value - options_.min_delta;
}

void BestModelHook::Judge(int64_t step, double value) {
  // The best's own step evaluated again: a resume whose results file lacks that line (the
  // process ended between the mark and the line). Its value is the best's.
  if (best_ && step == best_->step) return;
  stopped_before_ = false;
  if (Improves(value)) {
    best_ = Judged{step, value};
    since_best_ = 0;
    stop_ = false;
    stop_line_.clear();
    if (saver_ != nullptr) {
      absl::Status marked = saver_->MarkBest(session_, step, options_.metric, value);
      if (!marked.ok()) {
        *err_ << EndProgressLine() << "warning: best model at step " << step << ": " << marked.message() << "\n";
      }
    }
    return;
  }
  ++since_best_;
  if (options_.patience > 0 && since_best_ >= options_.patience) {
    // Printed when the loop is asked to stop: not for the final evaluation, after the loop.
    const char* plural = since_best_ == 1 ? "" : "s";
    stop_line_ = best_ ? absl::StrFormat("early stop at step %d: %s %.4f has not improved on %.4f (step %d) for %d "
                                         "evaluation%s",
                                         step, options_.metric, value, best_->value, best_->step, since_best_, plural)
                       : absl::StrFormat("early stop at step %d: %s has had no finite value in %d evaluation%s", step,
                                         options_.metric, since_best_, plural);
    stop_ = true;
  }
}

void BestModelHook::RequestStop(LoopControl* control) {
  if (!stop_line_.empty()) {
    *out_ << EndProgressLine() << std::exchange(stop_line_, "") << "\n";
    out_->flush();
  }
  control->RequestStop(StopKind::kFinish);
}

absl::Status BestModelHook::TakeError() {
  if (error_.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(std::exchange(error_, ""));
}

void BestModelHook::BeforeStep(const StepInfo& step, StepArgs* args, LoopControl* control) {
  // Judged already: a resumed run's evaluation of its restored step (the EvalHook runs it in
  // its BeforeStep), which may have decided the stop, or lifted the one Begin found.
  if (!stop_) return;
  if (stopped_before_) {
    *out_ << EndProgressLine()
          << absl::StrFormat("the run stopped early at step %d: %s has not improved on %.4f (step %d) for %d "
                             "evaluation%s (patience %d; raise it, with --allow-drift, to train on)\n",
                             step.previous_step, options_.metric, best_->value, best_->step, since_best_,
                             since_best_ == 1 ? "" : "s", options_.patience);
    out_->flush();
  }
  RequestStop(control);
}

absl::Status BestModelHook::AfterStep(const StepInfo& step, const StepResult& result, LoopControl* control) {
  SLUICE_RETURN_IF_ERROR(TakeError());
  if (stop_) RequestStop(control);
  return absl::OkStatus();
}

absl::Status BestModelHook::End(Session* session, const LoopEnd& end) {
  if (end.preempted()) return absl::OkStatus();
  if (absl::Status s = TakeError(); !s.ok()) {  // the final evaluation lacked the value
    *err_ << "error: best model: " << s.message() << "\n";
    return absl::Status(s.code(), absl::StrCat("best model: ", s.message()));
  }
  if (!best_) return absl::OkStatus();
  *out_ << EndProgressLine() << absl::StrFormat("best %s %.4f at step %d", options_.metric, best_->value, best_->step);
  if (saver_ != nullptr && saver_->best().has_value() && saver_->best()->step() == best_->step) {
    *out_ << ": " << JoinPath(checkpoint::CheckpointsDir(options_.run_dir), saver_->best()->dir());
  }
  *out_ << "\n";
  out_->flush();
  return absl::OkStatus();
}

}  // namespace training
}  // namespace sluice

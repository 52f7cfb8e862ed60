// EvalHook: evaluation on the eval input every `every_steps` steps (before the last step) and
// once at the end (not when preempted). One evaluation runs ceil(examples_per_epoch / batch)
// batches fetching the eval loss and metrics (one batch when the epoch size is unknown),
// averages them weighted by examples (the last batch counts only the epoch's remainder), and
// prints "eval at step N: loss 0.4321 accuracy 0.8765 (10,000 examples)" to `out` and to the
// results file (<run_dir>/eval.txt, appended). Listeners (the summary hook, the best-model hook)
// get the values before the results file does: a line there was heard (and acted on: a best
// checkpoint marked) even when the append then fails.
// A results file that cannot be opened or appended to fails the run (an eval line is never
// silently lost). The final evaluation is skipped when this run evaluated at its step already
// (a run stopped early right after an evaluation). A failed periodic evaluation fails the run ("evaluation at step N: ..."); a failed final
// one prints "error: final evaluation: ..." and fails it too. A stop signal abandons an
// evaluation between batches (EvalHookOptions::stop_signals). A run that ran no step and whose
// results file ends with its step's evaluation (a finished run run again) prints that line
// instead of evaluating again; one resumed at a step whose periodic evaluation the file lacks
// runs it before its first step.
//
// Ownership: borrows the listeners and the streams; they must outlive the hook.
// Thread safety: the loop's thread only.
#ifndef SLUICE_MODELS_TRAINING_EVAL_HOOK_H_
#define SLUICE_MODELS_TRAINING_EVAL_HOOK_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/platform/env.h"
#include "models/training/hook.h"

namespace sluice {
namespace training {

// Named values, "loss" first.
using EvalValues = std::vector<std::pair<std::string, double>>;

// A results file is read up to this size.
inline constexpr uint64_t kMaxResultsBytes = 64 << 20;
// The steps of a results file's evaluation lines ("eval at step N: ..."), in
// the file's order (a step evaluated twice appears twice).
std::vector<int64_t> EvaluatedSteps(absl::string_view results_text);

class EvalListener {
 public:
  virtual ~EvalListener() = default;
  virtual void OnEval(int64_t step, const EvalValues& values) = 0;
};

struct EvalHookOptions {
  std::string loss;  // scalar float tensor; "" when the run has no evaluation
  std::vector<std::pair<std::string, std::string>> metrics;  // (name, scalar float tensor)
  int64_t examples_per_epoch = 0;  // 0: unknown (one batch)
  int64_t batch_size = 1;
  int64_t every_steps = 0;  // 0: only at the end
  std::string results_file;  // appended to; "" for none
  Env* env = Env::Default();  // for the results file
  // Also report "perplexity", exp of the (example-weighted mean) loss, after
  // the loss: a model whose one loss is a sampled_softmax (its eval loss is
  // the full softmax cross-entropy).
  bool perplexity = false;
  // Stop signals received (the trainer's counter; null: none): one arriving
  // during an evaluation abandons it before its next batch. A periodic one
  // then says so and the loop stops at its next step (preempted); the final
  // one ends the run as Cancelled ("run the same command again to
  // evaluate"), which the trainer exits 143 for.
  const std::atomic<int>* stop_signals = nullptr;
};

class EvalHook : public TrainingHook {
 public:
  EvalHook(EvalHookOptions options, std::vector<EvalListener*> listeners, std::ostream* out, std::ostream* err)
      : options_(std::move(options)), listeners_(std::move(listeners)), out_(out), err_(err) {}

  absl::Status Begin(Session* session, const LoopStart& start) override;
  // Before the first step of a run resumed at a step whose periodic evaluation the results
  // file lacks (a stop signal abandoned it, or a crash came between the checkpoint and it):
  // that evaluation, on the restored variables.
  void BeforeStep(const StepInfo& step, StepArgs* args, LoopControl* control) override;
  absl::Status AfterStep(const StepInfo& step, const StepResult& result, LoopControl* control) override;
  absl::Status End(Session* session, const LoopEnd& end) override;
  void Close(const LoopEnd& end) override;

  // One evaluation on `session` (no output).
  absl::StatusOr<EvalValues> Evaluate(Session* session, int64_t* examples) const;

 private:
  absl::Status EvaluateAndReport(int64_t step);
  // `s` is an evaluation abandoned for a stop signal.
  bool StoppedBySignal(const absl::Status& s) const;

  const EvalHookOptions options_;
  const std::vector<EvalListener*> listeners_;
  std::ostream* const out_;
  std::ostream* const err_;
  Session* session_ = nullptr;
  std::unique_ptr<WritableFile> results_;  // null without a results file
  std::string last_result_;  // the results file's last line when the run began
  int64_t missed_eval_step_ = -1;  // the restored step's periodic evaluation, still to run
  absl::Status missed_eval_status_;  // its failure, for AfterStep to report
  int64_t last_evaluated_step_ = -1;  // this run's last evaluation that was reported
};

}  // namespace training
}  // namespace sluice

#endif  // SLUICE_MODELS_TRAINING_EVAL_HOOK_H_

// BestModelHook: train.best_model (configs/experiment.proto). It hears every evaluation (it is
// an EvalListener of the EvalHook, which must come before it among the loop's hooks) and
// judges the watched value: an evaluation improves on the best so far when the value is lower
// (higher when `higher_is_better`) by more than `min_delta`; the first evaluation always does.
//
// - After an improvement it marks that step's checkpoint as the run's best
//   (checkpoint::Saver::MarkBest: written first unless retained already). A failed mark is a
//   warning; the run goes on.
// - With patience > 0, `patience` evaluations in a row without an improvement stop the run as a
//   finished one (StopKind::kFinish): "early stop at step 3000: accuracy 0.8712 has not
//   improved on 0.8790 (step 1000) for 2 evaluations".
// - At the end of a run (not a preempted one) it prints the best, if any: "best accuracy
//   0.8790 at step 1000: <run_dir>/checkpoints/ckpt-1000".
//
// Resuming: the best comes from the checkpoint state file (Saver::best, when it is of the same
// metric and not past the restored step), and the evaluations since it are counted in the
// results file (eval.txt: the distinct steps after the best's, up to the restored one). A run
// that had stopped early thus stops again before its first step, unless its patience was
// raised. The evaluations are judged as they come, with the values in full precision; eval.txt
// holds them only to 4 decimals, which is why the best itself is read from the state file.
//
// Ownership: borrows the saver (may be null: no checkpoints, then the best is only reported)
// and the streams. Thread safety: the loop's thread only (OnEval comes from the EvalHook,
// which runs there).
#ifndef SLUICE_MODELS_TRAINING_BEST_MODEL_HOOK_H_
#define SLUICE_MODELS_TRAINING_BEST_MODEL_HOOK_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "checkpoint/saver.h"
#include "engine/platform/env.h"
#include "models/training/eval_hook.h"
#include "models/training/hook.h"

namespace sluice {
namespace training {

struct BestModelHookOptions {
  std::string metric = "loss";  // an EvalValues name
  bool higher_is_better = false;
  double min_delta = 0;  // >= 0
  int patience = 0;      // 0: never stop early
  std::string results_file;  // the EvalHook's (eval.txt); "" for none
  std::string run_dir;       // the saver's, to name the best checkpoint
  Env* env = Env::Default();
};

class BestModelHook : public TrainingHook, public EvalListener {
 public:
  BestModelHook(BestModelHookOptions options, checkpoint::Saver* saver, std::ostream* out, std::ostream* err)
      : options_(std::move(options)), saver_(saver), out_(out), err_(err) {}

  absl::Status Begin(Session* session, const LoopStart& start) override;
  // Judges an evaluation run before the first step (a resume's missed one), and stops a run
  // that had stopped early.
  void BeforeStep(const StepInfo& step, StepArgs* args, LoopControl* control) override;
  absl::Status AfterStep(const StepInfo& step, const StepResult& result, LoopControl* control) override;
  absl::Status End(Session* session, const LoopEnd& end) override;

  void OnEval(int64_t step, const EvalValues& values) override;

  // What the hook knows now (for tests): the best step (-1: none), its value, and the
  // evaluations since it without an improvement.
  int64_t best_step() const { return best_ ? best_->step : -1; }
  double best_value() const { return best_ ? best_->value : 0; }
  int evaluations_since_best() const { return since_best_; }

 private:
  struct Judged {
    int64_t step = 0;
    double value = 0;
  };
  // Judges the evaluation OnEval left, if any; `control` null at the end (no stop).
  absl::Status JudgePending(LoopControl* control);
  bool Improves(double value) const;
  // Evaluations in the results file at steps in (after, upto], counted once per step.
  int CountEvaluations(int64_t after, int64_t upto) const;
  std::string StopLine(int64_t step, double value) const;

  const BestModelHookOptions options_;
  checkpoint::Saver* const saver_;
  std::ostream* const out_;
  std::ostream* const err_;
  Session* session_ = nullptr;
  std::optional<Judged> best_;
  std::optional<Judged> pending_;  // the last evaluation, not judged yet
  std::string pending_error_;      // the evaluation lacked the metric
  int since_best_ = 0;
  bool stop_before_first_step_ = false;
  absl::Status deferred_error_;  // BeforeStep's, for AfterStep to return
};

}  // namespace training
}  // namespace sluice

#endif  // SLUICE_MODELS_TRAINING_BEST_MODEL_HOOK_H_
